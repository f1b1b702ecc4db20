"""Independent references for the format, rounding and ops tests.

Nothing here imports condcheck: every expected value in tests/test_formats.py, test_rounding.py and
test_ops.py comes from these functions, which derive it from first principles:

* the value set of a format: by decoding every bit pattern with numpy / ml_dtypes (``view``), or, for
  custom IEEE-like ``bM_E`` formats, with the IEEE 754 decoding formula applied to each bit pattern;
* RN (round to nearest, ties to even): ``NearestReference`` picks the nearest element of the sorted
  value list by brute force (ties: the element whose bit pattern ends in 0);
  ``round_scaled_ints`` is a second, integer-only implementation (vectorized over numpy object arrays
  of Python ints) used to check millions of operation results.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# Custom IEEE-like formats, with the ml_dtypes/numpy dtype that has the same value set (or None).
CUSTOM_TWINS = {
    "b2_6": None,
    "b3_6": None,
    "b3_4": ml_dtypes.float8_e4m3,
    "b2_5": ml_dtypes.float8_e5m2,
    "b4_3": ml_dtypes.float8_e3m4,
    "b10_5": np.float16,
    "b7_8": ml_dtypes.bfloat16,
    "b1_2": None,
    "b2_3": None,
}


def parse_custom(name: str) -> tuple[int, int]:
    m, e = name[1:].split("_")
    return int(m), int(e)


# ---- decoding bit patterns -------------------------------------------------------------------------

def dtype_bits(dtype) -> int:
    dt = np.dtype(dtype)
    try:
        return int(ml_dtypes.finfo(dt).bits)
    except (ValueError, TypeError, AttributeError):
        return int(np.finfo(dt).bits)


def decode_all_patterns(dtype) -> tuple[np.ndarray, np.ndarray]:
    """(patterns, float64 decoding) of every bit pattern of a <=16-bit dtype."""
    dt = np.dtype(dtype)
    bits = dtype_bits(dt)
    patterns = np.arange(2 ** bits, dtype=np.uint32).astype(UINT[dt.itemsize])
    with np.errstate(invalid="ignore", over="ignore"):
        decoded = patterns.view(dt).astype(np.float64)
    return patterns, decoded


def ieee_decode(pattern: int, M: int, E: int):
    """IEEE 754 decoding of a (1+E+M)-bit pattern: a Fraction, or 'inf'/'-inf'/'nan'."""
    bias = 2 ** (E - 1) - 1
    sign = -1 if (pattern >> (M + E)) & 1 else 1
    biased = (pattern >> M) & ((1 << E) - 1)
    frac = pattern & ((1 << M) - 1)
    if biased == (1 << E) - 1:
        return "nan" if frac else ("inf" if sign > 0 else "-inf")
    if biased == 0:
        mag = Fraction(frac, 2 ** M) * Fraction(2) ** (1 - bias)
    else:
        mag = Fraction(2 ** M + frac, 2 ** M) * Fraction(2) ** (biased - bias)
    return sign * mag


def ieee_encode(value: Fraction, M: int, E: int, negative: bool = False) -> int:
    """IEEE 754 encoding of a value that is exactly representable (no rounding)."""
    bias = 2 ** (E - 1) - 1
    s = 1 if (value < 0 or (value == 0 and negative)) else 0
    a = abs(Fraction(value))
    if a == 0:
        return s << (M + E)
    if a < Fraction(2) ** (1 - bias):          # subnormal
        frac = a / Fraction(2) ** (1 - bias - M)
        assert frac.denominator == 1
        return (s << (M + E)) | int(frac)
    e = a.numerator.bit_length() - a.denominator.bit_length()     # floor(log2(a)) or one more
    if a < Fraction(2) ** e:
        e -= 1
    sig = a / Fraction(2) ** (e - M)
    assert sig.denominator == 1 and 2 ** M <= sig < 2 ** (M + 1)
    return (s << (M + E)) | ((e + bias) << M) | (int(sig) - 2 ** M)


@dataclass
class Decoded:
    """Every bit pattern of a format, decoded independently of condcheck."""

    bits: int
    patterns: list[int]
    values: list            # Fraction, or one of 'inf', '-inf', 'nan'

    def finite(self) -> list[tuple[int, Fraction]]:
        return [(p, v) for p, v in zip(self.patterns, self.values) if isinstance(v, Fraction)]

    def finite_set(self) -> set[Fraction]:
        return {v for _, v in self.finite()}

    def sorted_values(self) -> list[Fraction]:
        return sorted(self.finite_set())

    def pattern_of(self) -> dict[Fraction, int]:
        """value -> bit pattern (for zero: the +0 pattern)."""
        out = {}
        for p, v in self.finite():
            if v == 0 and p != 0:
                continue
            out[v] = p
        return out


def decode_dtype(dtype) -> Decoded:
    patterns, decoded = decode_all_patterns(dtype)
    vals = []
    for x in decoded.tolist():
        if x != x:
            vals.append("nan")
        elif x in (float("inf"), float("-inf")):
            vals.append("inf" if x > 0 else "-inf")
        else:
            vals.append(Fraction(x))
    return Decoded(dtype_bits(dtype), [int(p) for p in patterns], vals)


def decode_custom(M: int, E: int) -> Decoded:
    bits = 1 + M + E
    pats = list(range(2 ** bits))
    return Decoded(bits, pats, [ieee_decode(p, M, E) for p in pats])


# ---- brute-force RN ---------------------------------------------------------------------------------

class NearestReference:
    """RN by brute force on a sorted value list: the nearest element, ties to the even significand.

    "Even" is read off the bit pattern (last bit 0).  Above Omega the grid continues with one more
    point, Omega + (Omega - predecessor) (of opposite parity, as consecutive values always are); a result
    that is nearest to that point, or beyond it, is an overflow (None).
    """

    def __init__(self, decoded: Decoded):
        pat = decoded.pattern_of()
        self.pos = [v for v in decoded.sorted_values() if v >= 0]          # 0 first
        self.even = [pat[v] % 2 == 0 for v in self.pos]
        top, below = self.pos[-1], self.pos[-2]
        self.omega_max = top
        self.pos.append(top + (top - below))
        self.even.append(not self.even[-1])

    def round(self, x) -> Fraction | None:
        x = Fraction(x)
        if x < 0:
            r = self.round(-x)
            return None if r is None else -r
        i = bisect.bisect_left(self.pos, x)
        if i == len(self.pos):
            return None
        if self.pos[i] == x:
            choice = i
        else:
            lo, hi = i - 1, i
            dlo, dhi = x - self.pos[lo], self.pos[hi] - x
            if dlo < dhi:
                choice = lo
            elif dhi < dlo:
                choice = hi
            else:
                choice = lo if self.even[lo] else hi
                assert self.even[lo] != self.even[hi]
        if choice == len(self.pos) - 1:
            return None
        return self.pos[choice]

    def midpoints(self) -> list[Fraction]:
        """Every midpoint between consecutive non-negative grid points (incl. the one above Omega)."""
        return [(a + b) / 2 for a, b in zip(self.pos, self.pos[1:])]


# ---- integer-only RN, vectorized over object arrays -------------------------------------------------

_bit_length = np.frompyfunc(lambda n: n.bit_length(), 1, 1)


def split_exact(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every finite float64 as N * 2**t with Python-int N (object array) and int64 t, exactly."""
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(x)                                  # x = m * 2**e, 0.5 <= |m| < 1 (exact)
    n = np.ldexp(m, 53).astype(np.int64)                # exact: m has at most 53 significant bits
    assert np.array_equal(np.ldexp(n.astype(np.float64), e - 53), x)
    return n.astype(object), (e - 53).astype(np.int64)


