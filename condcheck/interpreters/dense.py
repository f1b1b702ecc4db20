"""The dense interpreter: every neuron at every input, vectorized over inputs and upstream values.

Layer by layer, for a chunk of inputs at once, in the format's working dtype (``ops.working_dtype``):
each operation is rounded to the format once, which is RN_F of the exact result (docs/semantics.md, ``ops``).
The sums run in the paper's order (products first, left to right, bias last) by the compiled kernels
(``dense_kernels``, numba) or by numpy (``sum_plan``): ``DenseInterpreter(kernels=False)`` chooses numpy.
sigma~ and sigma~' come from the format's table (formats of at most 16 bits, by the compiled lookup) or
from the rounded activation's array path.  Under IEEE semantics a zero weight meeting an Inf gives NaN
(the dense matrix's ``0 x Inf``), and an overflow in a format without Inf gives NaN.  Every step is
checked as ``failures`` says; the sparse interpreter uses the forward pass here for its own.
"""
from __future__ import annotations

import numpy as np

from .. import kernels as _kernels_module
from ..ops import working_dtype
from ..rounding import round_array
from .base import Interpreter
from .failures import BACKWARD, BACKWARD_DERIVATIVE, FORWARD, FORWARD_ACTIVATION, check_array
from .sum_plan import PRODUCT_ELEMENTS, backward_plan, forward_plan

#: at most this many array elements at once (points x upstream values x width): the memory bound
CHUNK_ELEMENTS = 1 << 18


def _round(a, fmt):
    return round_array(a, fmt)[0]


def _rn_ieee(a, fmt):
    from ..ieee import rn_array                     # (sympy: loaded only under IEEE semantics)
    return rn_array(a, fmt)


