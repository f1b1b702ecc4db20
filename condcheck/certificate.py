"""The condition certificate (``schema: "condcheck.check/2"``) of a check: statements only.

Built from the checkers' verdicts (``CheckResult.conditions``): every field of
:mod:`condcheck.recheck.schema`, and nothing that recheck does not re-derive.  The checkers' free-text
evidence and reasons stay in the check's text output and in the LaTeX report; from the counterexamples
only the facts named in the schema are kept (e.g. Condition 2's "best pair" is stated as a pair that
satisfies the clauses before the failing one, which is what recheck re-proves).
"""
from __future__ import annotations

from fractions import Fraction

from .recheck.schema import (BEFORE, CLAUSE_ORDER, CONSTANTS_SOURCES, FAILING_CLAUSES, SCHEMA, SEMANTICS,
                             VERDICTS, WITNESS_FIELDS)

PAPER_SIX = ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")


def _hex(q):
    from conditions.verdict import hex_text
    return None if q is None else hex_text(q)


def _clause_id(key: str, text: str) -> str:
    if key == "3":
        return "(a)+(b)"
    head = text.split()[0]
    if head not in CLAUSE_ORDER[key]:
        raise AssertionError(f"internal: Condition {key} failing clause {text!r} has no known id")
    return head


def _refutation(ref: dict, clause: str) -> dict:
    if ref.get("kind") == "pairs":
        return {"clause": clause, "kind": "pairs", "cover": ref["cover"]}
    return {"clause": ref["clause"], "function": ref["function"], "kind": ref["kind"], "cover": ref["cover"]}


def _pair(old: dict) -> dict:
    return {k: old[k] for k in ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)", "dsigma(delta_0)",
                                "dsigma(delta_1)")}


def _counterexample(key: str, method: str, clause: str, old: dict) -> dict:
    if key == "1":
        if clause == "(a)":
            return {k: old[k] for k in ("z", "sigma(z)", "dsigma(z)")}
        out = {}
        if clause == "(b)":
            out["L"] = old["L"]
        if clause == "(d)" and method == "exhaustive":
            out["smallest_|sigma|"] = old["smallest_|sigma|"]
        if method == "symbolic":
            out["refutation"] = _refutation(old["refutation"], clause)
        return out
    if key == "2":
        if method == "exhaustive":
            if clause == "(i)":
                return {"distinct_sigma_values": old["distinct_sigma_values"], "count": old["count"]}
            before = BEFORE[clause]
            pair = old.get(f"best_pair_for_{before}") or old.get("best_pair")
            return {f"pair_for_{before}": _pair(pair)}
        ref = old["refutation"]
        out = {"refutation": _refutation(ref, clause)}
        if ref.get("kind") == "pairs":
            out[f"pair_for_{BEFORE[clause]}"] = _pair(old[f"pair_for_{BEFORE[clause]}"])
        return out
    d0 = old["sigma'(0)"]
    out = {"dsigma(0)": None if d0 == "overflow" else d0, "threshold_2^-M": old["threshold_2^-M"]}
    if method == "exhaustive":
        out["largest_|dsigma|"] = old["largest_|sigma'|"]
        out["x_candidates_route_b"] = old["x_candidates_route_b"]
    else:
        out["refutation"] = _refutation(old["refutation"], "(b)")
    return out


def _witness(key: str, old: dict) -> dict:
    spec = WITNESS_FIELDS["3" + old["route"]] if key == "3" else WITNESS_FIELDS[key]
    out = {k: old[k] for k in spec}
    if key == "1" and "tail_cover" in old:
        out["tail_cover"] = old["tail_cover"]
    return out


def condition_record(key: str, old: dict) -> dict:
    """One condition's record from a checker's ``Verdict.to_dict()``."""
    holds, method = old["holds"], old["method"]
    rec = {"verdict": VERDICTS[holds], "holds": holds, "method": method, "witness": None, "failing_clause": None,
           "counterexample": None}
    if holds is True:
        rec["witness"] = _witness(key, old["witness"])
    elif holds is False:
        clause = _clause_id(key, old["failing_clause"])
        rec["failing_clause"] = FAILING_CLAUSES[key][clause]
        rec["counterexample"] = _counterexample(key, method, clause, old["counterexample"] or {})
    return rec


def _exact(v):
    """M_sigma / H_sigma as ``CheckResult.constants`` holds them (a float, an exact decimal string, None)."""
    return None if v is None else _hex(Fraction(v))


def certificate(result) -> dict:
    """The certificate of a ``CheckResult`` (its verdicts, branch, constants and depth bounds)."""
    c = result.constants
    cert = {"schema": SCHEMA, "activation": result.activation, "format": result.format,
            "implementation": result.implementation, "semantics": SEMANTICS, "holds": result.holds,
            "conditions": {k: condition_record(k, result.conditions[k]) for k in ("1", "2", "3")},
            "theorem_branch": result.branch, "M_sigma": _exact(c["M_sigma"]), "H_sigma": _exact(c["H_sigma"]),
            "constants_source": CONSTANTS_SOURCES[result.activation in PAPER_SIX],
            "depth_bounds": result.depth_bounds}
    if result.source_note:
        cert["sigma_source"] = result.source_note
    cert["seconds"] = round(result.seconds, 3)
    if getattr(result, "enumeration", None):
        cert["enumeration"] = result.enumeration        # how a chunked (beyond 16 bits) run enumerated: metadata
    return cert
