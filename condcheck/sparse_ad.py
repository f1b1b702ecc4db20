"""Sparse reverse-mode AD over many (x, y) pairs at once, bit for bit equal to ``Network.evaluate``.

Why: a Theorem 7 network holds one family of chains per point; at any other point a chain runs on its
"off" states, which its gate (dead there) blocks, sometimes earlier (sigma~' = 0).  The dense interpreter
computes every neuron for every (x, y): N x K x width x depth, which for the float8 box (225 points, 247
upstream values, width ~50,000, depth 57) is hundreds of billions of rounded operations.  Here the
backward pass of one point only visits the *active* neurons: those reached from the output through
nonzero weights and nonzero sigma~' (per point: ``_backward``).  When every point has the same upstream values (Theorem 7 claims:
``_evaluate_shared``) it goes further: going down from the output, the points of each neuron are grouped
by the groups of the neurons it feeds and by its own sigma~'; points in one group provably have equal
backward values for every y (they are computed from equal inputs by equal operations), so each group is
computed once, at its first point.  A chain neuron sits in one state at its own point and in one shared
state at all the others: two groups instead of one computation per point.  The groups themselves are
kept as a default group per neuron plus exceptions (``_backward_groups``; one group number per point
and neuron, ``_backward_classes``, is the reference), so grouping costs about the exceptions, not points
x neurons; and a group row of one live term, RN(0 + RN(u w)), depends only on (u's row, w), as the
product by sigma~' depends only on (v's row, sigma~'): equal pairs are computed once (the chains of a
box repeat a few weight sequences), so the per-y work is the number of distinct rows x |y|.

The forward pass of the shared-y path (``_forward_sparse``) works the same way: each neuron is one value
at every point but a few exceptions; a row is evaluated once on its inputs' defaults (which every point
outside the union of its inputs' exceptions has, exactly) and once at each point of that union, by the
dense kernel's operations in its order, then re-expressed by its most common value.  Where some value
is not finite it gives up and the dense forward pass (``_forward_compressed``) runs and reports it.

Per-point upstream values (Theorem 5 claims: one y per point, different per point) take
``_evaluate_per_point``.  Forward (``_forward_tables``): a neuron that depends on one input coordinate
(or none) is a table over that coordinate's distinct values, its row evaluated once per value by the
dense kernel; only rows that mix coordinates become a default and exceptions (``_narrow_rows``,
``_fold_rows``), and what the backward pass keeps of them is sigma~' (a gate whose pre-activation
differs over two slices of a grid is dead on all of them: one value).  Backward: every neuron has a
*default* sigma~' (its most common one), and the backward values of the network in which every neuron
sits at its default are computed once per distinct y (``_DefaultPlan``).  At a point, a neuron's value
is its default one unless its sigma~' differs there (and its default sum is not 0) or a successor's
value differs: those *explicit* neurons are found top-down per point (``_explicit``) and summed over
their successors, each read as explicit or default.  A point visits its own chains and the
one-coordinate neurons that feed them, not the default state of every other point's chains.  The
default pass checks every y on the default states, so it may report a non-finite value that no point
reaches: the reference path then decides.

Why it is exact (finite semantics, SPEC 2.1/2.3): an inactive neuron's upstream value is +-0 (its
sigma~' is 0, or every term of its backward sum is a product with a +-0).  In a rounded left-to-right sum
``acc (+) (+-0 (x) w)`` equals ``acc`` when acc != 0 and is a zero otherwise, so leaving such terms out
changes no value (only, possibly, the sign of a zero, and equality is numeric: +0 == -0).  Nothing
overflows in a skipped term.  The forward values are the dense ones, bit for bit, and the checks of the
dense interpreter are kept: every pre-activation, sigma~ and sigma~' finite, every
backward sum and product of an active neuron finite (a skipped one is zero).  Under IEEE semantics
(Inf passes, Inf x 0 = NaN matters) this shortcut is not valid; ``evaluate_sparse`` refuses it.
tests/test_sparse_ad.py compares it with the dense and the exact interpreters.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import kernels
from .errors import CondcheckError, NetworkOverflowError

if kernels.HAVE_NUMBA:
    numba = kernels.load_numba()
    from .kernels import _rn

# the forward pass of the shared-y path on defaults and exceptions (``_forward_sparse``); False: the
# dense compressed pass (``_forward_compressed``), kept as the reference and for reporting overflows
SPARSE_FORWARD = True
# the groups of the shared-y backward pass as defaults and exceptions (``_backward_groups``); False: one
# group number per point and neuron (``_backward_classes``), kept as the reference
SPARSE_GROUPS = True

# per-point upstream values: tables, default backward values and explicit neurons
# (``_evaluate_per_point``); False: the per-point active-neuron pass on dense sigma~' (``_backward``),
# kept as the reference and for reporting overflows
PER_POINT_TABLES = True

# how many hidden-neuron entries (points x neurons) one chunk holds: the memory bound
CHUNK_ENTRIES = 1 << 22


def _backward_py(Y, dT, offs, widths, csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr, d_in,
                 shift, half, mask, small_bits, Kc, omega, grads, err):
    """For every point p: the backward pass restricted to active neurons (see the module docstring).

    Layer l (0-based, 0..L-1) has widths[l] outputs; its row pointers (CSR: rows -> columns) and column
    pointers (CSC: columns -> rows, ascending) start at lay_ptr[l] in csr_ptr and csc_ptr (both padded to
    one length per layer).  dT[p, offs[l] + j] is sigma~' of neuron j of hidden layer l.  err[p] = 0, or
    kind + 4 (layer + 1024 neuron) with kind 1 (a backward sum) or 2 (a product by sigma~') at the first
    non-finite value (decoded by the caller).
    """
    P, K = Y.shape
    L = widths.shape[0]
    wmax = 1
    for l in range(L):
        if widths[l] > wmax:
            wmax = widths[l]
    if d_in > wmax:
        wmax = d_in
    for p in numba.prange(P):
        pos = np.full(wmax, -1, np.int64)          # index of a neuron of the current upstream layer in act
        mark = np.zeros(wmax, np.bool_)
        act = np.zeros(1, np.int64)                 # active neurons of the upstream layer (output: row 0)
        U = np.empty((1, K))
        for k in range(K):
            U[0, k] = Y[p, k]
        pos[0] = 0
        for l in range(L - 1, -1, -1):
            n_in = widths[l - 1] if l > 0 else d_in
            # candidates: every column reached from an active row through a nonzero weight
            base = lay_ptr[l]
            cnt = 0
            for a in range(act.shape[0]):
                i = act[a]
                cnt += csr_ptr[base + i + 1] - csr_ptr[base + i]
            cand = np.empty(cnt, np.int64)
            nc = 0
            for a in range(act.shape[0]):
                i = act[a]
                for t in range(csr_ptr[base + i], csr_ptr[base + i + 1]):
                    j = csr_idx[t]
                    if not mark[j]:
                        mark[j] = True
                        cand[nc] = j
                        nc += 1
            cand = np.sort(cand[:nc])
            V = np.zeros((nc, K))
            for c in range(nc):
                j = cand[c]
                mark[j] = False
                for t in range(csc_ptr[base + j], csc_ptr[base + j + 1]):
                    i = csc_idx[t]
                    q = pos[i]
                    if q < 0:
                        continue
                    w = csc_w[t]
                    for k in range(K):
                        prod = _rn(U[q, k] * w, shift, half, mask, small_bits, Kc, omega, False)
                        V[c, k] = _rn(V[c, k] + prod, shift, half, mask, small_bits, Kc, omega, False)
                for k in range(K):
                    if not (abs(V[c, k]) <= omega):
                        if err[p] == 0:
                            err[p] = 1 + 4 * (l + 1 + 1024 * j)      # backward sum, layer l+1, neuron j
                        break
            for a in range(act.shape[0]):
                pos[act[a]] = -1
            if err[p] != 0:
                break
            if l == 0:
                for c in range(nc):
                    for k in range(K):
                        grads[p, k, cand[c]] = V[c, k]
                break
            # through sigma~' of hidden layer l-1 (0-based): the new active set
            o = offs[l - 1]
            keep = 0
            for c in range(nc):
                if dT[p, o + cand[c]] != 0.0:
                    keep += 1
            act = np.empty(keep, np.int64)
            U = np.empty((keep, K))
            q = 0
            for c in range(nc):
                dv = dT[p, o + cand[c]]
                if dv == 0.0:
                    continue
                act[q] = cand[c]
                pos[cand[c]] = q
                for k in range(K):
                    r = _rn(V[c, k] * dv, shift, half, mask, small_bits, Kc, omega, False)
                    U[q, k] = r
                    if not (abs(r) <= omega) and err[p] == 0:
                        err[p] = 2 + 4 * (l + 1024 * cand[c])      # activation derivative, layer l, neuron
                q += 1
            if err[p] != 0:
                break


if kernels.HAVE_NUMBA:
    _backward = numba.njit(cache=True, parallel=True)(_backward_py)


def _codes_py(z, zero_index, M, e_min, out):
    """out[n, i] = index of z[n, i] among the format's ascending values (``kernels._lookup_py``'s rank)."""
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


def _same(cls, p, q, idx, lo, hi):
    for t in range(lo, hi):
        if cls[p, idx[t]] != cls[q, idx[t]]:
            return False
    return True


def _vclasses_py(cls_up, cp, ci, vc, nvc):
    """Group the points by the classes of neuron j's successors (column j of the layer): equal groups
    have equal backward sums v_j for every y.  vc[p, j] = group (numbered in order of first point), or -1
    when every successor is zero there."""
    P = cls_up.shape[0]
    for j in numba.prange(vc.shape[1]):
        reps = np.empty(P, np.int32)
        lo, hi = cp[j], cp[j + 1]
        n = 0
        for p in range(P):
            live = False
            for t in range(lo, hi):
                if cls_up[p, ci[t]] >= 0:
                    live = True
                    break
            if not live:
                vc[p, j] = -1
                continue
            found = -1
            for r in range(n):
                if _same(cls_up, p, reps[r], ci, lo, hi):
                    found = r
                    break
            if found < 0:
                reps[n] = p
                found = n
                n += 1
            vc[p, j] = found
        nvc[j] = n


def _first_py(cls, off, reps):
    """reps[off[j] + g] = the first point of group g of neuron j (reps starts at -1)."""
    for j in numba.prange(cls.shape[1]):
        for p in range(cls.shape[0]):
            g = cls[p, j]
            if g >= 0 and reps[off[j] + g] < 0:
                reps[off[j] + g] = p


def _vsums_py(cls_up, U_up, uoff, cp, ci, cw, reps, voff, V, err,
              shift, half, mask, small_bits, Kc, omega):
    """V[voff[j] + r] = the left-to-right rounded backward sum of neuron j at the representative point of
    its group r (zero successors skipped: see the module docstring); err[j] = 1 where one is not finite."""
    K = V.shape[1]
    for j in numba.prange(voff.shape[0] - 1):
        for row in range(voff[j], voff[j + 1]):
            q = reps[row]
            for t in range(cp[j], cp[j + 1]):
                c = cls_up[q, ci[t]]
                if c < 0:
                    continue
                src = uoff[ci[t]] + c
                w = cw[t]
                for k in range(K):
                    prod = _rn(U_up[src, k] * w, shift, half, mask, small_bits, Kc, omega, False)
                    V[row, k] = _rn(V[row, k] + prod, shift, half, mask, small_bits, Kc, omega, False)
            for k in range(K):
                if not (abs(V[row, k]) <= omega):
                    err[j] = 1
                    break


def _point_codes(mode, ep, et, ec, g, P):
    """The pre-activation codes of hidden neuron g (global index) at every point: its most common code,
    then its exceptions."""
    pc = np.full(P, mode[g], np.int64)
    for t in range(ep[g], ep[g + 1]):
        pc[et[t]] = ec[t]
    return pc


def _uclasses_py(vc, mode, ep, et, ec, off, dtab, cls, nuc):
    """Through sigma~': group the points of neuron j by (v group, sigma~'(z_j)); -1 where the product is
    certainly zero (no v, or sigma~' = 0)."""
    P = vc.shape[0]
    for j in numba.prange(vc.shape[1]):
        pc = _point_codes(mode, ep, et, ec, off + j, P)
        reps = np.empty(P, np.int32)
        n = 0
        for p in range(P):
            g = vc[p, j]
            dv = dtab[pc[p]]
            if g < 0 or dv == 0.0:
                cls[p, j] = -1
                continue
            found = -1
            for r in range(n):
                q = reps[r]
                if vc[q, j] == g and dtab[pc[q]] == dv:
                    found = r
                    break
            if found < 0:
                reps[n] = p
                found = n
                n += 1
            cls[p, j] = found
        nuc[j] = n


def _uvalues_py(vc, mode, ep, et, ec, off, dtab, ureps, uoff, voff, V, U, err,
                shift, half, mask, small_bits, Kc, omega):
    K = V.shape[1]
    P = vc.shape[0]
    for j in numba.prange(uoff.shape[0] - 1):
        if uoff[j + 1] == uoff[j]:
            continue
        pc = _point_codes(mode, ep, et, ec, off + j, P)
        for row in range(uoff[j], uoff[j + 1]):
            q = ureps[row]
            dv = dtab[pc[q]]
            src = voff[j] + vc[q, j]
            for k in range(K):
                u = _rn(V[src, k] * dv, shift, half, mask, small_bits, Kc, omega, False)
                U[row, k] = u
                if not (abs(u) <= omega):
                    err[j] = 2


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


def _fwd_layer_range(j0, j1, N, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt, nchunk,
                  shift, half, mask, small_bits, Kc, omega):
    """The neurons j0 <= j < j1 of ``_fwd_layer_py`` (one chunk: its scratch arrays, then each neuron)."""
    where = np.full(N, -1, np.int64)
    acc = np.empty(N)
    tmp = np.empty(N)
    for j in range(j0, j1):
        o = off[j]
        cnt = 0
        for t in range(indptr[j], indptr[j + 1]):
            i = indices[t]
            cnt = _add_new(where, upt, o, cnt, apt, aptr[i], aptr[i + 1])
        _number_sorted(where, upt, o, cnt)
        for u in range(cnt):
            acc[u] = 0.0
        d = 0.0
        for t in range(indptr[j], indptr[j + 1]):
            i = indices[t]
            w = data[t]
            m = amode[i]
            d = _rn(d + _rn(m * w, shift, half, mask, small_bits, Kc, omega, False),
                    shift, half, mask, small_bits, Kc, omega, False)
            if cnt == 0:
                continue
            for u in range(cnt):
                tmp[u] = m
            for e in range(aptr[i], aptr[i + 1]):
                tmp[where[apt[e]]] = aval[e]
            for u in range(cnt):
                acc[u] = _rn(acc[u] + _rn(tmp[u] * w, shift, half, mask, small_bits, Kc, omega, False),
                             shift, half, mask, small_bits, Kc, omega, False)
        b = bias[j]
        zdef[j] = _rn(d + b, shift, half, mask, small_bits, Kc, omega, False)
        for u in range(cnt):
            uval[o + u] = _rn(acc[u] + b, shift, half, mask, small_bits, Kc, omega, False)
            where[upt[o + u]] = -1
        ucnt[j] = cnt

def _fwd_layer_py(N, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt, nchunk,
                  shift, half, mask, small_bits, Kc, omega):
    """One layer of the sparse forward pass.  The previous layer's values: neuron i is amode[i] at every
    point but its exceptions apt[aptr[i]:aptr[i+1]] (ascending points) with values aval[...].  For output
    neuron j: zdef[j] = its row sum on the inputs' defaults (every point outside the union U of its
    inputs' exception points has exactly these inputs), and upt/uval[off[j]:off[j]+ucnt[j]] = the points
    of U (ascending) and the row sum at each, with the operations of ``kernels._row_sums_py`` in its
    order (products, left-to-right rounded sums from 0, bias last)."""
    n_out = indptr.shape[0] - 1
    step = (n_out + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n_out, j0 + step)
        if j0 >= j1:
            continue
        _fwd_layer_range(j0, j1, N, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt,
                         nchunk, shift, half, mask, small_bits, Kc, omega)


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


if kernels.HAVE_NUMBA:
    _codes = numba.njit(cache=True, parallel=True)(_codes_py)
    _same = numba.njit(cache=True, inline="always")(_same)
    _point_codes = numba.njit(cache=True, inline="always")(_point_codes)
    _vclasses = numba.njit(cache=True, parallel=True)(_vclasses_py)
    _first = numba.njit(cache=True, parallel=True)(_first_py)
    _vsums = numba.njit(cache=True, parallel=True)(_vsums_py)
    _uclasses = numba.njit(cache=True, parallel=True)(_uclasses_py)
    _uvalues = numba.njit(cache=True, parallel=True)(_uvalues_py)
    _shellsort = numba.njit(cache=True)(_shellsort)
    _add_new = numba.njit(cache=True)(_add_new)
    _number_sorted = numba.njit(cache=True)(_number_sorted)
    _fwd_layer_range = numba.njit(cache=True)(_fwd_layer_range)
    _mode_range = numba.njit(cache=True)(_mode_range)
    _fwd_layer = numba.njit(cache=True, parallel=True)(_fwd_layer_py)
    _bits = numba.njit(cache=True, inline="always")(_bits)
    _mode = numba.njit(cache=True, parallel=True)(_mode_py)
    _lookup_codes = numba.njit(cache=True)(_lookup_codes_py)


class _Structure:
    """The network's sparse patterns, concatenated for the kernel (built once per network)."""

    def __init__(self, net):
        csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr = [], [], [], [], [], []
        p_csr = p_csc = 0
        ptr_at = 0
        for layer in net.layers:
            w = layer.weight
            c = layer._csc
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


def _round_params(fmt):
    shift = 52 - fmt.M
    return (shift, np.int64((1 << (shift - 1)) - 1), np.int64(~((1 << shift) - 1)),
            np.float64(2.0 ** fmt.e_min).view(np.int64), 2.0 ** (fmt.e_min - fmt.M + 52), float(fmt.max))


def supports(net) -> bool:
    """Whether ``evaluate_sparse`` applies: finite semantics, a format of at most 16 bits, numba."""
    f = net.format
    return kernels.HAVE_NUMBA and not net.ieee and f.bits <= 16 and f.fits_float64 and f.M < 52


# bytes of per-group backward values of one layer the shared-y path aims at (it runs a few y at a time
# when they would not fit; the grouping is then recomputed for each batch of y)
CLASS_BYTES = 1 << 27


def _store_dtype(fmt):
    """float32 holds every value of the format exactly (all float8/float16/bfloat16 formats): half the
    memory for the per-group backward values; float64 otherwise."""
    ok = fmt.M <= 23 and fmt.e_max <= 127 and fmt.e_min - fmt.M >= -149
    return np.float32 if ok else np.float64


def _derivative_table(net):
    """(sigma~' on every value of the format, inf where it overflows; index of 0 among the values)."""
    t = net.rounded.table()
    d = np.where(t.dsigma_overflow, np.inf, t.dsigma).astype(np.float64)
    return np.ascontiguousarray(d), int(np.searchsorted(t.points, 0.0))


def _forward_compressed(net, S, X, values, zero_index, dtab):
    """Forward values of every point (``Network._forward_chunk`` layer by layer, with its checks: every
    pre-activation and sigma~ finite) and the index of every hidden pre-activation among the format's
    values, compressed per neuron: its most common code (on the first chunk of points) and the (point,
    code) exceptions.  A chain neuron takes one state at its point and one at all the others, so this is
    about two numbers per neuron instead of one per point."""
    fmt = net.format
    N = X.shape[0]
    n_hidden = int(S.offs[-1])
    mode = np.zeros(n_hidden, np.int64)
    exc = []                                        # (global neuron, point, code) arrays
    bad_d = not np.isfinite(dtab).all()
    chunk = max(1, (1 << 22) // max(net.widths))
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        v = X[s:e].astype(net._dtype)
        for l, layer in enumerate(net.layers, 1):
            z = layer.forward_sums(v, fmt, False)
            net._check(z, "forward", l, s, X)
            if l == net.depth:
                values[s:e] = z[:, 0]
                break
            c = np.empty(z.shape, np.int64)
            _codes(np.ascontiguousarray(z, dtype=np.float64), zero_index, fmt.M, fmt.e_min, c)
            if bad_d and not np.isfinite(dtab[c]).all():
                net._check(dtab[c], "backward (activation derivative)", l, s, X)
            o0, o1 = int(S.offs[l - 1]), int(S.offs[l])
            if s == 0:
                mode[o0:o1] = _column_modes(c)
            pts, cols = np.nonzero(c != mode[None, o0:o1])
            exc.append((cols + o0, pts + s, c[pts, cols]))
            a = net._activation(z, derivative=False)
            net._check(a, "forward (activation)", l, s, X)
            v = a.astype(net._dtype)
    g = np.concatenate([x[0] for x in exc]) if exc else np.zeros(0, np.int64)
    order = np.argsort(g, kind="stable")                    # by neuron, points ascending within
    ep = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_hidden))]).astype(np.int64)
    et = (np.concatenate([x[1] for x in exc]) if exc else np.zeros(0, np.int64))[order].astype(np.int64)
    ec = (np.concatenate([x[2] for x in exc]) if exc else np.zeros(0, np.int64))[order].astype(np.int64)
    return mode, ep, et, ec


