"""Small helpers shared by the condition checkers: exact dyadic logs, candidate points, vectorized
range-minimum queries and exact float64 interval bounds."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck import formats
from condcheck.formats import Format

NO_DERIVATIVE_EXPONENT = -(10 ** 9)   # ceil(log2 0): smaller than every real exponent


def floor_log2(q) -> int:
    """floor(log2 q) for a rational q > 0 (any exact number), exactly."""
    return formats.floor_log2(Fraction(q))


def ceil_log2(q: Fraction) -> int:
    """ceil(log2 q) for q > 0, exactly."""
    q = Fraction(q)
    f = floor_log2(q)
    return f if q == Fraction(2) ** f else f + 1


def power_of_two_exponent(q) -> int | None:
    """k with |q| = 2**k, or None if |q| is not a power of two (or is 0)."""
    q = abs(Fraction(q))
    if q == 0:
        return None
    n, d = q.numerator, q.denominator
    if n & (n - 1) or d & (d - 1):
        return None
    if n != 1 and d != 1:
        return None
    return n.bit_length() - 1 if d == 1 else -(d.bit_length() - 1)


def binade_distance_key(q: Fraction):
    """Preference key "nearest to 1 in binades, then smallest magnitude, then positive first"."""
    a = abs(Fraction(q))
    return (abs(floor_log2(a)), a, q < 0)


def safe_eval(fn, q):
    """fn(q) as a Fraction, or None on overflow."""
    try:
        return fn(q)
    except FormatOverflowError:
        return None


def power_of_two_exponents(fmt: Format, full_limit: int = 700, near: int = 64, stride: int = 16) -> list[int]:
    """Exponents j for the candidate points +-2**j: every exponent of the format when there are at
    most ``full_limit`` of them, otherwise every |j| <= ``near``, every ``stride``-th beyond, and the
    extremes (smallest subnormal, the one above it, smallest normal, largest binade)."""
    lo, hi = fmt.e_min - fmt.M, fmt.e_max
    if hi - lo + 1 <= full_limit:
        return list(range(lo, hi + 1))
    js = {j for j in range(lo, hi + 1) if abs(j) <= near or j % stride == 0}
    js |= {lo, lo + 1, fmt.e_min, hi, hi - 1}
    return sorted(js)


def candidate_points(fmt: Format, small_integers: int = 16) -> list[Fraction]:
    """The deterministic symbolic candidate set: 0, +-2**j (see :func:`power_of_two_exponents`),
    +-n for n = 1..``small_integers``, +-3*2**j for |j| <= 8, and +-Omega; only values of ``fmt``."""
    pts = {Fraction(0), fmt.max, -fmt.max}
    for j in power_of_two_exponents(fmt):
        pts.add(Fraction(2) ** j)
        pts.add(-Fraction(2) ** j)
    for n in range(1, small_integers + 1):
        pts.add(Fraction(n))
        pts.add(Fraction(-n))
    for j in range(-8, 9):
        pts.add(3 * Fraction(2) ** j)
        pts.add(-3 * Fraction(2) ** j)
    return sorted((p for p in pts if fmt.contains(p)), key=lambda p: (abs(p), p < 0))


def value_index(fmt: Format, q: Fraction) -> int:
    """An order-preserving integer index of a finite value (bit pattern of |q|, signed)."""
    q = Fraction(q)
    return fmt.to_bits(q) if q >= 0 else -fmt.to_bits(-q)


def value_at(fmt: Format, i: int) -> Fraction:
    return fmt.from_bits(i) if i >= 0 else -fmt.from_bits(-i)


# ---- vectorized float64 helpers (exhaustive checkers) ----------------------------------------------
def ceil_log2_array(a: np.ndarray) -> np.ndarray:
    """ceil(log2 |a|) elementwise (exact; NO_DERIVATIVE_EXPONENT where a == 0)."""
    a = np.abs(np.asarray(a, dtype=np.float64))
    m, e = np.frexp(a)                         # a = m * 2**e, m in [0.5, 1)
    out = np.where(m == 0.5, e - 1, e).astype(np.int64)
    return np.where(a == 0, NO_DERIVATIVE_EXPONENT, out)


def power_of_two_array(a: np.ndarray):
    """(is |a| a power of two, its exponent) elementwise."""
    a = np.abs(np.asarray(a, dtype=np.float64))
    m, e = np.frexp(a)
    return (m == 0.5) & np.isfinite(a), (e - 1).astype(np.int64)


def exact_lower_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """lb with: for every float64 x, x >= a + b (exact real sum) iff x >= lb."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)             # TwoSum: a + b == s + err exactly
    return np.where(err > 0, np.nextafter(s, np.inf), s)


