"""Networks in paper order (SPEC 2.3): the forward pass and reverse-mode AD ``D_(f,x)(y)``.

The rules, in one place:

* forward, coordinate i of ``T(v) = A v + b``:
  ``z_i = (((A_i1 (x) v_1) (+) (A_i2 (x) v_2)) (+) ... (+) (A_in (x) v_n)) (+) b_i`` -- every operation
  rounded, products first, summed strictly left to right over the input index, bias last;
* the activation ``sigma~`` after every layer but the last; the output is a scalar;
* backward, through an affine map with upstream vector u:
  ``v_j = ((u_1 (x) A_1j) (+) (u_2 (x) A_2j)) (+) ...`` left to right over the outputs i;
  through the activation at pre-activation ``z_j``: ``u'_j = v_j (x) sigma~'(z_j)``;
  the result at the input layer is ``D_(f,x)(y)``.

Zero weights are skipped: ``s (+) (0 (x) v) = s`` exactly for finite values, so a sparse network
computes bit for bit what its dense matrix computes (tests check this against dense loops).

Two paths with one meaning: ``forward_exact``/``gradient_exact`` (Fractions, exact rounding: the
reference and the standalone verifier) and ``forward``/``gradient``/``evaluate`` (vectorized over
many inputs and many upstream values at once, in the format's working dtype, see ``ops``).
Inf or NaN anywhere is an error naming the pass, layer and neuron (``NetworkOverflowError``).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError, FormatOverflowError, NetworkOverflowError
from .formats import Format, get_format
from . import kernels
from .ops import working_dtype
from .rounding import round_array, round_fraction

# Work on at most this many array elements at once (memory bound of the vectorized paths).
CHUNK_ELEMENTS = 1 << 18
#: at most this many products rounded at once by ``_SumPlan.apply`` (per leading index: points x upstreams)
PRODUCT_ELEMENTS = 1 << 15
# Use the compiled kernels (condcheck.kernels) when numba is installed; the numpy path otherwise.
USE_KERNELS = kernels.HAVE_NUMBA


@contextmanager
def numpy_path():
    """Evaluate with the numpy path inside this block (the same numbers as the kernels: tests/test_network.py
    compares the two).  For small networks on few points, where loading numba's compiled code (0.4-0.6
    CPU s, the first time in a process) costs more than the evaluation itself."""
    global USE_KERNELS
    saved, USE_KERNELS = USE_KERNELS, False
    try:
        yield
    finally:
        USE_KERNELS = saved


@dataclass(frozen=True)
class _SumPlan:
    """Left-to-right rounded sums of a sparse matrix's rows, vectorized over rows.

    Rows are sorted by their number of terms (descending), so that at step k the rows that still
    have a k-th term form a prefix of length ``active[k]``; ``cols[k]``/``weights[k]`` give that term.
    """

    order: np.ndarray                 # row index of each sorted position
    active: list[int]
    cols: list[np.ndarray]
    weights: list[np.ndarray]
    n_out: int

    @classmethod
    def of(cls, m: sp.csr_matrix) -> "_SumPlan":
        """The plan of m's rows: step k holds the k-th term (in column order) of each sorted row that has
        one.  Made for every term at once (a row's terms are contiguous in m: the k-th of sorted row i is
        at indptr[order[i]] + k), ordered by (k, i), then split into the steps."""
        m = m.tocsr()
        m.sort_indices()
        nnz = np.diff(m.indptr)
        order = np.argsort(-nnz, kind="stable")
        counts = nnz[order]
        total = int(counts.sum())
        # every term as (sorted row i, k), row by row; then by k (stable: the rows stay in order)
        i = np.repeat(np.arange(len(order)), counts)
        k = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        by_k = np.argsort(k, kind="stable")
        pos = m.indptr[order][i[by_k]] + k[by_k]
        active = np.bincount(k, minlength=int(counts.max()) if len(counts) else 0).tolist()
        bounds = np.cumsum(active)[:-1]
        cols = np.split(m.indices[pos].astype(np.intp), bounds) if active else []
        weights = np.split(m.data[pos], bounds) if active else []
        return cls(order, active, cols, weights, m.shape[0])

    def apply(self, V: np.ndarray, fmt: Format, rn=None) -> np.ndarray:
        """Rounded left-to-right sums: out[..., i] = sum_k (V[..., col_ik] (x) w_ik); +-inf on overflow.
        ``rn(x, fmt)``: the rounding (default ``round_array``; ``ieee.rn_array`` keeps NaN)."""
        rn = rn or (lambda a, f: round_array(a, f)[0])
        out_sorted = np.zeros(V.shape[:-1] + (self.n_out,), dtype=V.dtype)
        lead = max(1, int(np.prod(V.shape[:-1])))
        P, p0, p_stop = None, 0, 0
        for k, n_k in enumerate(self.active):
            if k >= p_stop:
                # the rounded products of steps k .. p_stop - 1 at once (rounding is elementwise: the
                # same values as one rounding per step, in a tenth of the calls on the long one-row sums
                # of a last layer), at most PRODUCT_ELEMENTS of them (at least one step)
                p_stop, width = self._product_batch(k, max(1, PRODUCT_ELEMENTS // lead))
                cols = self.cols[k] if p_stop == k + 1 else np.concatenate(self.cols[k:p_stop])
                w = self.weights[k] if p_stop == k + 1 else np.concatenate(self.weights[k:p_stop])
                with np.errstate(invalid="ignore"):
                    P = rn(V[..., cols] * w.astype(V.dtype), fmt)
                p0 = 0
            prod = P[..., p0:p0 + n_k]
            p0 += n_k
            if k == 0:
                out_sorted[..., :n_k] = prod
            else:
                with np.errstate(invalid="ignore"):
                    out_sorted[..., :n_k] = rn(out_sorted[..., :n_k] + prod, fmt)
        out = np.empty_like(out_sorted)
        out[..., self.order] = out_sorted
        return out

    def _product_batch(self, k: int, budget: int) -> tuple[int, int]:
        """(stop, terms): steps k .. stop - 1 hold at most ``budget`` terms together (at least step k)."""
        stop, total = k + 1, self.active[k]
        while stop < len(self.active) and total + self.active[stop] <= budget:
            total += self.active[stop]
            stop += 1
        return stop, total


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
    def row_arrays(self):
        """(columns, weights, starts, counts) of every row: the kernels' sparse layout."""
        w = self.weight
        return (w.indices.astype(np.int64), w.data, w.indptr[:-1].astype(np.int64),
                np.diff(w.indptr).astype(np.int64))

    @cached_property
    def column_arrays(self):
        c = self._csc
        return (c.indices.astype(np.int64), c.data, c.indptr[:-1].astype(np.int64),
                np.diff(c.indptr).astype(np.int64))

    def forward_sums(self, V: np.ndarray, fmt: Format, ieee: bool = False) -> np.ndarray:
        """z = A v (+) b for each row of V (left-to-right rounded sums, bias last).

        ``ieee``: IEEE-through-Inf semantics (``condcheck.ieee``): NaN is kept, a zero weight meeting an
        Inf gives NaN (the dense matrix's ``0 x Inf``), an overflow in a format without Inf gives NaN."""
        if USE_KERNELS:
            with np.errstate(invalid="ignore"):
                z = kernels.rounded_row_sums(V, *self.row_arrays, self.bias, fmt).astype(V.dtype)
        else:
            rn = _ieee_rn if ieee else None
            z = self.forward_plan.apply(V, fmt, rn)
            if self.bias.any():
                with np.errstate(invalid="ignore"):
                    z = (rn or (lambda a, f: round_array(a, f)[0]))(z + self.bias.astype(V.dtype), fmt)
        return self._ieee_fix(V, z, self.pattern, fmt) if ieee else z

    def backward_sums(self, U: np.ndarray, fmt: Format, ieee: bool = False) -> np.ndarray:
        """v_j = sum_i u_i (x) A_ij, left to right over i, for each leading index of U."""
        if USE_KERNELS:
            flat = U.reshape(-1, U.shape[-1])
            zeros = np.zeros(self.shape[1])
            with np.errstate(invalid="ignore"):
                out = kernels.rounded_row_sums(flat, *self.column_arrays, zeros, fmt)
            v = out.reshape(U.shape[:-1] + (self.shape[1],)).astype(U.dtype)
        else:
            v = self.backward_plan.apply(U, fmt, _ieee_rn if ieee else None)
        return self._ieee_fix(U, v, self.pattern_t, fmt) if ieee else v

    @staticmethod
    def _ieee_fix(V, out, pattern, fmt):
        from .ieee import nan_from_zero_weights
        out = nan_from_zero_weights(V, pattern, out)
        if not fmt.has_inf:                 # no Inf in this format: every Inf here is an overflow -> NaN
            out = np.where(np.isinf(out), np.nan, out).astype(out.dtype)
        return out

    @cached_property
    def pattern(self) -> sp.csr_matrix:
        """The 0/1 sparsity pattern of the weight, (outputs, inputs)."""
        p = self.weight.copy()
        p.data = np.ones_like(p.data)
        return p

    @cached_property
    def pattern_t(self) -> sp.csr_matrix:
        return self.pattern.T.tocsr()

    def dense_row(self, i: int) -> list:
        """Every (column, weight) of row i, zeros included, in increasing column order."""
        row = dict(self.row_terms(i))
        return [(j, row.get(j, 0.0)) for j in range(self.shape[1])]

    def dense_column(self, j: int) -> list:
        col = dict(self.column_terms(j))
        return [(i, col.get(i, 0.0)) for i in range(self.shape[0])]

    @cached_property
    def forward_plan(self) -> _SumPlan:
        return _SumPlan.of(self.weight)

    @cached_property
    def backward_plan(self) -> _SumPlan:
        return _SumPlan.of(self.weight.T.tocsr())

    def row_terms(self, i: int):
        """(column, weight) pairs of row i in increasing column order."""
        s, e = self.weight.indptr[i], self.weight.indptr[i + 1]
        return zip(self.weight.indices[s:e].tolist(), self.weight.data[s:e].tolist())

    def column_terms(self, j: int):
        """(row, weight) pairs of column j in increasing row order."""
        csc = self._csc
        s, e = csc.indptr[j], csc.indptr[j + 1]
        return zip(csc.indices[s:e].tolist(), csc.data[s:e].tolist())

    @cached_property
    def _csc(self):
        c = self.weight.tocsc()
        c.sort_indices()
        return c


