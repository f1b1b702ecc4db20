"""Set helpers of the Theorem 5 searches: spread samples, the first entries past a threshold, products
through chains of weights and their preimages, and first indices of sorts computed without sorting.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from .. import kernels
from ..formats import Format, get_format
from ..ops import mul_array, mul_float


def spread_sample(S, n: int) -> np.ndarray:
    """At most n elements of the sorted array S, evenly spread, ends included."""
    S = np.asarray(S, float)
    return S if len(S) <= n else S[np.unique(np.linspace(0, len(S) - 1, n).astype(int))]


def first_reached(tv: np.ndarray, fine: np.ndarray, k: int, chunk: int = 1024, compiled: bool | None = None) -> np.ndarray:
    """Row r: tv at the first k columns j with |tv_j| >= fine[r], in column order, NaN-padded to k.

    What a stable argsort of the unreached columns picks (tests/test_theorem5_fast_paths.py compares
    the two).  ``compiled`` (default: with numba): one pass over the columns for every distinct
    threshold at once (``kernels.first_reached``); else numpy scans |tv| ``chunk`` columns at a time,
    once per distinct threshold, up to its k-th column (that scan was 47 % of a worker's samples in the
    bfloat16 tanh box's chunks, docs/boxes.md)."""
    a = np.abs(tv)
    if kernels.HAVE_NUMBA if compiled is None else compiled:
        u, inv = np.unique(fine, return_inverse=True)          # ascending, a NaN last (reached by none)
        m = int(np.count_nonzero(~np.isnan(u)))
        idx = np.zeros((len(u), k), dtype=np.int64)
        count = np.zeros(len(u), dtype=np.int64)
        idx[:m], count[:m] = kernels.first_reached(a, u[:m], k)
        vals = np.where(np.arange(k)[None, :] < count[:, None], np.asarray(tv, float)[idx], np.nan)
        return vals[inv.reshape(-1)]
    out = np.full((len(fine), k), np.nan)
    for f in np.unique(fine):
        found, n = [], 0
        for s in range(0, len(a), chunk):
            found.append(s + np.flatnonzero(a[s:s + chunk] >= f))
            n += len(found[-1])
            if n >= k:
                break
        idx = np.concatenate(found)[:k] if found else np.zeros(0, int)
        out[np.ix_(fine == f, np.arange(len(idx)))] = tv[idx]
    return out


def rn_products(F: Format, t, factors) -> np.ndarray:
    """RN(...RN(RN(t f_1) f_2)... f_k) for an array t, NaN where a product overflows."""
    out = np.asarray(t, float)
    for f in factors:
        r, o = mul_array(out, np.full_like(out, f), F)
        out = np.where(o | np.isnan(out), np.nan, r)
    return out


def preimage_bisect(F: Format, V: np.ndarray, S, factors) -> np.ndarray:
    """The values t of the ascending array V with RN(...RN(t f_1)... f_k) in S, in V's order: what
    ``V[np.isin(rn_products(F, V, factors), S)]`` gives, by bisection instead of a pass over V.

    t -> RN(t f) is monotone (RN is, and so is multiplication by a constant), so is the chain, and the
    t's mapped to one s form a run of V: two bisections per s (2 log2 |V| scalar chains, ``mul_float``)
    find it.  An overflowing product lies at an end of V; it is keyed as the infinity of the product's
    sign and never matches, since only finite s are searched."""
    sign = math.prod(math.copysign(1.0, float(f)) for f in factors)
    fs = [float(f) for f in factors]
    # (the compiled kernel multiplies in float64 before rounding to F: exact only while a product of two
    # values of F, subnormals included, has at most 53 bits and stays inside float64's normal range)
    exact64 = 2 * (F.M + 1) <= 53 and 2 * (F.e_min - F.M) >= -1022 and 2 * (F.e_max + 1) <= 1023
    if kernels.HAVE_NUMBA and F.fits_float64 and exact64 and V.dtype == np.float64:
        # the same bisections compiled (``kernels.preimage_runs``; tests/test_theorem5_fast_paths.py)
        Su = np.unique(np.asarray(S, float))
        Su = Su[np.isfinite(Su)]
        if not len(Su):
            return V[:0]
        lo, hi = kernels.preimage_runs(V, fs, sign * Su, sign, F)
        return V[np.unique(np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())]))]

    def key(t):
        r = float(t)
        for f in fs:
            r = mul_float(r, f, F)
            if r is None:
                return math.copysign(math.inf, float(t))
        return sign * r

    runs = []
    for s in np.unique(np.asarray(S, float)):
        if math.isfinite(s):
            lo = bisect.bisect_left(V, sign * s, key=key)
            runs.append(np.arange(lo, bisect.bisect_right(V, sign * s, lo=lo, key=key)))
    return V[np.unique(np.concatenate(runs))] if runs else V[:0]


def _same_values(F: Format, name: str) -> bool:
    """Whether F has the finite values of the built-in format ``name`` (by its fields, not its name: a
    custom b7_8 has bfloat16's values, b10_5 float16's)."""
    G = get_format(name)
    return (F.M, F.e_min, F.e_max, F.max) == (G.M, G.e_min, G.e_max, G.max)


