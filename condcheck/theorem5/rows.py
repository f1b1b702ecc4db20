"""One-term rows T(RN(RN(w v) + b)) of a 16-bit format in one compiled pass (``t_row``): the source and
pass rows of a gradient branch span every point of the domain (57,345 on the float16 box, several
rows per point), and ``Kit.T_row`` made them in five numpy passes (the product, its rounding, the sum,
its rounding, the table of T by bit pattern).

The same numbers: the product and the sum are formed in float64 (exact, resp. rounded innocuously
before the second rounding, as ``ops`` argues) and rounded by ``kernels.rn``, the bit trick of
``rounding.round_array``; T is read from the rounded activation's table at the value's position among
the sorted values, found from its exponent and fraction bits and checked against the table.  Where
anything overflows, or a value is not where the position says, the row is made by ``Kit.T_row``
instead, which raises as before (tests/test_theorem5_box_fast_paths.py compares the two).
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import enumerated

_kernel = None


def _t_row_py(v, w, b, points, sigma, over, zero, e_min, frac, out, shift, half, mask, small_bits, K, omega):
    """out[i] = T(RN(RN(w v[i]) + b)); False (out unfinished) where a product, a sum or T overflows or a
    sum's position among the sorted values ``points`` does not hold it."""
    sub_q = 2.0 ** (e_min - frac)               # the subnormal spacing
    for i in range(v.shape[0]):
        p = _rn(w * v[i], shift, half, mask, small_bits, K, omega, False)
        if not abs(p) <= omega:
            return False
        s = _rn(p + b, shift, half, mask, small_bits, K, omega, False)
        a = abs(s)
        if not a <= omega:
            return False
        if a == 0.0:
            k = 0
        else:
            bits = np.float64(a).view(np.int64)
            e = ((bits >> 52) & 0x7FF) - 1023
            if e < e_min:
                k = np.int64(a / sub_q)
            else:
                k = ((e - e_min + 1) << frac) + ((bits >> (52 - frac)) & ((1 << frac) - 1))
        j = zero + k if s > 0 else zero - k
        if j < 0 or j >= points.shape[0] or points[j] != s or over[j]:
            return False
        out[i] = sigma[j]
    return True


def _compile():
    global _kernel, _rn
    if _kernel is None:
        from .. import kernels
        numba, _rn = kernels.numba_module(), kernels.rn
        _kernel = numba.njit(cache=True)(_t_row_py)


_rn = None


def _plan(kit):
    """(points, sigma, overflow, zero index, rn constants) of kit's format and activation, made once per Kit;
    None where the fast path does not apply (formats with RN index tables or beyond 16 bits, no numba)."""
    hit = kit.__dict__.get("_t_row_plan", False)
    if hit is False:
        from ..kernels import HAVE_NUMBA, rn_params
        F = kit.fmt
        hit = None
        if HAVE_NUMBA and enumerated(F) and F.fits_float64 and kit.tables is None:
            t = kit.R.table()
            points = np.ascontiguousarray(t.points, dtype=np.float64)
            zero = np.flatnonzero(points == 0)
            if len(zero) == 1 and t.sigma.dtype == np.float64:
                hit = (points, np.ascontiguousarray(t.sigma), np.ascontiguousarray(t.sigma_overflow, dtype=bool),
                       int(zero[0]), int(F.e_min), int(F.M), rn_params(F))
        kit.__dict__["_t_row_plan"] = hit
    return hit


def t_row(kit, w: float, v, b: float):
    """``kit.T_row([(w, v)], b)`` for a scalar weight w, a 1-D array v of values and a scalar bias b: the
    same array (or the same ConstructionError)."""
    plan = _plan(kit)
    if plan is None or type(v) is not np.ndarray or v.ndim != 1 or v.dtype != np.float64:
        return kit.T_row([(w, v)], b)
    w, b = float(w), float(b)
    if not (math.isfinite(w) and math.isfinite(b)):
        return kit.T_row([(w, v)], b)
    _compile()
    points, sigma, over, zero, e_min, frac, rn = plan
    out = np.empty(v.shape[0])
    if not _kernel(np.ascontiguousarray(v), w, b, points, sigma, over, zero, e_min, frac, out, *rn):
        return kit.T_row([(w, v)], b)
    return out
