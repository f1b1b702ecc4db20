"""Rounded arithmetic: every operation is "round the exact result" (docs/semantics.md).

Two paths with one meaning:

* exact: ``add``, ``sub``, ``mul`` on Fractions, rounded by ``rounding.round_fraction``;
* fast: ``add_array``, ``sub_array``, ``mul_array`` on float64 arrays.  For a format with p significand
  bits, 2p <= 53 makes a float64 product exact, and 53 >= 2p + 1 makes float64-then-F double rounding
  of a sum innocuous (Figueroa 1995); ``Format.fits_float64`` states these conditions.  float64 itself
  uses the IEEE operations of the machine, which are RN.  Formats outside both cases fall back to the
  exact path element by element.  tests/test_ops.py proves the fast path equal to the exact one.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .errors import CondcheckError
from .formats import Format, num_text
from .rounding import round_array, round_float, round_fraction, round_or_none

_F64_MAX = Fraction(float(np.finfo(np.float64).max))


def add(a: Fraction, b: Fraction, fmt: Format) -> Fraction:
    return round_fraction(Fraction(a) + Fraction(b), fmt, what="sum")


def sub(a: Fraction, b: Fraction, fmt: Format) -> Fraction:
    return round_fraction(Fraction(a) - Fraction(b), fmt, what="difference")


def mul(a: Fraction, b: Fraction, fmt: Format) -> Fraction:
    return round_fraction(Fraction(a) * Fraction(b), fmt, what="product")


_EXACT_OP = {np.add: lambda x, y: x + y, np.subtract: lambda x, y: x - y, np.multiply: lambda x, y: x * y}


def _exact_elementwise(op, a, b, fmt: Format):
    op = _EXACT_OP.get(op, op)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    out = np.empty(a.shape, dtype=np.float64)
    over = np.zeros(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        x, y = a[idx], b[idx]
        if not (np.isfinite(x) and np.isfinite(y)):
            with np.errstate(invalid="ignore", over="ignore"):
                out[idx], over[idx] = op(x, y), True
            continue
        exact = op(Fraction(x), Fraction(y))
        r = round_or_none(exact, fmt)
        if r is None:
            out[idx], over[idx] = (np.inf if exact > 0 else -np.inf), True
            continue
        out[idx] = float(r) if abs(r) <= _F64_MAX else np.inf
        if not np.isfinite(out[idx]) or Fraction(out[idx]) != r:
            # Never round a second time, silently, to float64.
            raise CondcheckError(f"the {fmt.name} result {num_text(r)} of an operation on {float(x)!r} and {float(y)!r} is "
                                 f"not a float64 (exact rationals are needed for {fmt.name})")
    return out, over


def working_dtype(fmt: Format):
    """The machine type in which fmt's fast arithmetic is computed before rounding once to fmt.

    float32 when products of two values are exact float32 normals (2p <= 24, exponents well inside
    float32's range) and sums round innocuously twice (24 >= 2p + 1); float64 under the analogous
    conditions (``fits_float64``); None when only the exact path is correct.
    """
    if 2 * fmt.p + 1 <= 24 and 2 * (fmt.e_min - fmt.M) >= -126 and 2 * (fmt.e_max + 1) <= 127:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if fmt.fits_float64 else None


_WORKING: dict = {}     # id(fmt) -> (fmt, working dtype): computed once per format


def _working(fmt: Format):
    hit = _WORKING.get(id(fmt))
    if hit is None or hit[0] is not fmt:
        hit = _WORKING[id(fmt)] = (fmt, working_dtype(fmt))
    return hit[1]


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _fast(op, a, b, fmt: Format):
    """(rounded result, overflow mask) of an elementwise op on arrays of values of fmt.

    Inputs of dtype float32/float64 are computed in that dtype when it is fmt's working dtype or wider;
    the result keeps the wider of the two.  The op broadcasts its operands (a ufunc).
    """
    wd = _working(fmt)
    if wd is None:
        return _exact_elementwise(op, a, b, fmt)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype is _F64 and b.dtype is _F64:
        dt = _F64
    else:
        dt = np.result_type(a.dtype, b.dtype, wd)
        if dt not in (np.float32, np.float64):
            dt = _F64
        a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        exact_or_rn = op(a, b)
    return round_array(exact_or_rn, fmt)


def add_array(a, b, fmt: Format):
    return _fast(np.add, a, b, fmt)


def sub_array(a, b, fmt: Format):
    return _fast(np.subtract, a, b, fmt)


def mul_array(a, b, fmt: Format):
    return _fast(np.multiply, a, b, fmt)


# ---- scalar fast path -------------------------------------------------------------------------------
def _scalar(op, a: float, b: float, fmt: Format) -> float | None:
    """RN_F(a op b) for two float values of fmt, or None on overflow.

    Under ``fits_float64`` the float64 operation is exact (products) or rounds innocuously before the
    second rounding (sums), as for the array path; otherwise the exact Fraction path decides.
    """
    if fmt.fits_float64:
        return round_float(op(a, b), fmt)
    r = round_or_none(op(Fraction(a), Fraction(b)), fmt)
    if r is None:
        return None
    f = float(r)
    if Fraction(f) != r:
        raise CondcheckError(f"the {fmt.name} result {num_text(r)} is not a float64 (exact rationals are needed)")
    return f


def add_float(a: float, b: float, fmt: Format) -> float | None:
    """RN_F(a + b) of two floats holding values of fmt; None on overflow."""
    return _scalar(lambda x, y: x + y, a, b, fmt)


def mul_float(a: float, b: float, fmt: Format) -> float | None:
    """RN_F(a * b) of two floats holding values of fmt; None on overflow."""
    return _scalar(lambda x, y: x * y, a, b, fmt)
