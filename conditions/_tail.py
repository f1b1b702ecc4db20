"""Certified range check of Condition 1's dead tail (clause (a)) for formats too wide to enumerate.

Clause (a) says: every finite z <= z_d of F has sigma~(z) = L and sigma~'(z) = 0.  For float32 that is
about 2^31 values, for float64 2^63; they are covered here by finitely many *intervals of format
values*, each proved with interval arithmetic over the whole real interval between its ends:

* **enclosures over an interval**: the compiled expression tree of :mod:`condcheck.intervals` is walked
  with :class:`IntervalMpBackend`, the mpmath backend fed an interval ``[a, b]`` instead of a point.
  Every operation of that backend is already an interval operation (directed rounding for +, -, *, /,
  sqrt; exp, expm1, log, log1p, erf, tanh, sinh, atan, asinh are increasing and erfc is decreasing, so
  they are enclosed from their ends; cosh, sin, cos, powers and Abs handle their turning points).
  Piecewise conditions are decided over the whole interval (tri-state: true on all of it, false on
  all of it, or undecided); where undecided, the enclosure is the hull of every branch that may be
  taken, which is sound (and is narrowed by bisection, which splits at the breakpoints).
* **the proof obligation** for an interval [a, b]: the enclosure of sigma lies in the exact set
  R(L) = {y real : RN_F(y) = L} and the enclosure of sigma' lies in R(0).  R(v) is an interval between
  the midpoints to v's neighbours; whether each end belongs to it (ties-to-even) is decided by
  ``round_fraction`` on the midpoint itself, with Fractions, so the boundary is exact (e.g. R(0) is
  the closed [-omega/2, omega/2]: omega/2 rounds to the even 0).  All comparisons are exact rational
  comparisons of the enclosure's mpf ends.  Then every real in [a, b] rounds correctly, in particular
  every format value in it.
* **covering**: the ordinals (signed bit patterns, :func:`conditions._search.value_index`) of the
  format's values from -Omega up are bisected depth first, left half first.  An interval that is not
  proved is split at its middle ordinal; a single value is decided by the certain point rounding
  (Ziv's strategy, :mod:`condcheck.rounded_activation`).  The first single value that is not dead ends
  the scan: every value before it has been proved dead, so z_d is its predecessor, exactly the z_d of
  the exhaustive checker (the largest value with the tail property).  Bisection in ordinal space halves
  the number of binades of wide intervals, so far-out intervals (-2^(k+1), -2^k and wider) are proved
  in a few steps and the work concentrates near z_d.
* **caps**: at most ``max_intervals`` interval evaluations and ``time_limit`` seconds; beyond that the
  result is "undecided" with the range proved so far.  Nothing is ever sampled.

ASSUMPTION: the same as :mod:`condcheck.intervals` (mpmath's elementary and special functions are
accurate within 2^-(prec-8) relative at the working precision).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath.libmp as L

from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import Format, num_text
from condcheck.intervals import MpBackend, compile_expression, decided_by_sign
from condcheck.rounding import round_fraction

from ._search import safe_eval, value_at, value_index

__all__ = ["IntervalMpBackend", "enclose_interval", "rounding_set", "TailScan", "scan_dead_tail"]

_F0, _FINF, _FNINF = L.fzero, L.finf, L.fninf


class IntervalMpBackend(MpBackend):
    """:class:`MpBackend` on an interval ``X = (None, (lo, hi))`` of raw mpf numbers.

    Conditions are tri-state (True / False / None = undecided on the interval)."""

    def sign_decide(self, d, rel, X, exact):
        lo, hi = d
        if lo == hi and X[0] is not None:
            return super().sign_decide(d, rel, X, exact)
        c_lo, c_hi = L.mpf_cmp(lo, _F0), L.mpf_cmp(hi, _F0)
        yes, no = decided_by_sign(rel, c_lo, c_hi)
        return True if yes else (False if no else None)

    def logical(self, op, parts):
        if op == "and":
            return False if any(p is False for p in parts) else (True if all(p is True for p in parts) else None)
        if op == "or":
            return True if any(p is True for p in parts) else (False if all(p is False for p in parts) else None)
        return None if parts[0] is None else (not parts[0])

    def piecewise(self, branches, X):
        los, his = [], []
        for val_fn, cond_fn in branches:
            c = cond_fn(self, X)
            if c is False:
                continue
            try:
                lo, hi = val_fn(self, X)
            except CondcheckError:
                return _FNINF, _FINF
            los.append(lo)
            his.append(hi)
            if c is True:
                break
        else:
            return _FNINF, _FINF             # some points may take no branch: no enclosure
        lo, hi = los[0], his[0]
        for a, b in zip(los[1:], his[1:]):
            lo = a if L.mpf_lt(a, lo) else lo
            hi = b if L.mpf_gt(b, hi) else hi
        return lo, hi


def enclose_interval(expr, a, b, prec: int = 128):
    """(lo, hi) raw mpf numbers with lo <= expr(x) <= hi for every real x in [a, b] (exact rationals)."""
    a, b = Fraction(a), Fraction(b)
    if a > b:
        raise ValueError("empty interval")
    B = IntervalMpBackend(prec)
    lo = L.from_rational(a.numerator, a.denominator, prec, "f")
    hi = L.from_rational(b.numerator, b.denominator, prec, "c")
    try:
        return compile_expression(expr).fn(B, (a if a == b else None, (lo, hi)))
    except CondcheckError:
        return _FNINF, _FINF


def _exact_mpf(q: Fraction):
    """A dyadic rational as an exact raw mpf."""
    d = q.denominator
    if d & (d - 1):
        raise ValueError(f"{q} is not dyadic")
    return L.from_man_exp(q.numerator, -(d.bit_length() - 1))


@dataclass(frozen=True)
class RoundingSet:
    """{y : RN_F(y) = v}: the interval between lo and hi, each end included iff the flag says so."""

    v: Fraction
    lo: Fraction
    lo_closed: bool
    hi: Fraction
    hi_closed: bool

    def contains_enclosure(self, enc) -> bool:
        a, b = enc
        if a == L.fnan or b == L.fnan:
            return False
        lo, hi = _exact_mpf(self.lo), _exact_mpf(self.hi)
        ok_lo = L.mpf_ge(a, lo) if self.lo_closed else L.mpf_gt(a, lo)
        ok_hi = L.mpf_le(b, hi) if self.hi_closed else L.mpf_lt(b, hi)
        return bool(ok_lo and ok_hi)

    def text(self) -> str:
        return (f"{'[' if self.lo_closed else '('}{num_text(self.lo)}, {num_text(self.hi)}"
                f"{']' if self.hi_closed else ')'}")


def _rounds_to(y: Fraction, v: Fraction, fmt: Format) -> bool:
    try:
        return round_fraction(y, fmt) == v
    except FormatOverflowError:
        return False


def rounding_set(fmt: Format, v) -> RoundingSet:
    """The exact set of reals that RN_F rounds to the format value ``v`` (ties-to-even decided by
    rounding the midpoints themselves)."""
    v = fmt.check(v)
    if v < fmt.max:
        up = fmt.next_up(v)
    else:                                    # beyond Omega: the overflow threshold Omega + ulp/2
        up = v + (v - fmt.next_down(v))
    if v > -fmt.max:
        dn = fmt.next_down(v)
    else:
        dn = v - (fmt.next_up(v) - v)
    m_hi, m_lo = (v + up) / 2, (v + dn) / 2
    return RoundingSet(v, m_lo, _rounds_to(m_lo, v, fmt), m_hi, _rounds_to(m_hi, v, fmt))


@dataclass
class TailScan:
    """The outcome of :func:`scan_dead_tail`.

    status: "dead-to" (every value from -Omega to ``z_dead`` proved dead, and ``first_live`` is the
    next value, certified not dead; ``first_live`` is None when the whole format is dead), or
    "not-dead-at-start" (-Omega itself is not dead), or "undecided" (a cap was hit; ``proved_to`` is
    the largest value up to which everything was proved dead, or None)."""

    status: str
    L: Fraction | None
    z_dead: Fraction | None = None
    first_live: Fraction | None = None
    proved_to: Fraction | None = None
    intervals: int = 0                 # interval enclosures computed
    proved_intervals: int = 0          # intervals (of more than one value) proved by an enclosure
    proved_points: int = 0             # single values decided by the certain point rounding
    dead_count: int = 0
    widest: tuple | None = None        # (a, b) the interval with the most values proved in one go
    reason: str = ""
    value_set: RoundingSet | None = None
    derivative_set: RoundingSet | None = None
    prec: int = 0
    seconds: float = 0.0
    cover: list = field(default_factory=list)   # the proved (a, b), in order ((a, a): a single value)


def _dead_at(rounded, q):
    return safe_eval(rounded.value, q), safe_eval(rounded.derivative, q)


def scan_dead_tail(rounded, *, max_intervals: int = 4000, time_limit: float = 20.0,
                   prec: int | None = None, up_to=None) -> TailScan:
    """Prove, from -Omega up, the longest run of dead values (sigma~ = L, sigma~' = 0) of F.

    ``up_to``: a value of F; scan only [-Omega, up_to] (a claim "everything up to up_to is dead" is then
    proved, status "dead-to" with ``first_live`` None, or refuted by ``first_live``).  Needs sympy
    expressions for sigma and sigma' and the "exact" (correctly rounded) implementation."""
    t0 = time.perf_counter()
    fmt = rounded.format
    act = rounded.activation
    if act.is_callable or act.expr is None:
        raise CondcheckError("the range check needs sympy expressions (a callable activation has none)")
    if rounded.implementation != "exact":
        raise CondcheckError("the range check certifies the correctly rounded ('exact') implementation only")
    prec = prec or max(64, 2 * (fmt.M + 1) + 24)
    om = fmt.max
    L_val, dL = _dead_at(rounded, -om)
    out = TailScan(status="undecided", L=L_val, prec=prec)
    if L_val is None or dL != 0:
        out.status = "not-dead-at-start"
        out.seconds = time.perf_counter() - t0
        return out
    vset = rounding_set(fmt, L_val)
    dset = rounding_set(fmt, Fraction(0))
    out.value_set, out.derivative_set = vset, dset
    i0, i1 = value_index(fmt, -om), value_index(fmt, om if up_to is None else fmt.check(up_to))
    stack = [(i0, i1)]                 # depth first, left half first: pop from the end
    proved_to = None                   # ordinal up to which everything is proved dead
    best = 0
    while stack:
        if out.intervals >= max_intervals or time.perf_counter() - t0 > time_limit:
            out.reason = (f"cap reached ({out.intervals} interval enclosures, "
                          f"{time.perf_counter() - t0:.1f} s; limits {max_intervals} and {time_limit:g} s)")
            break
        lo_i, hi_i = stack.pop()
        a, b = value_at(fmt, lo_i), value_at(fmt, hi_i)
        if lo_i == hi_i:
            s, d = _dead_at(rounded, a)
            out.proved_points += 1
            if s == L_val and d == 0:
                proved_to = hi_i
                out.cover.append((a, a))
                continue
            out.status = "dead-to"
            out.first_live = a
            break
        out.intervals += 1
        es = enclose_interval(act.expr, a, b, prec)
        if vset.contains_enclosure(es) and dset.contains_enclosure(enclose_interval(act.derivative, a, b, prec)):
            proved_to = hi_i
            out.proved_intervals += 1
            out.cover.append((a, b))
            if hi_i - lo_i + 1 > best:
                best = hi_i - lo_i + 1
                out.widest = (a, b)
            continue
        mid = lo_i + (hi_i - lo_i) // 2
        stack.append((mid + 1, hi_i))
        stack.append((lo_i, mid))
    else:
        out.status = "dead-to"          # the whole (scanned) range is dead
    if proved_to is not None:
        out.proved_to = value_at(fmt, proved_to)
        out.dead_count = proved_to - i0 + 1
        if out.status == "dead-to":
            out.z_dead = out.proved_to
    elif out.status == "dead-to":       # -Omega was checked dead above, so this cannot happen
        raise AssertionError("internal: scan ended without proving -Omega")
    out.seconds = time.perf_counter() - t0
    return out
