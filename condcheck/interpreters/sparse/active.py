"""The sparse interpreter's simplest strategy: for every point, the backward pass on its active neurons.

The forward pass is the dense interpreter's (compiled sums).  Going down from the output, a point's
backward pass visits only the neurons reached through nonzero weights and nonzero sigma~' (``_backward``,
compiled): an inactive neuron's upstream value is +-0, and leaving out a term ``acc (+) (+-0 (x) w)``
changes no value (only, possibly, the sign of a zero).  Every other strategy falls back to this one
where some value is not finite: its failures are the dense interpreter's (a sigma~' that is not finite
fails at its neuron even where the neuron is inactive: there the dense product is 0 x Inf).
"""
from __future__ import annotations

import numpy as np

from ..failures import BACKWARD, BACKWARD_DERIVATIVE, failure
from .common import DENSE, Structure, numba, rn, round_params


def _backward_py(Y, dT, offs, widths, csr_ptr, csr_idx, csc_ptr, csc_idx, csc_w, lay_ptr, d_in,
                 shift, half, mask, small_bits, Kc, omega, native, grads, err):
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
                        prod = rn(U[q, k] * w, shift, half, mask, small_bits, Kc, omega, native)
                        V[c, k] = rn(V[c, k] + prod, shift, half, mask, small_bits, Kc, omega, native)
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
                    r = rn(V[c, k] * dv, shift, half, mask, small_bits, Kc, omega, native)
                    U[q, k] = r
                    if not (abs(r) <= omega) and err[p] == 0:
                        err[p] = 2 + 4 * (l + 1024 * cand[c])      # activation derivative, layer l, neuron
                q += 1
            if err[p] != 0:
                break



_backward = numba.njit(cache=True, parallel=True)(_backward_py)


def evaluate_active(net, X, Y2, progress, chunk_entries):
    """(values (N,), gradients (N, K, d)) for upstream values Y2 (N, K), chunk by chunk of points."""
    N, K = Y2.shape
    S = Structure(net)
    n_hidden = int(S.offs[-1])
    chunk = max(1, min(N, chunk_entries // max(1, n_hidden + max(net.widths) * 4)))
    values = np.empty(N)
    grads = np.zeros((N, K, net.input_dim))
    fmt = net.format
    native = fmt.M == 52                        # float64: the machine's operations are RN already
    rp = round_params(fmt) if not native else (1, np.int64(0), np.int64(-1), np.int64(0), 0.0, float(fmt.max))
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        values[s:e], pre = DENSE.forward(net, X[s:e], s, X)
        dT = np.empty((e - s, n_hidden))
        for l, z in enumerate(pre):
            dT[:, S.offs[l]:S.offs[l + 1]] = DENSE.activation(net, z, derivative=True)
        err = np.zeros(e - s, np.int64)
        g = np.zeros((e - s, K, net.input_dim))
        _backward(Y2[s:e], dT, S.offs, S.widths, S.csr_ptr, S.csr_idx, S.csc_ptr, S.csc_idx, S.csc_w,
                  S.lay_ptr, net.input_dim, *rp, native, g, err)
        bad_d = ~np.isfinite(dT)
        failing = (err != 0) | bad_d.any(axis=1)
        if failing.any():
            p = int(np.flatnonzero(failing)[0])
            raise _first_backward_failure(net, S, int(err[p]), bad_d[p], X, s + p)
        grads[s:e] = g
        if progress:
            progress(e, N)
    return values, grads


def _first_backward_failure(net, S, code, bad_d, X, q):
    """The first failing step of point q's backward pass, from the kernel's first failure (``code``:
    kind + 4 (layer + 1024 neuron), kind 1 a sum, 2 a product by sigma~'; 0: none) and the neurons whose
    sigma~' is not finite (``bad_d``, every hidden neuron): backward step of layer l = 2 (L - l), product
    by sigma~' of hidden layer h = 2 (L - h) - 1; at one step the lower neuron."""
    L = net.depth
    found = []
    if code:
        kind, rest = code % 4, code // 4
        layer, neuron = rest % 1024, rest // 1024
        found.append((2 * (L - layer) - (kind == 2), neuron, BACKWARD if kind == 1 else BACKWARD_DERIVATIVE, layer))
    hidden = np.flatnonzero(bad_d)
    if len(hidden):
        h = int(np.searchsorted(S.offs, hidden[-1], side="right"))   # the highest such layer (1-based)
        neuron = int(hidden[hidden >= S.offs[h - 1]][0] - S.offs[h - 1])
        found.append((2 * (L - h) - 1, neuron, BACKWARD_DERIVATIVE, h))
    step, neuron, pass_name, layer = min(found)
    return failure(net, pass_name, layer, neuron, X[q].tolist(), index=q)
