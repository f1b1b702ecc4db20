"""The dense interpreter's compiled loops (numba): rounded left-to-right sums and table lookups.

``rounded_row_sums`` computes, for every batch row b and output r,
``(((V[b,c_1] (x) w_1) (+) (V[b,c_2] (x) w_2)) (+) ...) (+) bias[r]`` with RN_F (``kernels.rn``) after
every operation, what ``sum_plan.SumPlan.apply`` does with numpy, in one pass and on both cores.
``table_lookup`` reads sigma~ or sigma~' of a format of at most 16 bits off its table by the value's bits.
Compiled on first use (numba's import and cached code load cost 0.4-0.6 CPU s the first time).
"""
from __future__ import annotations

import numpy as np

from .. import kernels

numba = rn = _row_sums = _lookup = None


def _compile():
    global numba, rn, _row_sums, _lookup
    if _row_sums is not None:
        return
    numba = kernels.numba_module()
    rn = kernels.rn                                  # before the kernels that call it
    _row_sums = numba.njit(cache=True, parallel=True)(_row_sums_py)
    _lookup = numba.njit(cache=True, parallel=True)(_lookup_py)


def _row_sums_py(V, cols, weights, starts, counts, bias, out, shift, half, mask, small_bits, K, omega, native):
    B, R = out.shape
    for b in numba.prange(B):
        for r in range(R):
            acc = 0.0
            s = starts[r]
            for t in range(s, s + counts[r]):
                p = rn(V[b, cols[t]] * weights[t], shift, half, mask, small_bits, K, omega, native)
                acc = rn(acc + p, shift, half, mask, small_bits, K, omega, native)
            out[b, r] = rn(acc + bias[r], shift, half, mask, small_bits, K, omega, native)


def rounded_row_sums(V: np.ndarray, cols, weights, starts, counts, bias, fmt) -> np.ndarray:
    """out[b, r] = left-to-right rounded sum of row r's terms applied to V[b], plus bias[r]."""
    _compile()
    V = np.ascontiguousarray(V, dtype=np.float64)
    out = np.empty((V.shape[0], len(starts)), dtype=np.float64)
    native = fmt.M == 52
    shift = 52 - fmt.M if not native else 1
    _row_sums(V, cols, weights, starts, counts, bias, out, shift, np.int64((1 << (shift - 1)) - 1),
              np.int64(~((1 << shift) - 1)), np.float64(2.0 ** fmt.e_min).view(np.int64),
              2.0 ** (fmt.e_min - fmt.M + 52), float(fmt.max), native)
    return out


def _lookup_py(z, table, zero_index, M, e_min, out):
    """out[i] = table[index of z[i] among the format's ascending values], from z's float64 bits."""
    n = z.shape[0]
    sub_scale = 2.0 ** (M - e_min)
    for i in numba.prange(n):
        v = z[i]
        a = abs(v)
        bits = np.float64(a).view(np.int64)
        e = (bits >> 52) - 1023
        if e < e_min:                               # zero or subnormal: a = k * 2**(e_min - M)
            rank = np.int64(a * sub_scale)
        else:
            rank = ((e - e_min + 1) << M) | ((bits & 0xFFFFFFFFFFFFF) >> (52 - M))
        out[i] = table[zero_index + rank] if v >= 0 else table[zero_index - rank]


def table_lookup(z: np.ndarray, points: np.ndarray, table: np.ndarray, fmt) -> np.ndarray:
    """table[index of z among points] for every z, a value of fmt (trusted: produced by rounding)."""
    _compile()
    flat = np.ascontiguousarray(z, dtype=np.float64).ravel()
    out = np.empty_like(flat)
    _lookup(flat, table, int(np.searchsorted(points, 0.0)), fmt.M, fmt.e_min, out)
    return out.reshape(z.shape)