def exact_upper_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ub with: for every float64 x, x <= a + b (exact real sum) iff x <= ub."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return np.where(err < 0, np.nextafter(s, -np.inf), s)


class RangeMin:
    """Sparse table for vectorized range-argmin queries over a fixed integer array."""

    def __init__(self, values: np.ndarray):
        self.values = np.asarray(values, dtype=np.int64)
        n = self.values.size
        self.levels = [np.arange(n, dtype=np.int64)]
        j = 1
        while (1 << j) <= n:
            prev, half = self.levels[-1], 1 << (j - 1)
            a = prev[: n - (1 << j) + 1]
            b = prev[half: half + n - (1 << j) + 1]
            self.levels.append(np.where(self.values[a] <= self.values[b], a, b))
            j += 1

    def argmin(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Index of the minimum over [lo, hi) for each query; -1 for empty ranges."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        out = np.full(lo.shape, -1, dtype=np.int64)
        ok = hi > lo
        if not ok.any():
            return out
        length = np.where(ok, hi - lo, 1)
        j = np.floor(np.log2(length)).astype(np.int64)
        j = np.where((1 << (j + 1)) <= length, j + 1, j)          # guard against log2 rounding
        j = np.where((1 << j) > length, j - 1, j)
        for jj in np.unique(j[ok]):
            m = ok & (j == jj)
            a = self.levels[jj][lo[m]]
            b = self.levels[jj][hi[m] - (1 << int(jj))]
            out[m] = np.where(self.values[a] <= self.values[b], a, b)
        return out

    def argmin_pieces(self, pieces) -> np.ndarray:
        """Argmin over a union of [lo, hi) pieces (list of (lo, hi) array pairs); -1 if all empty."""
        best = None
        for lo, hi in pieces:
            r = self.argmin(lo, hi)
            if best is None:
                best = r
                continue
            take = (r >= 0) & ((best < 0) | (self.values[np.maximum(r, 0)] < self.values[np.maximum(best, 0)]))
            best = np.where(take, r, best)
        return best


def subtract_range(pieces, x, y):
    """Remove index range [x, y) from each [lo, hi) piece (arrays); returns the new piece list."""
    out = []
    for lo, hi in pieces:
        out.append((lo, np.minimum(hi, x)))
        out.append((np.maximum(lo, y), hi))
    return out


def verdict_names(condition: int, rounded) -> dict:
    """The identifying fields of a Verdict for this condition and rounded activation."""
    return dict(condition=condition, activation=rounded.activation.name, format=rounded.format.name,
                implementation=rounded.implementation)


def resolve_format(rounded, fmt):
    """The rounded activation's format; a different explicitly given format is an error."""
    if fmt is not None and getattr(fmt, "name", fmt) != rounded.format.name:
        raise CondcheckError(f"format {getattr(fmt, 'name', fmt)} does not match the rounded activation's "
                             f"format {rounded.format.name}")
    return rounded.format


def exhaustive_format(condition: int, rounded, fmt):
    """resolve_format, refusing formats too wide for an exhaustive check (more than 16 bits)."""
    fmt = resolve_format(rounded, fmt)
    if fmt.bits > 16:
        raise CondcheckError(f"the exhaustive Condition {condition} check is for formats of at most 16 bits; "
                             f"{fmt.name} has {fmt.bits} (use check_symbolic)")
    return fmt