class DenseInterpreter(Interpreter):
    """Every network, both semantics; ``kernels``: compiled sums (default: when numba is installed)."""

    name = "dense"

    def __init__(self, kernels: bool | None = None, chunk_elements: int = CHUNK_ELEMENTS,
                 product_elements: int = PRODUCT_ELEMENTS):
        self.kernels = _kernels_module.HAVE_NUMBA if kernels is None else bool(kernels)
        self.chunk_elements = chunk_elements
        self.product_elements = product_elements

    def refusal(self, net):
        if self.kernels and not _kernels_module.HAVE_NUMBA:
            return "its compiled sums need numba, which is not installed"
        return None

    def run(self, net, X, Y, progress=None):
        N, K = Y.shape
        chunk = max(1, self.chunk_elements // (max(net.widths) * max(K, 1)))
        values = np.empty(N, dtype=np.float64)
        grads = np.empty((N, K, net.input_dim), dtype=np.float64)
        for s in range(0, N, chunk):
            e = min(N, s + chunk)
            values[s:e], pre = self.forward(net, X[s:e], s, X)
            if K:
                grads[s:e] = self.backward(net, pre, Y[s:e], s, X)
            if progress:
                progress(e, N)
        return values, grads

    # ---- the passes ----------------------------------------------------------------------------------
    def forward(self, net, X: np.ndarray, offset: int = 0, inputs=None):
        """(values (n,), pre-activations of every hidden layer) of the points X, which are points
        ``offset ...`` of ``inputs`` (for the failure's input); every step checked."""
        inputs = X if inputs is None else inputs
        fmt, dt = net.format, working_dtype(net.format)
        v = X.astype(dt)
        pre = []
        for l, layer in enumerate(net.layers, 1):
            z = self.forward_sums(layer, v, fmt, net.ieee)
            last = l == net.depth
            check_array(net, z, FORWARD, l, offset, inputs, final="output" if last else None)
            if last:
                return z[:, 0], pre
            pre.append(z)
            s = self.activation(net, z, derivative=False)
            check_array(net, s, FORWARD_ACTIVATION, l, offset, inputs)
            v = s.astype(dt)
        raise AssertionError("unreachable")

    def backward(self, net, pre, Y: np.ndarray, offset: int = 0, inputs=None) -> np.ndarray:
        """Gradients (n, K, d) for the upstream values Y (n, K), given the forward pass's ``pre``."""
        fmt, dt = net.format, working_dtype(net.format)
        u = Y.astype(dt)[:, :, None]                      # (n, K, 1)
        for l in range(net.depth, 0, -1):
            layer = net.layers[l - 1]
            v = self.backward_sums(layer, u, fmt, net.ieee)     # (n, K, in_l)
            check_array(net, v, BACKWARD, l, offset, inputs, final="gradient" if l == 1 else None)
            if l == 1:
                return v
            d = self.activation(net, pre[l - 2], derivative=True)
            with np.errstate(invalid="ignore"):
                prod = v * d.astype(dt)[:, None, :]
            u = _rn_ieee(prod, fmt) if net.ieee else _round(prod, fmt)
            check_array(net, u, BACKWARD_DERIVATIVE, l - 1, offset, inputs)
        raise AssertionError("unreachable")

    # ---- one layer's sums, sigma~ and sigma~' ---------------------------------------------------------
    def forward_sums(self, layer, V: np.ndarray, fmt, ieee: bool = False) -> np.ndarray:
        """z = A v (+) b for each row of V (left-to-right rounded sums, bias last); +-inf on overflow."""
        if self.kernels:
            from .dense_kernels import rounded_row_sums
            with np.errstate(invalid="ignore"):
                z = rounded_row_sums(V, *layer.row_arrays, layer.bias, fmt).astype(V.dtype)
        else:
            rn = _rn_ieee if ieee else _round
            z = forward_plan(layer).apply(V, fmt, rn, self.product_elements)
            if layer.bias.any():
                with np.errstate(invalid="ignore"):
                    z = rn(z + layer.bias.astype(V.dtype), fmt)
        return _ieee_fix(V, z, _pattern(layer), fmt) if ieee else z

    def backward_sums(self, layer, U: np.ndarray, fmt, ieee: bool = False) -> np.ndarray:
        """v_j = sum_i u_i (x) A_ij, left to right over i, for each leading index of U."""
        if self.kernels:
            from .dense_kernels import rounded_row_sums
            flat = U.reshape(-1, U.shape[-1])
            zeros = np.zeros(layer.shape[1])
            with np.errstate(invalid="ignore"):
                out = rounded_row_sums(flat, *layer.column_arrays, zeros, fmt)
            v = out.reshape(U.shape[:-1] + (layer.shape[1],)).astype(U.dtype)
        else:
            v = backward_plan(layer).apply(U, fmt, _rn_ieee if ieee else None, self.product_elements)
        return _ieee_fix(U, v, _pattern_t(layer), fmt) if ieee else v

    def activation(self, net, z: np.ndarray, derivative: bool) -> np.ndarray:
        """sigma~ or sigma~' at pre-activations z (values of the format); +-inf where it overflows.
        Under IEEE semantics z may hold +-inf and NaN (``ieee.activation_array``)."""
        if net.ieee:
            from ..ieee import activation_array
            return activation_array(net.rounded, z, derivative, lambda zz: self._finite_activation(net, zz, derivative))
        return self._finite_activation(net, z, derivative)

    def _finite_activation(self, net, z, derivative):
        if self.kernels and net.format.bits <= 16:
            from .dense_kernels import table_lookup
            t = net.rounded.table()
            return table_lookup(z, t.points, t.dsigma if derivative else t.sigma, net.format)
        fn = net.rounded.derivative_array if derivative else net.rounded.value_array
        vals, over = fn(z.astype(np.float64))
        return np.where(over, np.copysign(np.inf, vals), vals)


# ---- IEEE semantics: the dense matrix's 0 x Inf ------------------------------------------------------------
def _pattern(layer):
    """The 0/1 sparsity pattern of the weight, (outputs, inputs)."""
    def make():
        p = layer.weight.copy()
        p.data = np.ones_like(p.data)
        return p
    return layer.derived("dense.pattern", make)


def _pattern_t(layer):
    return layer.derived("dense.pattern_t", lambda: _pattern(layer).T.tocsr())


def _ieee_fix(V, out, pattern, fmt):
    out = nan_from_zero_weights(V, pattern, out)
    if not fmt.has_inf:                 # no Inf in this format: every Inf here is an overflow -> NaN
        out = np.where(np.isinf(out), np.nan, out).astype(out.dtype)
    return out


def nan_from_zero_weights(V: np.ndarray, pattern, out: np.ndarray) -> np.ndarray:
    """Dense semantics of a sparse matrix under IEEE: ``out[..., i]`` is NaN where some ``V[..., j]`` is
    +-Inf and ``A_ij = 0`` (``0 x Inf = NaN``).  ``pattern``: the (n_out, n_in) 0/1 sparsity pattern."""
    inf = np.isinf(V)
    if not inf.any():
        return out
    flat = inf.reshape(-1, V.shape[-1]).astype(np.float64)
    total = flat.sum(axis=1)
    hit = np.asarray((pattern @ flat.T).T)                # (B, n_out): Infs that meet a nonzero weight
    bad = (hit < total[:, None]).reshape(V.shape[:-1] + (pattern.shape[0],))
    if bad.any():
        out = np.where(bad, np.nan, out).astype(out.dtype)
    return out
