"""RN_F(a + b) and RN_F(a * b) as lookup tables over every value of a small format.

The constructors' searches on 8-bit formats add and multiply whole grids of format values (every
candidate weight against every target state).  A format with at most ``TABLE_LIMIT`` values has at
most 1024^2 results per operation: each is computed once by the exact array path
(``ops.add_array`` / ``ops.mul_array``), after which a grid operation is an index lookup.  Values are
represented by their index in ``fmt.values()`` (ascending, one zero: -0 and +0 share an index, so
index equality is value equality); the index ``over`` stands for an overflow or a NaN input and
propagates through every operation.
"""
from __future__ import annotations

import numpy as np

from .errors import CondcheckError
from .formats import Format
from .ops import add_array, mul_array

#: formats with more values than this get no tables (two int16 tables of 1025^2 entries: 4 MiB)
TABLE_LIMIT = 1024

_TABLES: dict = {}


class OpTables:
    """Index tables of one format: ``index``, ``value``, ``add``, ``mul``, ``neg``."""

    def __init__(self, fmt: Format):
        V = fmt.values()
        n = len(V)
        self.fmt, self.values, self.over = fmt, V, n
        self._vals_nan = np.append(V, np.nan)
        self._scalar_index = {v: i for i, v in enumerate(V.tolist())}
        ia, ib = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        self.add_table = self._table(add_array, V[ia], V[ib])
        self.mul_table = self._table(mul_array, V[ia], V[ib])
        self.neg_table = np.append(self.index(-V), n).astype(np.int16)
        self._add_flat, self._mul_flat = self.add_table.reshape(-1), self.mul_table.reshape(-1)   # (views)

    def _table(self, op, a, b) -> np.ndarray:
        r, over = op(a, b, self.fmt)
        idx = np.full(a.shape, self.over, dtype=np.int64)
        idx[~over] = self.index(r[~over])
        out = np.full((self.over + 1, self.over + 1), self.over, dtype=np.int16)
        out[:-1, :-1] = idx
        return out

    def index(self, x) -> np.ndarray:
        """The index of every value of x (NaN -> ``over``); a finite value outside the format raises."""
        x = np.asarray(x, dtype=np.float64)
        # the common case in few numpy calls: every element a value (searchsorted puts NaN and values
        # above the largest at n, which the comparison with the NaN sentinel sends to the general path)
        k = self.values.searchsorted(x)
        if (self._vals_nan[k] == x).all():
            return k.astype(np.int16)
        k = np.clip(np.searchsorted(self.values, x), 0, self.over - 1)
        nan = np.isnan(x)
        bad = ~nan & (self.values[k] != x)
        if bad.any():
            raise CondcheckError(f"{float(x[bad][0])!r} is not a value of {self.fmt.name}")
        return np.where(nan, self.over, k).astype(np.int16)

    def index_of(self, v: float) -> int:
        """The index of one value (a dictionary lookup; -0 and +0 alike); a number outside the format
        raises as ``index`` does."""
        try:
            return self._scalar_index[v]
        except KeyError:
            return int(self.index(np.array([v]))[0])

    def value(self, idx) -> np.ndarray:
        """The values of indices (``over`` -> NaN), as float64."""
        return self._vals_nan[idx]

    def add(self, i, j) -> np.ndarray:
        """add_table[i, j] (broadcast), read flat: one ``take`` at i * (over + 1) + j, where two index
        arrays cost about twice as much (indices are table indices, 0 .. over)."""
        return self._add_flat.take(np.asarray(i, np.intp) * (self.over + 1) + j)

    def mul(self, i, j) -> np.ndarray:
        """mul_table[i, j] (broadcast), read flat as ``add``."""
        return self._mul_flat.take(np.asarray(i, np.intp) * (self.over + 1) + j)

    def neg(self, i) -> np.ndarray:
        return self.neg_table[i]


def op_tables(fmt: Format) -> OpTables | None:
    """The (cached) tables of fmt, or None when it has more than TABLE_LIMIT values."""
    key = id(fmt)
    hit = _TABLES.get(key)
    if hit is not None and hit.fmt is fmt:       # first: the searches ask per call, and counting costs more
        return hit
    if not fmt.enumerable or fmt.count_finite() > TABLE_LIMIT:
        return None
    hit = _TABLES[key] = OpTables(fmt)
    return hit
