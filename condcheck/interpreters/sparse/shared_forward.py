"""The sparse interpreter's forward pass for shared upstream values, on defaults and exceptions.

Each neuron is one value at every point but a few exceptions (a chain neuron: its own point); a row is
evaluated once on its inputs' defaults (which every point outside the union of its inputs' exceptions
has, exactly) and once at each point of that union, by the dense kernel's operations in its order
(``_fwd_layer``), then re-expressed by its most common value (``common.by_mode``): the same numbers as
``classes.forward_compressed``, in about the exceptions' work instead of points x neurons.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .common import add_new, by_mode, compact, lookup_codes, number_sorted, numba, rn, round_params


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
            cnt = add_new(where, upt, o, cnt, apt, aptr[i], aptr[i + 1])
        number_sorted(where, upt, o, cnt)
        for u in range(cnt):
            acc[u] = 0.0
        d = 0.0
        for t in range(indptr[j], indptr[j + 1]):
            i = indices[t]
            w = data[t]
            m = amode[i]
            d = rn(d + rn(m * w, shift, half, mask, small_bits, Kc, omega, False),
                    shift, half, mask, small_bits, Kc, omega, False)
            if cnt == 0:
                continue
            for u in range(cnt):
                tmp[u] = m
            for e in range(aptr[i], aptr[i + 1]):
                tmp[where[apt[e]]] = aval[e]
            for u in range(cnt):
                acc[u] = rn(acc[u] + rn(tmp[u] * w, shift, half, mask, small_bits, Kc, omega, False),
                             shift, half, mask, small_bits, Kc, omega, False)
        b = bias[j]
        zdef[j] = rn(d + b, shift, half, mask, small_bits, Kc, omega, False)
        for u in range(cnt):
            uval[o + u] = rn(acc[u] + b, shift, half, mask, small_bits, Kc, omega, False)
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



_fwd_layer_range = numba.njit(cache=True)(_fwd_layer_range)
_fwd_layer = numba.njit(cache=True, parallel=True)(_fwd_layer_py)


def forward_defaults(net, X, zero_index, dtab):
    """``classes.forward_compressed``'s result, (values, (mode, ep, et, ec)), computed per neuron on a default and
    its exceptions instead of on every point: a neuron's value is one value (its most common) at every
    point but a few (a chain neuron: its own point), and a neuron whose inputs all take their default
    at a point takes the value of its row on the defaults there (the same rounded operations on the same
    numbers).  So each row is computed once on the defaults and once at each point of the union of its
    inputs' exception points (``_fwd_layer``), then re-expressed by its most common value (``_mode``),
    for the pre-activations (their codes: the backward pass) and for sigma~ (the next layer's input).
    Returns None where a pre-activation, sigma~ or a needed sigma~' is not finite at some point."""
    fmt = net.format
    N, d_in = X.shape
    rp = round_params(fmt)
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
    by_mode(N, dflt, pts, vals, np.full(d_in, N, np.int64), off, amode, apt, aval, acnt)
    idx = compact(off, acnt)
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
        by_mode(N, zdef, upt, uval, ucnt, off, zmode, zpt, zval, zcnt)
        idx = compact(off, zcnt)
        zpt, zval = zpt[idx], zval[idx]
        if l == net.depth:
            if not (np.isfinite(zmode).all() and np.isfinite(zval).all()):
                return None
            values = np.full(N, zmode[0])
            values[zpt] = zval
            break
        bad = np.zeros(1, np.int64)
        mcode, adef = np.empty(n, np.int64), np.empty(n)
        lookup_codes(zmode, zero_index, fmt.M, fmt.e_min, sig, mcode, adef, bad)
        ecode, aexc = np.empty(len(zval), np.int64), np.empty(len(zval))
        lookup_codes(zval, zero_index, fmt.M, fmt.e_min, sig, ecode, aexc, bad)
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
        by_mode(N, adef, zpt, aexc, zcnt, off, amode, apt, aval, acnt)
        idx = compact(off, acnt)
        apt, aval = apt[idx], aval[idx]
        aptr = np.concatenate([[0], np.cumsum(acnt)]).astype(np.int64)
    n_hidden = g0
    mode = np.concatenate(modes) if modes else np.zeros(0, np.int64)
    g = np.concatenate(exc_n) if exc_n else np.zeros(0, np.int64)
    ep = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_hidden))]).astype(np.int64)
    et = np.concatenate(exc_p).astype(np.int64) if exc_p else np.zeros(0, np.int64)
    ec = np.concatenate(exc_c).astype(np.int64) if exc_c else np.zeros(0, np.int64)
    return values, (mode, ep, et, ec)

