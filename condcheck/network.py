"""Networks in paper order (docs/semantics.md): the data -- affine layers of format values -- and its checks.

A :class:`Network` is ``f = T_L o s o T_(L-1) o ... o s o T_1`` with affine maps ``T_l(v) = A_l v + b_l``
whose weights and biases are values of the format, and the rounded activation s = sigma~ after every
layer but the last; the output is a scalar.  A :class:`Layer` stores A sparse (a constructed network
is mostly zeros) and gives its rows and columns in the order the paper's sums read them.

Evaluating it -- the forward pass and reverse-mode AD ``D_(f,x)(y)`` -- is the interpreters' work
(``condcheck.interpreters``: the exact reference and the fast ones, one interface);
:meth:`Network.evaluate`, :meth:`Network.forward_exact` and :meth:`Network.gradient_exact` call them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError
from .formats import Format, get_format
from .rounding import round_array


@dataclass
class Layer:
    """One affine map ``v -> A v + b``; A is stored sparse (a constructed network is mostly zeros)."""

    weight: sp.csr_matrix             # shape (outputs, inputs), exact values as float64
    bias: np.ndarray                  # shape (outputs,)

    def __post_init__(self):
        self.weight = sp.csr_matrix(self.weight, dtype=np.float64)
        self.weight.eliminate_zeros()
        self.weight.sort_indices()
        self.bias = np.asarray(self.bias, dtype=np.float64).reshape(-1)
        if self.bias.shape[0] != self.weight.shape[0]:
            raise CondcheckError(f"layer bias has {self.bias.shape[0]} entries but the weight has "
                                 f"{self.weight.shape[0]} rows")

    @property
    def shape(self):
        return self.weight.shape

    @cached_property
    def csc(self) -> sp.csc_matrix:
        """The weight by columns (indices sorted): the order of the backward sums."""
        c = self.weight.tocsc()
        c.sort_indices()
        return c

    @cached_property
    def row_arrays(self):
        """(columns, weights, starts, counts) of every row: the compiled kernels' sparse layout."""
        w = self.weight
        return (w.indices.astype(np.int64), w.data, w.indptr[:-1].astype(np.int64),
                np.diff(w.indptr).astype(np.int64))

    @cached_property
    def column_arrays(self):
        """(rows, weights, starts, counts) of every column."""
        c = self.csc
        return (c.indices.astype(np.int64), c.data, c.indptr[:-1].astype(np.int64),
                np.diff(c.indptr).astype(np.int64))

    def row_terms(self, i: int):
        """(column, weight) pairs of row i in increasing column order."""
        s, e = self.weight.indptr[i], self.weight.indptr[i + 1]
        return zip(self.weight.indices[s:e].tolist(), self.weight.data[s:e].tolist())

    def column_terms(self, j: int):
        """(row, weight) pairs of column j in increasing row order."""
        csc = self.csc
        s, e = csc.indptr[j], csc.indptr[j + 1]
        return zip(csc.indices[s:e].tolist(), csc.data[s:e].tolist())

    def dense_row(self, i: int) -> list:
        """Every (column, weight) of row i, zeros included, in increasing column order."""
        row = dict(self.row_terms(i))
        return [(j, row.get(j, 0.0)) for j in range(self.shape[1])]

    def dense_column(self, j: int) -> list:
        col = dict(self.column_terms(j))
        return [(i, col.get(i, 0.0)) for i in range(self.shape[0])]

    def derived(self, key: str, make):
        """A structure an interpreter derives from this layer (its sum plans, its weights as table
        indices): ``make()`` the first time, kept with the layer after."""
        store = self.__dict__.setdefault("derived_structures", {})
        if key not in store:
            store[key] = make()
        return store[key]


