"""Sparse reverse-mode AD over many (x, y) pairs at once, bit for bit equal to ``Network.evaluate``.

Why: a Theorem 7 network holds one family of chains per point; at a given x almost every chain sits on
a dead state (sigma~' = 0), so the backward value of almost every neuron is exactly zero.  The dense
interpreter still computes every neuron for every (x, y): N x K x width x depth, which for the float8 box
(233 points, 239 upstream values, width ~30,000) is tens of billions of rounded operations.  Here the
backward pass of one point only visits the *active* neurons: those reached from the output through
nonzero weights and nonzero sigma~'.

Why it is exact (finite semantics, SPEC 2.1/2.3): an inactive neuron's upstream value is +-0 (its
sigma~' is 0, or every term of its backward sum is a product with a +-0).  In a rounded left-to-right sum
``acc (+) (+-0 (x) w)`` equals ``acc`` when acc != 0 and is a zero otherwise, so leaving such terms out
changes no value (only, possibly, the sign of a zero, and equality is numeric: +0 == -0).  Nothing
overflows in a skipped term.  The forward pass is the dense one (every neuron, every point), and the
checks of the dense interpreter are kept: every pre-activation, sigma~ and sigma~' finite, every
backward sum and product of an active neuron finite (a skipped one is zero).  Under IEEE semantics
(Inf passes, Inf x 0 = NaN matters) this shortcut is not valid; ``evaluate_sparse`` refuses it.
tests/test_sparse_ad.py compares it with the dense and the exact interpreters.
"""
from __future__ import annotations

import numpy as np

from . import kernels
from .errors import CondcheckError, NetworkOverflowError

if kernels.HAVE_NUMBA:
    import numba
    from .kernels import _rn

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


def _vclasses_py(cls_up, cp, ci, vc, nvc, reps):
    """Group the points by the classes of neuron j's successors (column j of the layer): equal groups
    have equal backward sums v_j for every y.  vc[p, j] = group, or -1 when every successor is zero."""
    P = cls_up.shape[0]
    for j in numba.prange(vc.shape[1]):
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
                if _same(cls_up, p, reps[j, r], ci, lo, hi):
                    found = r
                    break
            if found < 0:
                reps[j, n] = p
                found = n
                n += 1
            vc[p, j] = found
        nvc[j] = n


def _vsums_py(cls_up, U_up, uoff, cp, ci, cw, reps, nvc, voff, V, err,
              shift, half, mask, small_bits, Kc, omega):
    """V[voff[j] + r] = the left-to-right rounded backward sum of neuron j at the representative point of
    its group r (zero successors skipped: see the module docstring); err[j] = 1 where one is not finite."""
    K = V.shape[1]
    for j in numba.prange(nvc.shape[0]):
        for r in range(nvc[j]):
            q = reps[j, r]
            row = voff[j] + r
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


def _uclasses_py(vc, codes, off, dtab, cls, nuc, ureps):
    """Through sigma~': group the points of neuron j by (v group, sigma~'(z_j)); -1 where the product is
    certainly zero (no v, or sigma~' = 0)."""
    P = vc.shape[0]
    for j in numba.prange(vc.shape[1]):
        n = 0
        for p in range(P):
            g = vc[p, j]
            dv = dtab[codes[p, off + j]]
            if g < 0 or dv == 0.0:
                cls[p, j] = -1
                continue
            found = -1
            for r in range(n):
                q = ureps[j, r]
                if vc[q, j] == g and dtab[codes[q, off + j]] == dv:
                    found = r
                    break
            if found < 0:
                ureps[j, n] = p
                found = n
                n += 1
            cls[p, j] = found
        nuc[j] = n


def _uvalues_py(vc, codes, off, dtab, ureps, nuc, uoff, voff, V, U, err,
                shift, half, mask, small_bits, Kc, omega):
    K = V.shape[1]
    for j in numba.prange(nuc.shape[0]):
        for r in range(nuc[j]):
            q = ureps[j, r]
            dv = dtab[codes[q, off + j]]
            src = voff[j] + vc[q, j]
            for k in range(K):
                u = _rn(V[src, k] * dv, shift, half, mask, small_bits, Kc, omega, False)
                U[uoff[j] + r, k] = u
                if not (abs(u) <= omega):
                    err[j] = 2


if kernels.HAVE_NUMBA:
    _codes = numba.njit(cache=True, parallel=True)(_codes_py)
    _same = numba.njit(cache=True, inline="always")(_same)
    _vclasses = numba.njit(cache=True, parallel=True)(_vclasses_py)
    _vsums = numba.njit(cache=True, parallel=True)(_vsums_py)
    _uclasses = numba.njit(cache=True, parallel=True)(_uclasses_py)
    _uvalues = numba.njit(cache=True, parallel=True)(_uvalues_py)


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


# bytes of pre-activation codes (points x hidden neurons, uint16) one chunk of the shared-y path holds
CODE_BYTES = 1 << 27
# bytes of per-group backward values of one layer the shared-y path aims at (it runs a few y at a time)
CLASS_BYTES = 1 << 26


def _derivative_table(net):
    """(sigma~' on every value of the format, inf where it overflows; index of 0 among the values)."""
    t = net.rounded.table()
    d = np.where(t.dsigma_overflow, np.inf, t.dsigma).astype(np.float64)
    return np.ascontiguousarray(d), int(np.searchsorted(t.points, 0.0))


