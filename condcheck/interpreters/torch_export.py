"""Export a :class:`~condcheck.network.Network` to a PyTorch module that computes what the interpreter
computes (docs/semantics.md), bit for bit, under ``torch.autograd``.

Why a plain export cannot do it.  ``torch.nn.Linear`` (a matmul) sums a row's products in float32 (or
wider), in a blocked order that torch does not specify, and rounds once; the paper's semantics rounds
every product and every partial sum of a left-to-right sum to the format.  Constructed networks rely
on exactly that rounding (absorption: ``16 (+) 1 (+) 1 = 16`` in float8_e4m3, where the matmul gives
18).  torch.autograd has the same problem backwards: the gradient contributions that reach one input
of a layer are accumulated by autograd in its own order and precision (its InputBuffer), not
``((u_1 (x) A_1j) (+) (u_2 (x) A_2j)) (+) ...``.  :func:`plain_export` builds the naive module so
that tests can show the difference on a real network.

What :func:`to_torch` builds instead:

* each affine map is one ``torch.autograd.Function`` whose forward is the interpreter's sum --
  products first, summed strictly left to right over the inputs, bias last, every operation rounded --
  and whose backward is the paper's backward sum (docs/semantics.md), left to right over the outputs, every operation rounded;
* the activation, between them, is differentiated by torch.autograd.  ``activation="torch"`` (the
  default for networks built for the ``"torch"`` implementation) runs the PyTorch op
  (``condcheck.torch_impl.torch_op``): sigma~ is the op's output, and sigma~'(z) is
  ``torch.autograd.grad`` of the op at z with upstream 1 -- exactly how the ``"torch"`` implementation
  takes its table -- and the backward multiplies the upstream by it with one rounding (the paper's
  ``u'_j = v_j (x) sigma~'(z_j)``).  ``activation="torch-fused"`` lets torch's own backward kernel
  do it instead; torch then computes ``RN(v * s)`` with s its unrounded float32 derivative (no
  rounding of s first), which is not the paper's rule, and differs from the interpreter wherever s is
  not already a value of the format.  ``activation="table"`` (the default for "exact" and
  "float32-upcast" networks) looks sigma~ and sigma~' up in condcheck's table of the network's
  implementation.
* arithmetic: in the format's own torch dtype where torch has one with arithmetic (float16, bfloat16:
  a sum or product of two values computed by torch in float32 and rounded once is correctly rounded
  for at most 11 significand bits, docs/semantics.md; float32, float64: IEEE binary operations, each one
  correctly rounded, and torch's CPU kernels keep subnormals unless ``torch.set_flush_denormal(True)``,
  which the exporter refuses); otherwise in float64 and rounded to the format after every operation
  with condcheck's exact ``round_array`` (float64 then RN_F is correctly rounded for every format a
  Network accepts, ``Format.fits_float64``).  Inputs, outputs and gradients are returned as float64
  tensors holding the exact values.

Overflow (Inf or NaN) raises the :class:`~condcheck.errors.NetworkOverflowError` the interpreters
raise (``interpreters.failures``): each step -- a layer's sums, sigma~, the backward sums, the products by
sigma~' -- is checked when it is complete, naming the pass, layer, neuron and input.
``torch_autograd`` runs the module as an interpreter, a second opinion in the shared tests.
"""
from __future__ import annotations

import numpy as np

from ..errors import CondcheckError
from ..rounding import round_array
from .failures import BACKWARD, BACKWARD_DERIVATIVE, FORWARD, FORWARD_ACTIVATION, failure

NATIVE = ("float16", "bfloat16", "float32", "float64")


def _torch():
    from ..torch_impl import require_torch
    return require_torch()


