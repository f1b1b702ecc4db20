"""Condition 3 re-checked: the witness of its route, and a "fails" from enumeration or its proof.

Witness statements: zeta > 0; route (a): |sigma~'(0)| >= 2^-M (finite), s = zeta; route (b): |x| >= zeta,
x with an even last significand bit, s = RN(zeta + |x|) finite, sigma~(x) and sigma~'(x) finite with
|sigma~'(x)| >= 2^-M; both: sigma~ finite and at most 2^e_max in magnitude at -s, 0, s, and every
reported value equal to the recomputed one.

A "fails" (neither route): method exhaustive -- recheck's enumeration finds no witness of either route,
and the counterexample's sigma~'(0) (null: overflow), the largest |sigma~'| over the finite values,
2^-M and the number of candidate x of route (b) (x != 0 even, sigma~(x), sigma~'(x) finite,
|sigma~'(x)| >= 2^-M) are recomputed (beyond 16 bits: sigma~'(0) and 2^-M; the rest is named as not
re-derived, :mod:`condcheck.recheck.wide`).  Method symbolic -- route (a) fails at 0 (|sigma~'(0)| < 2^-M or an
overflow) and the refutation cover shows |sigma~'| < 2^-M at every value, so route (b) has no x.
"""
from __future__ import annotations

from fractions import Fraction

from ..errors import FormatOverflowError
from ..rounding import round_fraction
from .condition1 import refutation
from .context import Rejected, even_last_bit, fields
from .schema import WITNESS_FIELDS


def witness(ctx, w, path: str, method: str, enum) -> None:
    route = w.get("route") if isinstance(w, dict) else None
    if route not in ("a", "b"):
        raise Rejected(f"{path}.route", f"must be 'a' or 'b', not {route!r}")
    fields(w, WITNESS_FIELDS["3" + route], path)
    fmt = ctx.fmt
    thr = Fraction(2) ** -fmt.M
    zeta = ctx.value(w["zeta"], f"{path}.zeta")
    ctx.claim(zeta > 0, f"{path}.zeta", "zeta must be > 0")
    if route == "a":
        d = ctx.dsigma(Fraction(0))
        ctx.computed(w["dsigma(0)"], f"{path}.dsigma(0)", d, "sigma~'(0)")
        ctx.claim(d is not None and abs(d) >= thr, f"{path}.dsigma(0)", "route (a) asks for |sigma~'(0)| >= 2^-M")
        s = zeta
    else:
        x = ctx.value(w["x"], f"{path}.x")
        ctx.claim(abs(x) >= zeta, f"{path}.x", "route (b) asks for |x| >= zeta")
        ctx.claim(even_last_bit(fmt, x), f"{path}.x", "route (b) asks for x with an even last significand bit")
        try:
            s = round_fraction(zeta + abs(x), fmt)
        except FormatOverflowError:
            s = None
        ctx.claim(s is not None, f"{path}.s", "RN(zeta + |x|) overflows")
        d = ctx.dsigma(x)
        ctx.computed(w["dsigma(x)"], f"{path}.dsigma(x)", d, "sigma~'(x)")
        ctx.claim(ctx.sigma(x) is not None and d is not None and abs(d) >= thr, f"{path}.dsigma(x)",
                  "route (b) asks for sigma~(x) finite and |sigma~'(x)| >= 2^-M")
    ctx.computed(w["s"], f"{path}.s", s, "s (zeta for route (a), RN(zeta + |x|) for route (b))")
    for name, t in (("sigma(-s)", -s), ("sigma(0)", Fraction(0)), ("sigma(s)", s)):
        v = ctx.sigma(t)
        ctx.computed(w[name], f"{path}.{name}", v, f"sigma~({name[6:-1]})")
        ctx.claim(v is not None and abs(v) <= ctx.T, f"{path}.{name}", "sigma~ must be finite and at most "
                                                                       "2^e_max in magnitude at -s, 0 and s")


def fails(ctx, v, path: str, clause: str, enum) -> None:
    cx = v["counterexample"]
    cpath = f"{path}.counterexample"
    fmt = ctx.fmt
    thr = Fraction(2) ** -fmt.M
    ctx.computed(cx["threshold_2^-M"], f"{cpath}.threshold_2^-M", thr, "2^-M")
    d0 = ctx.dsigma(Fraction(0))
    ctx.computed(cx["dsigma(0)"], f"{cpath}.dsigma(0)", d0, "sigma~'(0)")
    if v["method"] == "exhaustive" and getattr(enum, "wide", False):
        enum.not_rederived(f"{path}.holds", "no witness of route (a) or route (b) exists")
        enum.not_rederived(f"{cpath}.largest_|dsigma|", "the largest |sigma~'| over the finite values")
        enum.not_rederived(f"{cpath}.x_candidates_route_b", "the number of candidate x of route (b)")
        return
    if v["method"] == "exhaustive":
        info = enum.condition3
        ctx.claim(not info["holds"], f"{path}.holds", "Condition 3 holds: the enumeration finds a witness")
        ctx.computed(cx["largest_|dsigma|"], f"{cpath}.largest_|dsigma|", info["largest_|dsigma|"],
                     "the largest |sigma~'| over the finite values")
        ctx.claim(cx["x_candidates_route_b"] == info["x_candidates_route_b"], f"{cpath}.x_candidates_route_b",
                  f"{info['x_candidates_route_b']} values x qualify for route (b), not {cx['x_candidates_route_b']}")
        return
    ctx.claim(d0 is None or abs(d0) < thr, f"{cpath}.dsigma(0)",
              "|sigma~'(0)| >= 2^-M: the symbolic refutation covers only route (a) failing at 0")
    refutation(ctx, cx["refutation"], f"{cpath}.refutation", "3", "(b)")
