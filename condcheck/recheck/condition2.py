"""Condition 2 re-checked: the witness pair clause by clause, and a "fails" from enumeration or its proof.

Witness statements: every sigma~ / sigma~' value at delta_0, delta_1 equals the recomputed one (all
finite); (i) sigma~(delta_0) != sigma~(delta_1), each and their exact difference at most 2^e_max in
magnitude; (ii) |sigma~'(delta_1)| = 2^k with 2^-M <= 2^k <= 1 for the reported k, and either
``eta_0_unbounded`` (then ``eta_0`` is null and sigma~'(delta_0) = 0) or eta_0 >= 1 with
2^eta_0 |sigma~'(delta_0)| <= 2^k; (iii) -k <= eta_1 <= e_max and k <= eta_2 <= -e_min + M; (iv)
2^(e_min+eta_2) <= max(|sigma~(delta_0)|, |sigma~(delta_1)|) <= 2^(e_max-eta_1).

A "fails" at clause c (stage s): no pair satisfies (i)..(s).  Method exhaustive -- recheck's enumeration
finds s as the first stage no pair satisfies; the counterexample's ``pair_for_...`` satisfies (i)..(s-1)
(for (i): the admissible sigma~ values, the first eight ascending, and their count); beyond 16 bits only
the pair is re-derived and the rest named as not re-derived (:mod:`condcheck.recheck.wide`).  Method symbolic --
a refutation of the pass state for (ii) or (iii) (no value of the format has sigma~' a power of two in
the clause's range), or a pair cover for (ii)-(iv) with the pair for the clauses before it.
"""
from __future__ import annotations

from fractions import Fraction

from . import covers
from .condition1 import refutation
from .context import Rejected, fields, is_pow2, log2_exact
from .schema import BEFORE, CLAUSE_ORDER, WITNESS_FIELDS, refutation_fields


def stages(ctx, d0: Fraction, d1: Fraction) -> int:
    """How many of the clauses (i), (ii), (iii), (iv), in order, the pair satisfies (eta_1 = -k, eta_2 = k,
    the weakest choice)."""
    fmt = ctx.fmt
    s0, s1, g0, g1 = ctx.sigma(d0), ctx.sigma(d1), ctx.dsigma(d0), ctx.dsigma(d1)
    if None in (s0, s1, g0, g1) or s0 == s1 or max(abs(s0), abs(s1), abs(s0 - s1)) > ctx.T:
        return 0
    if not (is_pow2(g1) and Fraction(1, 2 ** fmt.M) <= abs(g1) <= 1 and 2 * abs(g0) <= abs(g1)):
        return 1
    k = log2_exact(g1)
    if not (-k <= fmt.e_max and k <= -fmt.e_min + fmt.M):
        return 2
    if not Fraction(2) ** (fmt.e_min + k) <= max(abs(s0), abs(s1)) <= Fraction(2) ** (fmt.e_max + k):
        return 3
    return 4


def witness(ctx, w, path: str, method: str, enum) -> None:
    fields(w, WITNESS_FIELDS["2"], path)
    fmt = ctx.fmt
    d0, d1 = ctx.value(w["delta_0"], f"{path}.delta_0"), ctx.value(w["delta_1"], f"{path}.delta_1")
    s0, s1, g0, g1 = ctx.sigma(d0), ctx.sigma(d1), ctx.dsigma(d0), ctx.dsigma(d1)
    for name, actual, what in (("sigma(delta_0)", s0, "sigma~(delta_0)"), ("sigma(delta_1)", s1, "sigma~(delta_1)"),
                               ("dsigma(delta_0)", g0, "sigma~'(delta_0)"), ("dsigma(delta_1)", g1, "sigma~'(delta_1)")):
        ctx.computed(w[name], f"{path}.{name}", actual, what)
    ctx.claim(s0 != s1 and abs(s0) <= ctx.T and abs(s1) <= ctx.T and abs(s0 - s1) <= ctx.T, f"{path}.delta_0",
              "clause (i): sigma~(delta_0) != sigma~(delta_1), each and their difference at most 2^e_max")
    k = w["k"]
    ctx.claim(is_pow2(g1) and log2_exact(g1) == k, f"{path}.k", f"|sigma~'(delta_1)| is not 2^{k}")
    ctx.claim(-fmt.M <= k <= 0, f"{path}.k", f"clause (ii) asks for 2^-M <= 2^k <= 1, and k = {k}")
    if w["eta_0_unbounded"]:
        ctx.claim(w["eta_0"] is None, f"{path}.eta_0", "an unbounded eta_0 is reported as null")
        ctx.claim(g0 == 0, f"{path}.eta_0_unbounded", "every eta_0 works only when sigma~'(delta_0) = 0")
    else:
        e0 = w["eta_0"]
        ctx.claim(e0 is not None and e0 >= 1, f"{path}.eta_0", "clause (ii) asks for an integer eta_0 >= 1")
        ctx.claim(Fraction(2) ** e0 * abs(g0) <= abs(g1), f"{path}.eta_0",
                  f"2^{e0} |sigma~'(delta_0)| > |sigma~'(delta_1)| (clause (ii))")
    e1, e2 = w["eta_1"], w["eta_2"]
    ctx.claim(-k <= e1 <= fmt.e_max, f"{path}.eta_1", f"clause (iii) asks for -k <= eta_1 <= e_max = {fmt.e_max}")
    ctx.claim(k <= e2 <= -fmt.e_min + fmt.M, f"{path}.eta_2",
              f"clause (iii) asks for k <= eta_2 <= -e_min + M = {-fmt.e_min + fmt.M}")
    m = max(abs(s0), abs(s1))
    ctx.claim(Fraction(2) ** (fmt.e_min + e2) <= m <= Fraction(2) ** (fmt.e_max - e1), f"{path}.eta_2",
              "clause (iv): max(|sigma~(delta_0)|, |sigma~(delta_1)|) is outside [2^(e_min+eta_2), 2^(e_max-eta_1)]")