@dataclass
class Network:
    """A floating-point network in the paper's order (SPEC 2.3)."""

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
                bad = _not_in_format(arr, self.format)
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

    # ---- exact reference path ------------------------------------------------------------------
    @property
    def ieee(self) -> bool:
        return self.semantics == "ieee"

    @property
    def semantics_text(self) -> str:
        from .ieee import semantics_text
        return semantics_text(self.semantics)

    def forward_exact(self, x) -> tuple[Fraction, list[list[Fraction]]]:
        """(f(x), pre-activations of every hidden layer), with exact rounding of every operation.
        Under IEEE semantics pre-activations may be +-inf (floats)."""
        if self.ieee:
            return self._forward_exact_ieee(x)
        fmt, rnd = self.format, self.rounded
        v = [fmt.check(xi, f"input coordinate {i}") for i, xi in enumerate(x)]
        if len(v) != self.input_dim:
            raise CondcheckError(f"input has {len(v)} coordinates, the network takes {self.input_dim}")
        pre = []
        for l, layer in enumerate(self.layers, 1):
            z = []
            for i in range(layer.shape[0]):
                acc = Fraction(0)
                try:
                    for j, w in layer.row_terms(i):
                        acc = round_fraction(acc + round_fraction(Fraction(w) * v[j], fmt), fmt)
                    acc = round_fraction(acc + Fraction(layer.bias[i]), fmt)
                except FormatOverflowError:
                    raise self._overflow("forward", l, i, x) from None
                z.append(acc)
            if l == self.depth:
                return z[0], pre
            pre.append(z)
            try:
                v = [rnd.value(zi) for zi in z]
            except FormatOverflowError:
                bad = next(i for i, zi in enumerate(z) if _overflows(rnd.value, zi))
                raise self._overflow("forward (activation)", l, bad, x) from None
        raise AssertionError("unreachable")

    def gradient_exact(self, x, y, pre=None) -> list[Fraction]:
        """D_(f,x)(y) with exact rounding of every operation, in the order of SPEC 2.3."""
        if self.ieee:
            return self._gradient_exact_ieee(x, y, pre)
        fmt, rnd = self.format, self.rounded
        y = fmt.check(y, "upstream value y")
        if pre is None:
            _, pre = self.forward_exact(x)
        u = [y]
        for l in range(self.depth, 0, -1):
            layer = self.layers[l - 1]
            v = []
            for j in range(layer.shape[1]):
                acc = Fraction(0)
                try:
                    for i, w in layer.column_terms(j):
                        acc = round_fraction(acc + round_fraction(u[i] * Fraction(w), fmt), fmt)
                except FormatOverflowError:
                    raise self._overflow("backward", l, j, x) from None
                v.append(acc)
            if l == 1:
                return v
            u = []
            for j, (vj, zj) in enumerate(zip(v, pre[l - 2])):
                try:
                    u.append(round_fraction(vj * rnd.derivative(zj), fmt))
                except FormatOverflowError:
                    raise self._overflow("backward (activation derivative)", l - 1, j, x) from None
        raise AssertionError("unreachable")

    # ---- exact reference path under IEEE semantics (condcheck.ieee) ----------------------------
    def _forward_exact_ieee(self, x):
        from .ieee import ext_activation, ext_add, ext_mul
        fmt, rnd = self.format, self.rounded
        v = [fmt.check(xi, f"input coordinate {i}") for i, xi in enumerate(x)]
        if len(v) != self.input_dim:
            raise CondcheckError(f"input has {len(v)} coordinates, the network takes {self.input_dim}")
        pre = []
        for l, layer in enumerate(self.layers, 1):
            special = any(isinstance(vj, float) for vj in v)
            z = []
            for i in range(layer.shape[0]):
                acc = Fraction(0)
                # With an Inf among the inputs the zero weights count (0 x Inf = NaN): the dense row.
                for j, w in (layer.dense_row(i) if special else layer.row_terms(i)):
                    acc = ext_add(acc, ext_mul(Fraction(w), v[j], fmt), fmt)
                acc = ext_add(acc, Fraction(layer.bias[i]), fmt)
                z.append(acc)
            self._check_exact(z, "forward", l, x)
            if l == self.depth:
                self._check_exact(z, "forward", l, x, final="output")
                return z[0], pre
            pre.append(z)
            v = [ext_activation(rnd, zi, False) for zi in z]
            self._check_exact(v, "forward (activation)", l, x)
        raise AssertionError("unreachable")

    def _gradient_exact_ieee(self, x, y, pre=None):
        from .ieee import ext_activation, ext_add, ext_mul
        fmt, rnd = self.format, self.rounded
        y = fmt.check(y, "upstream value y")
        if pre is None:
            _, pre = self.forward_exact(x)
        u = [y]
        for l in range(self.depth, 0, -1):
            layer = self.layers[l - 1]
            special = any(isinstance(ui, float) for ui in u)
            v = []
            for j in range(layer.shape[1]):
                acc = Fraction(0)
                for i, w in (layer.dense_column(j) if special else layer.column_terms(j)):
                    acc = ext_add(acc, ext_mul(u[i], Fraction(w), fmt), fmt)
                v.append(acc)
            self._check_exact(v, "backward", l, x)
            if l == 1:
                self._check_exact(v, "backward", l, x, final="gradient")
                return v
            d = [ext_activation(rnd, zj, True) for zj in pre[l - 2]]
            self._check_exact(d, "backward (activation derivative)", l - 1, x)
            u = [ext_mul(vj, dj, fmt) for vj, dj in zip(v, d)]
            self._check_exact(u, "backward (activation derivative)", l - 1, x)
        raise AssertionError("unreachable")

    def _check_exact(self, vals, pass_name, layer, x, final=None):
        """IEEE semantics: raise at the first NaN (or, for the output and the gradient, non-finite value)."""
        import math
        for n, v in enumerate(vals):
            if isinstance(v, float) and (math.isnan(v) or final):
                raise self._nonfinite(pass_name, layer, n, x, v, final)

    # ---- vectorized path -----------------------------------------------------------------------
    def _inputs(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(-1, 1) if self.input_dim == 1 else X.reshape(1, -1)
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise CondcheckError(f"inputs must have shape (N, {self.input_dim}), got {X.shape}")
        bad = _not_in_format(X.ravel(), self.format)
        if bad is not None:
            raise CondcheckError(f"input {float(X.ravel()[bad])!r} is not a value of {self.format.name}")
        return X

    def _forward_chunk(self, X: np.ndarray, offset: int, inputs: np.ndarray):
        fmt, dt = self.format, self._dtype
        v = X.astype(dt)
        pre = []
        for l, layer in enumerate(self.layers, 1):
            z = layer.forward_sums(v, fmt, self.ieee)
            self._check(z, "forward", l, offset, inputs)
            if l == self.depth:
                if self.ieee:
                    self._check(z, "forward", l, offset, inputs, final="output")
                return z[:, 0], pre
            pre.append(z)
            s = self._activation(z, derivative=False)
            self._check(s, "forward (activation)", l, offset, inputs)
            v = s.astype(dt)
        raise AssertionError("unreachable")

    def _backward_chunk(self, pre, Y: np.ndarray, offset: int, inputs: np.ndarray) -> np.ndarray:
        """Y has shape (n, K): K upstream values per input.  Returns (n, K, d)."""
        fmt, dt = self.format, self._dtype
        u = Y.astype(dt)[:, :, None]                      # (n, K, 1)
        for l in range(self.depth, 0, -1):
            layer = self.layers[l - 1]
            v = layer.backward_sums(u, fmt, self.ieee)     # (n, K, in_l)
            self._check(v, "backward", l, offset, inputs)
            if l == 1:
                if self.ieee:
                    self._check(v, "backward", l, offset, inputs, final="gradient")
                return v
            d = self._activation(pre[l - 2], derivative=True)
            self._check(d, "backward (activation derivative)", l - 1, offset, inputs)
            with np.errstate(invalid="ignore"):
                prod = v * d.astype(dt)[:, None, :]
            u = _ieee_rn(prod, fmt) if self.ieee else round_array(prod, fmt)[0]
            self._check(u, "backward (activation derivative)", l - 1, offset, inputs)
        raise AssertionError("unreachable")

    def evaluate(self, X, Y=None, progress=None):
        """Vectorized forward values and, if Y is given, AD gradients.

        X: (N, d) inputs.  Y: None, (N,) one upstream per input -> gradients (N, d), or (N, K) ->
        gradients (N, K, d).  ``progress(done, total)`` is called after each chunk.
        """
        X = self._inputs(X)
        N = X.shape[0]
        per_y = None
        if Y is not None:
            Y2, per_y = self._upstream(Y, N)
        K = 1 if Y is None else Y2.shape[1]
        width = max(self.widths)
        chunk = max(1, CHUNK_ELEMENTS // (width * K))
        values = np.empty(N, dtype=np.float64)
        grads = None if Y is None else np.empty((N, K, self.input_dim), dtype=np.float64)
        for s in range(0, N, chunk):
            e = min(N, s + chunk)
            val, pre = self._forward_chunk(X[s:e], s, X)
            values[s:e] = val
            if Y is not None:
                grads[s:e] = self._backward_chunk(pre, Y2[s:e], s, X)
            if progress:
                progress(e, N)
        if Y is None:
            return values
        return values, (grads[:, 0, :] if per_y else grads)

    def _upstream(self, Y, N):
        """(Y as (N, K), whether it was one value per input), every value checked to be in the format."""
        Y = np.asarray(Y, dtype=np.float64)
        Y2 = Y.reshape(N, -1)
        bad = _not_in_format(Y2.ravel(), self.format)
        if bad is not None:
            raise CondcheckError(f"upstream value {float(Y2.ravel()[bad])!r} is not a value of {self.format.name}")
        return Y2, Y.ndim == 1

    def forward(self, X, progress=None) -> np.ndarray:
        return self.evaluate(X, None, progress)

    def gradient(self, X, Y, progress=None) -> np.ndarray:
        return self.evaluate(X, Y, progress)[1]

    def _activation(self, z: np.ndarray, derivative: bool) -> np.ndarray:
        """sigma~ or sigma~' at pre-activations z (values of the format); +-inf where it overflows.
        Under IEEE semantics z may hold +-inf and NaN (``ieee.activation_array``)."""
        if self.ieee:
            from .ieee import activation_array
            return activation_array(self.rounded, z, derivative, lambda zz: self._activation_finite(zz, derivative))
        return self._activation_finite(z, derivative)

    def _activation_finite(self, z: np.ndarray, derivative: bool) -> np.ndarray:
        if USE_KERNELS and self.format.bits <= 16:
            t = self.rounded.table()
            return kernels.table_lookup(z, t.points, t.dsigma if derivative else t.sigma, self.format)
        fn = self.rounded.derivative_array if derivative else self.rounded.value_array
        vals, over = fn(z.astype(np.float64))
        return np.where(over, np.copysign(np.inf, vals), vals)

    @cached_property
    def _dtype(self):
        return working_dtype(self.format)

    def _check(self, arr, pass_name, layer, offset, inputs, final=None):
        """Finite semantics: raise at the first Inf or NaN.  IEEE semantics: at the first NaN, and for
        ``final`` ("output", "gradient") at the first non-finite value."""
        bad = np.isnan(arr) if (self.ieee and not final) else ~np.isfinite(arr)
        if not bad.any():
            return
        idx = np.argwhere(bad)[0]
        n, neuron = int(idx[0]) + offset, int(idx[-1])
        if self.ieee:
            raise self._nonfinite(pass_name, layer, neuron, inputs[n].tolist(), float(arr[tuple(idx)]), final, n)
        raise self._overflow(pass_name, layer, neuron, inputs[n].tolist(), n)

    def _nonfinite(self, pass_name, layer, neuron, x, value, final=None, index=None):
        """The error of IEEE semantics: a NaN, or a non-finite output or gradient."""
        import math
        xs = ", ".join(repr(float(v)) for v in x)
        where = f"at layer {layer}, neuron {neuron}, input ({xs})"
        fmt = self.format.name
        if final == "output" and not math.isnan(value):
            what = (f"the output is {'+' if value > 0 else '-'}Inf in {fmt} {where}: under IEEE semantics the "
                    f"network's value must be finite")
        elif final == "gradient" and not math.isnan(value):
            what = (f"gradient coordinate {neuron} is {'+' if value > 0 else '-'}Inf in {fmt} {where}: under "
                    f"IEEE semantics the AD gradient must be finite")
        elif not self.format.has_inf:
            what = (f"NaN {where}: an overflow in {fmt}, which has no Inf, so IEEE 754 gives NaN "
                    f"(IEEE-through-Inf semantics cannot help in {fmt})")
        elif "activation" in pass_name:
            what = (f"NaN in {fmt} {where} under IEEE semantics: {self.activation}~"
                    f"{chr(39) if 'derivative' in pass_name else ''} at +-Inf is NaN (no limit, or a derivative "
                    f"that does not tend to 0), or Inf x 0 / NaN reached it")
        else:
            what = (f"NaN in {fmt} {where} under IEEE semantics: Inf - Inf or Inf x 0 "
                    f"(a zero weight meeting an Inf counts)")
        return NetworkOverflowError(f"{pass_name} pass: {what}", pass_name=pass_name, layer=layer,
                                    neuron=neuron, input_index=index)

    def _overflow(self, pass_name, layer, neuron, x, index=None):
        xs = ", ".join(repr(float(v)) for v in x)
        return NetworkOverflowError(
            f"{pass_name} pass: overflow (Inf or NaN) in {self.format.name} at layer {layer}, neuron {neuron}, "
            f"input ({xs})", pass_name=pass_name, layer=layer, neuron=neuron, input_index=index)


def _ieee_rn(x, fmt):
    from .ieee import rn_array
    return rn_array(x, fmt)


def _overflows(fn, z) -> bool:
    try:
        fn(z)
        return False
    except FormatOverflowError:
        return True


def _not_in_format(arr: np.ndarray, fmt: Format):
    """Index of the first entry that is not a finite value of fmt, or None."""
    arr = np.asarray(arr, dtype=np.float64).ravel()
    if arr.size == 0:
        return None
    with np.errstate(invalid="ignore"):
        r, over = round_array(arr, fmt)
    bad = over | (r != arr)
    if bad.any():
        return int(np.flatnonzero(bad)[0])
    return None