# ---- the groups of points, sparse: per neuron a default group and its exceptions --------------------
# A layer's groups: neuron i is in group gdef[i] at every point but gpt[gptr[i]:gptr[i+1]] (ascending)
# where it is in group gcl[...]; -1: its value there is certainly zero (not computed).  Equal groups
# have equal backward values for every y (see the module docstring); each group is computed once, at
# its representative point (the first point in it).

def _at_py(dflt, ptr, pts, vals, i, q):
    """The entry of neuron i at point q in a default-and-exceptions representation."""
    lo, hi = ptr[i], ptr[i + 1]
    if lo == hi:
        return dflt[i]
    while lo < hi:                        # binary search for q among the ascending points
        mid = (lo + hi) // 2
        if pts[mid] < q:
            lo = mid + 1
        else:
            hi = mid
    if lo < ptr[i + 1] and pts[lo] == q:
        return vals[lo]
    return dflt[i]


def _group_points(P, where, U, cnt, keys, m, dkey, gdef_out, j, gpt, gcl, o, roff, reps, same, gcol):
    """Group the points by their key (keys[t * cnt + u], t < m, at point U[u]; dkey at every point not
    in U; a key of -1 entries only, or with a -1 first entry for two-entry keys, is no group): numbers
    the groups (the default key's first, if some point has it), writes their first points to reps[roff:]
    and the points of U whose group is not the default one to gpt/gcl[o:]; returns (#groups, #written)."""
    dlive = False
    for t in range(m):
        if dkey[t] >= 0:
            dlive = True
            break
    # does some point have the default key, and which comes first?
    first_out = -1                    # the first point not in U
    if cnt < P:
        q = 0
        while q < P and where[q] >= 0:
            q += 1
        first_out = q
    first_in = -1
    for u in range(cnt):
        eq = True
        for t in range(m):
            if keys[t * cnt + u] != dkey[t]:
                eq = False
                break
        same[u] = eq
        if eq and first_in < 0:
            first_in = U[u]
    ng = 0
    dg = -1
    if dlive and (first_out >= 0 or first_in >= 0):
        dg = 0
        ng = 1
        if first_out < 0:
            reps[roff] = first_in
        elif first_in < 0:
            reps[roff] = first_out
        else:
            reps[roff] = min(first_in, first_out)
    gdef_out[j] = dg
    # the other groups, in the order of their first points
    # gcol[r]: the column of group r's first point (group dg excluded)
    k = 0
    for u in range(cnt):
        if same[u]:
            g = dg
        else:
            live = False
            for t in range(m):
                if keys[t * cnt + u] >= 0:
                    live = True
                    break
            if not live:
                g = -1
            else:
                g = -1
                for r in range(1 if dg == 0 else 0, ng):
                    c = gcol[r]
                    eq = True
                    for t in range(m):
                        if keys[t * cnt + u] != keys[t * cnt + c]:
                            eq = False
                            break
                    if eq:
                        g = r
                        break
                if g < 0:
                    g = ng
                    gcol[ng] = u
                    reps[roff + ng] = U[u]
                    ng += 1
        if g != dg:
            gpt[o + k] = U[u]
            gcl[o + k] = g
            k += 1
    return ng, k


def _svclasses_range(j0, j1, P, cp, ci, udef, uptr, upt, ucl, off, roff, vdef, vpt, vcl, vcnt, nvc, reps, nchunk):
    """The neurons j0 <= j < j1 of ``_svclasses_py`` (one chunk: its scratch arrays, then each neuron)."""
    where = np.full(P, -1, np.int64)
    U = np.empty(P, np.int64)
    same = np.empty(P, np.bool_)
    gcol = np.empty(P, np.int64)
    kbuf = np.empty(4 * P, np.int64)
    dbuf = np.empty(16, np.int64)
    for j in range(j0, j1):
        m = cp[j + 1] - cp[j]
        cnt = 0
        for t in range(cp[j], cp[j + 1]):
            i = ci[t]
            cnt = _add_new(where, U, 0, cnt, upt, uptr[i], uptr[i + 1])
        _number_sorted(where, U, 0, cnt)
        if m * cnt > kbuf.shape[0]:
            kbuf = np.empty(2 * m * cnt, np.int64)
        if m > dbuf.shape[0]:
            dbuf = np.empty(2 * m, np.int64)
        keys = kbuf
        dkey = dbuf[:m]
        for tl in range(m):
            i = ci[cp[j] + tl]
            dkey[tl] = udef[i]
            for u in range(cnt):
                keys[tl * cnt + u] = udef[i]
            for e in range(uptr[i], uptr[i + 1]):
                keys[tl * cnt + where[upt[e]]] = ucl[e]
        ng, k = _group_points(P, where, U, cnt, keys, m, dkey, vdef, j, vpt, vcl, off[j], roff[j], reps,
                              same, gcol)
        nvc[j] = ng
        vcnt[j] = k
        for u in range(cnt):
            where[U[u]] = -1


