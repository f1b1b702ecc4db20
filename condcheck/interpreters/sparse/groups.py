"""The sparse interpreter's backward pass for shared upstream values (Theorem 7 claims), grouped.

Going down from the output, the points of each neuron are grouped by the groups of the neurons it
feeds and by its own sigma~'; points in one group provably have equal backward values for every y
(computed from equal inputs by equal operations), so each group is computed once, at its first point.
A chain neuron sits in one state at its own point and in one shared state at all the others: two
groups instead of one computation per point.  The groups are kept as a default group per neuron plus
exceptions, so grouping costs about the exceptions, not points x neurons (``classes.backward_classes``,
one group number per point and neuron, is the reference); and a group row of one live term,
RN(0 + RN(u w)), depends only on (u's row, w), as the product by sigma~' depends only on (v's row,
sigma~'): equal pairs are computed once (the chains of a box repeat a few weight sequences).
"""
from __future__ import annotations

import numpy as np

from .common import add_new, compact, number_sorted, numba, rn, store_dtype, unique_pairs


# ---- the groups of points: per neuron a default group and its exceptions ----------------------------
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
            cnt = add_new(where, U, 0, cnt, upt, uptr[i], uptr[i + 1])
        number_sorted(where, U, 0, cnt)
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
        cnt = add_new(where, U, 0, 0, vpt, vptr[j], vptr[j + 1])
        cnt = add_new(where, U, 0, cnt, et, ep[g], ep[g + 1])
        number_sorted(where, U, 0, cnt)
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
            prod = rn(U[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
            V[o, k] = rn(0.0 + prod, shift, half, mask, small_bits, Kc, omega, False)


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
                prod = rn(U[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
                V[o, k] = rn(V[o, k] + prod, shift, half, mask, small_bits, Kc, omega, False)


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
            U[r, k] = rn(V[a, k] * d, shift, half, mask, small_bits, Kc, omega, False)


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
    pairs, inv = unique_pairs(tsrc[single], tw[single])
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


def backward_groups(net, comp, Y, dtab, X, rp):
    """``classes.backward_classes`` with every layer's groups as defaults and exceptions (``_svclasses``,
    ``_suclasses``): the grouping costs about the exceptions of a layer, not points x neurons (a chain
    neuron is in one group at its point and in one, or none, at all the others).  None where a value is
    not finite."""
    mode, ep, et, ec = comp
    P, K = X.shape[0], Y.shape[0]
    dt = store_dtype(net.format)
    hidden = [layer.shape[0] for layer in net.layers[:-1]]
    offs = np.concatenate([[0], np.cumsum(hidden)]).astype(np.int64)
    nchunk = 64
    udef, uptr = np.zeros(1, np.int64), np.zeros(2, np.int64)          # the output: group 0 everywhere
    upt, ucl = np.zeros(0, np.int64), np.zeros(0, np.int64)
    U_up = np.ascontiguousarray(Y[None, :], dt)       # physical rows; group row g of the layer is umap[g]
    umap = np.zeros(1, np.int64)
    uoff_up = np.zeros(1, np.int64)
    for l in range(net.depth, 0, -1):
        c = net.layers[l - 1].csc
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
        idx = compact(off, vcnt)
        vpt, vcl = vpt[idx], vcl[idx]
        vptr = np.concatenate([[0], np.cumsum(vcnt)]).astype(np.int64)
        voff = np.concatenate([[0], np.cumsum(nvc)]).astype(np.int64)
        reps = reps[compact(roff, nvc)]
        V, vmap = _group_sums(udef, uptr, upt, ucl, umap, U_up, uoff_up, cp, ci, cw, reps, voff, K, dt, rp)
        if not np.isfinite(V).all():
            return None
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
        idx = compact(off, ncnt)
        npt, ncl = npt[idx], ncl[idx]
        uoff = np.concatenate([[0], np.cumsum(nuc)]).astype(np.int64)
        ureps = ureps[compact(roff, nuc)]
        urowj = np.repeat(np.arange(n_in, dtype=np.int64), nuc)
        usrc, udv = np.empty(len(ureps), np.int64), np.empty(len(ureps))
        _uterms(vdef, vptr, vpt, vcl, mode, ep, et, ec, g0, dtab, ureps, urowj, voff, vmap, usrc, udv)
        # equal (v row, sigma~') give equal rows: each distinct pair once
        pairs, umap = unique_pairs(usrc, udv)
        U = np.empty((len(pairs), K), dt)
        _usingle(V, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]).view(np.float64), U, *rp)
        if not np.isfinite(U).all():
            return None
        udef, uptr, upt, ucl = ndef, np.concatenate([[0], np.cumsum(ncnt)]).astype(np.int64), npt, ncl
        U_up, uoff_up = U, uoff[:-1].copy()
    raise AssertionError("unreachable")