class _Arith:
    """Rounded +, x on tensors of the format (native dtype or float64 + RN_F)."""

    def __init__(self, fmt):
        torch = _torch()
        self.fmt = fmt
        self.native = fmt.name in NATIVE
        self.dtype = getattr(torch, fmt.name) if self.native else torch.float64

    def round(self, t):
        """t rounded to the format (an overflow gives +-Inf, a NaN stays non-finite)."""
        torch = _torch()
        if self.native:
            return t
        r, _ = round_array(t.detach().numpy(), self.fmt)
        return torch.from_numpy(np.ascontiguousarray(r))

    def R(self, t, what, rows=None):
        """t rounded to the format; a non-finite entry is an error naming ``what`` (and the row: column j
        of t is row ``rows[j]`` of the layer)."""
        torch = _torch()
        out = self.round(t)
        ok = torch.isfinite(out)
        if not ok.all():
            where = ""
            if rows is not None and out.dim() == 2:
                j = int(torch.nonzero(~ok.all(dim=0))[0, 0])
                where = f", row {int(rows[j])}"
            raise CondcheckError(f"{what}{where}: overflow (Inf or NaN) in {self.fmt.name}")
        return out

    def mul(self, a, b):
        return self.round(a * b)

    def add(self, a, b):
        return self.round(a + b)

    def tensor(self, arr):
        torch = _torch()
        return torch.tensor(np.asarray(arr, dtype=np.float64), dtype=torch.float64).to(self.dtype)


class _Reporter:
    """Checks one evaluation's steps as the interpreters do (``interpreters.failures``): rows of a batch
    are points ``row // rows_per_point`` of X (several upstream values per point); a step fails at its
    first failing row's point, the lowest neuron failing at any of that point's rows."""

    def __init__(self, net, X, rows_per_point=1):
        self.net, self.X, self.k = net, X, rows_per_point

    def check(self, t, pass_name, layer):
        torch = _torch()
        bad = ~torch.isfinite(t)
        if not bool(bad.any()):
            return
        r = int(torch.nonzero(bad.any(dim=1))[0, 0])
        p = r // self.k
        j = int(torch.nonzero(bad[p * self.k:(p + 1) * self.k].any(dim=0))[0, 0])
        raise failure(self.net, pass_name, layer, j, self.X[r].tolist(), index=p)


def _row_sums(ar: _Arith, V, csr, bias):
    """out[:, i] = ((V[:, c_1] (x) w_1) (+) (V[:, c_2] (x) w_2) (+) ...) (+) b_i, in column order.

    Vectorized over rows: step k adds the k-th term of every row that has one, so each row is still
    summed strictly left to right, one rounding per operation."""
    torch = _torch()
    n_out = csr.shape[0]
    counts = np.diff(csr.indptr)
    acc = torch.zeros((V.shape[0], n_out), dtype=ar.dtype)
    for k in range(int(counts.max(initial=0))):
        rows = np.flatnonzero(counts > k)
        pos = csr.indptr[rows] + k
        idx = torch.from_numpy(rows)
        p = ar.mul(V[:, torch.from_numpy(csr.indices[pos].astype(np.int64))], ar.tensor(csr.data[pos])[None, :])
        acc[:, idx] = p if k == 0 else ar.add(acc[:, idx], p)
    if bias is not None:
        acc = ar.add(acc, ar.tensor(bias)[None, :])
    return acc


def _affine_function():
    torch = _torch()

    class PaperAffine(torch.autograd.Function):
        """Forward and backward sums of one layer in the paper's order, every operation rounded."""

        @staticmethod
        def forward(ctx, v, layer, ar, l, reporter):
            ctx.layer, ctx.ar, ctx.l, ctx.reporter = layer, ar, l, reporter
            z = _row_sums(ar, v, layer.weight, layer.bias)
            reporter.check(z, FORWARD, l)
            return z

        @staticmethod
        def backward(ctx, u):
            wt = ctx.layer.weight.T.tocsr()
            wt.sort_indices()
            g = _row_sums(ctx.ar, u.to(ctx.ar.dtype), wt, None)
            ctx.reporter.check(g, BACKWARD, ctx.l)
            return g, None, None, None, None

    return PaperAffine


