"""Condition 1 re-checked: the witness clause by clause, and a "fails" from enumeration or its proof.

Witness statements: z_d >= -Omega/2 and every value from -Omega to z_d dead (sigma~ = L, sigma~' = 0),
by enumeration (method exhaustive) or from ``tail_cover`` (symbolic); L = sigma~(-Omega); dead_count
the number of values of the format from -Omega to z_d; live > z_d with sigma~(live) finite and != L;
sigma~(constant) a positive power of two; sigma~(zero) = 0; pass > z_d with sigma~'(pass) = +-2^k; and
every reported sigma~ / sigma~' value equal to the recomputed one.

Beyond 16 bits (method exhaustive) the universal statements -- the dead tail, a "fails" other than (a),
the smallest |sigma~| -- are enumerated or named as not re-derived (:mod:`condcheck.recheck.wide`).

A "fails": method exhaustive -- recheck's enumeration finds the same first failing clause, and the
counterexample's facts: (a) z <= -Omega/2 is not dead with the reported sigma~(z), sigma~'(z) (null:
overflow); (b) L = sigma~(-Omega); (d) the smallest |sigma~| over the finite values.  Method symbolic --
(a) the point z as above; (b)-(e) the refutation cover of the clause (every value of the format
excluded), with (b)'s L.
"""
from __future__ import annotations

from fractions import Fraction

from . import covers
from .context import Rejected, fields, is_pow2, text
from .schema import REFUTED_KIND, WITNESS_FIELDS, refutation_fields


def _ordinal(fmt, q: Fraction) -> int:
    """The position of q among the values of fmt, counted from 0 (one zero)."""
    return fmt.to_bits(q) if q >= 0 else -fmt.to_bits(-q)


def witness(ctx, w, path: str, method: str, enum) -> None:
    spec = dict(WITNESS_FIELDS["1"])
    if method == "symbolic":
        spec["tail_cover"] = "text"
    fields(w, spec, path)
    fmt, om = ctx.fmt, ctx.omega
    zd, L = ctx.value(w["z_dead"], f"{path}.z_dead"), ctx.value(w["L"], f"{path}.L")
    ctx.computed(w["L"], f"{path}.L", ctx.sigma(-om), "sigma~(-Omega)")
    ctx.claim(zd >= -om / 2, f"{path}.z_dead", "z_d < -Omega/2: clause (a) asks for z_d >= -Omega/2")
    ctx.claim(w["dead_count"] == _ordinal(fmt, zd) - _ordinal(fmt, -om) + 1, f"{path}.dead_count",
              f"{fmt.name} has {_ordinal(fmt, zd) - _ordinal(fmt, -om) + 1} values from -Omega to z_d, "
              f"not {w['dead_count']}")
    if method == "exhaustive" and getattr(enum, "wide", False):
        enum.dead_tail(f"{path}.z_dead", zd, L, w["dead_count"])
    elif method == "exhaustive":
        zd_n, L_n = enum.n(zd), enum.n(L)
        upto = [i for i, z in enumerate(enum.z) if z <= zd_n]
        live = next((i for i in upto if not (enum.s[i] == L_n and enum.d[i] == 0)), None)
        ctx.claim(live is None, f"{path}.z_dead",
                  f"the value {text(enum.q(enum.z[live]))} <= z_d is not dead (clause (a))" if live is not None else "")
        ctx.proved += len(upto) - 1
    else:
        covers.tail_cover(ctx, w["tail_cover"], f"{path}.tail_cover", zd, L)
    live = ctx.value(w["live"], f"{path}.live")
    s_live = ctx.sigma(live)
    ctx.computed(w["sigma(live)"], f"{path}.sigma(live)", s_live, "sigma~(live)")
    ctx.claim(live > zd and s_live is not None and s_live != L, f"{path}.live",
              "clause (b) asks for z > z_d with sigma~(z) finite and != L")
    b = ctx.value(w["constant"], f"{path}.constant")
    s_b = ctx.sigma(b)
    ctx.computed(w["sigma(constant)"], f"{path}.sigma(constant)", s_b, "sigma~(constant)")
    ctx.claim(s_b is not None and s_b > 0 and is_pow2(s_b), f"{path}.constant",
              "clause (c) asks for sigma~(b) a positive power of two")
    zero = ctx.value(w["zero"], f"{path}.zero")
    ctx.claim(ctx.sigma(zero) == 0, f"{path}.zero", "clause (d) asks for sigma~(z) = 0")
    p = ctx.value(w["pass"], f"{path}.pass")
    d_p = ctx.dsigma(p)
    ctx.computed(w["dsigma(pass)"], f"{path}.dsigma(pass)", d_p, "sigma~'(pass)")
    ctx.claim(p > zd and d_p is not None and is_pow2(d_p), f"{path}.pass",
              "clause (e) asks for z > z_d with sigma~'(z) = +-2^k")


