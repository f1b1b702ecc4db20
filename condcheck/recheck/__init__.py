"""``condcheck recheck CERT.json``: re-derive every statement of a condition certificate, or reject it.

A certificate (``schema: "condcheck.check/2"``, :mod:`condcheck.recheck.schema` lists every field and
what it states) is accepted only when every statement in it was re-proved here; the first statement
that is false, malformed, unknown or that cannot be re-proved rejects it, by name (a path such as
``conditions.2.witness.sigma(delta_0)``).  Metadata (``seconds``) is not read.

Independence: shared with the checkers are only the formats (``condcheck.formats``), exact rounding
(``condcheck.rounding``), the certain evaluation of sigma~ and sigma~' (``condcheck.rounded_activation``,
whose table of a format of at most 16 bits is that evaluation at every value) and the interval
enclosure of an expression (``conditions._tail.enclose_interval``).  The clause logic is written again
in this package: the witnesses (``condition1``, ``condition2``, ``condition3``), recheck's own
enumeration of formats of at most 16 bits (``enumeration``), what it re-derives of an exhaustive verdict
beyond 16 bits and what it names as not re-derived (``wide``), the symbolic proofs (``covers``) and the
paper's constants (``summary``).

Order of the checks (the first failure is the one reported): the fields of the certificate, the
names (activation, format, implementation), ``semantics``, the paper's constants, then Conditions 1, 2
and 3 (verdict text, method, then the witness or the failure), and last the overall ``holds``.
"""
from __future__ import annotations

import json

from ..errors import CondcheckError, UnknownNameError
from . import condition1, condition2, condition3, summary, wide
from .context import Context, Rejected, fields
from .enumeration import Enumeration
from .schema import (CONDITION_FIELDS, EXHAUSTIVE_BITS, FAILING_CLAUSES, METADATA_FIELDS, METHODS,
                     OPTIONAL_TOP_FIELDS, SCHEMA, SEMANTICS, TOP_FIELDS, VERDICTS, counterexample_fields)

__all__ = ["recheck_certificate", "recheck_file", "Rejected", "SCHEMA"]

#: formats recheck (like ``check``) supports: exponent fields of at most this many bits
MAX_EXPONENT_BITS = 11
_MODULES = {"1": condition1, "2": condition2, "3": condition3}


def _names(cert: dict) -> Context:
    from ..activations import get_activation
    from ..formats import get_format
    from ..rounded_activation import IMPLEMENTATIONS, get_rounded
    for key in ("activation", "format", "implementation"):
        if not isinstance(cert[key], str):
            raise Rejected(key, f"must be a name (a string), not {type(cert[key]).__name__}")
    try:
        act = get_activation(cert["activation"])
    except UnknownNameError as e:
        raise Rejected("activation", str(e)) from None
    if act.name != cert["activation"]:
        raise Rejected("activation", f"the registry spells it {act.name!r}")
    try:
        fmt = get_format(cert["format"])
    except CondcheckError as e:
        raise Rejected("format", str(e)) from None
    if fmt.name != cert["format"]:
        raise Rejected("format", f"the registry spells it {fmt.name!r}")
    if fmt.E > MAX_EXPONENT_BITS:
        raise Rejected("format", f"{fmt.name} has E = {fmt.E} exponent bits; check and recheck support at most "
                                 f"{MAX_EXPONENT_BITS} (float64's)")
    if cert["implementation"] not in IMPLEMENTATIONS:
        from ..implementations import get_implementation
        try:
            get_implementation(cert["implementation"])          # a plug-in's values are observed again
        except UnknownNameError as e:
            raise Rejected("implementation", str(e)) from None
    try:
        return Context(fmt, get_rounded(act, fmt, cert["implementation"]))
    except CondcheckError as e:
        raise Rejected("implementation", str(e)) from None


def _condition(ctx: Context, key: str, v, enum) -> None:
    path = f"conditions.{key}"
    fields(v, CONDITION_FIELDS, path)
    holds, method = v["holds"], v["method"]
    ctx.claim(holds in (True, False, None) and (holds is None or type(holds) is bool), f"{path}.holds",
              "must be true, false or null")
    ctx.claim(v["verdict"] == VERDICTS[holds], f"{path}.verdict",
              f"{v['verdict']!r} disagrees with holds = {json.dumps(holds)} (verdict {VERDICTS[holds]!r})")
    ctx.claim(method in METHODS, f"{path}.method", f"must be one of {', '.join(METHODS)}")
    if method == "exhaustive":
        ctx.claim(ctx.fmt.bits <= wide.MAX_BITS, f"{path}.method",
                  f"exhaustive means every value was enumerated, for formats of at most {wide.MAX_BITS} bits; "
                  f"{ctx.fmt.name} has {ctx.fmt.bits}")
        ctx.claim(holds is not None, f"{path}.method", "an exhaustive check decides the condition; it is never "
                                                        "undecided")
    nulls = {True: ("failing_clause", "counterexample"), False: ("witness",),
             None: ("witness", "failing_clause", "counterexample")}[holds]
    for name in nulls:
        ctx.claim(v[name] is None, f"{path}.{name}", f"must be null for a verdict {VERDICTS[holds]!r}")
    module = _MODULES[key]
    if holds is True:
        module.witness(ctx, v["witness"], f"{path}.witness", method, enum())
    elif holds is False:
        texts = FAILING_CLAUSES[key]
        clause = next((cid for cid, t in texts.items() if t == v["failing_clause"]), None)
        if clause is None:
            raise Rejected(f"{path}.failing_clause", f"not one of Condition {key}'s clauses: "
                                                     + "; ".join(repr(t) for t in texts.values()))
        cx = v["counterexample"]
        ref = cx.get("refutation") if isinstance(cx, dict) else None
        kind = ref.get("kind") if isinstance(ref, dict) else None
        fields(cx, counterexample_fields(key, method, clause, kind), f"{path}.counterexample")
        module.fails(ctx, v, path, clause, enum() if method == "exhaustive" else None)


