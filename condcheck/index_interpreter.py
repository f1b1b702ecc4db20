"""The interpreter on RN index tables: ``Network.evaluate``'s values, for formats of at most
``op_tables.TABLE_LIMIT`` values (every format of at most 8 bits, and small custom ones such as b2_6),
computed on value indices.

Why the same values: every operation of the paper-order interpreter (``network``) is "round the exact
result" of format values, a function of the operands' values; ``op_tables`` tabulates exactly that
(products and sums by the exact array path, T and T' by the rounded activation), so a lookup gives the
value the arithmetic gives.  The products and left-to-right sums follow the same ``_SumPlan`` (the
same terms in the same order), bias last.  Overflow is the index ``over``, which every table maps to
itself; it marks exactly the entries where the arithmetic gives Inf or NaN, and the same checks raise
at the same pass, layer, neuron and input.  Only zero signs are not kept (-0 and +0 share an index):
no later value depends on a zero's sign (RN(w x) and T, T' are functions of real values), so only the
sign of a zero result can differ, and ``verify`` compares by value (+0 == -0).

What it is for: the long sequential sums of a constructed network (the output row, the constant
columns of the backward pass: hundreds of steps on a few hundred points) cost one table lookup per
step here instead of one rounding (about ten numpy calls): half of a d = 1 float8 box (relu on
float8_e5m2) verifies in about 0.1 s here, against 0.2 s by rounding.
"""
from __future__ import annotations

import numpy as np

from .errors import CondcheckError
from .op_tables import op_tables


#: products per batch of steps (intp: 2 MiB); more than ``network.PRODUCT_ELEMENTS``, since a batch of
#: mostly zero inputs costs one fold (``_fold_nonzero``; the 447-step backward sum of the relu
#: float8_e5m2 box's first hidden layer: 112 batches of 4 steps at 2^15, 12 here)
TABLE_PRODUCT_ELEMENTS = 1 << 18
#: a batch of at least this many steps is folded when at most a quarter of its products are nonzero
#: (below, counting them costs about what the fold saves)
FOLD_STEPS = 8


def supports(net) -> bool:
    """Whether the network's format has index tables and its semantics is the finite one."""
    return not net.ieee and op_tables(net.format) is not None


