"""Sparse layer assembly helpers: columns of a layer under construction and one-term layers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..formats import Format
from ..network import Layer
from ..rounding import round_array
from .errors import ConstructionError


@dataclass
class Cols:
    """Columns of one layer under construction: each neuron is a dict of terms plus a bias."""

    rows: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)

    def add(self, terms: dict, bias: float, key=None) -> int:
        """A new column, or the column already added under ``key`` (a neuron several branches share)."""
        n = len(self.rows)
        if key is not None:
            i = self.keys.setdefault(key, n)         # (one hash of the key: branch keys are long tuples)
            if i != n:
                return i
        self.rows.append((terms, bias))
        return n

    def layer(self, n_in: int, fmt: Format | None = None) -> Layer:
        r, c, d = [], [], []
        for i, (terms, _) in enumerate(self.rows):
            for j, w in terms.items():
                if w != 0:
                    r.append(i), c.append(j), d.append(w)
        return _layer_of(d, r, c, np.array([b for _, b in self.rows], dtype=np.float64), n_in, fmt)


def _layer_of(d, r, c, bias, n_in, fmt):
    """The Layer with entries d at (r, c) and these biases, every number checked to be a value of fmt."""
    m = sp.csr_matrix((d, (r, c)), shape=(len(bias), n_in), dtype=np.float64)
    if fmt is not None:
        for what, arr in (("weight", m.data), ("bias", bias)):
            rr, over = round_array(arr, fmt)
            bad = np.nonzero(over | (rr != arr))[0]
            if len(bad):
                raise ConstructionError(f"internal: a {what} {arr[bad[0]]!r} is not a value of {fmt.name}")
    return Layer(m, bias)


def one_term_layer(blocks, n_in, fmt):
    """The layer of rows with one term each, given as blocks (columns, weights, biases) in row order (a
    column -1: a row without terms, a constant): what ``Cols.add({col: w}, b)`` per row (``{}`` for -1)
    and ``Cols.layer`` give, the same entries in the same order, without a dict per row (the layers
    after the gates hold one row per branch: 145,000 per layer on the d = 2 float8 box).
    tests/test_theorem5_fast_paths.py compares the two."""
    cols = np.concatenate([np.asarray(c, np.int64).reshape(-1) for c, _, _ in blocks])
    w = np.concatenate([np.asarray(x, np.float64).reshape(-1) for _, x, _ in blocks])
    bias = np.concatenate([np.asarray(b, np.float64).reshape(-1) for _, _, b in blocks])
    keep = (cols >= 0) & (w != 0)
    return _layer_of(w[keep], np.arange(len(cols))[keep], cols[keep], bias, n_in, fmt)
