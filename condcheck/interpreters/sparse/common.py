"""What the sparse interpreter's strategies share: the network's layout for the kernels, the format's
tables, a neuron's values as a default and exceptions, and the small compiled helpers.

A neuron's values over the points are kept as a *default* (its most common value) and *exceptions*
(points ascending, with their values) in flat arrays: ``ptr`` per neuron into ``pts``/``vals``.
``by_mode`` re-expresses values so; ``compact`` gathers the filled slots of preallocated regions.
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ..dense import DenseInterpreter

numba = kernels.numba_module()
rn = kernels.rn
#: the dense interpreter with compiled sums: the strategies' forward passes where they run on every point
DENSE = DenseInterpreter(kernels=True)


class Structure:
    """The network's sparse patterns, concatenated for the kernel (built once per network)."""

    def __init__(self, net):
        csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr = [], [], [], [], [], []
        p_csr = p_csc = 0
        ptr_at = 0
        for layer in net.layers:
            w = layer.weight
            c = layer.csc
            lay_ptr.append(ptr_at)
            n = max(w.shape) + 1               # row and column pointers padded to one length per layer
            rp = np.full(n, w.indptr[-1], np.int64)
            rp[:w.shape[0] + 1] = w.indptr
            cp = np.full(n, c.indptr[-1], np.int64)
            cp[:w.shape[1] + 1] = c.indptr
            csr_ptr.append(rp + p_csr)
            csr_idx.append(w.indices.astype(np.int64))
            csc_ptr.append(cp + p_csc)
            csc_idx.append(c.indices.astype(np.int64))
            csc_w.append(c.data.astype(np.float64))
            p_csr += w.nnz
            p_csc += c.nnz
            ptr_at += n
        self.csr_ptr = np.concatenate(csr_ptr)
        self.csr_idx = np.concatenate(csr_idx)
        self.csc_ptr = np.concatenate(csc_ptr)
        self.csc_idx = np.concatenate(csc_idx)
        self.csc_w = np.concatenate(csc_w)
        self.lay_ptr = np.array(lay_ptr, np.int64)
        self.widths = np.array([layer.shape[0] for layer in net.layers], np.int64)
        hidden = self.widths[:-1]
        self.offs = np.concatenate([[0], np.cumsum(hidden)]).astype(np.int64)


round_params = kernels.rn_params


def store_dtype(fmt):
    """float32 holds every value of the format exactly (all float8/float16/bfloat16 formats): half the
    memory for the per-group backward values; float64 otherwise."""
    ok = fmt.M <= 23 and fmt.e_max <= 127 and fmt.e_min - fmt.M >= -149
    return np.float32 if ok else np.float64


def derivative_table(net):
    """(sigma~' on every value of the format, inf where it overflows; index of 0 among the values)."""
    t = net.rounded.table()
    d = np.where(t.dsigma_overflow, np.inf, t.dsigma).astype(np.float64)
    return np.ascontiguousarray(d), int(np.searchsorted(t.points, 0.0))


def compact(off, cnt):
    """Flat indices of the first cnt[j] slots of every region off[j]:off[j+1]."""
    total = int(cnt.sum())
    starts = np.concatenate([[0], np.cumsum(cnt)[:-1]]).astype(np.int64)
    return np.repeat(off[:-1] - starts, cnt) + np.arange(total, dtype=np.int64)