def _point(ctx, cx, path: str) -> None:
    """Clause (a) fails at z: z <= -Omega/2 and z not dead (so no z_d >= -Omega/2 has a dead tail)."""
    z = ctx.value(cx["z"], f"{path}.z")
    s, d = ctx.sigma(z), ctx.dsigma(z)
    ctx.computed(cx["sigma(z)"], f"{path}.sigma(z)", s, "sigma~(z)")
    ctx.computed(cx["dsigma(z)"], f"{path}.dsigma(z)", d, "sigma~'(z)")
    L = ctx.sigma(-ctx.omega)
    ctx.claim(z <= -ctx.omega / 2, f"{path}.z", "the counterexample of clause (a) must be at most -Omega/2")
    ctx.claim(L is None or s != L or d != 0, f"{path}.z", "z is dead: it is no counterexample of clause (a)")


def fails(ctx, v, path: str, clause: str, enum) -> None:
    method, cx = v["method"], v["counterexample"]
    cpath = f"{path}.counterexample"
    if method == "exhaustive" and getattr(enum, "wide", False):
        if clause == "(a)":                     # the first clause: the point z alone refutes it
            _point(ctx, cx, cpath)
            return
        enum.not_rederived(f"{path}.failing_clause", f"clause {clause} is the first clause no value satisfies")
        if clause == "(b)":
            ctx.computed(cx["L"], f"{cpath}.L", ctx.sigma(-ctx.omega), "sigma~(-Omega)")
        elif clause == "(d)":
            enum.not_rederived(f"{cpath}.smallest_|sigma|", "the smallest |sigma~| over the finite values")
        return
    if method == "exhaustive":
        first, info = enum.condition1
        ctx.claim(first is not None, f"{path}.holds", "Condition 1 holds: every clause has a witness in the "
                                                       "enumeration")
        ctx.claim(first == clause, f"{path}.failing_clause", f"the first failing clause is {first}, not {clause}")
        if clause == "(a)":
            _point(ctx, cx, cpath)
        elif clause == "(b)":
            ctx.computed(cx["L"], f"{cpath}.L", info["L"], "sigma~(-Omega)")
        elif clause == "(d)":
            ctx.computed(cx["smallest_|sigma|"], f"{cpath}.smallest_|sigma|", info["smallest_abs_sigma"],
                         "the smallest |sigma~| over the finite values")
        return
    if clause == "(a)":
        _point(ctx, cx, cpath)
        return
    L = None
    if clause == "(b)":
        L = ctx.sigma(-ctx.omega)
        ctx.computed(cx["L"], f"{cpath}.L", L, "sigma~(-Omega)")
    refutation(ctx, cx["refutation"], f"{cpath}.refutation", "1", clause, L)


def refutation(ctx, ref, path: str, cond: str, clause: str, L=None) -> None:
    """A refutation cover of an existence clause: its fields, and the cover re-proved."""
    fields(ref, refutation_fields("cover"), path)
    want = REFUTED_KIND.get((cond, clause))
    if want is None:
        raise Rejected(path, f"Condition {cond}'s clause {clause} has no refutation recheck can re-prove")
    ctx.claim(ref["clause"] == clause, f"{path}.clause", f"the refutation is about {ref['clause']!r}, "
                                                         f"the failing clause is {clause}")
    ctx.claim((ref["function"], ref["kind"]) == want, f"{path}.kind",
              f"clause {clause} is refuted by excluding {want[1]} from {want[0]}, not {ref['kind']!r} from "
              f"{ref['function']!r}")
    covers.refutation_cover(ctx, ref["cover"], f"{path}.cover", *want, L)
