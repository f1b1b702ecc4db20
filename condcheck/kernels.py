"""Compiled loops (numba): RN_F on a float64 inside a kernel, and the constructors' search kernels.

``rn`` rounds a float64 to F with the same bit trick as ``rounding.round_array`` (``rn_params`` gives
its constants): values of a format with ``fits_float64`` are float64 numbers, their products are exact
in float64 and their sums are rounded innocuously twice (see ``ops``), so ``RN_F(float64 result)`` is
the correctly rounded result.  Overflow gives +-Inf, which the caller reports.  The interpreters'
kernels (``interpreters.dense_kernels``, ``interpreters.sparse``) call it; so do the separator, preimage
and gate kernels of the Theorem 5 constructor below (tests/test_theorem5_fast_paths.py).
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np

# numba is imported, and the kernels below made, at their first use (``_compile``), not at import: the
# import costs 0.1-0.4 s, which runs that use no kernel (the d = 1 float8 boxes: numpy paths) save
HAVE_NUMBA = importlib.util.find_spec("numba") is not None   # else the numpy path in network.py is used
numba = None
_COMPILED = ("rn", "_rn", "_best_separators", "_preimage_runs", "_gate_pick", "_first_reached")


def load_numba():
    """The numba module; an installed numba that fails to import (e.g. built for another numpy) is an
    error that says so, not a traceback (uninstalling numba selects the numpy paths)."""
    try:
        import numba as _numba
    except ImportError as e:
        from .errors import CondcheckError
        raise CondcheckError(f"numba is installed but cannot be imported ({e}); fix it (pip install -U numba) "
                             f"or uninstall it to use the numpy paths") from None
    return _numba


def _compile():
    """Import numba and make the compiled kernels (once); without numba, their Python fallbacks."""
    global numba, _rn, rn
    if "_rn" in globals():
        return
    if not HAVE_NUMBA:  # pragma: no cover
        _rn = rn = _rn_py
        return
    numba = load_numba()
    _rn = rn = numba.njit(cache=True, inline="always")(_rn_py)     # before the kernels that call it
    globals().update(_best_separators=numba.njit(cache=True)(_best_separators_py),
                     _preimage_runs=numba.njit(cache=True)(_preimage_runs_py),
                     _gate_pick=numba.njit(cache=True)(gate_pick_py),
                     _first_reached=numba.njit(cache=True)(_first_reached_py))


def __getattr__(name):
    """``kernels.rn`` and the other compiled kernels: made on first access (``from ..kernels import rn``
    included)."""
    if name in _COMPILED:
        _compile()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def numba_module():
    """The numba module, after the kernels here are made (for modules that compile kernels calling ``rn``)."""
    _compile()
    return numba


def rn_params(fmt) -> tuple:
    """``rn``'s constants for fmt (a format of fewer than 52 fraction bits): (shift, half, mask,
    small_bits, K, omega)."""
    shift = 52 - fmt.M
    return (shift, np.int64((1 << (shift - 1)) - 1), np.int64(~((1 << shift) - 1)),
            np.float64(2.0 ** fmt.e_min).view(np.int64), 2.0 ** (fmt.e_min - fmt.M + 52), float(fmt.max))


def _rn_py(x, shift, half, mask, small_bits, K, omega, native):
    """RN_F(x) on the float64 encoding: the ties-to-even bit trick of ``rounding.round_array``."""
    if native or x != x:                           # NaN stays NaN (IEEE semantics: Inf - Inf)
        return x
    b = np.float64(x).view(np.int64)
    if (b & 0x7FFFFFFFFFFFFFFF) < small_bits:     # below F's smallest normal: x + K rounds on F's grid
        k = K if x >= 0 else -K
        return (x + k) - k
    r = np.int64((b + half + ((b >> shift) & 1)) & mask).view(np.float64)
    if not abs(r) <= omega:                        # beyond Omega, Inf or NaN
        return math.copysign(math.inf, x)
    return r


def _best_separators_py(I, t, best_i, best_sp):
    """The separator choice of ``theorem5.steps._choose_steps`` in one pass over the candidates.

    Candidate c's values on the sorted coordinate values are t[I[c, :]].  For every gap g and each of
    its four (side, sign) cases q (0: on = [g:], s = +1; 1: on = [g:], s = -1; 2: on = [:g], s = +1;
    3: on = [:g], s = -1), ``best_i[g, q]`` and ``best_sp[g, q]`` end as what np.argmin picks over the
    row of spreads (hi - edge) / (lo - edge) of the separating candidates (inf elsewhere): the first
    NaN, else the first minimum (-1: no candidate separates).  The four extremes of each side are
    prefix and suffix minima and maxima, and every spread is computed in t's dtype with the same
    operations as the numpy path, so the same candidate wins.  (Signed zeros are the caller's
    concern: min and max here need not pick the sign np.minimum does.)"""
    n_c, n = I.shape
    pmin = np.empty(n, t.dtype)
    pmax = np.empty(n, t.dtype)
    smin = np.empty(n, t.dtype)
    smax = np.empty(n, t.dtype)
    for c in range(n_c):
        x = t[I[c, 0]]
        pmin[0] = x
        pmax[0] = x
        for v in range(1, n):
            x = t[I[c, v]]
            pmin[v] = min(pmin[v - 1], x)
            pmax[v] = max(pmax[v - 1], x)
        x = t[I[c, n - 1]]
        smin[n - 1] = x
        smax[n - 1] = x
        for v in range(n - 2, -1, -1):
            x = t[I[c, v]]
            smin[v] = min(smin[v + 1], x)
            smax[v] = max(smax[v + 1], x)
        for g in range(1, n):
            for q in range(4):
                if q == 0:
                    lo, hi, edge = smin[g], smax[g], pmax[g - 1]
                elif q == 1:
                    lo, hi, edge = -smax[g], -smin[g], -pmin[g - 1]
                elif q == 2:
                    lo, hi, edge = pmin[g - 1], pmax[g - 1], smax[g]
                else:
                    lo, hi, edge = -pmax[g - 1], -pmin[g - 1], -smin[g]
                if not lo > edge:
                    continue
                sp = (hi - edge) / (lo - edge)
                if best_i[g, q] < 0:
                    best_i[g, q] = c
                    best_sp[g, q] = sp
                else:
                    b = best_sp[g, q]
                    if b == b and (sp != sp or sp < b):        # a NaN best stays; a NaN spread wins
                        best_i[g, q] = c
                        best_sp[g, q] = sp


def best_separators(I: np.ndarray, t: np.ndarray):
    """(best_i, best_sp), arrays of shape (n_values, 4): ``_best_separators_py`` compiled (numba)."""
    _compile()
    n = I.shape[1]
    best_i = np.full((n, 4), -1, dtype=np.int64)
    best_sp = np.zeros((n, 4), dtype=t.dtype)
    _best_separators(np.ascontiguousarray(I), np.ascontiguousarray(t), best_i, best_sp)
    return best_i, best_sp


def _first_reached_py(reached, k, idx_out, count_out):
    """Thresholds 0 .. m-1 ascending, and column j reaches the first reached[j] of them: for each
    threshold i, the first k columns (ascending) that reach it, in idx_out[i, :count_out[i]].

    One pass over the columns: a column that reaches threshold i reaches every lower one, so the
    thresholds that have their k columns are always the lowest ones (``full`` of them), and a column is
    written only to thresholds that still need it: the work is the columns plus the entries written."""
    n = reached.shape[0]
    m = count_out.shape[0]
    full = 0
    for j in range(n):
        for i in range(full, reached[j]):
            idx_out[i, count_out[i]] = j
            count_out[i] += 1
        while full < m and count_out[full] >= k:
            full += 1
        if full >= m:
            break


def first_reached(a: np.ndarray, thresholds: np.ndarray, k: int):
    """(indices (m, k), counts (m,)): for each of the m ascending thresholds f (no NaN), the first k
    indices j, ascending, with a[j] >= f (``_first_reached_py``, compiled; a NaN of a reaches none)."""
    _compile()
    a = np.asarray(a, dtype=np.float64)
    reached = np.searchsorted(np.asarray(thresholds, dtype=np.float64), a, side="right").astype(np.int64)
    reached[np.isnan(a)] = 0
    idx = np.zeros((len(thresholds), k), dtype=np.int64)
    count = np.zeros(len(thresholds), dtype=np.int64)
    _first_reached(reached, int(k), idx, count)
    return idx, count


def _preimage_runs_py(V, fs, S, sign, lo_out, hi_out, shift, half, mask, small_bits, K, omega):
    """For each s of S: [lo_out, hi_out) is the run of the ascending array V whose images
    sign * RN(...RN(t f_1)... f_k) equal s: ``theorem5.kit._preimage_bisect``'s two bisections, with the
    same key (an overflowing product keys as the infinity of t's sign) and ``_rn`` for RN_F."""
    n = V.shape[0]
    for j in range(S.shape[0]):
        s = S[j]
        for side in range(2):
            lo = 0 if side == 0 else lo_out[j]
            hi = n
            while lo < hi:
                mid = (lo + hi) // 2
                t = V[mid]
                r = t
                for f in fs:
                    r = _rn(r * f, shift, half, mask, small_bits, K, omega, False)
                    if not abs(r) <= omega:
                        r = math.copysign(math.inf, t) * sign
                        break
                k = sign * r
                if side == 0:
                    if k < s:
                        lo = mid + 1
                    else:
                        hi = mid
                else:
                    if s < k:
                        hi = mid
                    else:
                        lo = mid + 1
            if side == 0:
                lo_out[j] = lo
            else:
                hi_out[j] = lo


def preimage_runs(V: np.ndarray, factors, S: np.ndarray, sign: float, fmt):
    """(lo, hi) index arrays of ``_preimage_runs_py`` (compiled): the runs of V mapped onto sign * S."""
    _compile()
    S = np.ascontiguousarray(S, dtype=np.float64)
    lo = np.zeros(len(S), dtype=np.int64)
    hi = np.zeros(len(S), dtype=np.int64)
    shift = 52 - fmt.M
    _preimage_runs(np.ascontiguousarray(V, dtype=np.float64), np.asarray(factors, dtype=np.float64), S,
                   float(sign), lo, hi, shift, np.int64((1 << (shift - 1)) - 1), np.int64(~((1 << shift) - 1)),
                   np.float64(2.0 ** fmt.e_min).view(np.int64), 2.0 ** (fmt.e_min - fmt.M + 52), float(fmt.max))
    return lo, hi


def gate_pick_py(acc, pe, zi, low, over, add, dead, rank, ntv, small_first):
    """(row, bias index) of ``theorem5.context._Ctx._gate_indexed``'s choice on table indices, or (-1, -1).

    Row r's index at point k is add[acc[r, k], pe[k]] (acc[r, k] where pe is empty: the sums before the
    gate's bias), ``over`` for an overflow.  A row holding ``over`` anywhere is bad.  Bias index b of a
    good row r is ok where its sum at point zi does not overflow, nor its sum with the least of the other
    points' indices (``over`` when there are none: low, the index of -Omega, with one point), and its sum
    with their largest (initial 0) is dead; its rank is rank[sum at zi].  The row: the first with a rank
    <= ntv (small_first), else the first with the least rank; the bias: the first with that row's least
    rank."""
    R, n = acc.shape
    extra = pe.shape[0] > 0
    best_r, best_b, best_rank = -1, -1, ntv + 1
    for r in range(R):
        ih, il, bad, ia = 0, over, False, 0
        for k in range(n):
            v = acc[r, k]
            if extra:
                v = add[v, pe[k]]
            if v == over:
                bad = True
                break
            if k == zi:
                ia = v
            else:
                if v > ih:
                    ih = v
                if v < il:
                    il = v
        if bad:
            continue
        if n == 1:
            ih, il = low, low
        r_rank, r_b = ntv + 1, -1
        for b in range(over):
            p = add[ia, b]
            if p == over or add[il, b] == over or not dead[add[ih, b]]:
                continue
            rk = rank[p]
            if rk < r_rank:
                r_rank, r_b = rk, b
        if r_rank <= ntv:
            if small_first:
                return r, r_b
            if r_rank < best_rank:
                best_r, best_b, best_rank = r, r_b, r_rank
    return best_r, best_b


def gate_pick(acc, zi, low, over, add, dead, rank, ntv, small_first, pe=None):
    """``gate_pick_py`` compiled (numba): (row, bias index), (-1, -1) where none is ok; pe (the index
    row of the gate's extra term) is added to every row of acc, or nothing is."""
    _compile()
    if pe is None:
        pe = np.zeros(0, dtype=add.dtype)
    r, b = _gate_pick(np.ascontiguousarray(acc), np.ascontiguousarray(pe, dtype=add.dtype), int(zi), int(low),
                      int(over), add, dead, rank, int(ntv), bool(small_first))
    return int(r), int(b)