def codes16(F: Format):
    """For formats with the values of bfloat16 or float16: a function from an array of values of F
    (float64) to their 16-bit encodings (exact conversions: every value of F is a float32, and a float16);
    None for other formats."""
    if _same_values(F, "bfloat16"):
        return lambda v: (np.asarray(v, np.float64).astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    if _same_values(F, "float16"):
        return lambda v: np.asarray(v, np.float64).astype(np.float16).view(np.uint16).astype(np.int64)
    return None


def stable_first(k: np.ndarray) -> int:
    """``int(np.argsort(k, kind="stable")[0])`` without the sort: the first smallest value, NaN after
    every number (as the sort places it), the first NaN when all are NaN.  (k not empty.)"""
    nan = np.isnan(k)
    if not nan.any():
        return int(np.argmin(k))
    if nan.all():
        return 0
    num = np.flatnonzero(~nan)
    return int(num[int(np.argmin(k[num]))])


def lex_first(*keys) -> int:
    """The first index of np.lexsort(keys[::-1]) (keys[0] the primary key; ties to the lowest index, as
    the stable sort keeps them), by successive minima instead of a sort.  Keys hold no NaN."""
    m = np.ones(len(keys[0]), bool)
    for k in keys:
        m &= k == k[m].min()
    return int(np.argmax(m))


def lexsort_head(keys, k: int) -> np.ndarray:
    """``np.lexsort(keys)[:k]`` (the last key primary, ties by index) without sorting every entry: key by
    key from the primary, the entries below the k-th smallest key are in (sorted by the keys left), the
    ones above it out, and only the ties at the k-th go on to the next key (the first of them by index
    after the last key).  Keys with a NaN take the whole sort (it places NaN last)."""
    keys = [np.asarray(x) for x in keys]
    n = len(keys[0]) if keys else 0
    if k >= n or any(x.dtype.kind == "f" and np.isnan(x).any() for x in keys):
        return np.lexsort(keys)[:k]
    idx, need, parts = np.arange(n), k, []
    for level in range(len(keys) - 1, -1, -1):
        if need <= 0:
            break
        key = keys[level][idx]
        if need >= len(idx):
            parts.append(idx[np.lexsort([x[idx] for x in keys[:level + 1]])])
            need = 0
            break
        kth = np.partition(key, need - 1)[need - 1]
        below = idx[key < kth]
        if len(below):
            parts.append(below[np.lexsort([x[below] for x in keys[:level + 1]])])
        idx, need = idx[key == kth], need - len(below)
    if need > 0:
        parts.append(idx[:need])
    return np.concatenate(parts) if parts else np.zeros(0, np.intp)


class GainGroups:
    """``lex_first(inexact, np.round(np.abs(gain - share)), abs_t)`` for any share, from a table made once
    per ranked blocker list (``Context._transfer_greedy`` asks for one share per layer and branch: 233,000
    times on the d = 2 float8_e5m2 box with relu).

    Why it is the same index: the first key is fixed, so only the entries with the smallest inexact
    compete; the second key is a function of the gain alone (the same float operations on the same
    value), so all entries of one gain value tie on it, and the winner is, among the gain values with
    the smallest rounded distance to share, the entry with the smallest (abs_t, index), which is kept
    per gain value here.  Keys hold no NaN.  tests/test_theorem5_fast_paths.py compares it with
    ``lex_first``."""

    def __init__(self, gain, inexact, abs_t):
        idx = np.flatnonzero(inexact == inexact.min()) if len(inexact) else np.zeros(0, np.int64)
        self.gains, inv = np.unique(gain[idx], return_inverse=True)
        inv = inv.reshape(-1)
        o = np.lexsort((idx, abs_t[idx], inv))              # by gain value, then abs_t, then index
        starts = np.flatnonzero(np.concatenate(([True], inv[o][1:] != inv[o][:-1]))) if len(o) else o
        self.best = idx[o][starts]                          # per gain value: its smallest (abs_t, index)
        self.best_t = abs_t[self.best]
        self._lists = (self.gains.tolist(), self.best.tolist(), self.best_t.tolist())

    def first(self, share: float) -> int:
        """The index for this share: among the gain values (ascending) the ones with the smallest
        round(|gain - share|), a function that does not increase up to share's position and does not
        decrease after it, so they are a run around that position, found by bisection and a walk (the same
        float64 differences, and Python's round ties to even as np.round does); then the smallest
        (abs_t, index).  ``_first_np`` is the whole-array version (empty tables, a share that is not
        finite); tests/test_theorem5_fast_paths.py compares both with ``lex_first``."""
        g, best, best_t = self._lists
        n = len(g)
        if not n or not math.isfinite(share):
            return self._first_np(share)
        p = bisect.bisect_left(g, share)
        m = min(round(abs(g[k] - share)) for k in (p - 1, p) if 0 <= k < n)
        lo = p - 1 if p > 0 and round(abs(g[p - 1] - share)) == m else p
        while lo > 0 and round(abs(g[lo - 1] - share)) == m:
            lo -= 1
        hi = p if p < n and round(abs(g[p] - share)) == m else p - 1
        while hi < n - 1 and round(abs(g[hi + 1] - share)) == m:
            hi += 1
        if lo == hi:
            return best[lo]
        return best[min(range(lo, hi + 1), key=lambda k: (best_t[k], best[k]))]

    def _first_np(self, share: float) -> int:
        off = np.round(np.abs(self.gains - share))
        k = np.flatnonzero(off == off.min())
        if len(k) == 1:
            return int(self.best[k[0]])
        return int(self.best[k][lex_first(self.best_t[k], self.best[k])])


def log2_abs(x) -> float:
    """log2 |x| of a nonzero float (subnormals included); sums of these replace products and quotients
    that would overflow or underflow float64 when the format is float64 itself."""
    return math.log2(abs(float(x)))