def exact_sum(n1, t1, n2, t2):
    """N * 2**t = n1 * 2**t1 + n2 * 2**t2 exactly (object-array Python ints)."""
    t = np.minimum(t1, t2)
    n = n1 * (2 ** (t1 - t).astype(object)) + n2 * (2 ** (t2 - t).astype(object))
    return n, t


def exact_product(n1, t1, n2, t2):
    return n1 * n2, t1 + t2


def round_scaled_ints(n, t, M: int, e_min: int, omega_max: Fraction):
    """RN of N * 2**t onto the grid (M fraction bits, smallest normal 2**e_min, unbounded above).

    Integer arithmetic only.  Returns (float64 rounded value, overflow mask); overflow means the
    rounded value exceeds omega_max.  Ties go to the even integer significand.
    """
    n = np.asarray(n, dtype=object)
    t = np.asarray(t, dtype=np.int64)
    neg = np.array(n < 0, dtype=bool)
    a = np.where(neg, -n, n).astype(object)
    zero = np.array(a == 0, dtype=bool)
    L = np.array(_bit_length(a), dtype=np.int64)                 # a in [2**(L-1), 2**L)
    ev = L - 1 + t                                               # floor(log2(value))
    q = np.maximum(ev, e_min) - M                                # quantum exponent
    sh = np.maximum(q - t, 0)
    q = np.where(q - t > 0, q, t)                                # no shift: value is already on grid
    sh_o = sh.astype(object)
    r = a >> sh_o
    rem = a - (r << sh_o)
    half = (np.ones_like(sh_o) << sh_o) >> 1
    up = np.array((sh > 0) & ((rem > half) | ((rem == half) & (r % 2 == 1))), dtype=bool)
    r = r + up.astype(np.int64).astype(object)
    # r * 2**q is the rounded magnitude; r fits float64 exactly (r <= 2**(M+1) or r = a < 2**(M+1)).
    rf = np.array([float(v) for v in r.tolist()], dtype=np.float64)
    mag = np.ldexp(rf, q)
    mag[zero] = 0.0
    assert Fraction(float(omega_max)) == omega_max
    over = ~(mag <= float(omega_max))
    out = np.where(neg, -mag, mag)
    out[over] = np.where(neg[over], -np.inf, np.inf)
    return out, over