def _svclasses_py(P, cp, ci, udef, uptr, upt, ucl, off, roff, vdef, vpt, vcl, vcnt, nvc, reps, nchunk):
    """The groups of every neuron j of a layer by the groups of its successors (column j of the next
    layer: rows ci[cp[j]:cp[j+1]]), from theirs (udef, uptr, upt, ucl): ``_vclasses`` on defaults and
    exceptions (a point outside every successor's exceptions has the default key)."""
    n = cp.shape[0] - 1
    step = (n + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n, j0 + step)
        if j0 >= j1:
            continue
        _svclasses_range(j0, j1, P, cp, ci, udef, uptr, upt, ucl, off, roff, vdef, vpt, vcl, vcnt, nvc, reps, nchunk)


def _suclasses_range(j0, j1, P, vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, off, roff, udef, upt, ucl, ucnt, nuc,
                  reps, nchunk):
    """The neurons j0 <= j < j1 of ``_suclasses_py`` (one chunk: its scratch arrays, then each neuron)."""
    where = np.full(P, -1, np.int64)
    U = np.empty(P, np.int64)
    keys = np.empty(P, np.int64)
    dkey = np.empty(1, np.int64)
    dvs = np.empty(P)
    same = np.empty(P, np.bool_)
    gcol = np.empty(P, np.int64)
    dlist = np.empty(P + 1)
    idx = np.empty(P, np.int64)
    for j in range(j0, j1):
        g = g0 + j
        cnt = _add_new(where, U, 0, 0, vpt, vptr[j], vptr[j + 1])
        cnt = _add_new(where, U, 0, cnt, et, ep[g], ep[g + 1])
        _number_sorted(where, U, 0, cnt)
        # key: the v group where sigma~' != 0 (-1 elsewhere), made distinct per sigma~' value by
        # numbering the (v group, sigma~') pairs through the v group's first sigma~' values
        dd = dtab[mode[g]]
        for u in range(cnt):
            keys[u] = vdef[j]
            dvs[u] = dd
        for e in range(vptr[j], vptr[j + 1]):
            keys[where[vpt[e]]] = vcl[e]
        for e in range(ep[g], ep[g + 1]):
            dvs[where[et[e]]] = dtab[ec[e]]
        dkey[0] = vdef[j] if dd != 0.0 else -1
        # pairs (v, d) -> one integer: v * (number of distinct d values seen) is not stable, so
        # the distinct sigma~' values of this neuron are listed and the key is v * nd + index
        nd = 1
        dlist[0] = dd
        for u in range(cnt):
            f = -1
            for r in range(nd):
                if dlist[r] == dvs[u]:
                    f = r
                    break
            if f < 0:
                dlist[nd] = dvs[u]
                f = nd
                nd += 1
            idx[u] = f
        if dkey[0] >= 0:
            dkey[0] = dkey[0] * nd
        for u in range(cnt):
            if keys[u] < 0 or dvs[u] == 0.0:
                keys[u] = -1
            else:
                keys[u] = keys[u] * nd + idx[u]
        ng, k = _group_points(P, where, U, cnt, keys, 1, dkey, udef, j, upt, ucl, off[j], roff[j], reps,
                              same, gcol)
        nuc[j] = ng
        ucnt[j] = k
        for u in range(cnt):
            where[U[u]] = -1

def _suclasses_py(P, vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, off, roff, udef, upt, ucl, ucnt, nuc,
                  reps, nchunk):
    """Through sigma~': the groups of every neuron j by (its v group, sigma~'(z_j)) (``_uclasses``);
    no group where there is no v or sigma~' = 0."""
    n = vdef.shape[0]
    step = (n + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n, j0 + step)
        if j0 >= j1:
            continue
        _suclasses_range(j0, j1, P, vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, off, roff, udef, upt, ucl, ucnt,
                         nuc, reps, nchunk)


def _vterms_py(udef, uptr, upt, ucl, umap, uoff, cp, ci, cw, reps, voff, nterm, tsrc, tw):
    """For every group row of every neuron j: how many successors are live at its representative point,
    and the first one's (physical source row, weight)."""
    for j in numba.prange(voff.shape[0] - 1):
        for row in range(voff[j], voff[j + 1]):
            q = reps[row]
            n = 0
            for t in range(cp[j], cp[j + 1]):
                c = _at(udef, uptr, upt, ucl, ci[t], q)
                if c < 0:
                    continue
                if n == 0:
                    tsrc[row] = umap[uoff[ci[t]] + c]
                    tw[row] = cw[t]
                n += 1
            nterm[row] = n


def _vsingle_py(U, src, w, out, V, shift, half, mask, small_bits, Kc, omega):
    """V[out[r]] = RN(0 + RN(U[src[r]] w[r])) (a backward sum of one term, as ``_vsums`` computes it)."""
    K = U.shape[1]
    for r in numba.prange(src.shape[0]):
        a, ww, o = src[r], w[r], out[r]
        for k in range(K):
            prod = _rn(U[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
            V[o, k] = _rn(0.0 + prod, shift, half, mask, small_bits, Kc, omega, False)


def _vmulti_py(rows, rowj, out, udef, uptr, upt, ucl, umap, U, uoff, cp, ci, cw, reps, V,
               shift, half, mask, small_bits, Kc, omega):
    """V[out[r]] = the left-to-right rounded backward sum of group row rows[r] (neuron rowj) at its
    representative point (``_vsums``)."""
    K = U.shape[1]
    for r in numba.prange(rows.shape[0]):
        row, o = rows[r], out[r]
        j = rowj[row]
        q = reps[row]
        for k in range(K):
            V[o, k] = 0.0
        for t in range(cp[j], cp[j + 1]):
            c = _at(udef, uptr, upt, ucl, ci[t], q)
            if c < 0:
                continue
            a = umap[uoff[ci[t]] + c]
            ww = cw[t]
            for k in range(K):
                prod = _rn(U[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
                V[o, k] = _rn(V[o, k] + prod, shift, half, mask, small_bits, Kc, omega, False)


def _uterms_py(vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, ureps, urowj, voff, vmap, usrc, udv):
    """For every u-group row: (physical v row, sigma~') at its representative point."""
    for row in numba.prange(ureps.shape[0]):
        j = urowj[row]
        q = ureps[row]
        udv[row] = dtab[_at(mode, ep, et, ec, g0 + j, q)]
        usrc[row] = vmap[voff[j] + _at(vdef, vptr, vpt, vcl, j, q)]


def _usingle_py(V, src, dv, U, shift, half, mask, small_bits, Kc, omega):
    """U[r] = RN(V[src[r]] dv[r]) (a copy where dv = 1: every entry of V is a value of the format)."""
    K = V.shape[1]
    for r in numba.prange(src.shape[0]):
        a, d = src[r], dv[r]
        if d == 1.0:
            for k in range(K):
                U[r, k] = V[a, k]
            continue
        for k in range(K):
            U[r, k] = _rn(V[a, k] * d, shift, half, mask, small_bits, Kc, omega, False)


if kernels.HAVE_NUMBA:
    _at = numba.njit(cache=True, inline="always")(_at_py)
    _group_points = numba.njit(cache=True)(_group_points)
    _svclasses_range = numba.njit(cache=True)(_svclasses_range)
    _suclasses_range = numba.njit(cache=True)(_suclasses_range)
    _svclasses = numba.njit(cache=True, parallel=True)(_svclasses_py)
    _suclasses = numba.njit(cache=True, parallel=True)(_suclasses_py)
    _vterms = numba.njit(cache=True)(_vterms_py)
    _vsingle = numba.njit(cache=True, parallel=True)(_vsingle_py)
    _vmulti = numba.njit(cache=True, parallel=True)(_vmulti_py)
    _uterms = numba.njit(cache=True)(_uterms_py)
    _usingle = numba.njit(cache=True, parallel=True)(_usingle_py)


def _unique_pairs(rows, vals):
    """(distinct (row, bits of val) pairs as an (n, 2) int64 array with the val bits in column 1, the
    index of each input pair among them), through one int64 key per pair."""
    vb = np.ascontiguousarray(vals, dtype=np.float64).view(np.int64)
    ub, vi = np.unique(vb, return_inverse=True)
    key = np.asarray(rows, np.int64) * max(1, len(ub)) + vi.reshape(-1)
    uk, inv = np.unique(key, return_inverse=True)
    nb = max(1, len(ub))
    pairs = np.stack([uk // nb, ub[uk % nb]], axis=1) if len(uk) else np.zeros((0, 2), np.int64)
    return pairs.astype(np.int64), inv.reshape(-1).astype(np.int64)


def _group_sums(udef, uptr, upt, ucl, umap, U, uoff, cp, ci, cw, reps, voff, K, dt, rp):
    """(V physical rows, vmap): the backward sum of every group row of a layer (``_vsums``), each distinct
    one once: a row with one live successor term is RN(0 + RN(u w)), a function of (u's physical row,
    w) only, so equal pairs share one row (the chains of a box repeat a few weight sequences); rows of
    several terms are computed each."""
    nrow = int(voff[-1])
    nterm, tsrc, tw = np.zeros(nrow, np.int64), np.zeros(nrow, np.int64), np.zeros(nrow)
    _vterms(udef, uptr, upt, ucl, umap, uoff, cp, ci, cw, reps, voff, nterm, tsrc, tw)
    single = nterm == 1
    vmap = np.empty(nrow, np.int64)
    pairs, inv = _unique_pairs(tsrc[single], tw[single])
    n1 = len(pairs)
    vmap[single] = inv
    multi = np.flatnonzero(~single).astype(np.int64)
    vmap[multi] = n1 + np.arange(len(multi))
    V = np.empty((n1 + len(multi), K), dt)
    _vsingle(U, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]).view(np.float64),
             np.arange(n1, dtype=np.int64), V, *rp)
    if len(multi):
        rowj = np.repeat(np.arange(len(voff) - 1, dtype=np.int64), np.diff(voff))
        _vmulti(multi, rowj, n1 + np.arange(len(multi), dtype=np.int64), udef, uptr, upt, ucl, umap, U, uoff,
                cp, ci, cw, reps, V, *rp)
    return V, vmap


def _backward_groups(net, comp, Y, dtab, X, rp):
    """``_backward_classes`` with every layer's groups as defaults and exceptions (``_svclasses``,
    ``_suclasses``): the grouping costs about the exceptions of a layer, not points x neurons (a chain
    neuron is in one group at its point and in one, or none, at all the others)."""
    mode, ep, et, ec = comp
    P, K = X.shape[0], Y.shape[0]
    dt = _store_dtype(net.format)
    hidden = [layer.shape[0] for layer in net.layers[:-1]]
    offs = np.concatenate([[0], np.cumsum(hidden)]).astype(np.int64)
    nchunk = 64
    udef, uptr = np.zeros(1, np.int64), np.zeros(2, np.int64)          # the output: group 0 everywhere
    upt, ucl = np.zeros(0, np.int64), np.zeros(0, np.int64)
    U_up = np.ascontiguousarray(Y[None, :], dt)       # physical rows; group row g of the layer is umap[g]
    umap = np.zeros(1, np.int64)
    uoff_up = np.zeros(1, np.int64)
    for l in range(net.depth, 0, -1):
        c = net.layers[l - 1]._csc
        cp, ci, cw = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(np.float64)
        n_in = c.shape[1]
        col = np.repeat(np.arange(n_in), np.diff(cp))
        bound = np.minimum(P, np.rint(np.bincount(col, weights=np.diff(uptr)[ci].astype(np.float64),
                                                  minlength=n_in))).astype(np.int64)
        off = np.concatenate([[0], np.cumsum(bound)]).astype(np.int64)
        roff = np.concatenate([[0], np.cumsum(bound + 1)]).astype(np.int64)
        vdef, vcnt, nvc = np.empty(n_in, np.int64), np.empty(n_in, np.int64), np.empty(n_in, np.int64)
        vpt, vcl = np.empty(int(off[-1]), np.int64), np.empty(int(off[-1]), np.int64)
        reps = np.full(int(roff[-1]), -1, np.int64)
        _svclasses(P, cp, ci, udef, uptr, upt, ucl, off, roff, vdef, vpt, vcl, vcnt, nvc, reps, nchunk)
        idx = _compact(off, vcnt)
        vpt, vcl = vpt[idx], vcl[idx]
        vptr = np.concatenate([[0], np.cumsum(vcnt)]).astype(np.int64)
        voff = np.concatenate([[0], np.cumsum(nvc)]).astype(np.int64)
        reps = reps[_compact(roff, nvc)]
        V, vmap = _group_sums(udef, uptr, upt, ucl, umap, U_up, uoff_up, cp, ci, cw, reps, voff, K, dt, rp)
        bad = ~np.isfinite(V).all(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad[vmap])[0])                  # the first neuron's first bad group
            j = int(np.searchsorted(voff, row, side="right") - 1)
            raise net._overflow("backward", l, j, X[reps[row]].tolist(), int(reps[row]))
        if l == 1:
            G = np.zeros((P, K, n_in))
            for j in range(n_in):
                cls = np.full(P, vdef[j], np.int64)
                cls[vpt[vptr[j]:vptr[j + 1]]] = vcl[vptr[j]:vptr[j + 1]]
                on = cls >= 0
                G[on, :, j] = V[vmap[voff[j] + cls[on]]]
            return G
        g0 = int(offs[l - 2])
        bound = np.minimum(P, vcnt + np.diff(ep)[g0:g0 + n_in]).astype(np.int64)
        off = np.concatenate([[0], np.cumsum(bound)]).astype(np.int64)
        roff = np.concatenate([[0], np.cumsum(bound + 1)]).astype(np.int64)
        ndef, ncnt, nuc = np.empty(n_in, np.int64), np.empty(n_in, np.int64), np.empty(n_in, np.int64)
        npt, ncl = np.empty(int(off[-1]), np.int64), np.empty(int(off[-1]), np.int64)
        ureps = np.full(int(roff[-1]), -1, np.int64)
        _suclasses(P, vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, off, roff, ndef, npt, ncl, ncnt, nuc,
                   ureps, nchunk)
        idx = _compact(off, ncnt)
        npt, ncl = npt[idx], ncl[idx]
        uoff = np.concatenate([[0], np.cumsum(nuc)]).astype(np.int64)
        ureps = ureps[_compact(roff, nuc)]
        urowj = np.repeat(np.arange(n_in, dtype=np.int64), nuc)
        usrc, udv = np.empty(len(ureps), np.int64), np.empty(len(ureps))
        _uterms(vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, ureps, urowj, voff, vmap, usrc, udv)
        # equal (v row, sigma~') give equal rows: each distinct pair once
        pairs, umap = _unique_pairs(usrc, udv)
        U = np.empty((len(pairs), K), dt)
        _usingle(V, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]).view(np.float64), U, *rp)
        bad = ~np.isfinite(U).all(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad[umap])[0])
            j, q = int(urowj[row]), int(ureps[row])
            raise net._overflow("backward (activation derivative)", l - 1, j, X[q].tolist(), q)
        udef, uptr, upt, ucl = ndef, np.concatenate([[0], np.cumsum(ncnt)]).astype(np.int64), npt, ncl
        U_up, uoff_up = U, uoff[:-1].copy()
    raise AssertionError("unreachable")


