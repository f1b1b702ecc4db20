"""Sparse layer assembly helpers: columns of a layer under construction and one-term layers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import scipy.sparse as sp

from ..formats import Format
from ..network import Layer
from ..rounding import round_array
from .errors import ConstructionError


@dataclass
class Cols:
    """Columns of one layer under construction: each neuron its terms -- a dict {column: weight}, or
    (columns, weights) arrays of distinct columns for a long row -- plus a bias."""

    rows: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)

    def add(self, terms, bias: float, key=None) -> int:
        """A new column, or the column already added under ``key`` (a neuron several branches share)."""
        n = len(self.rows)
        if key is not None:
            i = self.keys.setdefault(key, n)         # (one hash of the key: branch keys are long tuples)
            if i != n:
                return i
        self.rows.append((terms, bias))
        return n

    def layer(self, n_in: int, fmt: Format | None = None) -> Layer:
        """The Layer of these rows (zero weights left out), built from flat arrays: a Python number per
        weight cost about 100 bytes, and the bfloat16 boxes' step rows hold tens of millions."""
        cols, weights, counts, batch = [], [], [], []

        def flush():                           # (consecutive dict rows, flattened at once)
            if batch:
                cols.append(np.fromiter(chain.from_iterable(t.keys() for t in batch), np.int64))
                weights.append(np.fromiter(chain.from_iterable(t.values() for t in batch), np.float64))
                counts.extend(len(t) for t in batch)
                batch.clear()
        for terms, _ in self.rows:
            if isinstance(terms, dict):
                batch.append(terms)
            else:
                flush()
                cols.append(np.asarray(terms[0], np.int64))
                weights.append(np.asarray(terms[1], np.float64))
                counts.append(len(cols[-1]))
        flush()
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        del cols
        w = np.concatenate(weights) if weights else np.zeros(0, np.float64)
        del weights
        counts = np.asarray(counts, np.int64)
        zero = w == 0
        if zero.any():
            rows = np.repeat(np.arange(len(counts)), counts)
            counts = np.bincount(rows[~zero], minlength=len(counts))
            c, w = c[~zero], w[~zero]
        del zero
        indptr = np.concatenate([[0], np.cumsum(counts)])
        bias = np.array([b for _, b in self.rows], dtype=np.float64)
        return _csr_layer(w, c, indptr, bias, n_in, fmt)


def _layer_of(d, r, c, bias, n_in, fmt):
    """The Layer with entries d at (r, c) and these biases, every number checked to be a value of fmt."""
    m = sp.csr_matrix((d, (r, c)), shape=(len(bias), n_in), dtype=np.float64)
    _check_values(m.data, bias, fmt)
    return Layer(m, bias)


def _csr_layer(data, cols, indptr, bias, n_in, fmt):
    """The Layer of rows given in CSR form (each row's columns distinct, no zero weights): what
    ``_layer_of`` makes of the same entries, without its COO copies (tens of millions on bfloat16)."""
    index = np.int32 if max(n_in, len(data)) < 2 ** 31 - 1 else np.int64
    m = sp.csr_matrix((data, cols.astype(index), indptr.astype(index)), shape=(len(bias), n_in))
    m.sort_indices()
    _check_values(m.data, bias, fmt)
    return Layer(m, bias)


def _check_values(weights, bias, fmt, block: int = 1 << 20):
    """Every weight and bias a value of fmt (checked a block at a time: a copy of tens of millions of
    weights would be the largest allocation of an assembly)."""
    if fmt is None:
        return
    for what, arr in (("weight", weights), ("bias", bias)):
        for a in range(0, len(arr), block):
            part = arr[a:a + block]
            rr, over = round_array(part, fmt)
            bad = np.nonzero(over | (rr != part))[0]
            if len(bad):
                raise ConstructionError(f"internal: a {what} {part[bad[0]]!r} is not a value of {fmt.name}")


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
