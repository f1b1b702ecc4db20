"""The sparse interpreter's reference strategies for shared upstream values (Theorem 7 claims).

Forward (``forward_compressed``): the dense interpreter's passes over every point, each hidden
pre-activation kept as its index among the format's values, compressed per neuron to its most common
code and the exceptions.  Backward (``backward_classes``): going down from the output, the points of each
neuron are grouped by the groups of the neurons it feeds and by its own sigma~'; points in one group
provably have equal backward values for every y (equal inputs, equal operations), so each group is
computed once, at its first point -- with one group number per point and neuron.  ``shared_forward``
and ``groups`` compute the same numbers on defaults and exceptions; tests/test_interpreters.py compares.
"""
from __future__ import annotations

import numpy as np

from ...ops import working_dtype
from .common import DENSE, codes, column_modes, numba, rn, store_dtype


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
                    prod = rn(U_up[src, k] * w, shift, half, mask, small_bits, Kc, omega, False)
                    V[row, k] = rn(V[row, k] + prod, shift, half, mask, small_bits, Kc, omega, False)
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
                u = rn(V[src, k] * dv, shift, half, mask, small_bits, Kc, omega, False)
                U[row, k] = u
                if not (abs(u) <= omega):
                    err[j] = 2



_same = numba.njit(cache=True, inline="always")(_same)
_point_codes = numba.njit(cache=True, inline="always")(_point_codes)
_vclasses = numba.njit(cache=True, parallel=True)(_vclasses_py)
_first = numba.njit(cache=True, parallel=True)(_first_py)
_vsums = numba.njit(cache=True, parallel=True)(_vsums_py)
_uclasses = numba.njit(cache=True, parallel=True)(_uclasses_py)
_uvalues = numba.njit(cache=True, parallel=True)(_uvalues_py)


def forward_compressed(net, S, X, zero_index, dtab, chunk_entries=1 << 22):
    """(values, (mode, ep, et, ec)): the forward values of every point (the dense interpreter's passes,
    layer by layer) and the index of every hidden pre-activation among the format's values, compressed
    per neuron: its most common code (on the first chunk of points) and the (point, code) exceptions.
    A chain neuron takes one state at its point and one at all the others, so this is about two numbers
    per neuron instead of one per point.  None where a pre-activation, sigma~ or sigma~' is not finite."""
    fmt = net.format
    N = X.shape[0]
    n_hidden = int(S.offs[-1])
    mode = np.zeros(n_hidden, np.int64)
    values = np.empty(N)
    exc = []                                        # (global neuron, point, code) arrays
    bad_d = not np.isfinite(dtab).all()
    dt = working_dtype(fmt)
    chunk = max(1, chunk_entries // max(net.widths))
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        v = X[s:e].astype(dt)
        for l, layer in enumerate(net.layers, 1):
            z = DENSE.forward_sums(layer, v, fmt)
            if not np.isfinite(z).all():
                return None
            if l == net.depth:
                values[s:e] = z[:, 0]
                break
            c = np.empty(z.shape, np.int64)
            codes(np.ascontiguousarray(z, dtype=np.float64), zero_index, fmt.M, fmt.e_min, c)
            if bad_d and not np.isfinite(dtab[c]).all():
                return None
            o0, o1 = int(S.offs[l - 1]), int(S.offs[l])
            if s == 0:
                mode[o0:o1] = column_modes(c)
            pts, cols = np.nonzero(c != mode[None, o0:o1])
            exc.append((cols + o0, pts + s, c[pts, cols]))
            a = DENSE.activation(net, z, derivative=False)
            if not np.isfinite(a).all():
                return None
            v = a.astype(dt)
    g = np.concatenate([x[0] for x in exc]) if exc else np.zeros(0, np.int64)
    order = np.argsort(g, kind="stable")                    # by neuron, points ascending within
    ep = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_hidden))]).astype(np.int64)
    et = (np.concatenate([x[1] for x in exc]) if exc else np.zeros(0, np.int64))[order].astype(np.int64)
    ec = (np.concatenate([x[2] for x in exc]) if exc else np.zeros(0, np.int64))[order].astype(np.int64)
    return values, (mode, ep, et, ec)


def backward_classes(net, S, comp, Y, dtab, X, rp):
    """Gradients (N, K, d) of every point for the shared upstream values Y: top-down, every neuron's
    points are grouped by the classes of its successors and its sigma~' (equal groups have equal
    backward values for every y: they are computed once, for the group's first point).  None where a
    value is not finite."""
    mode, ep, et, ec = comp
    P, K = X.shape[0], Y.shape[0]
    cls_up = np.zeros((P, 1), np.int32)
    dt = store_dtype(net.format)
    U_up = np.ascontiguousarray(Y[None, :], dt)
    uoff_up = np.zeros(1, np.int64)
    for l in range(net.depth, 0, -1):
        c = net.layers[l - 1].csc
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
            return None
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
            return None
        cls_up, U_up, uoff_up = cls, U, uoff[:-1].copy()
    raise AssertionError("unreachable")