def _compact(off, cnt):
    """Flat indices of the first cnt[j] slots of every region off[j]:off[j+1]."""
    total = int(cnt.sum())
    starts = np.concatenate([[0], np.cumsum(cnt)[:-1]]).astype(np.int64)
    return np.repeat(off[:-1] - starts, cnt) + np.arange(total, dtype=np.int64)


def _forward_sparse(net, X, zero_index, dtab):
    """``_forward_compressed``'s result, (values, (mode, ep, et, ec)), computed per neuron on a default and
    its exceptions instead of on every point: a neuron's value is one value (its most common) at every
    point but a few (a chain neuron: its own point), and a neuron whose inputs all take their default
    at a point takes the value of its row on the defaults there (the same rounded operations on the same
    numbers).  So each row is computed once on the defaults and once at each point of the union of its
    inputs' exception points (``_fwd_layer``), then re-expressed by its most common value (``_mode``),
    for the pre-activations (their codes: the backward pass) and for sigma~ (the next layer's input).
    Returns None where a pre-activation, sigma~ or a needed sigma~' is not finite at some point: the
    dense pass then reports it as the dense interpreter does."""
    fmt = net.format
    N, d_in = X.shape
    rp = _round_params(fmt)
    sig = np.ascontiguousarray(net.rounded.table().sigma, dtype=np.float64)
    bad_d = not np.isfinite(dtab).all()
    nchunk = 64
    # the inputs: coordinate c is X[0, c] but at the points where it differs
    dflt = np.ascontiguousarray(X[0], dtype=np.float64)
    off = np.arange(d_in + 1, dtype=np.int64) * N
    pts = np.tile(np.arange(N, dtype=np.int64), d_in)
    vals = np.ascontiguousarray(X.T.ravel(), dtype=np.float64)
    amode, acnt = np.empty(d_in), np.empty(d_in, np.int64)
    apt, aval = np.empty(d_in * N, np.int64), np.empty(d_in * N)
    _mode(N, dflt, pts, vals, np.full(d_in, N, np.int64), off, amode, apt, aval, acnt)
    idx = _compact(off, acnt)
    apt, aval = apt[idx], aval[idx]
    aptr = np.concatenate([[0], np.cumsum(acnt)]).astype(np.int64)
    modes, exc_n, exc_p, exc_c = [], [], [], []
    g0 = 0
    values = None
    for l, layer in enumerate(net.layers, 1):
        w = layer.weight
        n = w.shape[0]
        pattern = sp.csr_matrix((np.ones(w.nnz), w.indices, w.indptr), shape=w.shape)
        bound = np.minimum(N, np.rint(pattern @ np.diff(aptr).astype(np.float64))).astype(np.int64)
        off = np.concatenate([[0], np.cumsum(bound)]).astype(np.int64)
        zdef, ucnt = np.empty(n), np.empty(n, np.int64)
        upt, uval = np.empty(int(off[-1]), np.int64), np.empty(int(off[-1]))
        _fwd_layer(N, w.indptr.astype(np.int64), w.indices.astype(np.int64), w.data.astype(np.float64),
                   layer.bias.astype(np.float64), amode, aptr, apt, aval, off, zdef, upt, uval, ucnt, nchunk, *rp)
        zmode, zcnt = np.empty(n), np.empty(n, np.int64)
        zpt, zval = np.empty_like(upt), np.empty_like(uval)
        _mode(N, zdef, upt, uval, ucnt, off, zmode, zpt, zval, zcnt)
        idx = _compact(off, zcnt)
        zpt, zval = zpt[idx], zval[idx]
        if l == net.depth:
            if not (np.isfinite(zmode).all() and np.isfinite(zval).all()):
                return None
            values = np.full(N, zmode[0])
            values[zpt] = zval
            break
        bad = np.zeros(1, np.int64)
        mcode, adef = np.empty(n, np.int64), np.empty(n)
        _lookup_codes(zmode, zero_index, fmt.M, fmt.e_min, sig, mcode, adef, bad)
        ecode, aexc = np.empty(len(zval), np.int64), np.empty(len(zval))
        _lookup_codes(zval, zero_index, fmt.M, fmt.e_min, sig, ecode, aexc, bad)
        if bad[0] or (bad_d and not (np.isfinite(dtab[mcode]).all() and np.isfinite(dtab[ecode]).all())):
            return None
        modes.append(mcode)
        exc_n.append(np.repeat(np.arange(g0, g0 + n, dtype=np.int64), zcnt))
        exc_p.append(zpt)
        exc_c.append(ecode)
        g0 += n
        # sigma~: the default's and the exceptions' values, re-expressed by the most common one
        off = np.concatenate([[0], np.cumsum(zcnt)]).astype(np.int64)
        amode, acnt = np.empty(n), np.empty(n, np.int64)
        apt, aval = np.empty_like(zpt), np.empty_like(aexc)
        _mode(N, adef, zpt, aexc, zcnt, off, amode, apt, aval, acnt)
        idx = _compact(off, acnt)
        apt, aval = apt[idx], aval[idx]
        aptr = np.concatenate([[0], np.cumsum(acnt)]).astype(np.int64)
    n_hidden = g0
    mode = np.concatenate(modes) if modes else np.zeros(0, np.int64)
    g = np.concatenate(exc_n) if exc_n else np.zeros(0, np.int64)
    ep = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_hidden))]).astype(np.int64)
    et = np.concatenate(exc_p).astype(np.int64) if exc_p else np.zeros(0, np.int64)
    ec = np.concatenate(exc_c).astype(np.int64) if exc_c else np.zeros(0, np.int64)
    return values, (mode, ep, et, ec)


def _column_modes(c: np.ndarray) -> np.ndarray:
    """The most common value of every column (the first row's where it holds at least half of them)."""
    mode = c[0].copy()
    bad = np.flatnonzero((c == mode[None, :]).sum(axis=0) * 2 < c.shape[0])
    for j in bad.tolist():
        vals, counts = np.unique(c[:, j], return_counts=True)
        mode[j] = vals[np.argmax(counts)]
    return mode


def _backward_classes(net, S, comp, Y, dtab, X, rp):
    """Gradients (N, K, d) of every point for the shared upstream values Y: top-down, every neuron's
    points are grouped by the classes of its successors and its sigma~' (equal groups have equal
    backward values for every y: they are computed once, for the group's first point)."""
    mode, ep, et, ec = comp
    P, K = X.shape[0], Y.shape[0]
    cls_up = np.zeros((P, 1), np.int32)
    dt = _store_dtype(net.format)
    U_up = np.ascontiguousarray(Y[None, :], dt)
    uoff_up = np.zeros(1, np.int64)
    for l in range(net.depth, 0, -1):
        c = net.layers[l - 1]._csc
        cp, ci, cw = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(np.float64)
        n_in = c.shape[1]
        vc = np.empty((P, n_in), np.int32)
        nvc = np.zeros(n_in, np.int64)
        _vclasses(cls_up, cp, ci, vc, nvc)
        voff = np.concatenate([[0], np.cumsum(nvc)]).astype(np.int64)
        reps = np.full(int(voff[-1]), -1, np.int32)
        _first(vc, voff, reps)
        V = np.zeros((int(voff[-1]), K), dt)
        err = np.zeros(n_in, np.int64)
        _vsums(cls_up, U_up, uoff_up, cp, ci, cw, reps, voff, V, err, *rp)
        if err.any():
            j = int(np.flatnonzero(err)[0])
            r = int(np.flatnonzero((~np.isfinite(V[voff[j]:voff[j + 1]])).any(axis=1))[0])
            raise net._overflow("backward", l, j, X[reps[voff[j] + r]].tolist(), int(reps[voff[j] + r]))
        if l == 1:
            G = np.zeros((P, K, n_in))
            for j in range(n_in):
                on = vc[:, j] >= 0
                G[on, :, j] = V[voff[j] + vc[on, j]]
            return G
        off = int(S.offs[l - 2])
        cls = np.empty((P, n_in), np.int32)
        nuc = np.zeros(n_in, np.int64)
        _uclasses(vc, mode, ep, et, ec, off, dtab, cls, nuc)
        uoff = np.concatenate([[0], np.cumsum(nuc)]).astype(np.int64)
        ureps = np.full(int(uoff[-1]), -1, np.int32)
        _first(cls, uoff, ureps)
        U = np.empty((int(uoff[-1]), K), dt)
        err = np.zeros(n_in, np.int64)
        _uvalues(vc, mode, ep, et, ec, off, dtab, ureps, uoff, voff, V, U, err, *rp)
        if err.any():
            j = int(np.flatnonzero(err)[0])
            r = int(np.flatnonzero((~np.isfinite(U[uoff[j]:uoff[j + 1]])).any(axis=1))[0])
            q = int(ureps[uoff[j] + r])
            raise net._overflow("backward (activation derivative)", l - 1, j, X[q].tolist(), q)
        cls_up, U_up, uoff_up = cls, U, uoff[:-1].copy()
    raise AssertionError("unreachable")


