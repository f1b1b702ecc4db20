"""The sparse interpreter: the dense interpreter's numbers, computed on the neurons that matter.

Why: a Theorem 7 network holds one family of chains per point; at any other point a chain runs on its
"off" states, which its gate (dead there) blocks, sometimes earlier (sigma~' = 0).  The dense interpreter
computes every neuron for every (x, y): N x K x width x depth, which for the float8 box (225 points, 247
upstream values, width ~50,000, depth 57) is hundreds of billions of rounded operations.

Why it is exact (finite semantics, docs/semantics.md): an inactive neuron's upstream value is +-0 (its
sigma~' is 0, or every term of its backward sum is a product with a +-0).  In a rounded left-to-right sum
``acc (+) (+-0 (x) w)`` equals ``acc`` when acc != 0 and is a zero otherwise, so leaving such terms out
changes no value (only, possibly, the sign of a zero, and equality is numeric: +0 == -0); nothing
overflows in a skipped term.  Under IEEE semantics (Inf passes, Inf x 0 = NaN matters) the shortcut is
not valid: the interpreter refuses such networks.

The strategies, one module each (``SparseOptions`` chooses; the reference strategy of each is kept):

* every point's active neurons (``active``): the simplest, the one for formats of more than 16 bits
  (float32, float64: no tables of sigma~' over every value), and where some value is not finite, the one
  every other strategy falls back to, so that failures are reported as the dense interpreter's;
* the same upstream values at every point (Theorem 7 claims): a forward pass on defaults and exceptions
  (``shared_forward``; reference: ``classes.forward_compressed``), then points grouped by provably equal
  backward values (``groups``; reference: ``classes.backward_classes``);
* one upstream value per point (Theorem 5 claims): one-coordinate neurons as tables (``table_forward``),
  default backward values once per distinct y and explicit neurons per point (``explicit``).
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ..base import Interpreter
from .options import SparseOptions

#: the grouped and table strategies index sigma~' by the format's values: formats of at most this many bits
TABLE_BITS = 16


class SparseInterpreter(Interpreter):
    """Finite semantics, numba; ``options``: ``SparseOptions`` fields (the strategies
    are imported, and compiled, on first use)."""

    name = "sparse"

    def __init__(self, **options):
        self.options = SparseOptions(**options)

    def refusal(self, net):
        if not kernels.HAVE_NUMBA:
            return "it needs numba, which is not installed"
        if net.ieee:
            return ("it implements the finite semantics only (under IEEE semantics Inf x 0 = NaN: inactive "
                    "neurons cannot be skipped); use the dense one")
        return None

    def run(self, net, X, Y, progress=None):
        from .active import evaluate_active
        from .common import DENSE
        opts = self.options
        if not Y.shape[1]:
            return DENSE.run(net, X, Y, progress)
        tables = net.format.bits <= TABLE_BITS        # else the active neurons of every point
        if tables and (Y == Y[:1]).all():
            res = _evaluate_shared(net, X, np.ascontiguousarray(Y[0]), progress, opts)
            if res is not None:
                return res
        elif tables and opts.per_point == "tables":
            from .explicit import evaluate_per_point
            res = evaluate_per_point(net, X, Y, progress, opts)
            if res is not None:
                return res
        return evaluate_active(net, X, Y, progress, opts.chunk_entries)


def _evaluate_shared(net, X, Y, progress, opts):
    """Values and gradients when every point has the same upstream values Y (K,) (Theorem 7 claims): one
    forward pass over every point (compressed codes), then the grouped backward pass, a few y at a time
    (the per-group values of a layer: ~2 groups per neuron x y x 8 bytes).  None where a value is not
    finite."""
    from .classes import backward_classes, forward_compressed
    from .common import Structure, derivative_table, round_params, store_dtype
    from .groups import backward_groups
    from .shared_forward import forward_defaults
    N = X.shape[0]
    dtab, zero_index = derivative_table(net)
    rp = round_params(net.format)
    fs = forward_defaults(net, X, zero_index, dtab) if opts.forward == "defaults" else None
    S = None if (fs is not None and opts.groups == "exceptions") else Structure(net)
    if fs is None:
        fs = forward_compressed(net, S, X, zero_index, dtab)
        if fs is None:
            return None
    values, comp = fs
    grads = np.zeros((N, Y.shape[0], net.input_dim))
    ky = max(8, opts.class_bytes // (2 * np.dtype(store_dtype(net.format)).itemsize * max(net.widths)))
    for k0 in range(0, Y.shape[0], ky):
        k1 = min(Y.shape[0], k0 + ky)
        if opts.groups == "exceptions":
            G = backward_groups(net, comp, Y[k0:k1], dtab, X, rp)
        else:
            G = backward_classes(net, S, comp, Y[k0:k1], dtab, X, rp)
        if G is None:
            return None
        grads[:, k0:k1] = G
        if progress:
            progress(k1, Y.shape[0])
    return values, grads
