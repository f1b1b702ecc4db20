"""The sparse interpreter's forward pass for per-point upstream values (Theorem 5 claims): tables.

A neuron that depends on one input coordinate (or none) is a table over that coordinate's distinct
values, its row evaluated once per value by the dense kernel (the same operations in the same order),
so a step that is on over half of a grid costs its coordinate's values, not half the points.  A row
that mixes coordinates (or reads a neuron that does) is a default value and exceptions, evaluated on
its inputs in that form: merged (``_narrow_rows``: a few terms), folded (``_fold_rows``: many), or with
one coordinate's inputs read as tables (``_sliced_rows``).  What the backward pass keeps of it is
sigma~' (a gate whose pre-activation differs over two slices of a grid is dead on all of them: one
value), as a ``TableForward``.  None where a pre-activation, sigma~ or sigma~' is not finite.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..dense_kernels import rounded_row_sums
from .common import bits, by_mode, compact, lookup_codes_par, numba, rn, round_params


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
            dterm[t] = rn(amode[i] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False)
            S[t + 1] = rn(S[t] + dterm[t], shift, half, mask, small_bits, Kc, omega, False)
            ne += aptr[i + 1] - aptr[i]
        nxt[m] = m
        for t in range(m - 1, -1, -1):
            nxt[t] = t if dterm[t] != 0.0 else nxt[t + 1]
        zdef[j] = rn(S[m] + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
                    term = rn(aval[src[order[k]]] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False)
                    k += 1
                else:
                    term = dterm[t]
                acc = rn(acc + term, shift, half, mask, small_bits, Kc, omega, False)
                same = bits(acc) == bits(S[t + 1])
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
            uval[o + cnt] = rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
            acc = rn(acc + rn(amode[i] * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                      shift, half, mask, small_bits, Kc, omega, False)
        zdef[j] = rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
                acc = rn(acc + rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            upt[o + cnt] = q
            uval[o + cnt] = rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
                acc = rn(acc + rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            F[j, u] = rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
                acc = rn(acc + rn(v * data[lo + t], shift, half, mask, small_bits, Kc, omega, False),
                          shift, half, mask, small_bits, Kc, omega, False)
            upt[o + cnt] = q
            uval[o + cnt] = rn(acc + bias[j], shift, half, mask, small_bits, Kc, omega, False)
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
        db = bits(dflt[j])
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
            if bits(v) != db:
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
            keys[t] = bits(tabs[n, t])
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
        db = bits(dflt[n])
        k = ptr[n]
        for p in range(xi.shape[0]):
            v = tabs[n, xi[p]]
            if bits(v) != db:
                pts[k] = p
                vals[k] = v
                k += 1


_fold_range = numba.njit(cache=True)(_fold_range)
_fold_rows = numba.njit(cache=True, parallel=True)(_fold_rows_py)
_narrow_range = numba.njit(cache=True)(_narrow_range)
_narrow_rows = numba.njit(cache=True, parallel=True)(_narrow_rows_py)
_sliced_range = numba.njit(cache=True)(_sliced_range)
_sliced_rows = numba.njit(cache=True, parallel=True)(_sliced_rows_py)
_unslice = numba.njit(cache=True, parallel=True)(_unslice_py)
_wmode = wmode = numba.njit(cache=True, parallel=True)(_wmode_py)
_spread = numba.njit(cache=True, parallel=True)(_spread_py)


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


class TableForward:
    """What the backward pass (``explicit``) needs of the forward one: per hidden neuron (global index) its kind (c >= 0:
    a function of coordinate c, with its sigma~' on every value of c at dtab1[tptr[g]:]; -2: a default
    sigma~' and exceptions), its default (most common) sigma~' ddef, and the exceptions (dptr, dpt, dval;
    points ascending); the coordinates' value indices xi (N, d) and value counts."""


def _general_rows(N, sub, bias, amode, aptr, apt, aval, rp, zero_index, fmt, sig, dtab, bad_d, last, opts,
                  cstar=None, kind=None, tabs=None, trow=None, xi=None, counts=None):
    """The rows of sub (general: their inputs as defaults and exceptions) in blocks of about
    ``opts.block_entries`` (point, value) entries: the output values (N,) when ``last``, else per row sigma~' and
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
            sel = np.flatnonzero((cstar < 0) & ((nterm <= opts.narrow_row) == (how == "narrow")))
        if not len(sel):
            continue
        nv = 1 if c < 0 else int(len(counts[c]))
        blk_id = (np.cumsum(bound[sel] + nv) - 1) // opts.block_entries
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
            idx = compact(off, ucnt)
            upt, uval = upt[idx], uval[idx]
            off = np.concatenate([[0], np.cumsum(ucnt)]).astype(np.int64)
            bad = np.zeros(1, np.int64)
            if how == "sliced":
                # table entries that no point has (every point of that value an exception) may be anything
                seen = np.zeros((nr, nv), np.int64)
                np.add.at(seen, (np.repeat(np.arange(nr), ucnt), xic[upt]), 1)
                F = np.where((seen == counts[c][None, :]) & ~np.isfinite(F), 0.0, F)
                fcode, sF = np.empty(F.size, np.int64), np.empty(F.size)
                lookup_codes_par(np.ascontiguousarray(F).ravel(), zero_index, fmt.M, fmt.e_min, sig, fcode, sF,
                                  bad)
                sF, dF = sF.reshape(nr, nv), dtab[fcode].reshape(nr, nv)
                if bad_d and not np.isfinite(dF).all():
                    return None
                adef, ddf = sF[:, 0].copy(), dF[:, 0].copy()
            else:
                zdef = np.where((ucnt == N) & ~np.isfinite(zdef), 0.0, zdef)
                mcode, adef = np.empty(nr, np.int64), np.empty(nr)
                lookup_codes_par(zdef, zero_index, fmt.M, fmt.e_min, sig, mcode, adef, bad)
                ddf = dtab[mcode]
            ecode, aexc = np.empty(len(uval), np.int64), np.empty(len(uval))
            lookup_codes_par(uval, zero_index, fmt.M, fmt.e_min, sig, ecode, aexc, bad)
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
                by_mode(N, dflt, upt, vals, ucnt, off, mo, pt, vl, cnt)
                idx = compact(off, cnt)
                mo, cnt, pt, vl = mo, cnt, pt[idx], vl[idx]
                if tab is not None:
                    tb = tab.view(np.int64)
                    varies = np.flatnonzero((tb != tb[:, :1]).any(axis=1))
                    if len(varies):
                        mo, cnt, pt, vl = _unslice_rows(N, tab, varies, xic, off, upt, vals, ucnt, counts[c],
                                                        mo, cnt, pt, vl, opts.block_entries)
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


def _unslice_rows(N, tab, varies, xic, off, upt, vals, ucnt, counts, mo, cnt, pt, vl, block_entries):
    """(mo, cnt, pt, vl) with the rows ``varies`` (a table over the coordinate's values that is not one
    value) replaced by their values over every point (``_unslice``), re-expressed by their most common
    value; a few rows at a time (N entries each)."""
    mo, cnt = mo.copy(), cnt.copy()
    ptr = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
    pieces_p = [pt[ptr[j]:ptr[j + 1]] for j in range(len(cnt))]
    pieces_v = [vl[ptr[j]:ptr[j + 1]] for j in range(len(cnt))]
    step = max(1, block_entries // max(1, N))
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

def forward_tables(net, X, zero_index, dtab, opts):
    """(values, TableForward) with the dense interpreter's numbers: neurons that depend on one input coordinate
    (or none) are tables over its distinct values, each row evaluated once per value by the dense kernel
    (``dense_kernels.rounded_row_sums``: the same operations in the same order), so a step that is on over half
    of a grid costs its coordinate's values, not half the points.  A row that mixes coordinates (or reads
    a neuron that does) is a default value and exceptions, evaluated by ``_fold_rows`` on its inputs in
    that form (one-coordinate inputs are spread over the points for it, ``_spread``).  None where a
    pre-activation, sigma~ or sigma~' is not finite at some point (every table entry is some point's)."""
    fmt = net.format
    N, d = X.shape
    rp = round_params(fmt)
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
    bw = TableForward()
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
    # a table whose entries differ from its default on at most 1/opts.sparse_table of the values (a gradient
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
            step = max(1, opts.table_block_entries // m) if table else len(rows_c)
            for b0 in range(0, len(rows_c), step):
                rows = rows_c[b0:b0 + step]
                sub = w[rows]
                cols, loc = np.unique(sub.indices, return_inverse=True)
                loc = loc.reshape(-1).astype(np.int64)
                starts, lens = sub.indptr[:-1].astype(np.int64), np.diff(sub.indptr).astype(np.int64)
                isc = kind[cols] == -1
                tab_rows = trow[cols[~isc]] if c >= 0 else None
                # the rows' inputs at a block of the coordinate's values at a time (each value's sums are
                # its own): the output row of a bfloat16 box's part reads 125,770 neurons, most of them
                # constants, and held them at all 256 values at once (257 MB)
                z = np.empty((m, len(rows)))
                v_step = max(1, opts.table_block_entries // max(1, len(cols)))
                for v0 in range(0, m, v_step):
                    v1 = min(m, v0 + v_step)
                    V = np.empty((v1 - v0, len(cols)))
                    V[:, isc] = cval[cols[isc]][None, :]
                    if c >= 0 and (~isc).any():
                        V[:, ~isc] = tabs[c][tab_rows, v0:v1].T
                    z[v0:v1] = rounded_row_sums(V, loc, sub.data, starts, lens, layer.bias[rows], fmt)
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
                lookup_codes_par(zt, zero_index, fmt.M, fmt.e_min, sig, code, s, bad)
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
                    sparse = (nex * opts.sparse_table <= m) if opts.sparse_table > 0 else np.zeros(len(rows), bool)
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
            if opts.sliced_rows:
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
                ok = (score.max(axis=1) > 0) & (np.diff(sub.indptr) <= opts.narrow_row)
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
                                zero_index, fmt, sig, dtab, bad_d, last, opts, cstar, kind, tabs, trow, xi, counts)
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
