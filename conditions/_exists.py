"""Certified decision of Condition 1's existence clauses (b)-(e) over every value of a format.

Clauses (b)-(e) of Condition 1 say "there is a value z of F whose rounded sigma~(z) (or sigma~'(z)) is
of some kind": finite and != L (b), a positive power of two (c), 0 (d), a nonzero power of two (e).
A witness point proves such a clause; to *refute* one, every value of F must be excluded.  This module
does that without enumeration, with the same machinery as the dead-tail scan (:mod:`conditions._tail`):

* the ordinals of the values of F, from -Omega to Omega, are covered by intervals, bisected depth first
  (left half first) until each is decided;
* an interval [a, b] of more than one value is **excluded** when the closed range of format values
  between RN_F(lo) and RN_F(hi) contains no value of the kind, where [lo, hi] encloses g = sigma (or
  sigma') over the whole real interval [a, b].  RN_F is monotone, so RN_F(g(z)) lies in that range for
  every real z in [a, b], in particular for every format value.  The enclosure is either

  - ``e``: the interval-arithmetic enclosure of g over [a, b] (:func:`conditions._tail.enclose_interval`),
  - ``m``: monotonicity.  When g is *smooth* (built from +, *, constant powers, exp, log, erf, erfc,
    tanh, sinh, cosh, atan, asinh, sin, cos only: no Piecewise, step, sign, Abs, Max or Min, so g is
    continuous wherever it is finite) and the interval enclosure of g' = sympy.diff(g) over [a, b] (as
    differentiated, or its ``sympy.factor`` form, see :func:`slopes`) is finite and of one sign, g is monotone on [a, b] and RN_F(g([a, b])) lies between the certain
    roundings RN_F(g(a)) and RN_F(g(b)).  Those are exact, including ties: sigmoid'(0) = 1/4 is the
    midpoint between 0 and 1/2 in float4_e2m1fn and rounds to the even 0, which no enclosure with a
    width could show (its upper end would lie above 1/4 and round to 1/2).

* a single value is decided by the certain point rounding (Ziv's strategy,
  :mod:`condcheck.rounded_activation`).  If it is of the kind, it is a **witness**: the clause holds
  there and the scan stops.

Outcome: "refuted" (every value of F excluded: the cover, in order, is the certificate), "witness"
(a value where the clause holds), or "undecided" (a cap on interval evaluations or seconds was hit).
Nothing is sampled.  Refuting over *all* of F, not only above z_d, makes the certificate independent of
z_d: values at or below z_d have sigma~ = L and sigma~' = 0 anyway, so (b) and (e) cannot hold there.

The cover is written ``e[a, b] m[c, d] p[z, z] ...`` (hex floats; ``p`` a single value) and re-proved by
``condcheck recheck`` (:mod:`condcheck.recheck`), which shares only the format, RN_F, the certain point
rounding and the interval enclosure with this module.

ASSUMPTION: the same as :mod:`conditions._tail` (mpmath's functions accurate within 2^-(prec-8)).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import mpmath.libmp as L
import sympy

from condcheck.activations import x as X_SYMBOL
from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import Format
from condcheck.rounded_activation import round_end

from ._search import ceil_log2, value_at, value_index
from ._tail import enclose_interval
from .verdict import hex_text

__all__ = ["KINDS", "ExistsScan", "scan_exists", "range_has", "is_smooth", "slopes", "cover_text"]

#: the kinds of rounded values the clauses ask for, and their wording
KINDS = {
    "finite_not_L": "a finite value other than L",
    "positive_pow2": "a positive power of two",
    "zero": "0",
    "nonzero_pow2": "a nonzero power of two (+-2^k)",
    "pass_pow2": "+-2^k with 2^-M <= 2^k <= 1 (Condition 2's pass state, clause (ii))",
    "pass_pow2_iii": "+-2^k with 2^-M <= 2^k <= 1, -k <= e_max and k <= -e_min + M (Condition 2's (ii) and (iii))",
    "abs_at_least_2^-M": "of magnitude at least 2^-M (Condition 3's usable derivative)",
}

_SMOOTH_FUNCTIONS = (sympy.exp, sympy.log, sympy.erf, sympy.erfc, sympy.tanh, sympy.sinh, sympy.cosh,
                     sympy.atan, sympy.asinh, sympy.sin, sympy.cos)


def is_smooth(expr) -> bool:
    """True when ``expr`` is built only from numbers, x, +, *, powers with constant exponents and the
    functions exp, log, erf, erfc, tanh, sinh, cosh, atan, asinh, sin, cos: then it is continuous
    (differentiable) wherever it is finite, so a derivative of one sign over an interval where the
    derivative's enclosure is finite makes it monotone there."""
    for node in sympy.preorder_traversal(sympy.sympify(expr)):
        if node.is_Symbol or node.is_Number or isinstance(node, sympy.NumberSymbol):
            continue
        if isinstance(node, (sympy.Add, sympy.Mul)):
            continue
        if isinstance(node, sympy.Pow):
            if not node.args[1].is_number:
                return False
            continue
        if isinstance(node, _SMOOTH_FUNCTIONS) and len(node.args) == 1:
            continue
        return False
    return True