def unique_pairs(rows, vals):
    """(distinct (row, bits of val) pairs as an (n, 2) int64 array with the val bits in column 1, the
    index of each input pair among them), through one int64 key per pair."""
    vb = np.ascontiguousarray(vals, dtype=np.float64).view(np.int64)
    ub, vi = np.unique(vb, return_inverse=True)
    key = np.asarray(rows, np.int64) * max(1, len(ub)) + vi.reshape(-1)
    uk, inv = np.unique(key, return_inverse=True)
    nb = max(1, len(ub))
    pairs = np.stack([uk // nb, ub[uk % nb]], axis=1) if len(uk) else np.zeros((0, 2), np.int64)
    return pairs.astype(np.int64), inv.reshape(-1).astype(np.int64)


def column_modes(c: np.ndarray) -> np.ndarray:
    """The most common value of every column (the first row's where it holds at least half of them)."""
    mode = c[0].copy()
    bad = np.flatnonzero((c == mode[None, :]).sum(axis=0) * 2 < c.shape[0])
    for j in bad.tolist():
        vals, counts = np.unique(c[:, j], return_counts=True)
        mode[j] = vals[np.argmax(counts)]
    return mode


# ---- compiled helpers ------------------------------------------------------------------------------
def _codes_py(z, zero_index, M, e_min, out):
    """out[n, i] = index of z[n, i] among the format's ascending values (``dense_kernels._lookup_py``'s rank)."""
    sub_scale = 2.0 ** (M - e_min)
    for n in numba.prange(z.shape[0]):
        for i in range(z.shape[1]):
            v = z[n, i]
            a = abs(v)
            bits = np.float64(a).view(np.int64)
            e = (bits >> 52) - 1023
            if e < e_min:
                rank = np.int64(a * sub_scale)
            else:
                rank = ((e - e_min + 1) << M) | ((bits & 0xFFFFFFFFFFFFF) >> (52 - M))
            out[n, i] = zero_index + rank if v >= 0 else zero_index - rank


def _shellsort(a, lo, hi):
    """Sort a[lo:hi] in place (ascending; plain loops: quick to compile, unlike np.sort)."""
    n = hi - lo
    gap = 1
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for i in range(lo + gap, hi):
            v = a[i]
            j = i
            while j - lo >= gap and a[j - gap] > v:
                a[j] = a[j - gap]
                j -= gap
            a[j] = v
        gap //= 3


def _add_new(where, out, o, cnt, pts, lo, hi):
    """Append the points pts[lo:hi] not yet marked in ``where`` to out[o + cnt:], marking them; returns
    the new count (the distinct points a neuron's inputs make exceptions of)."""
    for e in range(lo, hi):
        q = pts[e]
        if where[q] < 0:
            where[q] = 0
            out[o + cnt] = q
            cnt += 1
    return cnt


def _number_sorted(where, out, o, cnt):
    """Sort out[o:o + cnt] and set where[q] to each point's rank there."""
    if cnt > 1:
        _shellsort(out, o, o + cnt)
    for u in range(cnt):
        where[out[o + u]] = u


def _bits(v):
    return np.float64(v).view(np.int64)


def _mode_range(j0, j1, N, dflt, pts, vals, cnt, off, newdef, opts, ovals, ocnt):
    """The neurons j0 <= j < j1 of ``_mode_py``."""
    for j in range(j0, j1):
        o, c = off[j], cnt[j]
        db = _bits(dflt[j])
        best_b = db
        best_n = N - c
        for u in range(c):
            if _bits(vals[o + u]) == db:
                best_n += 1
        if c > 0 and 2 * c >= N:           # otherwise no value but the default can be more common
            keys = np.empty(c, np.int64)
            for u in range(c):
                keys[u] = _bits(vals[o + u])
            _shellsort(keys, 0, c)
            run = 1
            for u in range(1, c + 1):
                if u < c and keys[u] == keys[u - 1]:
                    run += 1
                    continue
                kb = keys[u - 1]
                if kb != db and run > best_n:
                    best_n = run
                    best_b = kb
                run = 1
        k = 0
        if best_b == db:
            newdef[j] = dflt[j]
            for u in range(c):
                if _bits(vals[o + u]) != db:
                    opts[o + k] = pts[o + u]
                    ovals[o + k] = vals[o + u]
                    k += 1
        else:
            newv = np.int64(best_b).view(np.float64)
            newdef[j] = newv
            u = 0
            for q in range(N):
                if u < c and pts[o + u] == q:
                    v = vals[o + u]
                    u += 1
                else:
                    v = dflt[j]
                if _bits(v) != best_b:
                    opts[o + k] = q
                    ovals[o + k] = v
                    k += 1
        ocnt[j] = k

def _mode_py(N, dflt, pts, vals, cnt, off, newdef, opts, ovals, ocnt):
    """Re-express every neuron j (dflt[j] at every point but pts/vals[off[j]:off[j]+cnt[j]], ascending
    points; those may equal the default) by its most common value over the N points (bit patterns: -0 is
    not 0; ties keep the old default, then the smallest pattern): newdef[j] and the points (ascending)
    where the value differs, in opts/ovals[off[j]:off[j]+ocnt[j]] (never more than cnt[j] of them)."""
    n = dflt.shape[0]
    nchunk = 64
    step = (n + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n, j0 + step)
        if j0 < j1:
            _mode_range(j0, j1, N, dflt, pts, vals, cnt, off, newdef, opts, ovals, ocnt)


def _lookup_codes_py(z, zero_index, M, e_min, table, code, out, bad):
    """code[i] = index of z[i] among the format's values (``_codes_py``), out[i] = table[code[i]];
    bad[0] = 1 where z[i] or out[i] is not finite."""
    sub_scale = 2.0 ** (M - e_min)
    for i in numba.prange(z.shape[0]):
        v = z[i]
        if not (abs(v) < np.inf):
            bad[0] = 1
            code[i] = zero_index
            out[i] = 0.0
            continue
        a = abs(v)
        bits = np.float64(a).view(np.int64)
        e = (bits >> 52) - 1023
        if e < e_min:
            rank = np.int64(a * sub_scale)
        else:
            rank = ((e - e_min + 1) << M) | ((bits & 0xFFFFFFFFFFFFF) >> (52 - M))
        c = zero_index + rank if v >= 0 else zero_index - rank
        code[i] = c
        r = table[c]
        out[i] = r
        if not (abs(r) < np.inf):
            bad[0] = 1


# (rebound under their own names: the kernels that call them resolve those names when they compile)
_shellsort = shellsort = numba.njit(cache=True)(_shellsort)
_add_new = add_new = numba.njit(cache=True)(_add_new)
_number_sorted = number_sorted = numba.njit(cache=True)(_number_sorted)
_bits = bits = numba.njit(cache=True, inline="always")(_bits)
_mode_range = numba.njit(cache=True)(_mode_range)
by_mode = numba.njit(cache=True, parallel=True)(_mode_py)
codes = numba.njit(cache=True, parallel=True)(_codes_py)
lookup_codes = numba.njit(cache=True)(_lookup_codes_py)
# every thread that finds a bad value writes the same 1 into bad[0]
lookup_codes_par = numba.njit(cache=True, parallel=True)(_lookup_codes_py)