def _activation_function():
    torch = _torch()

    class PaperActivation(torch.autograd.Function):
        """sigma~ forward; backward u' = v (x) sigma~'(z) with sigma~'(z) from ``deriv`` (one rounding)."""

        @staticmethod
        def forward(ctx, z, value, deriv, ar, l, reporter):
            ctx.save_for_backward(z)
            ctx.deriv, ctx.ar, ctx.l, ctx.reporter = deriv, ar, l, reporter
            s = ar.round(value(z))
            reporter.check(s, FORWARD_ACTIVATION, l)
            return s

        @staticmethod
        def backward(ctx, v):
            (z,) = ctx.saved_tensors
            u = ctx.ar.mul(v.to(ctx.ar.dtype), ctx.deriv(z))     # (a sigma~' that overflows: u is not finite)
            ctx.reporter.check(u, BACKWARD_DERIVATIVE, ctx.l)
            return u, None, None, None, None, None

    return PaperActivation


def _torch_value_and_derivative(net, ar: _Arith):
    """sigma~ and sigma~' as the "torch" implementation takes them: the op, and autograd with upstream 1."""
    torch = _torch()
    from ..torch_impl import torch_op
    _, op = torch_op(net.rounded.activation)

    def through(z):                       # the op's dtype: native, or float32 (torch has no float8 kernels)
        return z if ar.native else z.to(torch.float32)

    def value(z):
        with torch.no_grad():
            y = op(through(z))
        return y if ar.native else _round64(y, ar)

    def deriv(z):
        with torch.enable_grad():
            zz = through(z).detach().requires_grad_(True)
            (g,) = torch.autograd.grad(op(zz), zz, grad_outputs=torch.ones_like(zz))
        return ar.round(g) if ar.native else _round64(g, ar)
    return op, through, value, deriv


def _round64(t, ar: _Arith):
    torch = _torch()
    r, _ = round_array(t.detach().to(torch.float64).numpy(), ar.fmt)
    return torch.from_numpy(np.ascontiguousarray(r))


def _table_value_and_derivative(net, ar: _Arith):
    torch = _torch()

    def look(z, derivative):
        vals, over = (net.rounded.derivative_array if derivative else net.rounded.value_array)(
            z.detach().to(torch.float64).numpy())
        return ar.tensor(np.where(over, np.inf, vals))
    return (lambda z: look(z, False)), (lambda z: look(z, True))


def to_torch(net, activation: str | None = None):
    """A ``torch.nn.Module`` computing ``net`` in the paper's order; see the module docstring.

    ``module(X)`` takes an (N, d) tensor or array of inputs and returns the N outputs (float64 tensor of
    exact values); gradients come from ``torch.autograd.grad(out, X, upstream)`` with X a float64
    tensor that requires grad (see :func:`torch_value_and_gradient`).

    >>> import torch
    >>> from condcheck import construct_theorem5, to_torch
    >>> net, claim = construct_theorem5("relu", "float8_e4m3", [[-1.0], [0.5]], [0.25, 2.0], [1.0, 0.5],
    ...                                 [[3.0], [-0.5]])
    >>> x = torch.tensor([[-1.0], [0.5]], dtype=torch.float64, requires_grad=True)
    >>> out = to_torch(net)(x)
    >>> (gx,) = torch.autograd.grad(out, x, torch.tensor([1.0, 0.5], dtype=torch.float64))
    >>> out.tolist(), gx.ravel().tolist()
    ([0.25, 2.0], [3.0, -0.5])
    """
    torch = _torch()
    if activation is None:
        activation = "torch" if net.implementation == "torch" else "table"
    if activation not in ("torch", "torch-fused", "table"):
        raise CondcheckError(f"activation must be 'torch', 'torch-fused' or 'table', not {activation!r}")
    fmt = net.format
    if fmt.name in NATIVE and fmt.bits > 16 and _flushes_subnormals(torch):
        raise CondcheckError("torch flushes subnormals to zero (torch.set_flush_denormal(True)), so its "
                             f"{fmt.name} arithmetic is not IEEE; call torch.set_flush_denormal(False) first")
    ar = _Arith(fmt)
    Affine, Act = _affine_function(), _activation_function()
    if activation == "table":
        value, deriv = _table_value_and_derivative(net, ar)
        op = through = None
    else:
        op, through, value, deriv = _torch_value_and_derivative(net, ar)

    class PaperOrderNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.network = net
            self.activation_mode = activation
            self.arithmetic = f"native {ar.dtype}" if ar.native else f"float64, rounded to {fmt.name} by condcheck"
            #: consecutive input rows that are one point (with different upstream values): how a failure
            #: names its input
            self.rows_per_point = 1

        def forward(self, X):
            X = torch.as_tensor(X, dtype=torch.float64)
            reporter = _Reporter(net, X.detach().numpy(), self.rows_per_point)
            v = X.to(ar.dtype) if ar.native else X
            for l, layer in enumerate(net.layers, 1):
                z = Affine.apply(v, layer, ar, l, reporter)
                if l == net.depth:
                    return z[:, 0].to(torch.float64)
                if activation == "torch-fused":
                    y = op(through(z))
                    v = y if ar.native else _RoundGrad.apply(y.to(torch.float64), ar)
                else:
                    v = Act.apply(z, value, deriv, ar, l, reporter)
            raise AssertionError("unreachable")

    _RoundGrad = _round_function()
    return PaperOrderNetwork()