@dataclass
class Network:
    """A floating-point network in the paper's order (docs/semantics.md)."""

    format: Format
    activation: str
    layers: list[Layer]
    implementation: str = "exact"
    input_dim: int = field(default=0)
    #: "finite" (default: Inf or NaN anywhere is an error) or "ieee" (IEEE 754 through Inf, see condcheck.ieee).
    semantics: str = "finite"

    def __post_init__(self):
        from .ieee import get_semantics
        self.semantics = get_semantics(self.semantics)
        self.format = get_format(self.format)
        if not self.format.fits_float64:
            raise CondcheckError(f"networks need a format whose values are float64 numbers; {self.format.name} "
                                 f"is not one")
        if not self.layers:
            raise CondcheckError("a network needs at least one layer")
        if not self.input_dim:
            self.input_dim = self.layers[0].shape[1]
        if self.layers[0].shape[1] != self.input_dim:
            raise CondcheckError(f"first layer takes {self.layers[0].shape[1]} inputs, input_dim is {self.input_dim}")
        for l in range(1, len(self.layers)):
            if self.layers[l].shape[1] != self.layers[l - 1].shape[0]:
                raise CondcheckError(f"layer {l + 1} takes {self.layers[l].shape[1]} inputs but layer {l} has "
                                     f"{self.layers[l - 1].shape[0]} outputs")
        if self.layers[-1].shape[0] != 1:
            raise CondcheckError(f"the last layer must have one output (the network is scalar), it has "
                                 f"{self.layers[-1].shape[0]}")
        for l, layer in enumerate(self.layers, 1):
            for name, arr in (("weight", layer.weight.data), ("bias", layer.bias)):
                bad = first_not_in_format(arr, self.format)
                if bad is not None:
                    raise CondcheckError(f"layer {l} {name} entry {float(arr[bad])!r} is not a value of {self.format.name}")

    # ---- structure -----------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> list[int]:
        return [self.input_dim] + [layer.shape[0] for layer in self.layers]

    @property
    def parameter_count(self) -> int:
        """Weights and biases of the dense matrices (what the paper counts)."""
        return sum(l.shape[0] * l.shape[1] + l.shape[0] for l in self.layers)

    @property
    def nonzero_parameters(self) -> int:
        return sum(l.weight.nnz + int(np.count_nonzero(l.bias)) for l in self.layers)

    @cached_property
    def rounded(self):
        from .rounded_activation import get_rounded
        return get_rounded(self.activation, self.format, self.implementation)

    @property
    def ieee(self) -> bool:
        return self.semantics == "ieee"

    @property
    def semantics_text(self) -> str:
        from .ieee import semantics_text
        return semantics_text(self.semantics)

    # ---- inputs --------------------------------------------------------------------------------
    def check_points(self, X) -> np.ndarray:
        """X as an (N, d) float64 array, every coordinate checked to be a value of the format (a 1-d X
        is N points when d = 1, else one point)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(-1, 1) if self.input_dim == 1 else X.reshape(1, -1)
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise CondcheckError(f"inputs must have shape (N, {self.input_dim}), got {X.shape}")
        bad = first_not_in_format(X.ravel(), self.format)
        if bad is not None:
            raise CondcheckError(f"input {float(X.ravel()[bad])!r} is not a value of {self.format.name}")
        return X

    def check_upstream(self, Y, N: int):
        """(Y as (N, K), whether it was one value per point: a 1-d Y), every value checked to be in the
        format."""
        Y = np.asarray(Y, dtype=np.float64)
        if Y.size % max(N, 1) or (N == 0 and Y.size):
            raise CondcheckError(f"upstream values must have shape (N,) or (N, K) for N = {N} points, got "
                                 f"{Y.shape}")
        Y2 = Y.reshape(N, -1)
        bad = first_not_in_format(Y2.ravel(), self.format)
        if bad is not None:
            raise CondcheckError(f"upstream value {float(Y2.ravel()[bad])!r} is not a value of {self.format.name}")
        return Y2, Y.ndim == 1

    # ---- evaluation (condcheck.interpreters) -------------------------------------------------------
    def evaluate(self, X, Y=None, progress=None, interpreter="dense"):
        """Forward values and, if Y is given, AD gradients, by an interpreter (default: the dense one).

        X: (N, d) inputs.  Y: None, (N,) one upstream per input -> gradients (N, d), or (N, K) ->
        gradients (N, K, d).  ``progress(done, total)`` is called as the work goes on."""
        from .interpreters import get_interpreter
        return get_interpreter(interpreter).evaluate(self, X, Y, progress)

    def forward(self, X, progress=None) -> np.ndarray:
        return self.evaluate(X, None, progress)

    def gradient(self, X, Y, progress=None) -> np.ndarray:
        return self.evaluate(X, Y, progress)[1]

    def forward_exact(self, x):
        """(f(x), pre-activations of every hidden layer) at one input, with exact rounding of every
        operation (the reference interpreter).  Under IEEE semantics pre-activations may be +-inf."""
        from .interpreters.reference import forward_point
        x = [self.format.check(xi, f"input coordinate {i}") for i, xi in enumerate(x)]
        if len(x) != self.input_dim:
            raise CondcheckError(f"input has {len(x)} coordinates, the network takes {self.input_dim}")
        return forward_point(self, [float(t) for t in x])

    def gradient_exact(self, x, y, pre=None) -> list:
        """D_(f,x)(y) with exact rounding of every operation, in the order of docs/semantics.md."""
        from .interpreters.reference import backward_point
        y = self.format.check(y, "upstream value y")
        if pre is None:
            _, pre = self.forward_exact(x)
        return backward_point(self, [float(t) for t in x], [float(y)], pre)[0]


#: Entries checked at once by first_not_in_format: its rounding's temporaries stay a few MB however
#: large the layer (a whole layer at once took 41 bytes an entry more, measured on 20 M weights).
FORMAT_CHECK_BLOCK = 1 << 20


def first_not_in_format(arr: np.ndarray, fmt: Format):
    """Index of the first entry of arr (flattened) that is not a finite value of fmt, or None.

    Checked a block of FORMAT_CHECK_BLOCK entries at a time, so the extra memory does not grow with arr."""
    arr = np.asarray(arr, dtype=np.float64).ravel()
    for start in range(0, arr.size, FORMAT_CHECK_BLOCK):
        part = arr[start:start + FORMAT_CHECK_BLOCK]
        with np.errstate(invalid="ignore"):
            r, over = round_array(part, fmt)
        bad = over | (r != part)
        if bad.any():
            return start + int(np.flatnonzero(bad)[0])
    return None
