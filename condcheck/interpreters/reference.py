"""The reference interpreter: docs/semantics.md literally, one input at a time, with exact rounding.

Forward, coordinate i of ``T(v) = A v + b``: ``z_i = (((A_i1 (x) v_1) (+) (A_i2 (x) v_2)) (+) ...) (+) b_i``,
products first, summed left to right over the inputs, bias last; sigma~ after every layer but the last.
Backward, through an affine map with upstream vector u: ``v_j = ((u_1 (x) A_1j) (+) (u_2 (x) A_2j)) (+) ...``
left to right over the outputs; through the activation: ``u'_j = v_j (x) sigma~'(z_j)``.

Every operation is ``arithmetic.ExactArithmetic`` (Fractions, rounded exactly): one loop for both
semantics, whose rule (``failures.Semantics``) says which values fail.  Zero weights are skipped: for
finite values ``s (+) (0 (x) v) = s`` (up to the sign of a zero, and values compare numerically); with
an Inf among a layer's inputs (IEEE semantics) they count (``0 x Inf = NaN``), so that layer runs over
its dense rows.  This is the standalone verifier (``condcheck verify --exact``) and the interpreter every
other one is tested against (tests/test_interpreters.py).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .arithmetic import ExactArithmetic
from .base import Interpreter
from .failures import BACKWARD, BACKWARD_DERIVATIVE, FORWARD, FORWARD_ACTIVATION, check_exact

ZERO = Fraction(0)


def _specials(values) -> bool:
    return any(isinstance(v, float) for v in values)


def _rows(layer, dense: bool):
    """Every row's (column, weight as a Fraction) terms, zeros included when ``dense`` (kept with the layer)."""
    def make():
        return [[(j, Fraction(w)) for j, w in (layer.dense_row(i) if dense else layer.row_terms(i))]
                for i in range(layer.shape[0])]
    return layer.derived(f"reference.rows.{dense}", make)


def _columns(layer, dense: bool):
    def make():
        return [[(i, Fraction(w)) for i, w in (layer.dense_column(j) if dense else layer.column_terms(j))]
                for j in range(layer.shape[1])]
    return layer.derived(f"reference.columns.{dense}", make)


def _sum(ar, terms, values, bias=ZERO):
    """((w_1 (x) v_1) (+) (w_2 (x) v_2) (+) ...) (+) bias, left to right; a first term or a bias that is
    an exact zero is not added (RN(0 + p) = p, RN(s + 0) = s: the same values, Inf and NaN included)."""
    acc = None
    for j, w in terms:
        p = ar.mul(w, values[j])
        acc = p if acc is None else ar.add(acc, p)
    if acc is None:
        return bias
    return acc if bias == 0 else ar.add(acc, bias)


def forward_point(net, x, index=None, ar=None):
    """(f(x), pre-activations of every hidden layer) at one input x (its coordinates: values of the
    format), exactly; a failing value raises (``failures``).  ``ar``: the arithmetic (one per network
    keeps its sigma~ values across inputs)."""
    ar = ar or ExactArithmetic(net.rounded)
    v = [Fraction(float(t)) for t in x]
    pre = []
    for l, layer in enumerate(net.layers, 1):
        rows = _rows(layer, _specials(v))
        z = [_sum(ar, terms, v, Fraction(b)) for terms, b in zip(rows, layer.bias.tolist())]
        last = l == net.depth
        check_exact(net, [z], FORWARD, l, x, index, final="output" if last else None)
        if last:
            return z[0], pre
        pre.append(z)
        v = [ar.activation(t, False) for t in z]
        check_exact(net, [v], FORWARD_ACTIVATION, l, x, index)
    raise AssertionError("unreachable")


def backward_point(net, x, upstream, pre, index=None, ar=None) -> list[list]:
    """``D_(f,x)(y)`` for every y of ``upstream`` (values of the format) at one input x, given its
    pre-activations ``pre`` (``forward_point``): one gradient (d values) per y, exactly."""
    ar = ar or ExactArithmetic(net.rounded)
    us = [[Fraction(float(y))] for y in upstream]
    if not us:
        return []
    for l in range(net.depth, 0, -1):
        layer = net.layers[l - 1]
        columns = _columns(layer, any(_specials(u) for u in us))
        vs = [[_sum(ar, terms, u) for terms in columns] for u in us]
        check_exact(net, vs, BACKWARD, l, x, index, final="gradient" if l == 1 else None)
        if l == 1:
            return vs
        d = [ar.activation(z, True) for z in pre[l - 2]]
        us = [[ar.mul(vj, dj) for vj, dj in zip(v, d)] for v in vs]
        check_exact(net, us, BACKWARD_DERIVATIVE, l - 1, x, index)
    raise AssertionError("unreachable")


class ExactInterpreter(Interpreter):
    """The reference (see the module docstring): every network, both semantics, slow."""

    name = "exact"
    reports_in_order = True

    def run(self, net, X, Y, progress=None):
        N, K = Y.shape
        values = np.empty(N)
        grads = np.empty((N, K, net.input_dim))
        ar = ExactArithmetic(net.rounded)
        for n in range(N):
            x = X[n].tolist()
            val, pre = forward_point(net, x, n, ar)
            values[n] = float(val)
            for k, g in enumerate(backward_point(net, x, Y[n].tolist(), pre, n, ar)):
                grads[n, k] = [float(t) for t in g]
            if progress:
                progress(n + 1, N)
        return values, grads