def _flushes_subnormals(torch) -> bool:
    """True when torch's float32 CPU arithmetic flushes subnormal results to zero."""
    tiny = torch.tensor([2.0 ** -140], dtype=torch.float32)
    return bool((tiny * 0.5).item() == 0.0)


def _round_function():
    torch = _torch()

    class RoundToFormat(torch.autograd.Function):
        """RN_F forward and backward (the gradient is rounded as the interpreter rounds every product)."""

        @staticmethod
        def forward(ctx, t, ar):
            ctx.ar = ar
            return ar.R(_round64(t, ar), "rounding")

        @staticmethod
        def backward(ctx, g):
            return ctx.ar.R(_round64(g, ctx.ar), "rounding (backward)"), None

    return RoundToFormat


def torch_value_and_gradient(module, X, upstream):
    """(values, AD gradients) as float64 numpy arrays, the gradient from ``torch.autograd.grad`` of the
    module's output with the upstream values (one per input) as grad_outputs."""
    torch = _torch()
    net = module.network
    Xt = torch.tensor(np.asarray(X, dtype=np.float64).reshape(-1, net.input_dim), dtype=torch.float64,
                      requires_grad=True)
    out = module(Xt)
    ar = _Arith(net.format)
    y = torch.tensor(np.asarray(upstream, dtype=np.float64).reshape(-1), dtype=torch.float64).to(ar.dtype)
    (g,) = torch.autograd.grad(out.to(ar.dtype) if ar.native else out, Xt, grad_outputs=y)
    return out.detach().numpy().astype(np.float64), g.detach().to(torch.float64).numpy()


def plain_export(net, dtype="float32"):
    """The naive export: ``nn.Sequential`` of ``nn.Linear`` layers (same weights) and the activation op,
    in float32, the output rounded to the format once.  For comparison only: its sums are matmuls."""
    torch = _torch()
    from ..torch_impl import torch_op
    _, op = torch_op(net.rounded.activation)
    dt = getattr(torch, dtype)
    mods = []
    for l, layer in enumerate(net.layers, 1):
        lin = torch.nn.Linear(layer.shape[1], layer.shape[0], dtype=dt)
        with torch.no_grad():
            lin.weight.copy_(torch.tensor(layer.weight.toarray(), dtype=dt))
            lin.bias.copy_(torch.tensor(layer.bias, dtype=dt))
        mods.append(lin)
        if l < net.depth:
            mods.append(_Op(op))
    return torch.nn.Sequential(*mods)


def _Op(op):
    torch = _torch()

    class Op(torch.nn.Module):
        def forward(self, t):
            return op(t)
    return Op()