def _evaluate_shared(net, X, Y, progress):
    """``evaluate_sparse`` when every point has the same upstream values Y (Theorem 7 claims): one
    forward pass over every point (compressed codes), then the grouped backward pass, a few y at a time
    (the per-group values of a layer: ~2 groups per neuron x y x 8 bytes)."""
    N = X.shape[0]
    dtab, zero_index = _derivative_table(net)
    rp = _round_params(net.format)
    fs = _forward_sparse(net, X, zero_index, dtab) if SPARSE_FORWARD else None
    S = None if (fs is not None and SPARSE_GROUPS) else _Structure(net)    # the dense passes' layout
    if fs is None:                   # a value that is not finite somewhere: the dense pass reports it
        values = np.empty(N)
        comp = _forward_compressed(net, S, X, values, zero_index, dtab)
    else:
        values, comp = fs
    grads = np.zeros((N, Y.shape[0], net.input_dim))
    ky = max(8, CLASS_BYTES // (2 * np.dtype(_store_dtype(net.format)).itemsize * max(net.widths)))
    for k0 in range(0, Y.shape[0], ky):
        k1 = min(Y.shape[0], k0 + ky)
        back = _backward_groups if SPARSE_GROUPS else (lambda *a: _backward_classes(net, S, *a[1:]))
        grads[:, k0:k1] = back(net, comp, Y[k0:k1], dtab, X, rp)
        if progress:
            progress(k1, Y.shape[0])
    return values, grads


def evaluate_sparse(net, X, Y, progress=None):
    """(values (N,), gradients (N, K, d)): the same numbers as ``net.evaluate(X, Y)`` with Y of shape
    (N, K) (or (K,): the same upstream values at every point), computed on the active neurons only."""
    if net.ieee:
        raise CondcheckError("the sparse interpreter implements the finite semantics only; use the dense one "
                             "(method='fast') under IEEE semantics")
    if not kernels.HAVE_NUMBA:
        raise CondcheckError("the sparse interpreter needs numba")
    fmt = net.format
    if fmt.M == 52 or not fmt.fits_float64 or fmt.bits > 16:
        raise CondcheckError(f"the sparse interpreter handles formats of at most 16 bits, not {fmt.name}")
    X = net._inputs(X)
    N = X.shape[0]
    Y = np.asarray(Y, dtype=np.float64)
    Y2 = np.ascontiguousarray(np.broadcast_to(Y, (N, Y.shape[-1])) if Y.ndim == 1 else Y.reshape(N, -1))
    from .network import _not_in_format
    bad = _not_in_format(Y2.ravel(), fmt)
    if bad is not None:
        raise CondcheckError(f"upstream value {float(Y2.ravel()[bad])!r} is not a value of {fmt.name}")
    K = Y2.shape[1]
    if net.format.bits <= 16 and (Y2 == Y2[:1]).all():
        return _evaluate_shared(net, X, Y2[0], progress)
    if PER_POINT_TABLES:
        res = _evaluate_per_point(net, X, Y2, progress)
        if res is not None:
            return res
    S = _Structure(net)
    n_hidden = int(S.offs[-1])
    chunk = max(1, min(N, CHUNK_ENTRIES // max(1, n_hidden + max(net.widths) * 4)))
    values = np.empty(N)
    grads = np.zeros((N, K, net.input_dim))
    rp = _round_params(fmt)
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        val, pre = net._forward_chunk(X[s:e], s, X)
        values[s:e] = val
        dT = np.empty((e - s, n_hidden))
        for l, z in enumerate(pre):
            d = net._activation(z, derivative=True)
            net._check(d, "backward (activation derivative)", l + 1, s, X)
            dT[:, S.offs[l]:S.offs[l + 1]] = d
        err = np.zeros(e - s, np.int64)
        g = np.zeros((e - s, K, net.input_dim))
        _backward(Y2[s:e], dT, S.offs, S.widths, S.csr_ptr, S.csr_idx, S.csc_ptr, S.csc_idx, S.csc_w,
                  S.lay_ptr, net.input_dim, *rp, g, err)
        if err.any():
            p = int(np.flatnonzero(err)[0])
            code = int(err[p])
            kind, rest = code % 4, code // 4
            layer, neuron = rest % 1024, rest // 1024
            name = "backward" if kind == 1 else "backward (activation derivative)"
            raise net._overflow(name, layer, neuron, X[s + p].tolist(), s + p)
        grads[s:e] = g
        if progress:
            progress(e, N)
    return values, grads


# ---- per-point upstream values (Theorem 5 claims) ---------------------------------------------------
# ``_evaluate_per_point``: the forward pass keeps every neuron that depends on one input coordinate only
# as a table over that coordinate's distinct values (``_forward_tables``); the backward pass splits every
# point's backward values into a *default* part, the same at every point with the same y (computed once
# per distinct y on every neuron's most common sigma~', ``_default_plan``), and the few neurons whose
# value at that point differs from it (``_explicit``).

def _fold_range(j0, j1, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt,
                shift, half, mask, small_bits, Kc, omega):
    """The rows j0 <= j < j1 of ``_fold_rows``."""
    for j in range(j0, j1):
        lo, hi = indptr[j], indptr[j + 1]
        m = hi - lo
        dterm = np.empty(m)
        S = np.empty(m + 1)            # S[t + 1]: the left-to-right sum of the default terms 0..t
        nxt = np.empty(m + 1, np.int64)  # nxt[t]: the first position >= t whose default term is not 0
        S[0] = 0.0
        ne = 0
        for t in range(m):
            i = indices[lo + t]
            dterm[t] = _rn(amode[i] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False)
            S[t + 1] = _rn(S[t] + dterm[t], shift, half, mask, small_bits, Kc, omega, False)
            ne += aptr[i + 1] - aptr[i]
        nxt[m] = m
        for t in range(m - 1, -1, -1):
            nxt[t] = t if dterm[t] != 0.0 else nxt[t + 1]
        zdef[j] = _rn(S[m] + bias[j], shift, half, mask, small_bits, Kc, omega, False)
        keys = np.empty(ne, np.int64)
        src = np.empty(ne, np.int64)
        k = 0
        for t in range(m):
            i = indices[lo + t]
            for e in range(aptr[i], aptr[i + 1]):
                keys[k] = apt[e] * m + t
                src[k] = e
                k += 1
        order = np.argsort(keys)
        cnt = 0
        a = 0
        o = off[j]
        while a < ne:
            q = keys[order[a]] // m
            b = a
            while b < ne and keys[order[b]] // m == q:
                b += 1
            t = keys[order[a]] % m
            acc = S[t]
            k = a
            while True:
                if k < b and keys[order[k]] % m == t:
                    term = _rn(aval[src[order[k]]] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False)
                    k += 1
                else:
                    term = dterm[t]
                acc = _rn(acc + term, shift, half, mask, small_bits, Kc, omega, False)
                same = _bits(acc) == _bits(S[t + 1])
                if k < b:
                    te = keys[order[k]] % m
                    if same:                         # back on the default sums: jump to the next exception
                        t = te
                        acc = S[t]
                        continue
                    nt = min(te, nxt[t + 1])
                else:
                    if same:
                        acc = S[m]
                        break
                    nt = nxt[t + 1]
                    if nt >= m:
                        break
                t = nt
            upt[o + cnt] = q
            uval[o + cnt] = _rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
            cnt += 1
            a = b
        ucnt[j] = cnt


def _fold_rows_py(indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt, nchunk,
                  shift, half, mask, small_bits, Kc, omega):
    """``_fwd_layer`` for rows of any length: at each point of the union of its inputs' exceptions a row
    is summed from the default prefix sum before its first exceptional term, default terms that are 0
    are skipped (``_rn`` never gives -0, so acc (+) 0 = acc bit for bit), and once the running sum equals
    the default prefix sum again the rest is the default's (the same operations on the same numbers).
    An output row reading a chain end of every point is so O(exceptions), not O(points x terms)."""
    n_out = indptr.shape[0] - 1
    step = (n_out + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n_out, j0 + step)
        if j0 < j1:
            _fold_range(j0, j1, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt,
                        shift, half, mask, small_bits, Kc, omega)


def _narrow_range(j0, j1, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt,
                  shift, half, mask, small_bits, Kc, omega):
    """The rows j0 <= j < j1 of ``_narrow_rows``."""
    for j in range(j0, j1):
        lo, hi = indptr[j], indptr[j + 1]
        m = hi - lo
        head = np.empty(m, np.int64)
        acc = 0.0
        for t in range(m):
            i = indices[lo + t]
            head[t] = aptr[i]
            acc = _rn(acc + _rn(amode[i] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                      shift, half, mask, small_bits, Kc, omega, False)
        zdef[j] = _rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
        cnt = 0
        o = off[j]
        while True:
            q = -1
            for t in range(m):
                h = head[t]
                if h < aptr[indices[lo + t] + 1] and (q < 0 or apt[h] < q):
                    q = apt[h]
            if q < 0:
                break
            acc = 0.0
            for t in range(m):
                i = indices[lo + t]
                h = head[t]
                if h < aptr[i + 1] and apt[h] == q:
                    v = aval[h]
                    head[t] = h + 1
                else:
                    v = amode[i]
                acc = _rn(acc + _rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            upt[o + cnt] = q
            uval[o + cnt] = _rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
            cnt += 1
        ucnt[j] = cnt


def _narrow_rows_py(indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt, nchunk,
                    shift, half, mask, small_bits, Kc, omega):
    """``_fwd_layer`` for rows of a few terms: the union of the inputs' exception points by merging their
    ascending lists (no sorting, no per-point scratch), each row summed at each of its points."""
    n_out = indptr.shape[0] - 1
    step = (n_out + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n_out, j0 + step)
        if j0 < j1:
            _narrow_range(j0, j1, indptr, indices, data, bias, amode, aptr, apt, aval, off, zdef, upt, uval, ucnt,
                          shift, half, mask, small_bits, Kc, omega)


def _sliced_range(j0, j1, indptr, indices, data, bias, tabc, isc, amode, aptr, apt, aval, xic, F, off, upt,
                  uval, ucnt, shift, half, mask, small_bits, Kc, omega):
    """The rows j0 <= j < j1 of ``_sliced_rows``."""
    nv = tabc.shape[1]
    for j in range(j0, j1):
        lo, hi = indptr[j], indptr[j + 1]
        m = hi - lo
        # the row on the coordinate's values, every other input at its default
        for u in range(nv):
            acc = 0.0
            for t in range(m):
                i = indices[lo + t]
                v = tabc[isc[i], u] if isc[i] >= 0 else amode[i]
                acc = _rn(acc + _rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            F[j, u] = _rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
        head = np.empty(m, np.int64)
        for t in range(m):
            head[t] = aptr[indices[lo + t]]
        cnt = 0
        o = off[j]
        while True:
            q = -1
            for t in range(m):
                i = indices[lo + t]
                h = head[t]
                if isc[i] < 0 and h < aptr[i + 1] and (q < 0 or apt[h] < q):
                    q = apt[h]
            if q < 0:
                break
            acc = 0.0
            for t in range(m):
                i = indices[lo + t]
                if isc[i] >= 0:
                    v = tabc[isc[i], xic[q]]
                else:
                    h = head[t]
                    if h < aptr[i + 1] and apt[h] == q:
                        v = aval[h]
                        head[t] = h + 1
                    else:
                        v = amode[i]
                acc = _rn(acc + _rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            upt[o + cnt] = q
            uval[o + cnt] = _rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
            cnt += 1
        ucnt[j] = cnt


def _sliced_rows_py(indptr, indices, data, bias, tabc, isc, amode, aptr, apt, aval, xic, F, off, upt, uval,
                    ucnt, nchunk, shift, half, mask, small_bits, Kc, omega):
    """Rows of a few terms reading neurons of one coordinate c (isc[i] >= 0: row isc[i] of tabc, over
    c's values) and others (defaults and exceptions): F[j] = the row on c's values with the others at
    their defaults (every point outside the others' exceptions has exactly these inputs), and the row
    at each point of the union of the others' exceptions (``_narrow_rows``).  A gate reading a pass that
    varies over x_1 and indicators of x_1 and x_2 costs x_1's values and the x_2 slice, not the grid."""
    n_out = indptr.shape[0] - 1
    step = (n_out + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        j0 = ck * step
        j1 = min(n_out, j0 + step)
        if j0 < j1:
            _sliced_range(j0, j1, indptr, indices, data, bias, tabc, isc, amode, aptr, apt, aval, xic, F, off,
                          upt, uval, ucnt, shift, half, mask, small_bits, Kc, omega)


def _unslice_py(tab, dflt, xic, off, upt, uval, ucnt, opt, oval, ocnt):
    """Row j as dflt[j] and exceptions over every point: tab[j, xic[p]] outside its points upt[off[j]:
    off[j] + ucnt[j]] (ascending), uval there; opt/oval[off2...] get the points whose value (bits)
    differs from dflt[j] (ocnt[j] of them, written from off of the caller's bound N per row)."""
    N = xic.shape[0]
    for j in numba.prange(tab.shape[0]):
        db = _bits(dflt[j])
        o = j * N
        k = 0
        e = off[j]
        end = off[j] + ucnt[j]
        for p in range(N):
            if e < end and upt[e] == p:
                v = uval[e]
                e += 1
            else:
                v = tab[j, xic[p]]
            if _bits(v) != db:
                opt[o + k] = p
                oval[o + k] = v
                k += 1
        ocnt[j] = k


def _wmode_py(tabs, counts, out):
    """out[n] = the value of row n of tabs (over a coordinate's distinct values) taken at most points
    (counts[t] points have value index t; bit patterns; ties: the smallest pattern)."""
    for n in numba.prange(tabs.shape[0]):
        keys = np.empty(tabs.shape[1], np.int64)
        for t in range(tabs.shape[1]):
            keys[t] = _bits(tabs[n, t])
        order = np.argsort(keys)
        best, best_n = keys[order[0]], -1
        run = 0
        for u in range(order.shape[0]):
            run += counts[order[u]]
            if u + 1 == order.shape[0] or keys[order[u + 1]] != keys[order[u]]:
                if run > best_n:
                    best_n = run
                    best = keys[order[u]]
                run = 0
        out[n] = np.int64(best).view(np.float64)


def _spread_py(tabs, dflt, xi, ptr, pts, vals):
    """Row n of tabs as default and exceptions over the points: pts/vals[ptr[n]:ptr[n+1]] = the points
    (ascending) whose coordinate value index xi[p] gives a value other than dflt[n] (bits)."""
    for n in numba.prange(tabs.shape[0]):
        db = _bits(dflt[n])
        k = ptr[n]
        for p in range(xi.shape[0]):
            v = tabs[n, xi[p]]
            if _bits(v) != db:
                pts[k] = p
                vals[k] = v
                k += 1


def _dprod_py(D, src, w, out, shift, half, mask, small_bits, Kc, omega):
    """D[out[r]] = RN(D[src[r]] w[r]) (a one-term backward sum RN(0 + RN(u w)) = RN(u w), or a product by
    sigma~'; a copy where w = 1)."""
    K = D.shape[1]
    for r in numba.prange(src.shape[0]):
        a, ww, o = src[r], w[r], out[r]
        if ww == 1.0:
            for k in range(K):
                D[o, k] = D[a, k]
            continue
        for k in range(K):
            D[o, k] = _rn(D[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)


def _dmulti_py(D, cols, out, cp, ci, cw, umap, shift, half, mask, small_bits, Kc, omega):
    """D[out[r]] = the left-to-right rounded backward sum of column cols[r] over its successors i with a
    default row umap[i] >= 0 (the others are 0 by default)."""
    K = D.shape[1]
    for r in numba.prange(cols.shape[0]):
        j, o = cols[r], out[r]
        for k in range(K):
            D[o, k] = 0.0
        for t in range(cp[j], cp[j + 1]):
            a = umap[ci[t]]
            if a < 0:
                continue
            ww = cw[t]
            for k in range(K):
                prod = _rn(D[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
                D[o, k] = _rn(D[o, k] + prod, shift, half, mask, small_bits, Kc, omega, False)


def _dT_at(g, p, bkind, ddef, dptr, dpt, dval, tptr, dtab1, xi):
    """sigma~' of hidden neuron g at point p."""
    c = bkind[g]
    key = p
    if c >= 0:
        if tptr[g] >= 0:
            return dtab1[tptr[g] + xi[p, c]]
        key = xi[p, c]          # a sparse table: exceptions by value index
    lo, hi = dptr[g], dptr[g + 1]
    if lo == hi:
        return ddef[g]
    while lo < hi:
        mid = (lo + hi) // 2
        if dpt[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < dptr[g + 1] and dpt[lo] == key:
        return dval[lo]
    return ddef[g]


def _explicit_range(q0, q1, pts, yc, xi, csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr, offs, L, d_in,
                    urow, vrow_h, vrow_in, D, bkind, ddef, dptr, dpt, dval, tptr, dtab1,
                    eptr, eidx, fptr, fidx, cbase, wmax, grads, err,
                    shift, half, mask, small_bits, Kc, omega):
    """The points pts[q0:q1] of ``_explicit`` (scratch arrays shared by the chunk)."""
    pos = np.full(wmax, -1, np.int64)
    mark = np.zeros(wmax, np.int8)
    cand = np.empty(wmax, np.int64)
    V = np.empty(wmax)
    act = np.empty(wmax, np.int64)
    U = np.empty(wmax)
    act2 = np.empty(wmax, np.int64)
    U2 = np.empty(wmax)
    nl = d_in + 1
    cur = np.empty(nl, np.int64)
    low = np.empty(nl, np.int64)
    for q in range(q0, q1):
        p = pts[q]
        y = yc[q]
        for c in range(d_in):
            r = vrow_in[c]
            grads[q, c] = D[r, y] if r >= 0 else 0.0
        # the lists of neurons whose sigma~' differs from the default one at p, ascending: general
        # neurons (by point), then the one-coordinate neurons (by coordinate value); read from the top
        low[0], cur[0] = eptr[p], eptr[p + 1]
        for c in range(d_in):
            b = cbase[c] + xi[p, c]
            low[c + 1], cur[c + 1] = fptr[b], fptr[b + 1]
        na = 0
        for li in range(L - 1, -1, -1):
            base = lay_ptr[li]
            nc = 0
            for a in range(na):
                i = act[a]
                for t in range(csr_ptr[base + i], csr_ptr[base + i + 1]):
                    j = csr_idx[t]
                    if mark[j] == 0:
                        mark[j] = 1
                        cand[nc] = j
                        nc += 1
            if li >= 1:
                g_lo = offs[li - 1]
                for s in range(nl):
                    lst = eidx if s == 0 else fidx
                    while cur[s] > low[s] and lst[cur[s] - 1] >= g_lo:
                        j = lst[cur[s] - 1] - g_lo
                        cur[s] -= 1
                        if mark[j] == 0:
                            mark[j] = 2
                            cand[nc] = j
                            nc += 1
            ro = offs[li]
            bad = False
            for c in range(nc):
                j = cand[c]
                if mark[j] == 1:
                    v = 0.0
                    for t in range(csc_ptr[base + j], csc_ptr[base + j + 1]):
                        i = csc_idx[t]
                        a = pos[i]
                        if a >= 0:
                            u = U[a]
                        else:
                            r = urow[ro + i]
                            if r < 0:
                                continue
                            u = D[r, y]
                        prod = _rn(u * csc_w[t], shift, half, mask, small_bits, Kc, omega, False)
                        v = _rn(v + prod, shift, half, mask, small_bits, Kc, omega, False)
                else:
                    v = D[vrow_h[offs[li - 1] + j], y]
                V[c] = v
                if not (abs(v) <= omega):
                    bad = True
            for a in range(na):
                pos[act[a]] = -1
            for c in range(nc):
                mark[cand[c]] = 0
            if bad:
                err[q] = 1
                break
            if li == 0:
                for c in range(nc):
                    grads[q, cand[c]] = V[c]
                break
            g_lo = offs[li - 1]
            nn = 0
            for c in range(nc):
                j = cand[c]
                g = g_lo + j
                dv = _dT_at(g, p, bkind, ddef, dptr, dpt, dval, tptr, dtab1, xi)
                u = V[c] if dv == 1.0 else _rn(V[c] * dv, shift, half, mask, small_bits, Kc, omega, False)
                if not (abs(u) <= omega):
                    bad = True
                r = urow[g]
                du = D[r, y] if r >= 0 else 0.0
                if u != du:                       # equal by value: its predecessors read the default one
                    act2[nn] = j
                    U2[nn] = u
                    nn += 1
            if bad:
                err[q] = 1
                break
            for a in range(nn):
                act[a] = act2[a]
                U[a] = U2[a]
                pos[act2[a]] = a
            na = nn
        for a in range(na):
            pos[act[a]] = -1


def _explicit_py(pts, yc, xi, csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr, offs, L, d_in,
                 urow, vrow_h, vrow_in, D, bkind, ddef, dptr, dpt, dval, tptr, dtab1,
                 eptr, eidx, fptr, fidx, cbase, wmax, grads, err, nchunk,
                 shift, half, mask, small_bits, Kc, omega):
    """For every point pts[q] with upstream value D[0, yc[q]]: the gradient grads[q], from the default
    backward values D (rows: urow for the layers' outputs, vrow for their inputs; -1: 0) and, top-down,
    the *explicit* neurons: those whose sigma~' at the point differs from the default one and whose
    default backward sum is not 0 (the lists eidx/fidx), and the inputs of explicit neurons whose
    backward value differs from the default one.  Every other neuron has its default value there: its
    sum has the default's terms, in the same order (skipped +-0 terms aside: see the module docstring).
    err[q] = 1 where a value is not finite."""
    P = pts.shape[0]
    step = (P + nchunk - 1) // nchunk
    for ck in numba.prange(nchunk):
        q0 = ck * step
        q1 = min(P, q0 + step)
        if q0 < q1:
            _explicit_range(q0, q1, pts, yc, xi, csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr, offs, L,
                            d_in, urow, vrow_h, vrow_in, D, bkind, ddef, dptr, dpt, dval, tptr, dtab1,
                            eptr, eidx, fptr, fidx, cbase, wmax, grads, err,
                            shift, half, mask, small_bits, Kc, omega)


if kernels.HAVE_NUMBA:
    _fold_range = numba.njit(cache=True)(_fold_range)
    _fold_rows = numba.njit(cache=True, parallel=True)(_fold_rows_py)
    _narrow_range = numba.njit(cache=True)(_narrow_range)
    _narrow_rows = numba.njit(cache=True, parallel=True)(_narrow_rows_py)
    _sliced_range = numba.njit(cache=True)(_sliced_range)
    _sliced_rows = numba.njit(cache=True, parallel=True)(_sliced_rows_py)
    _unslice = numba.njit(cache=True, parallel=True)(_unslice_py)
    _wmode = numba.njit(cache=True, parallel=True)(_wmode_py)
    _spread = numba.njit(cache=True, parallel=True)(_spread_py)
    _dprod = numba.njit(cache=True, parallel=True)(_dprod_py)
    _dmulti = numba.njit(cache=True, parallel=True)(_dmulti_py)
    _dT_at = numba.njit(cache=True, inline="always")(_dT_at)
    _explicit_range = numba.njit(cache=True)(_explicit_range)
    _explicit = numba.njit(cache=True, parallel=True)(_explicit_py)
    # every thread that finds a bad value writes the same 1 into bad[0]
    _lookup_codes_par = numba.njit(cache=True, parallel=True)(_lookup_codes_py)


def _row_kinds(w, kind):
    """Per row of w: -1 when it reads constant neurons only, c >= 0 when it reads neurons of coordinate c
    (and constants), -2 otherwise (``_forward_tables``)."""
    n = w.shape[0]
    rows = np.repeat(np.arange(n), np.diff(w.indptr))
    k = kind[w.indices]
    gen = np.zeros(n, bool)
    gen[rows[k == -2]] = True
    one = k >= 0
    cmin = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(cmin, rows[one], k[one])
    cmax = np.full(n, -1, np.int64)
    np.maximum.at(cmax, rows[one], k[one])
    out = np.where(cmax >= 0, cmax, -1)
    out[gen | ((cmax >= 0) & (cmin != cmax))] = -2
    return out.astype(np.int64)


class _Backward:
    """What the backward pass needs of the forward one: per hidden neuron (global index) its kind (c >= 0:
    a function of coordinate c, with its sigma~' on every value of c at dtab1[tptr[g]:]; -2: a default
    sigma~' and exceptions), its default (most common) sigma~' ddef, and the exceptions (dptr, dpt, dval;
    points ascending); the coordinates' value indices xi (N, d) and value counts."""


# rows of a layer's general part evaluated at once: the bound on their (point, value) entries
BLOCK_ENTRIES = 1 << 22
# rows with at most this many terms: ``_narrow_rows`` (merging); longer ones: ``_fold_rows``
NARROW_ROW = 16
# narrow rows read the one-coordinate inputs of one coordinate as tables (``_sliced_rows``); False: every
# input as a default and exceptions over the points
SLICED_ROWS = True
# one-coordinate rows of a layer evaluated at once by ``_forward_tables`` (and table rows compared at once
# by ``_sigma_lists``): the bound on their (row, value) entries, so the transient arrays stay small
TABLE_BLOCK_ENTRIES = 1 << 22
# a one-coordinate neuron's sigma~' table is kept as exceptions where at most 1/SPARSE_TABLE of its values
# differ from its default (``_forward_tables``); 0: every table dense (the reference)
SPARSE_TABLE = 8


def _general_rows(N, sub, bias, amode, aptr, apt, aval, rp, zero_index, fmt, sig, dtab, bad_d, last,
                  cstar=None, kind=None, tabs=None, trow=None, xi=None, counts=None):
    """The rows of sub (general: their inputs as defaults and exceptions) in blocks of about
    BLOCK_ENTRIES (point, value) entries: the output values (N,) when ``last``, else per row sigma~' and
    sigma~ as a default and exceptions (dmode, dcnt, dpt, dval, smode, scnt, spt, sval; rows in order,
    points ascending).  The pre-activations at the union of a row's inputs' exceptions go straight to
    sigma~ and sigma~' (a gate has a pre-activation exception at two slices of the grid but is dead at
    all of them).  A row with cstar[r] = c >= 0 reads its inputs of coordinate c as tables
    (``_sliced_rows``): its value is a table over c's values but at the others' exceptions, spread over
    the points only where its sigma~ / sigma~' table is not one value (``_unslice``).  None where a
    value is not finite."""
    nchunk = 64
    acnt = np.diff(aptr).astype(np.float64)
    pattern = sp.csr_matrix((np.ones(sub.nnz), sub.indices, sub.indptr), shape=sub.shape)
    bound = np.minimum(N, np.rint(pattern @ acnt)).astype(np.int64)
    nterm = np.diff(sub.indptr)
    if cstar is None:
        cstar = np.full(sub.shape[0], -1, np.int64)
    out = []
    groups = [("narrow", -1), ("wide", -1)] + [("sliced", c) for c in np.unique(cstar[cstar >= 0]).tolist()]
    for how, c in groups:
        if how == "sliced":
            sel = np.flatnonzero(cstar == c)
        else:
            sel = np.flatnonzero((cstar < 0) & ((nterm <= NARROW_ROW) == (how == "narrow")))
        if not len(sel):
            continue
        nv = 1 if c < 0 else int(len(counts[c]))
        blk_id = (np.cumsum(bound[sel] + nv) - 1) // BLOCK_ENTRIES
        cuts = np.concatenate([[0], np.flatnonzero(np.diff(blk_id)) + 1, [len(sel)]])
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            r = sel[lo:hi]
            blk = sub[r]
            nr = len(r)
            off = np.concatenate([[0], np.cumsum(bound[r])]).astype(np.int64)
            zdef, ucnt = np.empty(nr), np.empty(nr, np.int64)
            upt, uval = np.empty(int(off[-1]), np.int64), np.empty(int(off[-1]))
            csr = (blk.indptr.astype(np.int64), blk.indices.astype(np.int64), blk.data.astype(np.float64), bias[r])
            if how == "sliced":
                isc = np.where(kind == c, trow, -1).astype(np.int64)
                xic = np.ascontiguousarray(xi[:, c])
                F = np.empty((nr, nv))
                _sliced_rows(*csr, np.ascontiguousarray(tabs[c]), isc, amode, aptr, apt, aval, xic, F, off, upt,
                             uval, ucnt, nchunk, *rp)
            else:
                (_narrow_rows if how == "narrow" else _fold_rows)(*csr, amode, aptr, apt, aval, off, zdef, upt, uval,
                                                                 ucnt, nchunk, *rp)
            if last:
                values = np.full(N, zdef[0]) if how != "sliced" else F[0][xi[:, c]]
                k = int(ucnt[0])
                values[upt[:k]] = uval[:k]
                return values if np.isfinite(values).all() else None
            idx = _compact(off, ucnt)
            upt, uval = upt[idx], uval[idx]
            off = np.concatenate([[0], np.cumsum(ucnt)]).astype(np.int64)
            bad = np.zeros(1, np.int64)
            if how == "sliced":
                # table entries that no point has (every point of that value an exception) may be anything
                seen = np.zeros((nr, nv), np.int64)
                np.add.at(seen, (np.repeat(np.arange(nr), ucnt), xic[upt]), 1)
                F = np.where((seen == counts[c][None, :]) & ~np.isfinite(F), 0.0, F)
                fcode, sF = np.empty(F.size, np.int64), np.empty(F.size)
                _lookup_codes_par(np.ascontiguousarray(F).ravel(), zero_index, fmt.M, fmt.e_min, sig, fcode, sF,
                                  bad)
                sF, dF = sF.reshape(nr, nv), dtab[fcode].reshape(nr, nv)
                if bad_d and not np.isfinite(dF).all():
                    return None
                adef, ddf = sF[:, 0].copy(), dF[:, 0].copy()
            else:
                zdef = np.where((ucnt == N) & ~np.isfinite(zdef), 0.0, zdef)
                mcode, adef = np.empty(nr, np.int64), np.empty(nr)
                _lookup_codes_par(zdef, zero_index, fmt.M, fmt.e_min, sig, mcode, adef, bad)
                ddf = dtab[mcode]
            ecode, aexc = np.empty(len(uval), np.int64), np.empty(len(uval))
            _lookup_codes_par(uval, zero_index, fmt.M, fmt.e_min, sig, ecode, aexc, bad)
            del uval
            dex = dtab[ecode]
            del ecode
            if bad[0] or (bad_d and not (np.isfinite(ddf).all() and np.isfinite(dex).all())):
                return None
            res = [r]
            tables = (dF, sF) if how == "sliced" else (None, None)
            for dflt, vals, tab in ((ddf, dex, tables[0]), (adef, aexc, tables[1])):
                mo, cnt = np.empty(nr), np.empty(nr, np.int64)
                pt, vl = np.empty_like(upt), np.empty_like(vals)
                _mode(N, dflt, upt, vals, ucnt, off, mo, pt, vl, cnt)
                idx = _compact(off, cnt)
                mo, cnt, pt, vl = mo, cnt, pt[idx], vl[idx]
                if tab is not None:
                    tb = tab.view(np.int64)
                    varies = np.flatnonzero((tb != tb[:, :1]).any(axis=1))
                    if len(varies):
                        mo, cnt, pt, vl = _unslice_rows(N, tab, varies, xic, off, upt, vals, ucnt, counts[c],
                                                        mo, cnt, pt, vl)
                res += [mo, cnt, pt, vl]
            out.append(res)
    # back to the rows' order
    rr = np.concatenate([o[0] for o in out])
    inv = np.empty_like(rr)
    inv[rr] = np.arange(len(rr))
    result = []
    for k in (1, 5):
        mo = np.concatenate([o[k] for o in out])[inv]
        cnt = np.concatenate([o[k + 1] for o in out])
        own = np.repeat(rr, cnt)
        order = np.argsort(own, kind="stable")
        result += [mo, cnt[inv], np.concatenate([o[k + 2] for o in out])[order],
                   np.concatenate([o[k + 3] for o in out])[order]]
    return result


def _unslice_rows(N, tab, varies, xic, off, upt, vals, ucnt, counts, mo, cnt, pt, vl):
    """(mo, cnt, pt, vl) with the rows ``varies`` (a table over the coordinate's values that is not one
    value) replaced by their values over every point (``_unslice``), re-expressed by their most common
    value; a few rows at a time (N entries each)."""
    mo, cnt = mo.copy(), cnt.copy()
    ptr = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
    pieces_p = [pt[ptr[j]:ptr[j + 1]] for j in range(len(cnt))]
    pieces_v = [vl[ptr[j]:ptr[j + 1]] for j in range(len(cnt))]
    step = max(1, BLOCK_ENTRIES // max(1, N))
    for s in range(0, len(varies), step):
        v = varies[s:s + step]
        nr = len(v)
        T = np.ascontiguousarray(tab[v])
        dflt = np.empty(nr)
        _wmode(T, counts, dflt)
        o_pts, o_val, o_cnt = np.empty(nr * N, np.int64), np.empty(nr * N), np.empty(nr, np.int64)
        _unslice(T, dflt, xic, off[v].astype(np.int64), upt, vals, ucnt[v].astype(np.int64), o_pts, o_val, o_cnt)
        for a, j in enumerate(v.tolist()):
            k = int(o_cnt[a])
            mo[j] = dflt[a]
            cnt[j] = k
            pieces_p[j] = o_pts[a * N:a * N + k].copy()
            pieces_v[j] = o_val[a * N:a * N + k].copy()
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    return mo, cnt, cat(pieces_p, np.int64), cat(pieces_v, np.float64)

def _forward_tables(net, X, zero_index, dtab):
    """(values, _Backward) with the dense interpreter's numbers: neurons that depend on one input coordinate
    (or none) are tables over its distinct values, each row evaluated once per value by the dense kernel
    (``kernels.rounded_row_sums``: the same operations in the same order), so a step that is on over half
    of a grid costs its coordinate's values, not half the points.  A row that mixes coordinates (or reads
    a neuron that does) is a default value and exceptions, evaluated by ``_fold_rows`` on its inputs in
    that form (one-coordinate inputs are spread over the points for it, ``_spread``).  None where a
    pre-activation, sigma~ or sigma~' is not finite at some point (every table entry is some point's)."""
    fmt = net.format
    N, d = X.shape
    rp = _round_params(fmt)
    sig = np.ascontiguousarray(net.rounded.table().sigma, dtype=np.float64)
    bad_d = not np.isfinite(dtab).all()
    nchunk = 64
    uvals, xi, counts = [], np.empty((N, d), np.int64), []
    for c in range(d):
        u, inv = np.unique(X[:, c], return_inverse=True)
        uvals.append(u.astype(np.float64))
        xi[:, c] = inv.reshape(-1)
        counts.append(np.bincount(inv.reshape(-1), minlength=len(u)).astype(np.int64))
    nv = np.array([len(u) for u in uvals], np.int64)
    hidden = [layer.shape[0] for layer in net.layers[:-1]]
    n_hidden = int(sum(hidden))
    bw = _Backward()
    bw.xi, bw.nv = xi, nv
    bw.bkind = np.full(n_hidden, -2, np.int64)
    bw.ddef = np.zeros(n_hidden)
    bw.tptr = np.zeros(n_hidden, np.int64)
    # the sigma~' tables of the one-coordinate neurons, one preallocated array (its size from the row
    # kinds of every hidden layer), float32 where that holds every sigma~' of the format exactly
    rks, k = [], np.arange(d, dtype=np.int64)
    for layer in net.layers:
        k = _row_kinds(layer.weight, k)
        rks.append(k)
    t_dtype = np.float32 if np.array_equal(dtab.astype(np.float32).astype(np.float64), dtab,
                                           equal_nan=True) else np.float64
    # a table whose entries differ from its default on at most 1/SPARSE_TABLE of the values (a gradient
    # chain of a Theorem 5 box: live at its own point only) is kept as exceptions by value index in
    # dptr/dpt/dval (tptr -1); the others are dense blocks of dtab1
    dblocks, t_at = [], 0
    gex, gpt, gval = [], [], []

    def finish(values):
        g = np.concatenate(gex) if gex else np.zeros(0, np.int64)
        pt = np.concatenate(gpt).astype(np.int64) if gpt else np.zeros(0, np.int64)
        vl = np.concatenate(gval) if gval else np.zeros(0)
        order = np.argsort(g, kind="stable")         # table and general rows of a layer interleave
        g, pt, vl = g[order], pt[order], vl[order]
        bw.dptr = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_hidden))]).astype(np.int64)
        bw.dpt, bw.dval = pt, vl
        bw.dtab1 = np.concatenate(dblocks) if dblocks else np.zeros(1, t_dtype)
        return values, bw

    # the current layer's outputs: kind, value (constants) or default (general neurons), tables per
    # coordinate (members, values), general neurons' exceptions
    kind = np.arange(d, dtype=np.int64)
    cval = np.zeros(d)
    tabs = {c: uvals[c][None, :] for c in range(d)}
    trow = np.zeros(d, np.int64)
    eptr, ept, evl = np.zeros(d + 1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    g0 = 0
    for l, layer in enumerate(net.layers, 1):
        w = layer.weight
        n = w.shape[0]
        last = l == net.depth
        rk = rks[l - 1]
        n_cval = np.zeros(n)
        n_tabs, n_trow = {}, np.zeros(n, np.int64)
        for c in [-1] + list(range(d)):
            rows_c = np.flatnonzero(rk == c)
            if not len(rows_c):
                continue
            m = 1 if c < 0 else int(nv[c])
            table = c >= 0 and not last
            if table:
                n_tabs[c] = np.empty((len(rows_c), m))
                n_trow[rows_c] = np.arange(len(rows_c))
                bw.bkind[g0 + rows_c] = c
            # blocks of rows (each row is evaluated on its own: the same numbers in any blocking)
            step = max(1, TABLE_BLOCK_ENTRIES // m) if table else len(rows_c)
            for b0 in range(0, len(rows_c), step):
                rows = rows_c[b0:b0 + step]
                sub = w[rows]
                cols, loc = np.unique(sub.indices, return_inverse=True)
                V = np.empty((m, len(cols)))
                ck = kind[cols]
                isc = ck == -1
                V[:, isc] = cval[cols[isc]][None, :]
                if c >= 0 and (~isc).any():
                    V[:, ~isc] = tabs[c][trow[cols[~isc]]].T
                z = kernels.rounded_row_sums(V, loc.reshape(-1).astype(np.int64), sub.data,
                                             sub.indptr[:-1].astype(np.int64), np.diff(sub.indptr).astype(np.int64),
                                             layer.bias[rows], fmt)
                del V
                if not np.isfinite(z).all():
                    return None
                if last:
                    values = np.full(N, z[0, 0]) if c < 0 else z[xi[:, c], 0]
                    return finish(np.ascontiguousarray(values))
                zt = np.ascontiguousarray(z.T).ravel()
                del z
                code, s = np.empty(len(zt), np.int64), np.empty(len(zt))
                bad = np.zeros(1, np.int64)
                _lookup_codes_par(zt, zero_index, fmt.M, fmt.e_min, sig, code, s, bad)
                del zt
                dT = dtab[code]
                del code
                if bad[0] or (bad_d and not np.isfinite(dT).all()):
                    return None
                s, dT = s.reshape(len(rows), m), dT.reshape(len(rows), m)
                if c < 0:
                    n_cval[rows] = s[:, 0]
                    bw.ddef[g0 + rows] = dT[:, 0]
                else:
                    n_tabs[c][b0:b0 + len(rows)] = s
                    dd = np.empty(len(rows))
                    dT = np.ascontiguousarray(dT)
                    _wmode(dT, counts[c], dd)
                    bw.ddef[g0 + rows] = dd
                    ri, ti = np.nonzero(dT.view(np.int64) != dd.view(np.int64)[:, None])
                    nex = np.bincount(ri, minlength=len(rows))
                    sparse = (nex * SPARSE_TABLE <= m) if SPARSE_TABLE > 0 else np.zeros(len(rows), bool)
                    keep = sparse[ri]
                    gex.append(g0 + rows[ri[keep]])
                    gpt.append(ti[keep])
                    gval.append(dT[ri[keep], ti[keep]])
                    bw.tptr[g0 + rows[sparse]] = -1
                    dense = np.flatnonzero(~sparse)
                    bw.tptr[g0 + rows[dense]] = t_at + m * np.arange(len(dense))
                    if len(dense):
                        dblocks.append(dT[dense].astype(t_dtype).ravel())
                        t_at += len(dense) * m
        rows = np.flatnonzero(rk == -2)
        n_eptr = np.zeros(n + 1, np.int64)
        n_ept, n_evl = np.zeros(0, np.int64), np.zeros(0)
        if len(rows):
            sub = w[rows]
            # the inputs as defaults and exceptions: general ones as they are, one-coordinate ones spread
            amode = cval.copy()
            own, opt, ovl = [np.repeat(np.arange(len(kind)), np.diff(eptr))], [ept], [evl]
            rowid = np.repeat(np.arange(len(rows)), np.diff(sub.indptr))
            ik = kind[sub.indices]
            cstar = np.full(len(rows), -1, np.int64)
            if SLICED_ROWS:
                # a narrow row reads the inputs of the coordinate that would spread to most points as
                # tables (``_general_rows``)
                spr = np.zeros(len(kind))
                for c in range(d):
                    mem = np.intersect1d(np.flatnonzero(kind == c), sub.indices)
                    if not len(mem):
                        continue
                    T = np.ascontiguousarray(tabs[c][trow[mem]])
                    dflt = np.empty(len(mem))
                    _wmode(T, counts[c], dflt)
                    spr[mem] = (T.view(np.int64) != dflt.view(np.int64)[:, None]).astype(np.int64) @ counts[c]
                score = np.stack([np.bincount(rowid, weights=spr[sub.indices] * (ik == c), minlength=len(rows))
                                  for c in range(d)], axis=1)
                ok = (score.max(axis=1) > 0) & (np.diff(sub.indptr) <= NARROW_ROW)
                cstar[ok] = np.argmax(score, axis=1)[ok]
            need = (ik >= 0) & (ik != cstar[rowid])
            used = np.zeros(len(kind), bool)
            used[sub.indices[need]] = True
            for c in range(d):
                mem = np.flatnonzero(used & (kind == c))
                if not len(mem):
                    continue
                T = np.ascontiguousarray(tabs[c][trow[mem]])
                dflt = np.empty(len(mem))
                _wmode(T, counts[c], dflt)
                diff = T.view(np.int64) != dflt.view(np.int64)[:, None]
                ptr = np.concatenate([[0], np.cumsum(diff.astype(np.int64) @ counts[c])]).astype(np.int64)
                pts, vals = np.empty(int(ptr[-1]), np.int64), np.empty(int(ptr[-1]))
                _spread(T, dflt, np.ascontiguousarray(xi[:, c]), ptr, pts, vals)
                amode[mem] = dflt
                own.append(np.repeat(mem, np.diff(ptr)))
                opt.append(pts)
                ovl.append(vals)
            own = np.concatenate(own)
            order = np.argsort(own, kind="stable")
            apt = np.concatenate(opt)[order].astype(np.int64)
            aval = np.concatenate(ovl)[order]
            acnt = np.bincount(own, minlength=len(kind)).astype(np.int64)
            aptr = np.concatenate([[0], np.cumsum(acnt)]).astype(np.int64)
            res = _general_rows(N, sub, layer.bias[rows].astype(np.float64), amode, aptr, apt, aval, rp,
                                zero_index, fmt, sig, dtab, bad_d, last, cstar, kind, tabs, trow, xi, counts)
            if res is None:
                return None
            if last:
                return finish(res)
            dmode, dcnt, dpt, dvl, smode, scnt, spt, svl = res
            bw.ddef[g0 + rows] = dmode
            gex.append(np.repeat(g0 + rows, dcnt))
            gpt.append(dpt)
            gval.append(dvl)
            n_cval[rows] = smode
            n_eptr[rows + 1] = scnt
            n_eptr = np.cumsum(n_eptr)
            n_ept, n_evl = spt, svl
        kind, cval, tabs, trow = rk, n_cval, n_tabs, n_trow
        eptr, ept, evl = n_eptr.astype(np.int64), n_ept, n_evl
        g0 += n
    raise AssertionError("unreachable")


class _DefaultPlan:
    """The default backward pass: every neuron at its most common sigma~' (``_Backward.ddef``), the
    upstream value a symbol y.  Rows of D (one value per distinct y): row 0 is y itself; urow[g] is the
    row of u (after sigma~') of hidden neuron g (index n_hidden: the output), vrow_h[g] / vrow_in[c]
    the row of the backward sum v of hidden neuron g / input c; -1 where the value is 0 for every y.
    A one-term sum RN(0 + RN(u w)) = RN(u w) and a product RN(v sigma~') depend only on (row, factor):
    equal pairs share one row (the chains of a box repeat a few weight sequences)."""

    def __init__(self, net, ddef, offs):
        n_hidden = int(offs[-1])
        self.urow = np.full(n_hidden + 1, -1, np.int64)
        self.vrow_h = np.full(n_hidden, -1, np.int64)
        self.ops = []
        umap = np.zeros(1, np.int64)
        self.urow[n_hidden] = 0
        nrow = 1
        for l in range(net.depth, 0, -1):
            c = net.layers[l - 1]._csc
            cp, ci, cw = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(np.float64)
            n_in = c.shape[1]
            col = np.repeat(np.arange(n_in, dtype=np.int64), np.diff(cp))
            live = umap[ci] >= 0
            nterm = np.bincount(col[live], minlength=n_in)
            vmap = np.full(n_in, -1, np.int64)
            sel = live & (nterm[col] == 1)
            pairs, inv = _unique_pairs(umap[ci[sel]], cw[sel])
            vmap[col[sel]] = nrow + inv
            self.ops.append(("prod", pairs[:, 0].copy(), pairs[:, 1].copy().view(np.float64),
                             nrow + np.arange(len(pairs), dtype=np.int64)))
            nrow += len(pairs)
            multi = np.flatnonzero(nterm > 1).astype(np.int64)
            vmap[multi] = nrow + np.arange(len(multi))
            if len(multi):
                self.ops.append(("multi", multi, nrow + np.arange(len(multi), dtype=np.int64), cp, ci, cw,
                                 umap.copy()))
            nrow += len(multi)
            if l == 1:
                self.vrow_in = vmap
                break
            g0 = int(offs[l - 2])
            self.vrow_h[g0:g0 + n_in] = vmap
            dv = ddef[g0:g0 + n_in]
            lu = (vmap >= 0) & (dv != 0)
            pairs, inv = _unique_pairs(vmap[lu], dv[lu])
            umap = np.full(n_in, -1, np.int64)
            umap[lu] = nrow + inv
            self.ops.append(("prod", pairs[:, 0].copy(), pairs[:, 1].copy().view(np.float64),
                             nrow + np.arange(len(pairs), dtype=np.int64)))
            nrow += len(pairs)
            self.urow[g0:g0 + n_in] = umap
        self.nrow = nrow

    def values(self, y, dt, rp):
        """D for the upstream values y (K,); None where one is not finite."""
        D = np.empty((self.nrow, len(y)), dt)
        D[0] = y
        for op in self.ops:
            if op[0] == "prod":
                _dprod(D, op[1], op[2], op[3], *rp)
            else:
                _dmulti(D, op[1], op[2], op[3], op[4], op[5], op[6], *rp)
        return D if np.isfinite(D).all() else None


def _sigma_lists(bw, vrow_h, N):
    """The neurons whose sigma~' differs from their default one and whose default backward sum is not
    zero: general ones per point (eptr, eidx), one-coordinate ones per coordinate value (fptr over
    cbase[c] + value index, fidx), global indices ascending in each list."""
    g_all = np.repeat(np.arange(len(bw.dptr) - 1, dtype=np.int64), np.diff(bw.dptr))
    table = bw.bkind[g_all] >= 0          # sparse tables' exceptions (by value index): below
    keep = (vrow_h[g_all] >= 0) & ~table
    g, p = g_all[keep], bw.dpt[keep]
    order = np.argsort(p, kind="stable")
    eidx = g[order]
    eptr = np.concatenate([[0], np.cumsum(np.bincount(p, minlength=N))]).astype(np.int64)
    cbase = np.concatenate([[0], np.cumsum(bw.nv)]).astype(np.int64)
    keys, gs = [], []
    for c in range(len(bw.nv)):
        sel = table & (bw.bkind[g_all] == c) & (vrow_h[g_all] >= 0)
        sel[sel] = bw.dval[sel] != bw.ddef[g_all[sel]]
        keys.append(cbase[c] + bw.dpt[sel])
        gs.append(g_all[sel])
        G = np.flatnonzero((bw.bkind == c) & (vrow_h >= 0) & (bw.tptr >= 0))
        if not len(G):
            continue
        m = int(bw.nv[c])
        step = max(1, TABLE_BLOCK_ENTRIES // m)
        for b0 in range(0, len(G), step):
            Gb = G[b0:b0 + step]
            T = bw.dtab1[bw.tptr[Gb][:, None] + np.arange(m)[None, :]]
            gi, t = np.nonzero(T != bw.ddef[Gb][:, None])
            keys.append(cbase[c] + t)
            gs.append(Gb[gi])
    key = np.concatenate(keys).astype(np.int64) if keys else np.zeros(0, np.int64)
    gg = np.concatenate(gs).astype(np.int64) if gs else np.zeros(0, np.int64)
    order = np.lexsort((gg, key))
    fidx = gg[order]
    fptr = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=int(cbase[-1])))]).astype(np.int64)
    return eptr, eidx.astype(np.int64), fptr, fidx, cbase


# bytes of default backward values (rows x distinct y) held at once; more distinct y run in batches
DEFAULT_BYTES = 1 << 28


def _evaluate_per_point(net, X, Y2, progress):
    """``evaluate_sparse`` for per-point upstream values Y2 (N, K) (Theorem 5 claims): the forward pass on
    tables and exceptions (``_forward_tables``), the default backward values once per distinct y
    (``_DefaultPlan``), then per point only the neurons whose backward value differs from the default
    (``_explicit``).  None where some value is not finite (or might be: the default pass runs every y
    on the default states): the caller then runs the reference path, which reports it."""
    fmt = net.format
    N, d = X.shape
    K = Y2.shape[1]
    dtab, zero_index = _derivative_table(net)
    rp = _round_params(fmt)
    ft = _forward_tables(net, X, zero_index, dtab)
    if ft is None:
        return None
    values, bw = ft
    S = _Structure(net)
    plan = _DefaultPlan(net, bw.ddef, S.offs)
    eptr, eidx, fptr, fidx, cbase = _sigma_lists(bw, plan.vrow_h, N)
    yd, yidx = np.unique(Y2, return_inverse=True)
    yidx = yidx.reshape(N, K)
    dt = _store_dtype(fmt)
    kc = int(max(1, min(len(yd), DEFAULT_BYTES // (plan.nrow * np.dtype(dt).itemsize))))
    grads = np.zeros((N, K, d))
    wmax = int(max(net.widths))
    L = net.depth
    done = 0
    for c0 in range(0, len(yd), kc):
        c1 = min(len(yd), c0 + kc)
        D = plan.values(yd[c0:c1], dt, rp)
        if D is None:
            return None
        for k in range(K):
            pts = np.flatnonzero((yidx[:, k] >= c0) & (yidx[:, k] < c1)).astype(np.int64)
            if not len(pts):
                continue
            g = np.empty((len(pts), d))
            err = np.zeros(len(pts), np.int64)
            _explicit(pts, (yidx[pts, k] - c0).astype(np.int64), bw.xi, S.csr_ptr, S.csr_idx, S.csc_ptr,
                      S.csc_idx, S.csc_w, S.lay_ptr, S.offs, L, d, plan.urow, plan.vrow_h, plan.vrow_in, D,
                      bw.bkind, bw.ddef, bw.dptr, bw.dpt, bw.dval, bw.tptr, bw.dtab1, eptr, eidx, fptr, fidx,
                      cbase, wmax, g, err, 64, *rp)
            if err.any():
                return None
            grads[pts, k] = g
            done += len(pts)
        if progress:
            progress(done // K, N)
    return values, grads