class NotRederived(Rejected):
    """Every statement recheck could re-derive is true, but these were not re-derived (beyond 16 bits)."""

    def __init__(self, pending: list, proved: int):
        super().__init__(*pending[0])
        self.pending, self.proved = pending, proved


def _check(cert: dict, enumerate_wide: bool = False, runner=None) -> Context:
    allowed = TOP_FIELDS + OPTIONAL_TOP_FIELDS + METADATA_FIELDS
    for k in cert:
        if k not in allowed:
            raise Rejected(k, "unknown field: recheck cannot re-prove it, and a certificate states nothing unchecked")
    for k in TOP_FIELDS:
        if k not in cert:
            raise Rejected(k, "missing")
    ctx = _names(cert)
    ctx.claim(cert["semantics"] == SEMANTICS, "semantics", f"the checks use one semantics: {SEMANTICS!r}")
    summary.check(ctx, cert)
    conds = cert["conditions"]
    fields(conds, ("1", "2", "3"), "conditions")
    cache = []

    def enum():
        if ctx.fmt.bits > EXHAUSTIVE_BITS:
            return wide.Wide(ctx, enumerate_wide, runner)
        if not cache:
            cache.append(Enumeration.of(ctx))
        return cache[0]
    for key in ("1", "2", "3"):
        _condition(ctx, key, conds[key], enum)
    states = [conds[k]["holds"] for k in ("1", "2", "3")]
    overall = False if False in states else None if None in states else True
    ctx.claim(cert["holds"] is overall, "holds", f"the conjunction of Conditions 1-3 ({', '.join(json.dumps(s) for s in states)}) "
                                                 f"is {json.dumps(overall)}, not {json.dumps(cert['holds'])}")
    if ctx.pending:
        raise NotRederived(ctx.pending, ctx.proved)
    return ctx


def recheck_certificate(cert, enumerate_wide: bool = False, runner=None) -> dict:
    """Re-check a certificate (a dict).  Returns {"ok", "activation", "format", "implementation", "checks",
    "problem", "not_rederived", "conditions"}: ``problem`` is None, or {"statement", "problem"} for the first
    statement that was not re-proved; ``not_rederived`` lists every statement of an exhaustive verdict beyond
    16 bits that recheck did not re-derive (:mod:`condcheck.recheck.wide`; then ``ok`` is false).
    ``enumerate_wide`` re-derives Condition 1's dead tail beyond 16 bits by enumerating it, on ``runner``
    (a :class:`condcheck.distributed.Engine`; default: in this process).
    Raises CondcheckError when ``cert`` is not a condcheck.check/2 certificate at all."""
    if not isinstance(cert, dict):
        raise CondcheckError(f"a certificate is a JSON object, not a {type(cert).__name__}")
    if cert.get("schema") != SCHEMA:
        raise CondcheckError(f"not a condition certificate: schema {cert.get('schema')!r}, expected {SCHEMA!r} "
                             f"(write one with condcheck check ... --json)")
    out = {"ok": False, "activation": cert.get("activation"), "format": cert.get("format"),
           "implementation": cert.get("implementation"), "checks": 0, "problem": None, "not_rederived": [],
           "conditions": {}}
    conds = cert.get("conditions") if isinstance(cert.get("conditions"), dict) else {}
    for k in ("1", "2", "3"):
        v = conds.get(k) if isinstance(conds.get(k), dict) else {}
        out["conditions"][k] = {"verdict": v.get("verdict"), "method": v.get("method")}
    try:
        ctx = _check(cert, enumerate_wide, runner)
    except NotRederived as r:
        out["problem"] = {"statement": r.statement, "problem": r.problem}
        out["not_rederived"] = [{"statement": p, "problem": q} for p, q in r.pending]
        out["checks"] = r.proved
        return out
    except Rejected as r:
        out["problem"] = {"statement": r.statement, "problem": r.problem}
        return out
    out["ok"], out["checks"] = True, ctx.proved
    return out


def recheck_file(path, enumerate_wide: bool = False, runner=None) -> dict:
    """Read a certificate file and re-check it (see :func:`recheck_certificate`)."""
    try:
        with open(path) as fh:
            cert = json.load(fh)
    except (OSError, ValueError) as e:
        raise CondcheckError(f"cannot read certificate {str(path)!r}: {e}") from None
    return recheck_certificate(cert, enumerate_wide, runner)