def _forward_codes(net, S, X, s, e, values, zero_index, dtab):
    """Forward values of points s..e and the index of every hidden pre-activation among the format's
    values (uint16): ``Network._forward_chunk`` layer by layer with its checks (every pre-activation and
    sigma~ finite), keeping codes instead of the float pre-activations (8 times less memory)."""
    fmt = net.format
    n_hidden = int(S.offs[-1])
    codes = np.empty((e - s, n_hidden), np.uint16)
    bad_d = not np.isfinite(dtab).all()
    v = X[s:e].astype(net._dtype)
    for l, layer in enumerate(net.layers, 1):
        z = layer.forward_sums(v, fmt, False)
        net._check(z, "forward", l, s, X)
        if l == net.depth:
            values[s:e] = z[:, 0]
            return codes
        c = np.empty(z.shape, np.int64)
        _codes(np.ascontiguousarray(z, dtype=np.float64), zero_index, fmt.M, fmt.e_min, c)
        if bad_d and not np.isfinite(dtab[c]).all():
            net._check(dtab[c], "backward (activation derivative)", l, s, X)
        codes[:, S.offs[l - 1]:S.offs[l]] = c
        a = net._activation(z, derivative=False)
        net._check(a, "forward (activation)", l, s, X)
        v = a.astype(net._dtype)
    raise AssertionError("unreachable")


def _backward_classes(net, S, codes, Y, dtab, X, s, rp):
    """Gradients (P, K, d) of a chunk of points sharing the upstream values Y: top-down, every neuron's
    points are grouped by the classes of its successors and its sigma~' (equal groups have equal
    backward values for every y: they are computed once, for a representative point)."""
    P, K = codes.shape[0], Y.shape[0]
    cls_up = np.zeros((P, 1), np.int32)
    U_up = np.ascontiguousarray(Y[None, :], np.float64)
    uoff_up = np.zeros(1, np.int64)
    for l in range(net.depth, 0, -1):
        c = net.layers[l - 1]._csc
        cp, ci, cw = c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data.astype(np.float64)
        n_in = c.shape[1]
        vc = np.empty((P, n_in), np.int32)
        nvc = np.zeros(n_in, np.int64)
        reps = np.empty((n_in, P), np.int32)
        _vclasses(cls_up, cp, ci, vc, nvc, reps)
        voff = np.concatenate([[0], np.cumsum(nvc)]).astype(np.int64)
        V = np.zeros((int(voff[-1]), K))
        err = np.zeros(n_in, np.int64)
        _vsums(cls_up, U_up, uoff_up, cp, ci, cw, reps, nvc, voff, V, err, *rp)
        if err.any():
            j = int(np.flatnonzero(err)[0])
            r = int(np.flatnonzero(~np.isfinite(V[voff[j]:voff[j + 1]]).any(axis=1))[0])
            raise net._overflow("backward", l, j, X[s + reps[j, r]].tolist(), s + int(reps[j, r]))
        if l == 1:
            G = np.zeros((P, K, n_in))
            for j in range(n_in):
                on = vc[:, j] >= 0
                G[on, :, j] = V[voff[j] + vc[on, j]]
            return G
        off = int(S.offs[l - 2])
        cls = np.empty((P, n_in), np.int32)
        nuc = np.zeros(n_in, np.int64)
        ureps = np.empty((n_in, P), np.int32)
        _uclasses(vc, codes, off, dtab, cls, nuc, ureps)
        uoff = np.concatenate([[0], np.cumsum(nuc)]).astype(np.int64)
        U = np.empty((int(uoff[-1]), K))
        err = np.zeros(n_in, np.int64)
        _uvalues(vc, codes, off, dtab, ureps, nuc, uoff, voff, V, U, err, *rp)
        if err.any():
            j = int(np.flatnonzero(err)[0])
            r = int(np.flatnonzero(~np.isfinite(U[uoff[j]:uoff[j + 1]]).any(axis=1))[0])
            raise net._overflow("backward (activation derivative)", l - 1, j, X[s + ureps[j, r]].tolist(),
                                s + int(ureps[j, r]))
        cls_up, U_up, uoff_up = cls, U, uoff[:-1].copy()
    raise AssertionError("unreachable")


def _evaluate_shared(net, S, X, Y, progress):
    """``evaluate_sparse`` when every point has the same upstream values Y (Theorem 7 claims)."""
    N = X.shape[0]
    dtab, zero_index = _derivative_table(net)
    rp = _round_params(net.format)
    n_hidden = max(1, int(S.offs[-1]))
    chunk = max(1, min(N, CODE_BYTES // (2 * n_hidden)))
    # backward values of a layer: ~2 groups per neuron (its point, the others) x y x 8 bytes, twice
    ky = max(8, CLASS_BYTES // (32 * max(net.widths)))
    values = np.empty(N)
    grads = np.zeros((N, Y.shape[0], net.input_dim))
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        codes = _forward_codes(net, S, X, s, e, values, zero_index, dtab)
        for k0 in range(0, Y.shape[0], ky):          # a few y at a time: the per-class values stay small
            k1 = min(Y.shape[0], k0 + ky)
            grads[s:e, k0:k1] = _backward_classes(net, S, codes, Y[k0:k1], dtab, X, s, rp)
        if progress:
            progress(e, N)
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
        raise CondcheckError(f"upstream value {Y2.ravel()[bad]!r} is not a value of {fmt.name}")
    K = Y2.shape[1]
    S = _Structure(net)
    if net.format.bits <= 16 and (Y2 == Y2[:1]).all():
        return _evaluate_shared(net, S, X, Y2[0], progress)
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