@lru_cache(maxsize=None)
def slopes(expr) -> tuple:
    """Expressions of g' = sympy.diff(g, x) for a smooth g (else ()): the derivative as differentiated
    and its ``sympy.factor`` form, which is the same function (up to removable singularities) and often
    has a sign that interval arithmetic can see (sigmoid'' = -(e^x - 1) e^x / (e^x + 1)^3, where the
    differentiated form is a difference of two terms near 1/4 that cancel at 0)."""
    if not is_smooth(expr):
        return ()
    d = sympy.diff(expr, X_SYMBOL)
    out = [d]
    try:
        f = sympy.factor(d)
        if f != d and is_smooth(f):
            out.append(f)
    except Exception:                         # factoring is an optimisation only
        pass
    return tuple(out)


def one_sign(slope_exprs, a, b, prec) -> bool:
    """Is g' of one sign on [a, b], by the finite interval enclosure of one of its expressions?"""
    for d in slope_exprs:
        lo, hi = enclose_interval(d, a, b, prec)
        if any(v in (L.finf, L.fninf, L.fnan) for v in (lo, hi)):
            continue
        if L.mpf_ge(lo, L.fzero) or L.mpf_le(hi, L.fzero):
            return True
    return False


def _has_pow2(fmt: Format, lo, hi) -> bool:
    """Is there a power of two of F in the closed range [lo, hi] (lo >= 0 rational)?"""
    lo = max(Fraction(lo), Fraction(fmt.smallest_subnormal))
    if lo > hi:
        return False
    p = Fraction(2) ** ceil_log2(lo)
    top = Fraction(2) ** (fmt.e_max + 1)
    while p <= hi and p < top:
        if fmt.contains(p):
            return True
        p *= 2
    return False


def range_has(kind: str, lo, hi, fmt: Format, L_value=None) -> bool:
    """Does the closed range of format values [lo, hi] (rounded ends, Fractions; +-inf stands for an
    overflow, which is never a value of the kind) contain a value of ``kind``?"""
    om = Fraction(fmt.max)
    a = -om if lo == float("-inf") else max(Fraction(lo), -om) if lo != float("inf") else None
    b = om if hi == float("inf") else min(Fraction(hi), om) if hi != float("-inf") else None
    if a is None or b is None or a > b:
        return False                       # nothing finite in the range
    if kind == "zero":
        return a <= 0 <= b
    if kind == "finite_not_L":
        return not (a == b == L_value)
    if kind == "positive_pow2":
        return b > 0 and _has_pow2(fmt, max(a, Fraction(0)), b)
    if kind == "nonzero_pow2":
        return (b > 0 and _has_pow2(fmt, max(a, Fraction(0)), b)) or (a < 0 and _has_pow2(fmt, max(-b, Fraction(0)), -a))
    if kind == "pass_pow2":
        t, one = Fraction(2) ** -fmt.M, Fraction(1)
        return ((b >= t and _has_pow2(fmt, max(a, t), min(b, one)))
                or (a <= -t and _has_pow2(fmt, max(-b, t), min(-a, one))))
    if kind == "pass_pow2_iii":
        lo_k, hi_k = max(-fmt.M, -fmt.e_max), min(0, -fmt.e_min + fmt.M)
        if lo_k > hi_k:
            return False
        t, u = Fraction(2) ** lo_k, Fraction(2) ** hi_k
        return ((b >= t and _has_pow2(fmt, max(a, t), min(b, u)))
                or (a <= -t and _has_pow2(fmt, max(-b, t), min(-a, u))))
    if kind == "abs_at_least_2^-M":
        t = Fraction(2) ** -fmt.M
        return b >= t or a <= -t
    raise ValueError(f"unknown kind {kind!r}")


def scans_apply(rounded) -> bool:
    """Whether the certified scans apply: a sympy expression and the "exact" implementation."""
    act = rounded.activation
    return not (act.is_callable or act.expr is None) and rounded.implementation == "exact"


