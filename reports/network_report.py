"""Construction report for a network file (docs/file-formats.md): structure, the claim, and its verification.

The report re-runs ``condcheck.verify`` on the file rather than trusting how it was built, so a PDF
that says "verified" is backed by a check made when the PDF was written.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from condcheck import __version__
from condcheck.netfile import SCHEMA, load_network
from condcheck.verify import verify

from . import DEFAULT_OUT
from .latex import Macros, escape, macro_name, render, tt

SAMPLE_POINTS = 10


@dataclass
class NetworkReport:
    tex: Path
    verified: bool
    summary: str
    macros: Macros
    facts: dict


def _hex(v: float) -> str:
    return float(v).hex()


def _summary(arr: np.ndarray) -> str:
    """Count, distinct values, zeros, and the exact min and max of an array of format values."""
    a = np.asarray(arr, dtype=float).ravel()
    if a.size == 0:
        return "none"
    return (f"{tt(a.size)} entries, {tt(np.unique(a).size)} distinct, {tt(int(np.count_nonzero(a == 0)))} zero; "
            f"min {tt(repr(float(a.min())))} (hex {tt(_hex(a.min()))}), max {tt(repr(float(a.max())))} "
            f"(hex {tt(_hex(a.max()))})")


def write_network_report(path, out=DEFAULT_OUT, method: str = "fast", progress=None) -> NetworkReport:
    """Load, verify and describe a network file; writes ``<stem>-network.tex`` and its macros file."""
    path = Path(path)
    net, claim = load_network(path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"{path.stem}-network"
    facts = {"depth": net.depth, "widths": net.widths, "parameters": net.parameter_count,
             "nonzero_parameters": net.nonzero_parameters, "input_dim": net.input_dim}
    rows = [("file", tt(path.name)), ("format", tt(net.format.name)), ("activation", tt(net.activation)),
            ("implementation", tt(net.implementation)), ("semantics", tt(net.semantics)),
            ("input dimension $d$", tt(net.input_dim)),
            ("depth $L$ (affine maps)", tt(net.depth)),
            ("widths (input first)", tt(", ".join(str(w) for w in net.widths))),
            ("parameters (dense count)", tt(f"{net.parameter_count:,}")),
            ("nonzero parameters", tt(f"{net.nonzero_parameters:,}"))]
    layer_rows = []
    for i, layer in enumerate(net.layers, 1):
        o, n = layer.shape
        then = "output" if i == net.depth else r"$\tilde\sigma$"
        layer_rows.append(f"{i} & {n} & {o} & {layer.weight.nnz} & {int(np.count_nonzero(layer.bias))} & {then} \\\\")
    m = Macros()
    key = path.stem
    for k in ("depth", "parameters", "nonzero_parameters", "input_dim"):
        m.add(macro_name("net", key, k), str(facts[k]))
    m.add(macro_name("net", key, "widths"), ", ".join(str(w) for w in net.widths))

    if claim is None:
        claim_text = "The file has no claim, so there is nothing to verify."
        claim_rows, sample, verification = [("claim", "none")], "", "Not run: no claim."
        verified, summary = False, "no claim; nothing verified"
    else:
        N, d = claim.points.shape
        K = 1 if claim.theorem == 5 else claim.upstream.size
        claim_text = (f"Theorem {claim.theorem}: for each of the {N:,} points $x$, $f(x) = f^*(x)$ and "
                      + ("$D_{f,x}(h^*(x)) = g^*(x)$ for the listed upstream value $h^*(x)$."
                         if claim.theorem == 5 else
                         f"$D_{{f,x}}(y) = g^*(x, y)$ for each of the {K} listed upstream values $y$."))
        claim_rows = [("theorem", tt(claim.theorem)), ("points (domain size)", tt(f"{N:,}")),
                      ("dimension", tt(d)), ("domain, all coordinates", _summary(claim.points)),
                      ("values $f^*$", _summary(claim.values)),
                      ("upstream " + ("$h^*$" if claim.theorem == 5 else "$y$"), _summary(claim.upstream)),
                      ("gradients $g^*$", _summary(claim.gradients) + f"; {tt(int(np.count_nonzero(claim.gradients)))} nonzero")]
        t0 = time.perf_counter()
        res = verify(net, claim, method=method, progress=progress)
        seconds = time.perf_counter() - t0
        verified, summary = res.ok, res.summary().splitlines()[0]
        verification = (f"\\textbf{{{'VERIFIED' if res.ok else 'FAILED'}}} ({escape(res.method)} interpreter, "
                        f"{seconds:.2f} s): values {tt(res.value_checks - res.value_failures)} of "
                        f"{tt(res.value_checks)} equal; AD gradients {tt(res.gradient_checks - res.gradient_failures)} "
                        f"of {tt(res.gradient_checks)} equal; compared by value, no tolerance, no overflow allowed.")
        if res.first_failure:
            verification += "\n\nFirst failure: " + escape(", ".join(f"{k}={v}" for k, v in res.first_failure.items()))
        for k, v in (("points", N), ("value checks", res.value_checks), ("gradient checks", res.gradient_checks),
                     ("values equal", res.value_checks - res.value_failures),
                     ("gradients equal", res.gradient_checks - res.gradient_failures)):
            m.add(macro_name("net", key, k), str(v))
        m.add(macro_name("net", key, "verdict"), "verified" if res.ok else "failed")
        facts.update(points=N, value_checks=res.value_checks, gradient_checks=res.gradient_checks,
                     value_failures=res.value_failures, gradient_failures=res.gradient_failures)
        shown = min(N, SAMPLE_POINTS)
        lines = []
        for n in range(shown):
            x = ", ".join(_hex(v) for v in claim.points[n])
            g = (", ".join(_hex(v) for v in claim.gradients[n]) if claim.theorem == 5
                 else f"{K} gradient vectors")
            h = _hex(claim.upstream[n]) if claim.theorem == 5 else "all listed y"
            lines.append(f"{tt('(' + x + ')')} & {tt(_hex(claim.values[n]))} & {tt(h)} & {tt('(' + g + ')')} \\\\")
        sample = (f"\\subsection*{{The claim's first {shown} of {N:,} points (hex)}}\n"
                  "\\begin{longtable}{@{}llll@{}}\n$x$ & $f^*(x)$ & $h^*(x)$ & $g^*(x)$ \\\\\n\\hline\n\\endhead\n"
                  + "\n".join(lines) + "\n\\end{longtable}")
    tex = render("network.tex", preamble=render("preamble.tex"), pdf_title=f"Construction report: {path.name}",
                 file=escape(path.name), version=__version__, schema=SCHEMA,
                 network_rows="\n".join(f"{a} & {b} \\\\" for a, b in rows), layer_rows="\n".join(layer_rows),
                 claim_text=claim_text, claim_rows="\n".join(f"{a} & {b} \\\\" for a, b in claim_rows),
                 sample=sample, verification=verification)
    tex_path = out / f"{name}.tex"
    tex_path.write_text(tex)
    (out / f"{name}-macros.tex").write_text(m.text(f"condcheck {__version__}: numbers of {name}.tex"))
    return NetworkReport(tex_path, verified, summary, m, facts)