def _pair_for_before(ctx, cx, cpath: str, clause: str) -> None:
    """The pair the counterexample gives satisfies the clauses before the failing one."""
    key = f"pair_for_{BEFORE[clause]}"
    d0, d1 = ctx.pair(cx[key], f"{cpath}.{key}")
    need = CLAUSE_ORDER["2"].index(clause)
    got = stages(ctx, d0, d1)
    ctx.claim(got >= need, f"{cpath}.{key}", f"the pair satisfies clauses (i).. only up to stage {got}, not "
                                             f"{BEFORE[clause]}")


def fails(ctx, v, path: str, clause: str, enum) -> None:
    method, cx = v["method"], v["counterexample"]
    cpath = f"{path}.counterexample"
    if method == "exhaustive" and getattr(enum, "wide", False):
        enum.not_rederived(f"{path}.failing_clause", f"clause {clause} is the first clause no pair satisfies")
        if clause == "(i)":
            enum.not_rederived(f"{cpath}.distinct_sigma_values", "the first eight admissible sigma~ values")
            enum.not_rederived(f"{cpath}.count", "the number of distinct admissible sigma~ values")
        else:
            _pair_for_before(ctx, cx, cpath, clause)
        return
    if method == "exhaustive":
        first = enum.condition2
        ctx.claim(first is not None, f"{path}.holds", "Condition 2 holds: a pair satisfies (i)-(iv) in the "
                                                       "enumeration")
        ctx.claim(first == clause, f"{path}.failing_clause", f"the first failing clause is {first}, not {clause}")
        if clause == "(i)":
            vals = enum.distinct_admissible_sigma()
            got = [ctx.value(x, f"{cpath}.distinct_sigma_values[{i}]")
                   for i, x in enumerate(cx["distinct_sigma_values"])] \
                if isinstance(cx["distinct_sigma_values"], list) else None
            ctx.claim(got == vals[:8], f"{cpath}.distinct_sigma_values",
                      "not the first eight admissible sigma~ values, ascending")
            ctx.claim(cx["count"] == len(vals), f"{cpath}.count",
                      f"sigma~ takes {len(vals)} distinct admissible values, not {cx['count']}")
        else:
            _pair_for_before(ctx, cx, cpath, clause)
        return
    ref = cx["refutation"]
    if isinstance(ref, dict) and ref.get("kind") == "pairs":
        rpath = f"{cpath}.refutation"
        fields(ref, refutation_fields("pairs"), rpath)
        ctx.claim(ref["clause"] == clause, f"{rpath}.clause", f"the refutation is about {ref['clause']!r}, the "
                                                              f"failing clause is {clause}")
        if clause not in BEFORE:
            raise Rejected(f"{path}.failing_clause", f"a pair cover re-proves clauses (ii)-(iv), not {clause}")
        _pair_for_before(ctx, cx, cpath, clause)
        covers.pair_cover(ctx, ref["cover"], f"{rpath}.cover", CLAUSE_ORDER["2"].index(clause) + 1)
        return
    refutation(ctx, ref, f"{cpath}.refutation", "2", clause)
