"""The neurons of a network that a part of its domain can not tell from constants, and the network with
them made constant: the same values and AD gradients (by value) at every point of the part, at the cost
of the neurons that vary there (``pruned_for``; ``verify_in_parts`` verifies a claim part by part).

Why it is exact.  Every pre-activation is a left-to-right rounded sum of rounded products; RN is monotone,
so with each input of a row bounded over the part (a box: each coordinate between its least and largest
value there), the row's rounded sum at its bounds, in the same order, bounds it at every point of the
part (``_interval_rows``).  T on an interval of format values takes values between the least and largest
of its table there (range queries over the table of every value, ``_TableRanges``).  A neuron whose
pre-activation lies in a *flat run* of T (T constant and T' = 0 on every value of the interval, as on the
dead tail) takes that constant value, with T' = 0, at every point of the part: its row becomes that
constant (no weights, its lower bound as bias), which the interpreters evaluate once.  A neuron that no
kept neuron reads (every reader constant, or itself unread) has no effect on any kept value, and backward
it receives only zeros (a constant row has T' = 0 and reads nothing): it becomes a constant too, unless
its interval may overflow (then the reference would report that overflow, so it is kept, and its inputs
with it).  A kept row reads the same columns in the same order as before, so its sums are the same at
every point; a gradient changes at most by terms +-0, which do not change a sum by value (``verify``
compares by value).  Bounds that are loose only keep more neurons.

Compacted (``compact=True``): the constant neurons that no kept row reads are left out altogether, so the
part's network is as wide as what it keeps and reads, not as the whole network.  Exact too: such a neuron
has no weights (a constant row), no row reads it, and its T is finite with T' = 0, so no value, sum or
failure of the others depends on it; a kept row reads the same columns in the same order, renumbered in
order.  Only the numbering of neurons changes, so ``verify_pruned`` verifies a part on the compacted
network and, if that fails, again on the uncompacted one, whose failure report names the network's own
neurons.

Formats of at most 16 bits (T on every value); networks under finite semantics.

Why: a Theorem 5 network on a d = 1 domain of N points has about 14 N neurons that depend on x, and the
tables of the sparse interpreter cost neurons x points, so verifying a 16-bit box (N = 57,345) cost about
5,000 CPU s; on a part of 256 points all but its own points' branches (and the steps and separators they
read) are constant.  Compacted, a part of 256 points of the bfloat16 relu box (depth 34) is 500-1,300
neurons wide in every hidden layer but the last (which the output reads whole), instead of 125,768-190,786
(docs/boxes.md).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError


class _TableRanges:
    """T and T' of a rounded activation on every value of its format, with range minima and maxima of T
    over runs of values (sparse tables) and the flat runs (T constant, T' = 0)."""

    def __init__(self, rounded):
        t = rounded.table()
        self.V = np.asarray(t.points, float)
        sig = np.where(t.sigma_overflow, np.nan, t.sigma).astype(float)
        dsig = np.where(t.dsigma_overflow, np.nan, t.dsigma).astype(float)
        self.t, self.dt = sig, dsig
        bad = ~np.isfinite(sig)
        lo, hi = np.where(bad, -np.inf, sig), np.where(bad, np.inf, sig)      # an overflow spans everything
        self.mins, self.maxs = [lo], [hi]
        w = 1
        while 2 * w <= len(lo):
            self.mins.append(np.minimum(self.mins[-1][:-w], self.mins[-1][w:]))
            self.maxs.append(np.maximum(self.maxs[-1][:-w], self.maxs[-1][w:]))
            w *= 2
        flat_step = (sig[1:] == sig[:-1]) & (dsig[1:] == 0) & (dsig[:-1] == 0)
        n = len(sig)
        breaks = np.append(np.flatnonzero(~flat_step), n - 1)
        self.flat_end = breaks[np.searchsorted(breaks, np.arange(n))]
        self.flat_start_ok = dsig == 0
        # a value whose T is finite and T' = 0 (a constant row's bias for a neuron nobody reads)
        calm = np.flatnonzero((dsig == 0) & np.isfinite(sig))
        self.calm = float(self.V[calm[0]]) if len(calm) else None

    def index(self, v):
        """Index of each value v (a value of the format) among the sorted values."""
        return np.clip(np.searchsorted(self.V, v), 0, len(self.V) - 1)

    def ranges(self, i, j):
        """(min T, max T) over values i..j (index arrays, i <= j)."""
        k = np.floor(np.log2(j - i + 1)).astype(np.int64)
        lo = np.empty(len(i))
        hi = np.empty(len(i))
        for level in np.unique(k):
            m = k == level
            a, b = i[m], j[m] - (1 << int(level)) + 1
            lo[m] = np.minimum(self.mins[level][a], self.mins[level][b])
            hi[m] = np.maximum(self.maxs[level][a], self.maxs[level][b])
        return lo, hi

    def flat(self, i, j):
        return self.flat_start_ok[i] & (self.flat_end[i] >= j)


def _tables(net) -> _TableRanges:
    hit = getattr(net, "_table_ranges", None)
    if hit is None:
        hit = net._table_ranges = _TableRanges(net.rounded)
    return hit


def _interval_rows_py(lo, hi, unsure, indptr, indices, data, bias, out_lo, out_hi, out_unsure,
                      shift, half, mask, small_bits, K, omega, native):
    """Per row r: the left-to-right rounded sum of its terms and bias at the inputs' lower and upper
    bounds (each product's bounds from the input's bounds and the weight's sign), and whether some input
    or intermediate result may not be finite."""
    for r in numba.prange(len(bias)):
        a_lo = 0.0
        a_hi = 0.0
        bad = False
        for t in range(indptr[r], indptr[r + 1]):
            c = indices[t]
            w = data[t]
            if unsure[c]:
                bad = True
                break
            p1 = _rn(lo[c] * w, shift, half, mask, small_bits, K, omega, native)
            p2 = _rn(hi[c] * w, shift, half, mask, small_bits, K, omega, native)
            if w < 0:
                p1, p2 = p2, p1
            a_lo = _rn(a_lo + p1, shift, half, mask, small_bits, K, omega, native)
            a_hi = _rn(a_hi + p2, shift, half, mask, small_bits, K, omega, native)
            if not (abs(a_lo) <= omega and abs(a_hi) <= omega):
                bad = True
                break
        if not bad:
            a_lo = _rn(a_lo + bias[r], shift, half, mask, small_bits, K, omega, native)
            a_hi = _rn(a_hi + bias[r], shift, half, mask, small_bits, K, omega, native)
            bad = not (abs(a_lo) <= omega and abs(a_hi) <= omega)
        out_lo[r] = a_lo
        out_hi[r] = a_hi
        out_unsure[r] = bad


numba = _rn = _interval_rows = None


def _compile():
    global numba, _rn, _interval_rows
    if _interval_rows is None:
        from . import kernels
        numba, _rn = kernels.numba_module(), kernels.rn
        _interval_rows = numba.njit(cache=True, parallel=True)(_interval_rows_py)


def intervals(net, box_lo, box_hi):
    """Per layer (pre-activation lower bounds, upper bounds, unsure mask) of every neuron over the box
    [box_lo, box_hi] of inputs (arrays of length d, values of the format)."""
    from .kernels import rn_params
    _compile()
    fmt, tr = net.format, _tables(net)
    consts = (*rn_params(fmt), False)           # (formats of at most 16 bits: never float64's native rounding)
    lo, hi = np.asarray(box_lo, float), np.asarray(box_hi, float)
    unsure = np.zeros(len(lo), bool)
    out = []
    for layer in net.layers:
        w = _sorted_csr(layer)
        n = w.shape[0]
        p_lo, p_hi, p_uns = np.empty(n), np.empty(n), np.empty(n, bool)
        # (the index arrays as they are, int32 or int64: the kernel compiles for either; a copy per part
        # of a bfloat16 box's step rows would be 0.4 GB)
        _interval_rows(lo, hi, unsure, w.indptr, w.indices, w.data, np.asarray(layer.bias, float), p_lo, p_hi,
                       p_uns, *consts)
        out.append((p_lo, p_hi, p_uns))
        i = tr.index(np.where(p_uns, 0.0, p_lo))
        j = tr.index(np.where(p_uns, 0.0, p_hi))
        t_lo, t_hi = tr.ranges(i, j)
        unsure = p_uns | ~np.isfinite(t_lo) | ~np.isfinite(t_hi)
        lo, hi = np.where(unsure, 0.0, t_lo), np.where(unsure, 0.0, t_hi)
    return out


def _sorted_csr(layer):
    """The layer's weight with sorted indices and no stored zeros: the weight itself when it is so
    already (a ``Layer`` makes it so), else a copy kept with the layer (a copy of the largest layer of a
    bfloat16 box is 0.6 GB, on every worker)."""
    w = layer.weight
    if sp.isspmatrix_csr(w) and w.has_sorted_indices and not (w.data == 0).any():
        return w

    def make():
        c = w.tocsr(copy=True)
        c.sort_indices()
        c.eliminate_zeros()
        return c
    return layer.derived("interval_pruning.sorted_csr", make)


def pruned_for(net, points, compact: bool = False):
    """(a network that gives every one of ``points`` the same values and AD gradients as ``net``, by value,
    with every neuron the points' box can not tell from a constant made constant; the neurons kept per
    hidden layer).  ``compact``: without the constant neurons no kept row reads (their neurons renumbered).
    See the module docstring."""
    from .network import Layer, Network
    if net.ieee:
        raise CondcheckError("pruning by parts is for networks under finite semantics")
    if net.format.bits > 16:
        raise CondcheckError(f"pruning by parts reads T on every value of the format: formats of at most 16 bits, "
                             f"not {net.format.name}")
    X = np.asarray(points, float).reshape(len(points), -1)
    ivs = intervals(net, X.min(axis=0), X.max(axis=0))
    tr = _tables(net)
    L = len(net.layers)
    needed = np.ones(net.layers[-1].shape[0], bool)          # the output
    new_layers, kept_counts, alive = [None] * L, [0] * L, [None] * L
    for l in range(L - 1, -1, -1):
        layer = net.layers[l]
        w = _sorted_csr(layer)
        p_lo, p_hi, p_uns = ivs[l]
        if l == L - 1:
            keep = np.ones(w.shape[0], bool)
            flat = np.zeros(w.shape[0], bool)
        else:
            i, j = tr.index(np.where(p_uns, 0.0, p_lo)), tr.index(np.where(p_uns, 0.0, p_hi))
            flat = ~p_uns & tr.flat(i, j)
            keep = (needed & ~flat) | p_uns
            if tr.calm is None:
                keep |= ~flat
        alive[l] = keep | needed          # kept, or constant and read by a kept row of the next layer
        const = ~keep
        bias = np.array(layer.bias, float)
        bias[const & flat] = p_lo[const & flat]
        bias[const & ~flat] = tr.calm if tr.calm is not None else 0.0
        rows = np.repeat(keep, np.diff(w.indptr))
        kw = sp.csr_matrix((w.data[rows], w.indices[rows], np.concatenate([[0], np.cumsum(np.diff(w.indptr) * keep)])),
                           shape=w.shape)
        new_layers[l] = Layer(kw, bias)
        kept_counts[l] = int(keep.sum())
        needed = np.zeros(w.shape[1], bool)
        needed[w.indices[rows]] = True
    if compact:
        new_layers = _compacted(new_layers, alive)
    pruned = Network(net.format, net.activation, new_layers, net.implementation, net.input_dim, net.semantics)
    pruned.__dict__["rounded"] = net.rounded
    pruned._table_ranges = tr
    return pruned, kept_counts[:-1]


def _compacted(layers, alive):
    """The layers without their neurons that are not ``alive`` (constant rows: no weights), every kept row
    reading the same columns in the same order, renumbered; the inputs stay, and the output (all alive)."""
    from .network import Layer
    out, prev = [], None
    for layer, rows in zip(layers, alive):
        w = layer.weight
        counts = np.diff(w.indptr)[rows]
        cols = w.indices if prev is None else (np.cumsum(prev) - 1)[w.indices]
        n_cols = w.shape[1] if prev is None else int(prev.sum())
        # (the rows left out have no entries, so data and the order of indices are the layer's own)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(w.indptr.dtype)
        kw = sp.csr_matrix((w.data, cols.astype(w.indices.dtype), indptr), shape=(int(rows.sum()), n_cols))
        out.append(Layer(kw, np.asarray(layer.bias)[rows]))
        prev = rows
    return out


def verify_pruned(net, points, check):
    """``check(network)`` (a ``VerifyResult`` of the claim on ``points``) on the network pruned for the
    points and compacted; if that fails, on the network pruned but not compacted, so that a failure
    report names the network's own neurons (the verdict and the counts are the same)."""
    got = check(pruned_for(net, points, compact=True)[0])
    return got if got.ok else check(pruned_for(net, points)[0])


def verify_in_parts(net, claim, parts, method: str = "sparse"):
    """``verify`` of the claim on each part of its points (ranges), each on ``pruned_for`` that part
    (``verify_pruned``); the merged result."""
    from .netfile import Claim
    from .verify import VerifyResult, verify
    out = []
    for p in parts:
        part = Claim(claim.theorem, claim.points[p], claim.values[p], claim.upstream[p] if claim.theorem == 5
                     else claim.upstream, claim.gradients[p])
        out.append(verify_pruned(net, part.points, lambda n: verify(n, part, method=method)))
    return VerifyResult.merged(out)
