"""Exact dyadic numbers as Coq terms, and the real bounds a rounding proof needs.

A value of a format is written ``Float radix2 m e`` (value m * 2^e) with m odd (or 0 as ``Dzero``), the
smallest significand, which the Coq library's ``is_value_b`` checks against 2^(M+1).

:func:`bracket` chooses, for a real y = sigma(z) known to round to v, two dyadics lo <= y <= hi that round
to v themselves; the Coq library's ``fact_by_bounds`` then proves RN(y) = v from ``lo <= y <= hi``
(RN is monotone), which the ``interval`` tactic proves.  lo and hi are the rounding boundaries
(midpoints to the neighbours) when ties there go to v (v has an even significand), else dyadics
halfway between the boundary and y: the margin left to ``interval`` is reported, so that a caller can
set the working precision (:func:`precision_for`).
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from condcheck.errors import FormatOverflowError
from condcheck.formats import Format
from condcheck.rounding import midpoints_around, round_fraction


def parts(q) -> tuple[int, int]:
    """(m, e) with q = m * 2^e, m odd (or (0, 0) for zero)."""
    q = Fraction(q)
    if q == 0:
        return 0, 0
    n, d = q.numerator, q.denominator
    if d & (d - 1):
        raise ValueError(f"{q} is not a dyadic rational")
    e = -(d.bit_length() - 1)
    while n % 2 == 0:
        n //= 2
        e += 1
    return n, e


def term(q) -> str:
    """The Coq term of a dyadic value (``Dzero`` for 0)."""
    m, e = parts(q)
    if m == 0:
        return "Dzero"
    return f"(Float radix2 ({m}) ({e}))"


def real_text(q) -> str:
    """A short readable decimal or fraction of q for comments."""
    q = Fraction(q)
    if q.denominator == 1:
        return str(q.numerator)
    f = float(q)
    return repr(f) if Fraction(f) == q and len(repr(f)) < 16 else str(q)


def _rounds_to(q: Fraction, v: Fraction, fmt: Format) -> bool:
    try:
        return round_fraction(q, fmt) == v
    except FormatOverflowError:
        return False


def floor_log2(q: Fraction) -> int:
    """floor(log2 q) for a positive rational, exactly (no float: gaps below 2^-1074 occur on float64)."""
    q = Fraction(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > q else e


def _inner(mid: Fraction, y: Fraction) -> Fraction:
    """A dyadic strictly between mid and y (closer to the middle), with few bits."""
    gap = abs(y - mid)
    k = 2 - floor_log2(gap)                     # 2^-k <= gap / 4
    t = (mid + y) / 2
    unit = Fraction(2) ** k
    scaled = t * unit
    r = Fraction(math.floor(scaled) if y > mid else math.ceil(scaled)) / unit
    assert min(mid, y) < r < max(mid, y) or r == y
    return r


def mpf_fraction(y: mpmath.mpf) -> Fraction:
    """The exact value of an mpmath number, sign included."""
    # y's own bits: mpmath.mpf(y) would round it to the current precision (53 bits by default)
    sign, man, exp, _ = (y if isinstance(y, mpmath.mpf) else mpmath.mpf(y))._mpf_
    if not man:
        return Fraction(0)
    q = Fraction(int(man)) * (Fraction(2) ** int(exp))
    return -q if sign else q


def bracket(y: mpmath.mpf, v: Fraction, fmt: Format) -> tuple[Fraction, Fraction, Fraction]:
    """(lo, hi, margin): dyadics lo <= y <= hi that round to v, and min(y - lo, hi - y)."""
    yq = mpf_fraction(y) if isinstance(y, mpmath.mpf) else Fraction(y)
    m_lo, m_hi = midpoints_around(v, fmt)
    if not m_lo < yq < m_hi and not (yq == m_lo and _rounds_to(m_lo, v, fmt)) \
            and not (yq == m_hi and _rounds_to(m_hi, v, fmt)):
        raise ValueError(f"internal: {float(yq)!r} does not round to {v} in {fmt.name}")
    lo = m_lo if _rounds_to(m_lo, v, fmt) else _inner(m_lo, yq)
    hi = m_hi if _rounds_to(m_hi, v, fmt) else _inner(m_hi, yq)
    return lo, hi, min(yq - lo, hi - yq)


def precision_for(margin: Fraction, scale: float) -> int:
    """Bits of working precision for ``interval`` to separate a value of size ``scale`` from a bound
    ``margin`` away (with room for the error of the evaluation)."""
    if margin <= 0:
        return 200
    bits = math.log2(max(scale, 1e-300)) - floor_log2(Fraction(margin))
    return max(30, int(math.ceil(bits)) + 12)