@dataclass(kw_only=True)
class CoverScan:
    """What every certified scan records: its status ("refuted", "witness" or "undecided"), its costs,
    and on refutation the cover of intervals that proves it."""

    status: str
    intervals: int = 0                 # interval enclosures computed (of g or of g')
    points: int = 0                    # values evaluated by certain rounding
    reason: str = ""
    prec: int = 0
    seconds: float = 0.0
    cover: list = field(default_factory=list)   # (a, b, how), how in "e", "m", "p"

    def cover_text(self) -> str:
        return cover_text(self.cover)


@dataclass(kw_only=True)
class ExistsScan(CoverScan):
    """The outcome of :func:`scan_exists`."""

    function: str                      # "sigma" or "derivative"
    kind: str
    witness: Fraction | None = None
    witness_value: Fraction | None = None
    by_enclosure: int = 0
    by_monotonicity: int = 0

    def summary(self) -> str:
        g = "sigma~" if self.function == "sigma" else "sigma~'"
        return (f"{g} is never {KINDS[self.kind]} on any finite value of the format: {len(self.cover)} intervals "
                f"cover every value from -Omega to Omega ({self.by_enclosure} by interval enclosure, "
                f"{self.by_monotonicity} by monotonicity (sign of the interval enclosure of the derivative, "
                f"certain rounding at both ends), {self.points} single values by certain rounding; "
                f"{self.intervals} interval evaluations, {self.prec} bits, {self.seconds:.2f} s)")


def cover_text(cover) -> str:
    return " ".join(f"{how}[{hex_text(a)}, {hex_text(b)}]" for a, b, how in cover)


def scan_exists(rounded, function: str, kind: str, *, L_value=None, max_intervals: int = 4000,
                time_limit: float = 20.0, prec: int | None = None) -> ExistsScan:
    """Search every value of F for one where RN_F(g) is of ``kind`` (g = sigma or sigma'), or prove
    there is none (see the module docstring).  Needs a sympy expression and the "exact" implementation."""
    t0 = time.perf_counter()
    fmt = rounded.format
    act = rounded.activation
    if act.is_callable or act.expr is None:
        raise CondcheckError("the existence scan needs sympy expressions (a callable activation has none)")
    if rounded.implementation != "exact":
        raise CondcheckError("the existence scan certifies the correctly rounded ('exact') implementation only")
    if function not in ("sigma", "derivative"):
        raise ValueError(function)
    g = act.expr if function == "sigma" else act.derivative
    point = rounded.value if function == "sigma" else rounded.derivative
    slope = slopes(g)
    prec = prec or max(64, 2 * (fmt.M + 1) + 24)
    out = ExistsScan(status="undecided", function=function, kind=kind, prec=prec)
    om = Fraction(fmt.max)

    def at(q):
        try:
            return point(q)
        except FormatOverflowError:
            return None

    def hit_point(v):
        return v is not None and range_has(kind, v, v, fmt, L_value)

    stack = [(value_index(fmt, -om), value_index(fmt, om))]
    while stack:
        if out.intervals >= max_intervals or time.perf_counter() - t0 > time_limit:
            out.reason = (f"cap reached ({out.intervals} interval evaluations, {time.perf_counter() - t0:.1f} s; "
                          f"limits {max_intervals} and {time_limit:g} s)")
            break
        lo_i, hi_i = stack.pop()
        a, b = value_at(fmt, lo_i), value_at(fmt, hi_i)
        if lo_i == hi_i:
            v = at(a)
            out.points += 1
            if hit_point(v):
                out.status, out.witness, out.witness_value = "witness", a, v
                break
            out.cover.append((a, a, "p"))
            continue
        out.intervals += 1
        lo, hi = enclose_interval(g, a, b, prec)
        try:
            rl, rh = round_end(lo, fmt), round_end(hi, fmt)
        except CondcheckError:
            rl, rh = float("-inf"), float("inf")
        if not range_has(kind, rl, rh, fmt, L_value) and not (rl == float("-inf") and rh == float("inf")):
            out.by_enclosure += 1
            out.cover.append((a, b, "e"))
            continue
        if slope:
            out.intervals += 1
            if one_sign(slope, a, b, prec):
                va, vb = at(a), at(b)
                if hit_point(va):
                    out.points += 1
                    out.status, out.witness, out.witness_value = "witness", a, va
                    break
                if hit_point(vb):
                    out.points += 1
                    out.status, out.witness, out.witness_value = "witness", b, vb
                    break
                if va is not None and vb is not None and not range_has(kind, min(va, vb), max(va, vb), fmt, L_value):
                    out.by_monotonicity += 1
                    out.cover.append((a, b, "m"))
                    continue
        mid = lo_i + (hi_i - lo_i) // 2
        stack.append((mid + 1, hi_i))
        stack.append((lo_i, mid))
    else:
        out.status = "refuted"
    out.seconds = time.perf_counter() - t0
    return out
