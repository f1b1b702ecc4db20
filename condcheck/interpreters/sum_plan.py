"""Left-to-right rounded sums of a sparse matrix's rows, vectorized over the rows (numpy).

The dense interpreter's sums without numba, and the order the tables interpreter sums indices in.
Rows are sorted by their number of terms (descending), so that at step k the rows that still have a
k-th term form a prefix of length ``active[k]``; ``cols[k]``/``weights[k]`` give that term.  Skipping
the zero weights changes no value (``s (+) (0 (x) v) = s`` for finite v).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..formats import Format
from ..rounding import round_array

#: at most this many products rounded at once by ``SumPlan.apply`` (per leading index: points x upstreams)
PRODUCT_ELEMENTS = 1 << 15


def _round(a, fmt):
    return round_array(a, fmt)[0]


@dataclass(frozen=True)
class SumPlan:
    """The terms of a matrix's rows, step by step (see the module docstring)."""

    order: np.ndarray                 # row index of each sorted position
    active: list[int]
    cols: list[np.ndarray]
    weights: list[np.ndarray]
    n_out: int

    @classmethod
    def of(cls, m: sp.csr_matrix) -> "SumPlan":
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

    def apply(self, V: np.ndarray, fmt: Format, rn=None, product_elements: int = PRODUCT_ELEMENTS) -> np.ndarray:
        """Rounded left-to-right sums: out[..., i] = sum_k (V[..., col_ik] (x) w_ik); +-inf on overflow.
        ``rn(x, fmt)``: the rounding (default ``round_array``; ``ieee.rn_array`` keeps NaN).  The products
        of several steps are rounded at once (rounding is elementwise: the same values as one rounding
        per step, in a tenth of the calls on the long one-row sums of a last layer), at most
        ``product_elements`` per leading index (at least one step)."""
        rn = rn or _round
        out_sorted = np.zeros(V.shape[:-1] + (self.n_out,), dtype=V.dtype)
        lead = max(1, int(np.prod(V.shape[:-1])))
        P, p0, p_stop = None, 0, 0
        for k, n_k in enumerate(self.active):
            if k >= p_stop:
                p_stop, width = self.product_batch(k, max(1, product_elements // lead))
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

    def product_batch(self, k: int, budget: int) -> tuple[int, int]:
        """(stop, terms): steps k .. stop - 1 hold at most ``budget`` terms together (at least step k)."""
        stop, total = k + 1, self.active[k]
        while stop < len(self.active) and total + self.active[stop] <= budget:
            total += self.active[stop]
            stop += 1
        return stop, total


def forward_plan(layer) -> SumPlan:
    """The plan of a layer's rows (its forward sums), made once per layer."""
    return layer.derived("sum_plan.forward", lambda: SumPlan.of(layer.weight))


def backward_plan(layer) -> SumPlan:
    """The plan of a layer's columns (its backward sums), made once per layer."""
    return layer.derived("sum_plan.backward", lambda: SumPlan.of(layer.weight.T.tocsr()))
