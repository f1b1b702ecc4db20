"""RN_F: round to nearest, ties to even (docs/semantics.md).  The one rounding rule of condcheck.

``round_fraction`` is the reference: exact integer arithmetic on a rational, no float in between.
``round_array`` is the vectorized path for float64 arrays; it is exact on its input (scaling by powers
of two and ``np.rint``, which rounds half to even), so it equals ``round_fraction`` whenever the float64
input *is* the exact result.  ``condcheck.ops`` says when that is the case.

Overflow: the result is rounded on the format's grid extended without an upper exponent bound; if it
exceeds Omega the result is an overflow (IEEE: Inf; ``fn`` formats: NaN).  So 248 overflows in
float8_e4m3 (the tie between 240 and 256 goes to the even 256), and 464 rounds to 448 in float8_e4m3fn.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from .errors import FormatOverflowError
from .formats import Format, floor_log2, num_text


def _round_positive(a: Fraction, fmt: Format) -> Fraction:
    """RN of a > 0 on the unbounded-above grid of fmt (may exceed Omega)."""
    e = max(floor_log2(a), fmt.e_min)
    s = e - fmt.M                                  # quantum 2**s
    n, d = a.numerator, a.denominator
    if s >= 0:
        d <<= s
    else:
        n <<= -s
    q, r = divmod(n, d)                            # a / 2**s = q + r/d
    twice = 2 * r
    if twice > d or (twice == d and q % 2 == 1):
        q += 1
    return Fraction(q) * Fraction(2) ** s


def round_fraction(x, fmt: Format, *, what: str = "result") -> Fraction:
    """RN_F(x) for an exact rational x; raises FormatOverflowError beyond Omega."""
    x = Fraction(x)
    if x == 0:
        return Fraction(0)
    r = _round_positive(abs(x), fmt)
    if r > fmt.max:
        raise FormatOverflowError(f"{what} {num_text(x, 6)} overflows {fmt.name} "
                                  f"(largest finite {num_text(fmt.max, 6)})")
    return r if x > 0 else -r


def round_or_none(x, fmt: Format) -> Fraction | None:
    """RN_F(x), or None on overflow."""
    try:
        return round_fraction(x, fmt)
    except FormatOverflowError:
        return None


def round_down_up(x, fmt: Format) -> tuple[Fraction | None, Fraction | None]:
    """The values of fmt just below-or-at and just above-or-at x (None beyond the range)."""
    x = Fraction(x)
    r = round_or_none(x, fmt)
    if r is None:
        return (fmt.max, None) if x > 0 else (None, -fmt.max)
    if r == x:
        return r, r
    if r < x:
        return r, (fmt.next_up(r) if r < fmt.max else None)
    return (fmt.next_down(r) if r > -fmt.max else None), r


def midpoints_around(v: Fraction, fmt: Format) -> tuple[Fraction, Fraction]:
    """The rounding boundaries on each side of the value v: RN_F maps (lo, hi) to v, lo and hi are ties."""
    lo_n = fmt.next_down(v) if v > -fmt.max else v - (fmt.next_up(v) - v)
    hi_n = fmt.next_up(v) if v < fmt.max else v + (v - fmt.next_down(v))
    return (lo_n + v) / 2, (v + hi_n) / 2


def mpf_to_fraction(x: mpmath.mpf) -> Fraction:
    """An mpmath number is a dyadic rational; return it exactly."""
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp) if man else Fraction(0)


def round_mpf(x, fmt: Format) -> Fraction:
    """RN_F of the exact value of an mpmath number (no double rounding)."""
    if not mpmath.isfinite(x):
        raise FormatOverflowError(f"value {x} is not finite")
    return round_fraction(mpf_to_fraction(x), fmt)


_BINARY = {np.dtype(np.float64): (52, np.int64), np.dtype(np.float32): (23, np.int32)}


def round_float(v: float, fmt: Format) -> float | None:
    """RN_F of one float64 that *is* the exact value to round; None on overflow (or a non-finite v).

    The scalar twin of ``round_array`` for the constructor's many single operations: scaling by a
    power of two is exact, and Python's ``round`` of a float rounds half to even exactly.
    """
    if v == 0 or not math.isfinite(v):
        return float(v) if v == 0 else None
    _, e = math.frexp(v)                               # |v| in [2^(e-1), 2^e)
    q = max(e - 1, fmt.e_min) - fmt.M                 # quantum exponent
    r = math.ldexp(round(math.ldexp(v, -q)), q)
    return None if abs(r) > fmt.max_float else r


def round_array(x: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """RN_F of every element of a float64 (or float32) array, exactly.  Returns (rounded, overflow mask).

    The result has the input's dtype.  Normal range: the classic ties-to-even bit trick on the binary
    encoding, sign bit included (add half an ulp of F minus one, plus the last kept bit, then clear the
    dropped bits; a carry moves into the exponent as it should).  Below F's smallest normal:
    ``(x + K) - K`` with ``ulp(K)`` = F's subnormal spacing and K of x's sign, where the machine
    addition itself rounds to nearest-even.  Requires F's values to be normal numbers of the input
    dtype (``Format.fits_float64``, or ``ops.working_dtype(fmt) == float32``).  Non-finite inputs
    count as overflow; overflowed entries hold +-Inf.
    """
    x = np.asarray(x)
    if x.ndim == 0:                                   # a scalar: round it as a 1-element array
        r, over = round_array(x.reshape(1), fmt)
        return r.reshape(()), over.reshape(())
    if x.dtype not in _BINARY:
        x = x.astype(np.float64)
    key = (id(fmt), x.dtype)
    hit = _PLANS.get(key)
    if hit is None or hit[0] is not fmt:
        hit = _PLANS[key] = (fmt, _plan(fmt, x.dtype))
    kind, shift, small_bits, max_bits, k_abs = hit[1][:5]
    if kind == "cast":
        # F is IEEE binary32: numpy's conversion rounds to nearest, ties to even, with
        # subnormals and overflow to Inf, as the bit trick does; + 0.0 makes a zero +0, as the trick's
        # (x + K) - K does (tests/test_rounding.py compares the two)
        with np.errstate(over="ignore", invalid="ignore"):
            r = x.astype(hit[1][5]).astype(x.dtype) + x.dtype.type(0.0)
        over = ~np.isfinite(r)
        if over.any():
            r[over] = np.copysign(np.inf, x[over])
        return r, over
    if kind == "identity":
        over = ~np.isfinite(x)
        r = x.copy()
        r[over] = np.copysign(np.inf, x[over])
        return r, over
    if kind == "elementwise":
        return _round_array_elementwise(x, fmt)
    # the integer constants as 0-d arrays of the integer type: numpy's operations with a scalar operand
    # cost three times those with an array (its scalar conversion), and the arrays here are often tiny
    int_t, half_m1, clear, magnitude_bits, shift_a, one_a = hit[1][5:]
    b = x.view(int_t)
    rb = b >> shift_a
    rb &= one_a
    rb += b
    rb += half_m1
    rb &= clear
    r = rb.view(x.dtype)
    if not b.size:
        return r, np.zeros(x.shape, dtype=bool)
    mag = b & magnitude_bits
    if _min(mag, axis=None) < small_bits:
        small = mag < small_bits
        K = np.copysign(x.dtype.type(k_abs), x)
        with np.errstate(invalid="ignore"):          # Inf/NaN inputs are flagged as overflow below
            r = np.where(small, (x + K) - K, r)
    if _max(mag, axis=None) <= max_bits:             # every |x| <= Omega (so no NaN): nothing overflows
        return r, np.zeros(x.shape, dtype=bool)
    # NaN inputs count as overflow explicitly: a NaN payload near all-ones carries through the sign bit
    # in the integer addition above and would otherwise come out as a (non-overflowing) zero.
    over = ((rb & magnitude_bits) > max_bits) | np.isnan(x)
    if over.any():
        r[over] = np.copysign(np.inf, x[over])
    return r, over


_min, _max = np.minimum.reduce, np.maximum.reduce


_PLANS: dict = {}      # (id(fmt), dtype) -> (fmt, plan): hashing a Format per call would cost more than rounding

#: float64 arrays rounded to binary32 by numpy's conversion to float32 (about 4 times faster than the bit
#: trick); False: by the bit trick (tests compare the two)
CAST = True


def _plan(fmt: Format, dtype) -> tuple:
    """How round_array rounds fmt in dtype, with its constants computed once:
    ("identity" | "elementwise" | "trick", shift, bits of 2^e_min, bits of Omega, |K|), and for the trick
    (integer type, half an ulp minus one, the mask that clears the dropped bits, the magnitude mask, the
    shift, one), the integer constants as 0-d arrays of the integer type."""
    frac_bits, int_t = _BINARY[dtype]
    fi = np.finfo(dtype)
    if frac_bits == fmt.M and fmt.e_min == fi.minexp and fmt.max == Fraction(float(fi.max)):
        return ("identity", 0, 0, 0, 0.0)
    if CAST and np.dtype(dtype) == np.float64:
        for t in (np.float32,):         # (numpy's conversion to float16 is slower than the trick)
            ft = np.finfo(t)
            if fmt.M == ft.nmant and fmt.e_min == ft.minexp and fmt.max == Fraction(float(ft.max)):
                return ("cast", 0, 0, 0, 0.0, t)
    if not _bit_trick_applies(fmt, dtype):
        return ("elementwise", 0, 0, 0, 0.0)
    shift = frac_bits - fmt.M
    return ("trick", shift, _bits_of(2.0 ** fmt.e_min, dtype), _bits_of(float(fmt.max), dtype),
            2.0 ** (fmt.e_min - fmt.M + frac_bits),
            int_t, np.array((1 << (shift - 1)) - 1, int_t), np.array(~((1 << shift) - 1), int_t),
            np.array(np.iinfo(int_t).max, int_t), np.array(shift, int_t), np.array(1, int_t))


def _bit_trick_applies(fmt: Format, dtype) -> bool:
    """The bit trick needs fewer fraction bits in F than in dtype, F's normals normal in dtype, and
    Omega a finite dtype number."""
    fi = np.finfo(dtype)
    if fmt.M >= fi.nmant or fmt.e_min < fi.minexp:
        return False
    return fmt.e_max < fi.maxexp and Fraction(float(dtype.type(float(fmt.max)))) == fmt.max


def _round_array_elementwise(x: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """round_fraction on every element, for formats the bit trick does not cover.  A rounded value that
    the array's dtype can not hold exactly raises instead of being rounded a second time."""
    from .errors import CondcheckError
    out = np.empty(x.shape, dtype=x.dtype)
    over = np.zeros(x.shape, dtype=bool)
    for idx in np.ndindex(x.shape):
        v = x[idx]
        r = round_or_none(Fraction(float(v)), fmt) if np.isfinite(v) else None
        if r is None:
            out[idx], over[idx] = np.copysign(np.inf, v), True
            continue
        y = x.dtype.type(float(r)) if abs(r) <= Fraction(float(np.finfo(x.dtype).max)) else x.dtype.type(np.inf)
        if Fraction(float(y)) != r:
            raise CondcheckError(f"RN of {v!r} in {fmt.name} is {num_text(r)}, which {x.dtype} can not hold "
                                 f"exactly; round it with rounding.round_fraction instead")
        out[idx] = y
    return out, over


def _bits_of(v: float, dtype):
    return np.array([v], dtype=dtype).view(_BINARY[np.dtype(dtype)][1])[0]


def round_array_checked(x: np.ndarray, fmt: Format, what: str = "result") -> np.ndarray:
    """round_array, raising FormatOverflowError naming the first overflowing element."""
    r, over = round_array(x, fmt)
    if over.any():
        i = int(np.flatnonzero(over.ravel())[0])
        raise FormatOverflowError(f"{what} overflows {fmt.name} at element {i}: {float(x.ravel()[i])!r}")
    return r
