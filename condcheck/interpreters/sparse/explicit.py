"""The sparse interpreter's backward pass for per-point upstream values (Theorem 5 claims).

Every neuron has a *default* sigma~' (its most common one), and the backward values of the network in
which every neuron sits at its default are computed once per distinct y (``_DefaultPlan``).  At a
point, a neuron's value is its default one unless its sigma~' differs there (and its default sum is not
0) or a successor's value differs: those *explicit* neurons are found top-down per point (``_explicit``)
and summed over their successors, each read as explicit or default.  A point visits its own chains and
the one-coordinate neurons that feed them, not the default state of every other point's chains.  The
default pass checks every y on the default states, so it may meet a non-finite value that no point
reaches: the caller then runs the active-neuron strategy (``active``), which decides.
"""
from __future__ import annotations

import numpy as np

from .common import Structure, derivative_table, numba, rn, round_params, store_dtype, unique_pairs
from .table_forward import forward_tables


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
            D[o, k] = rn(D[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)


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
                prod = rn(D[a, k] * ww, shift, half, mask, small_bits, Kc, omega, False)
                D[o, k] = rn(D[o, k] + prod, shift, half, mask, small_bits, Kc, omega, False)


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
                        prod = rn(u * csc_w[t], shift, half, mask, small_bits, Kc, omega, False)
                        v = rn(v + prod, shift, half, mask, small_bits, Kc, omega, False)
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
                u = V[c] if dv == 1.0 else rn(V[c] * dv, shift, half, mask, small_bits, Kc, omega, False)
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


_dprod = numba.njit(cache=True, parallel=True)(_dprod_py)
_dmulti = numba.njit(cache=True, parallel=True)(_dmulti_py)
_dT_at = numba.njit(cache=True, inline="always")(_dT_at)
_explicit_range = numba.njit(cache=True)(_explicit_range)
_explicit = numba.njit(cache=True, parallel=True)(_explicit_py)


class _DefaultPlan:
    """The default backward pass: every neuron at its most common sigma~' (``TableForward.ddef``), the
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
            c = net.layers[l - 1].csc
            cp, ci, cw = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(np.float64)
            n_in = c.shape[1]
            col = np.repeat(np.arange(n_in, dtype=np.int64), np.diff(cp))
            live = umap[ci] >= 0
            nterm = np.bincount(col[live], minlength=n_in)
            vmap = np.full(n_in, -1, np.int64)
            sel = live & (nterm[col] == 1)
            pairs, inv = unique_pairs(umap[ci[sel]], cw[sel])
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
            pairs, inv = unique_pairs(vmap[lu], dv[lu])
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


def _sigma_lists(bw, vrow_h, N, table_block_entries):
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
        step = max(1, table_block_entries // m)
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


def evaluate_per_point(net, X, Y2, progress, opts):
    """Values and gradients for per-point upstream values Y2 (N, K) (Theorem 5 claims): the forward pass on
    tables and exceptions (``table_forward.forward_tables``), the default backward values once per distinct y
    (``_DefaultPlan``), then per point only the neurons whose backward value differs from the default
    (``_explicit``).  None where some value is not finite (or might be: the default pass runs every y
    on the default states): the caller then runs the active-neuron strategy, which reports it."""
    fmt = net.format
    N, d = X.shape
    K = Y2.shape[1]
    dtab, zero_index = derivative_table(net)
    rp = round_params(fmt)
    ft = forward_tables(net, X, zero_index, dtab, opts)
    if ft is None:
        return None
    values, bw = ft
    S = Structure(net)
    plan = _DefaultPlan(net, bw.ddef, S.offs)
    eptr, eidx, fptr, fidx, cbase = _sigma_lists(bw, plan.vrow_h, N, opts.table_block_entries)
    yd, yidx = np.unique(Y2, return_inverse=True)
    yidx = yidx.reshape(N, K)
    dt = store_dtype(fmt)
    kc = int(max(1, min(len(yd), opts.default_bytes // (plan.nrow * np.dtype(dt).itemsize))))
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
        del D                   # (before the next chunk's D is made: one at a time)
        if progress:
            progress(done // K, N)
    return values, grads
