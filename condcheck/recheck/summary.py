"""The certificate's statements about the paper (arXiv 2605.01702), derived again from the format's fields.

* ``theorem_branch``: "main (E >= 6)", "low-exponent appendix (E = 4, 5)" or "not covered (E < 4)";
* ``M_sigma``, ``H_sigma``: relu, elu, gelu, swish: 2^(e_max-2) and Omega; sigmoid: 2^(e_max-1) and
  2^(M-1); tanh: 2^(e_max-1) and 2^(M-2); null for every other activation (the paper states none);
* ``constants_source``: "paper (arXiv 2605.01702)" for the paper's six activations, else the "unknown" text;
* ``depth_bounds``: Theorem 5 L >= 7 (OpenReview) / 9 (arXiv v2); Theorem 7 L >= 2^(E+1) + 2M + 9 / + 11;
* ``sigma_source``: present exactly when sigma~ is not certified (a callable plug-in or the torch table),
  with the text ``RoundedActivation.source_note`` gives.
"""
from __future__ import annotations

from fractions import Fraction

from .context import Rejected, exact_text, text
from .schema import BRANCHES, CONSTANTS_SOURCES

PAPER_SIX = ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")


def branch(fmt) -> str:
    return BRANCHES["main"] if fmt.E >= 6 else BRANCHES["low"] if fmt.E in (4, 5) else BRANCHES["none"]


def constants(activation: str, fmt):
    """(M_sigma, H_sigma) exactly, or (None, None)."""
    if activation in ("relu", "elu", "gelu", "swish"):
        return Fraction(2) ** (fmt.e_max - 2), Fraction(fmt.max)
    if activation == "sigmoid":
        return Fraction(2) ** (fmt.e_max - 1), Fraction(2) ** (fmt.M - 1)
    if activation == "tanh":
        return Fraction(2) ** (fmt.e_max - 1), Fraction(2) ** (fmt.M - 2)
    return None, None


def depth(fmt) -> dict:
    return {"theorem5": {"openreview": 7, "arxiv_v2": 9},
            "theorem7": {"openreview": 2 ** (fmt.E + 1) + 2 * fmt.M + 9, "arxiv_v2": 2 ** (fmt.E + 1) + 2 * fmt.M + 11}}


def check(ctx, cert: dict) -> None:
    fmt, act = ctx.fmt, ctx.rounded.activation.name
    ctx.claim(cert["theorem_branch"] == branch(fmt), "theorem_branch",
              f"{fmt.name} has E = {fmt.E}: the branch is {branch(fmt)!r}")
    for name, want in zip(("M_sigma", "H_sigma"), constants(act, fmt)):
        got = cert[name]
        if want is None:
            ctx.claim(got is None, name, f"the paper states no {name} for {act}; it must be null")
        else:
            ctx.claim(got is not None and exact_text(got, name) == want, name,
                      f"the paper's {name} for {act} on {fmt.name} is {text(want)}")
    ctx.claim(cert["constants_source"] == CONSTANTS_SOURCES[act in PAPER_SIX], "constants_source",
              f"must be {CONSTANTS_SOURCES[act in PAPER_SIX]!r}")
    want = depth(fmt)
    got = cert["depth_bounds"]
    if not isinstance(got, dict) or set(got) != set(want):
        raise Rejected("depth_bounds", "must have exactly the fields theorem5 and theorem7")
    for thm, versions in want.items():
        if not isinstance(got[thm], dict) or set(got[thm]) != set(versions):
            raise Rejected(f"depth_bounds.{thm}", "must have exactly the fields openreview and arxiv_v2")
        for version, bound in versions.items():
            v = got[thm][version]
            ctx.claim(type(v) is int and v == bound, f"depth_bounds.{thm}.{version}",
                      f"the paper's bound for {fmt.name} is L >= {bound}")
    note = ctx.rounded.source_note
    if note:
        ctx.claim(cert.get("sigma_source") == note, "sigma_source", f"sigma~ is not certified here; must be {note!r}")
    else:
        ctx.claim("sigma_source" not in cert, "sigma_source", "sigma~ is certified (the correctly rounded or "
                                                              "float32-upcast evaluation of an expression)")