def evaluate_indexed(net, X, Y, progress=None):
    """(values (N,), gradients (N, K, d)) of ``net.evaluate(X, Y)`` with Y of shape (N, K) or (N,) (then
    gradients (N, d)), by value; raises NetworkOverflowError as it does.  ``progress(done, total)``
    after each chunk of points."""
    if not supports(net):
        raise CondcheckError(f"the index interpreter needs a format of at most 1024 values and the finite "
                             f"semantics, not {net.format.name} ({net.semantics})")
    tb = op_tables(net.format)
    X = net._inputs(X)
    N = X.shape[0]
    Y2, per_y = net._upstream(Y, N)
    t_idx, dt_idx = _activation_indices(net, tb)
    K = Y2.shape[1]
    # the points in the chunks ``Network.evaluate`` takes (each chunk forward, then backward), so that
    # an overflow is reported where it reports it
    from .network import CHUNK_ELEMENTS
    chunk = max(1, CHUNK_ELEMENTS // (max(net.widths) * K))
    values = np.empty(N)
    grads = np.empty((N, K, net.input_dim))
    for s in range(0, N, chunk):
        e = min(N, s + chunk)
        values[s:e], grads[s:e] = _chunk(net, tb, t_idx, dt_idx, X, Y2, s, e)
        if progress:
            progress(e, N)
    return values, (grads[:, 0, :] if per_y else grads)


def _chunk(net, tb, t_idx, dt_idx, X, Y2, s, e):
    """Values and gradients of the points s..e-1 (``Network._forward_chunk``, ``_backward_chunk``)."""
    add, mul, S = _flat_tables(tb)
    v = tb.index(X[s:e]).astype(np.intp)
    pre = []
    for l, layer in enumerate(net.layers, 1):
        z = _sums(layer.forward_plan, v, tb, _weight_indices(layer, tb, "forward"))
        if layer.bias.any():
            z = add.take(z * S + tb.index(layer.bias))
        _check(net, tb, z, "forward", l, s, X)
        if l == net.depth:
            values = tb.value(z[:, 0])
            break
        pre.append(z)
        v = t_idx[z]
        _check(net, tb, v, "forward (activation)", l, s, X)
    u = tb.index(Y2[s:e]).astype(np.intp)[:, :, None]           # (n, K, 1)
    for l in range(net.depth, 0, -1):
        layer = net.layers[l - 1]
        g = _sums(layer.backward_plan, u, tb, _weight_indices(layer, tb, "backward"))
        _check(net, tb, g, "backward", l, s, X)
        if l == 1:
            return values, tb.value(g)
        d = dt_idx[pre[l - 2]]
        _check(net, tb, d, "backward (activation derivative)", l - 1, s, X)
        u = mul.take(g * S + d[:, None, :])
        _check(net, tb, u, "backward (activation derivative)", l - 1, s, X)
    raise AssertionError("unreachable")


def _sums(plan, V, tb, w_idx):
    """``_SumPlan.apply`` on indices (intp): out[..., i] = the left-to-right rounded sum of
    V[..., col_ik] (x) w_ik.  The tables are read flat (a (a, b) entry at a * S + b: one ``take`` per
    step, where a two-array index costs several times as much), the products of several steps at once
    (as ``_SumPlan.apply`` batches them; a product does not depend on the sums), and a batch of mostly
    zero products folded in by its nonzero ones (``_fold_nonzero``): a batch whose inputs are zero at
    every point for most terms, or one of many steps."""
    add, mul, S = _flat_tables(tb)
    lead_shape = V.shape[:-1]
    lead = max(1, int(np.prod(lead_shape)))
    # (terms, points): a step's rows are the first n_k rows, contiguous
    Vt = np.ascontiguousarray(V.reshape(lead, V.shape[-1]).T)
    # (a row without terms sums to 0)
    zero = tb.index_of(0.0)
    out = np.full((plan.n_out, lead), zero, dtype=np.intp)
    # the inputs that are zero at every point: their products are zero (RN(0 w) = 0, never an overflow)
    zero_in = (Vt == zero).all(axis=1)
    k, n_steps = 0, len(plan.active)
    while k < n_steps:
        stop, _ = plan._product_batch(k, max(1, TABLE_PRODUCT_ELEMENTS // lead))
        cols = np.concatenate(plan.cols[k:stop])
        live = ~zero_in[cols]
        if stop - k > 1 and 4 * np.count_nonzero(live) <= len(cols):
            # inputs zero at every point for most terms: the other terms' products only, folded in
            P = Vt[cols[live]]
            P *= S
            P += np.concatenate(w_idx[k:stop])[live][:, None]
            _fold_nonzero(out, mul.take(P), _step_rows(plan.active[k:stop])[live], zero, add, S)
            k = stop
            continue
        P = Vt[cols]
        P *= S
        P += np.concatenate(w_idx[k:stop])[:, None]
        P = mul.take(P)
        if stop - k >= FOLD_STEPS and 4 * np.count_nonzero(P != zero) <= P.size:
            # many steps of mostly zero products (a last layer's long one-row sum)
            _fold_nonzero(out, P, _step_rows(plan.active[k:stop]), zero, add, S)
            k = stop
            continue
        p0 = 0
        for step in range(k, stop):
            n_k = plan.active[step]
            prod = P[p0:p0 + n_k]
            p0 += n_k
            if step == 0:
                out[:n_k] = prod
            else:
                head = out[:n_k]
                head *= S
                head += prod
                add.take(head, out=head)
        k = stop
    res = np.empty_like(out)
    res[plan.order] = out
    return np.ascontiguousarray(res.T).reshape(lead_shape + (plan.n_out,))


def _step_rows(sizes) -> np.ndarray:
    """The row of the sum each term of consecutive steps belongs to (step k: rows 0 .. sizes[k] - 1)."""
    sizes = np.asarray(sizes)
    return np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _fold_nonzero(out, P, rows, zero, add, S):
    """Add the products P (in step order; row j of P is a term of row rows[j] of out) into out where
    they are not zero, each (row, point) taking its terms in step order.

    Why the same sums: RN(s + 0) = s for every value s (and the overflow index stays itself: the add
    table's zero column is the identity, tests/test_index_interpreter.py), so a zero term leaves its
    sum as it was; the r-th nonzero term of every (row, point) is added in round r.  The sums of a
    constructed network read hundreds of neurons of which a few are nonzero at any point (relu on the
    float8_e5m2 box: the last layer's one-row sum of 438 steps; the backward sum of its first hidden
    layer, 447 steps of 59 rows, where every backward value but those of the point's branches is 0)."""
    r, p = np.nonzero(P != zero)                                 # in step order for every (row, point)
    if not len(r):
        return
    lead = out.shape[1]
    key = rows[r] * lead + p
    o = np.argsort(key, kind="stable")
    key, vals = key[o], P[r[o], p[o]]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    rank = np.arange(len(key)) - np.repeat(first, np.diff(np.append(first, len(key))))
    o = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[o], np.arange(int(rank.max()) + 2))
    flat = out.reshape(-1)                                       # (a view: out is C-contiguous)
    for j in range(len(bounds) - 1):
        sel = o[bounds[j]:bounds[j + 1]]
        at = key[sel]
        flat[at] = add.take(flat[at] * S + vals[sel])


def _flat_tables(tb):
    """(add, mul, S): tb's add and mul tables as flat intp arrays, entry (a, b) at a * S + b."""
    flat = tb.__dict__.get("_flat")
    if flat is None:
        S = tb.over + 1
        flat = tb._flat = (tb.add_table.astype(np.intp).ravel(), tb.mul_table.astype(np.intp).ravel(), S)
    return flat


def _weight_indices(layer, tb, which):
    """The table indices (intp) of a plan's weights, per step (kept on the layer: both passes of every
    chunk of points read them)."""
    cache = layer.__dict__.setdefault("_index_weights", {})
    if which not in cache:
        plan = layer.forward_plan if which == "forward" else layer.backward_plan
        flat = tb.index(np.concatenate(plan.weights) if plan.weights else np.zeros(0)).astype(np.intp)
        cache[which] = np.split(flat, np.cumsum(plan.active)[:-1])
    return cache[which]


def _activation_indices(net, tb):
    """T and T' of every value, as index tables (with ``over`` for an overflow, and over -> over)."""
    def table(derivative):
        fn = net.rounded.derivative_array if derivative else net.rounded.value_array
        vals, over = fn(tb.values.astype(np.float64))
        idx = np.full(tb.over + 1, tb.over, dtype=np.intp)
        idx[:-1][~over] = tb.index(vals[~over])
        return idx
    return table(False), table(True)


def _check(net, tb, idx, pass_name, layer, offset, inputs):
    """``Network._check`` on the values of the indices (``over`` reads as NaN): the same error at the
    same place."""
    if (idx == tb.over).any():
        net._check(tb.value(idx), pass_name, layer, offset, inputs)
