"""The tables interpreter: the dense interpreter's values computed on RN index tables, for formats of at
most ``op_tables.TABLE_LIMIT`` values (every format of at most 8 bits, and small custom ones such as b2_6).

Why the same values: every operation of the paper-order interpreter is "round the exact result" of format
values, a function of the operands' values; ``op_tables`` tabulates exactly that (products and sums by
the exact array path, T and T' by the rounded activation), so a lookup gives the value the arithmetic
gives.  The products and left-to-right sums follow the same ``sum_plan.SumPlan`` (the same terms in the
same order), bias last.  Overflow is the index ``over``, which every table maps to itself; it marks
exactly the entries where the arithmetic gives Inf or NaN, and the same checks raise at the same pass,
layer, neuron and input.  Only zero signs are not kept (-0 and +0 share an index): no later value
depends on a zero's sign (RN(w x) and T, T' are functions of real values), so only the sign of a zero
result can differ, and values compare numerically (+0 == -0).

What it is for: the long sequential sums of a constructed network (the output row, the constant columns
of the backward pass: hundreds of steps on a few hundred points) cost one table lookup per step here
instead of one rounding (about ten numpy calls).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..op_tables import op_tables
from .base import Interpreter
from .dense import CHUNK_ELEMENTS
from .failures import BACKWARD, BACKWARD_DERIVATIVE, FORWARD, FORWARD_ACTIVATION, check_array
from .sum_plan import backward_plan, forward_plan

#: products per batch of steps (intp: 2 MiB); more than ``sum_plan.PRODUCT_ELEMENTS``, since a batch of
#: mostly zero inputs costs one fold (``fold_nonzero``; the 447-step backward sum of the relu
#: float8_e5m2 box's first hidden layer: 112 batches of 4 steps at 2^15, 12 here)
TABLE_PRODUCT_ELEMENTS = 1 << 18
#: a batch of at least this many steps is folded when at most a quarter of its products are nonzero
#: (below, counting them costs about what the fold saves)
FOLD_STEPS = 8


class TablesInterpreter(Interpreter):
    """Finite semantics, formats of at most ``op_tables.TABLE_LIMIT`` values."""

    name = "tables"

    def __init__(self, chunk_elements: int = CHUNK_ELEMENTS, product_elements: int = TABLE_PRODUCT_ELEMENTS,
                 fold_steps: int = FOLD_STEPS):
        self.chunk_elements = chunk_elements
        self.product_elements = product_elements
        self.fold_steps = fold_steps

    def refusal(self, net):
        if net.ieee:
            return "it implements the finite semantics only"
        if op_tables(net.format) is None:
            return f"it needs a format of at most 1024 values, and {net.format.name} has more"
        return None

    def run(self, net, X, Y, progress=None):
        tb = op_tables(net.format)
        N, K = Y.shape
        t_idx, dt_idx = _activation_indices(net, tb)
        # the points in the chunks the dense interpreter takes
        chunk = max(1, self.chunk_elements // (max(net.widths) * max(K, 1)))
        values = np.empty(N)
        grads = np.empty((N, K, net.input_dim))
        for s in range(0, N, chunk):
            e = min(N, s + chunk)
            values[s:e], grads[s:e] = self._chunk(net, tb, t_idx, dt_idx, X, Y, s, e)
            if progress:
                progress(e, N)
        return values, grads

    def _chunk(self, net, tb, t_idx, dt_idx, X, Y2, s, e):
        """Values and gradients of the points s..e-1 (the dense interpreter's passes, on indices)."""
        add, mul, S = _flat_tables(net.format)
        v = tb.index(X[s:e]).astype(np.intp)
        pre = []
        for l, layer in enumerate(net.layers, 1):
            z = self._sums(forward_plan(layer), v, tb, _weight_indices(layer, tb, "forward"))
            if layer.bias.any():
                z = add.take(z * S + tb.index(layer.bias))
            _check(net, tb, z, FORWARD, l, s, X)
            if l == net.depth:
                values = tb.value(z[:, 0])
                break
            pre.append(z)
            v = t_idx[z]
            _check(net, tb, v, FORWARD_ACTIVATION, l, s, X)
        if not Y2.shape[1]:
            return values, np.empty((e - s, 0, net.input_dim))
        u = tb.index(Y2[s:e]).astype(np.intp)[:, :, None]           # (n, K, 1)
        for l in range(net.depth, 0, -1):
            layer = net.layers[l - 1]
            g = self._sums(backward_plan(layer), u, tb, _weight_indices(layer, tb, "backward"))
            _check(net, tb, g, BACKWARD, l, s, X)
            if l == 1:
                return values, tb.value(g)
            d = dt_idx[pre[l - 2]]
            u = mul.take(g * S + d[:, None, :])
            _check(net, tb, u, BACKWARD_DERIVATIVE, l - 1, s, X)
        raise AssertionError("unreachable")

    def _sums(self, plan, V, tb, w_idx):
        """``SumPlan.apply`` on indices (intp): out[..., i] = the left-to-right rounded sum of
        V[..., col_ik] (x) w_ik.  The tables are read flat (a (a, b) entry at a * S + b: one ``take`` per
        step, where a two-array index costs several times as much), the products of several steps at once
        (as ``SumPlan.apply`` batches them; a product does not depend on the sums), and a batch of mostly
        zero products folded in by its nonzero ones (``fold_nonzero``): a batch whose inputs are zero at
        every point for most terms, or one of many steps."""
        add, mul, S = _flat_tables(tb.fmt)
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
            stop, _ = plan.product_batch(k, max(1, self.product_elements // lead))
            cols = np.concatenate(plan.cols[k:stop])
            live = ~zero_in[cols]
            if stop - k > 1 and 4 * np.count_nonzero(live) <= len(cols):
                # inputs zero at every point for most terms: the other terms' products only, folded in
                P = Vt[cols[live]]
                P *= S
                P += np.concatenate(w_idx[k:stop])[live][:, None]
                fold_nonzero(out, mul.take(P), _step_rows(plan.active[k:stop])[live], zero, add, S)
                k = stop
                continue
            P = Vt[cols]
            P *= S
            P += np.concatenate(w_idx[k:stop])[:, None]
            P = mul.take(P)
            if stop - k >= self.fold_steps and 4 * np.count_nonzero(P != zero) <= P.size:
                # many steps of mostly zero products (a last layer's long one-row sum)
                fold_nonzero(out, P, _step_rows(plan.active[k:stop]), zero, add, S)
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


def fold_nonzero(out, P, rows, zero, add, S):
    """Add the products P (in step order; row j of P is a term of row rows[j] of out) into out where
    they are not zero, each (row, point) taking its terms in step order.

    Why the same sums: RN(s + 0) = s for every value s (and the overflow index stays itself: the add
    table's zero column is the identity, tests/test_interpreters.py), so a zero term leaves its
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


@lru_cache(maxsize=None)
def _flat_tables(fmt):
    """(add, mul, S): the format's add and mul tables as flat intp arrays, entry (a, b) at a * S + b."""
    tb = op_tables(fmt)
    return tb.add_table.astype(np.intp).ravel(), tb.mul_table.astype(np.intp).ravel(), tb.over + 1


def _weight_indices(layer, tb, which):
    """The table indices (intp) of a plan's weights, per step (kept with the layer: both passes of every
    chunk of points read them)."""
    def make():
        plan = forward_plan(layer) if which == "forward" else backward_plan(layer)
        flat = tb.index(np.concatenate(plan.weights) if plan.weights else np.zeros(0)).astype(np.intp)
        return np.split(flat, np.cumsum(plan.active)[:-1])
    return layer.derived(f"tables.{which}.{tb.fmt.name}", make)


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
    """The dense interpreter's check on the values of the indices (``over`` reads as NaN): the same
    failure at the same place."""
    if (idx == tb.over).any():
        check_array(net, tb.value(idx), pass_name, layer, offset, inputs)
