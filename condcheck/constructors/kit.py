"""Exact arithmetic on arrays of format values for the constructors (``Kit``: rounded sums, products
and the rounded activation T and T'), and the value helpers both theorems share: membership, the values
near a real, powers of two.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CondcheckError
from ..formats import Format
from ..op_tables import op_tables
from ..ops import add_array, add_float, mul_array, mul_float
from ..rounded_activation import get_rounded
from ..rounding import round_array, round_float
from .errors import ConstructionError


def enumerated(fmt: Format) -> bool:
    """Formats whose values the constructors list in full (at most 16 bits: the activation's table too);
    larger ones are sampled."""
    return fmt.enumerable and fmt.bits <= 16


def is_neg_zero(x) -> bool:
    """Whether the number x is -0 (an index has no sign of zero: the table paths refuse a -0 bias)."""
    return x == 0 and math.copysign(1.0, x) < 0


def _ndim(x) -> int:
    """np.ndim(x), without its call overhead for the arrays and Python floats the searches pass."""
    t = type(x)
    if t is np.ndarray:
        return x.ndim
    if t is float or t is int:
        return 0
    return np.ndim(x)


class Kit:
    """RN_F arithmetic and T = sigma~ on arrays, raising on overflow (a network may not overflow).

    Scalars take a fast path (``ops.add_float``/``mul_float``, proved equal to the exact path in
    tests/test_ops.py, and a dictionary of the activation's table), since the constructor performs
    many single operations while it searches.
    """

    def __init__(self, activation, fmt: Format, implementation: str):
        self.fmt = fmt
        self._enumerated = enumerated(fmt)
        self._fits = fmt.fits_float64        # scalar ops: ops.mul_float/add_float's own float64 path, inlined
        self.R = get_rounded(activation, fmt, implementation)
        self.act = self.R.activation
        self._lookup = None
        self.boosts = {}            # step on values -> (a, c) of their boost (see theorem5.boosts.boost)
        self.wide_boosts = False    # boost weights beyond the powers of two (see theorem5.boosts)
        self.separator_rows_cache = None   # (values, rows) of the last separator search (separators.exhaustive)

    def _ok(self, r, over, what):
        if over.any():
            raise ConstructionError(f"{what} overflows {self.fmt.name}")
        return r

    def _scalar(self, op, a, b, what):
        r = op(float(a), float(b), self.fmt)
        if r is None:
            raise ConstructionError(f"{what} overflows {self.fmt.name}")
        return r

    # ``type(x) is float`` first: the searches pass Python floats, and np.ndim costs more than the operation
    def mul(self, a, b, what="a product"):
        if self._fits and type(a) is float and type(b) is float:
            r = round_float(a * b, self.fmt)          # = ops.mul_float under fits_float64
            if r is None:
                raise ConstructionError(f"{what} overflows {self.fmt.name}")
            return r
        if (type(a) is float and type(b) is float) or (_ndim(a) == 0 and _ndim(b) == 0):
            return self._scalar(mul_float, a, b, what)
        return self._ok(*mul_array(np.asarray(a, float), np.asarray(b, float), self.fmt), what)   # broadcasts

    def add(self, a, b, what="a sum"):
        if self._fits and type(a) is float and type(b) is float:
            r = round_float(a + b, self.fmt)          # = ops.add_float under fits_float64
            if r is None:
                raise ConstructionError(f"{what} overflows {self.fmt.name}")
            return r
        if (type(a) is float and type(b) is float) or (_ndim(a) == 0 and _ndim(b) == 0):
            return self._scalar(add_float, a, b, what)
        return self._ok(*add_array(np.asarray(a, float), np.asarray(b, float), self.fmt), what)   # broadcasts

    def _table_lookup(self, z, derivative, what):
        if self._lookup is None:
            t = self.R.table()
            sig = np.where(t.sigma_overflow, np.nan, t.sigma)
            dsig = np.where(t.dsigma_overflow, np.nan, t.dsigma)
            self._lookup = dict(zip(t.points.tolist(), zip(sig.tolist(), dsig.tolist())))
        try:
            v = self._lookup[float(z)][1 if derivative else 0]
        except KeyError:
            self.fmt.check(float(z), "activation input")          # raises naming the value
            raise
        if v != v:
            raise ConstructionError(f"{what} overflows {self.fmt.name}")
        return v

    def _indexed_T(self, z, derivative):
        """(values, overflow) of T or T' on an array of values of a tabulated format, by the values'
        table indices (sigma~'s table maps -0 and +0 alike, as the indices do); None when the format has
        no tables or z holds a number outside it (the array path then raises naming it)."""
        if self.tables is None:
            return None
        i = self.index(z)
        if i is None or (i == self.tables.over).any():        # NaN: the array path refuses it
            return None
        v, o = self.by_index(derivative)
        return v[i], o[i]

    def by_index(self, derivative=False):
        """(values, overflow) of T (or T') at every table index of a tabulated format, the overflow
        index last (NaN, overflowing); made once per Kit."""
        cache = self.__dict__.setdefault("_T_by_index", {})
        if derivative not in cache:
            v, o = (self.R.derivative_array if derivative else self.R.value_array)(self.tables.values)
            cache[derivative] = (np.append(v, np.nan), np.append(o, True))
        return cache[derivative]

    def kept(self, name: str, key, states, make):
        """``make()``, kept on the kit under ``name`` for the last two keys (the chunks of one construction
        ask again for the same values); ``states`` (or None) must be the very object it was made with."""
        memo = self.__dict__.setdefault(name, {})
        key = (key, id(states))
        hit = memo.get(key)
        if hit is None or hit[0] is not states:
            if len(memo) >= 2:
                memo.pop(next(iter(memo)))
            hit = memo[key] = (states, make())
        return hit[1]

    def T_index(self) -> np.ndarray:
        """The table index of T at every table index of a tabulated format (``over`` where T overflows,
        and at ``over``), made once per Kit."""
        hit = self.__dict__.get("_T_index_map")
        if hit is None:
            v, o = self.by_index(False)
            hit = self._T_index_map = self.tables.index(np.where(o, np.nan, v)).astype(np.intp)
        return hit

    def T(self, z, what="an activation value"):
        if self._enumerated and (type(z) is float or _ndim(z) == 0):
            return self._table_lookup(z, False, what)
        z = np.asarray(z, float)
        r = self._indexed_T(z, False)
        if r is not None:
            return self._ok(*r, what)
        v, o = self.R.value_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def dT(self, z, what="an activation derivative"):
        if self._enumerated and (type(z) is float or _ndim(z) == 0):
            return self._table_lookup(z, True, what)
        z = np.asarray(z, float)
        r = self._indexed_T(z, True)
        if r is not None:
            return self._ok(*r, what)
        v, o = self.R.derivative_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def row(self, terms, bias):
        """The paper-order affine row: products, summed left to right, bias last."""
        if terms and _ndim(bias) == 0 and not is_neg_zero(bias):
            r = self._row_indexed(terms, bias)
            if r is not None:
                return r
        s = None
        for w, v in terms:
            p = self.mul(w, v)
            s = p if s is None else self.add(s, p)
        if s is None:
            return np.asarray(bias, float)
        return self.add(s, bias)

    @property
    def tables(self):
        """The format's RN index tables (``op_tables``), or None."""
        if not hasattr(self, "_tables"):
            self._tables = op_tables(self.fmt)
        return self._tables

    def index(self, v):
        """Table indices of v (an int for a scalar), or None when v holds a number outside the format."""
        tb = self.tables
        try:
            return tb.index_of(float(v)) if _ndim(v) == 0 else tb.index(v)
        except CondcheckError:
            return None

    def T_row(self, terms, bias, what="an activation value"):
        """T(row(terms, bias)): on a tabulated format T read at the row's table indices (the values kit.T
        gives at the row's values: T by index is T of the value), else as written."""
        if terms and _ndim(bias) == 0 and not is_neg_zero(bias):
            s = self._row_index(terms, bias)
            if s is not None:
                v, o = self.by_index(False)
                return self._ok(v[s], o[s], what)
        return self.T(self.row(terms, bias), what)

    def _row_indexed(self, terms, bias):
        """``row`` on the index tables of a tabulated format, when some input is an array and every input
        is a value (else None): the same products and left-to-right sums, looked up, raising on the same
        first overflow.  The result's zeros are +0 as the rounded row's are, since the bias added last
        is not -0 (the caller checks), and RN(x + y) is -0 only for x = y = -0."""
        s = self._row_index(terms, bias)
        return None if s is None else self.tables.value(s)

    def _row_index(self, terms, bias):
        """The table indices of ``_row_indexed``'s values (or None where it does not apply)."""
        tb = self.tables
        if tb is None or not any(_ndim(v) or _ndim(w) for w, v in terms):
            return None
        over = tb.over
        ib = self.index(bias)
        if ib is None:
            return None
        idx = []
        for w, v in terms:
            iw, iv = self.index(w), self.index(v)
            if iw is None or iv is None:
                return None
            idx.append((iw, iv))
        s = None
        for iw, iv in idx:
            p = tb.mul_table[iw].take(iv) if _ndim(iw) == 0 else tb.mul_table[iw, iv]
            if (p == over).any():
                raise ConstructionError(f"a product overflows {self.fmt.name}")
            if s is not None:
                p = tb.add_table[s, p]
                if (p == over).any():
                    raise ConstructionError(f"a sum overflows {self.fmt.name}")
            s = p
        s = tb.add_table[s, ib]
        if (s == over).any():
            raise ConstructionError(f"a sum overflows {self.fmt.name}")
        return s


#: id(format) -> (format, the set of its values as floats), for ``in_format`` on enumerated formats
_VALUE_SETS: dict = {}


def in_format(F: Format, v) -> bool:
    """Is the number v a finite value of F?  (RN_F(v) == v on the scalar fast path; Fractions otherwise.)

    An enumerated format answers by set membership: its values are every finite float v with
    RN_F(v) == v (-0.0 finds 0.0 as RN_F(-0) = -0 does; NaN and +-Inf are in no set)."""
    hit = _VALUE_SETS.get(id(F))
    if hit is None or hit[0] is not F:
        hit = _VALUE_SETS[id(F)] = (F, frozenset(F.values().tolist()) if F.fits_float64 and enumerated(F) else None)
    if hit[1] is not None:
        try:
            return float(v) in hit[1]
        except (TypeError, ValueError, OverflowError):
            return False
    if F.fits_float64:
        try:
            v = float(v)
        except (TypeError, ValueError, OverflowError):
            return False
        r = round_float(v, F) if math.isfinite(v) else None
        return r is not None and r == v
    return F.contains(v)


def near_grid(F: Format, x, k: int = 2) -> np.ndarray:
    """For each real x (any shape): the values RN(x + j u/2), |j| <= 2k, u the spacing of F at x (half
    steps also reach the finer binade below a power of two), as an array of shape x.shape + (4k+1,),
    NaN where x is not finite or the value overflows."""
    x = np.asarray(x, float)
    fin = np.isfinite(x) & (x != 0)
    xs = np.where(fin, x, 1.0)
    e = np.maximum(np.floor(np.log2(np.abs(xs))), F.e_min)
    u = np.exp2(e - F.M - 1)
    cand = xs[..., None] + np.arange(-2 * k, 2 * k + 1) * u[..., None]
    r, over = round_array(cand.ravel(), F)
    r = r.reshape(cand.shape)
    return np.where(over.reshape(cand.shape) | ~fin[..., None], np.nan, r)


def near_values(F: Format, x, k: int = 2) -> np.ndarray:
    """The distinct finite nonzero values of F within about k ulps of the reals x (any shape).

    Candidate sets for searches on formats too large to try every value: the values RN(x + j u/2),
    |j| <= 2k, u the spacing at x (half steps also reach the finer binade below a power of two).
    """
    r = near_grid(F, x, k).ravel()
    return np.unique(r[np.isfinite(r) & (r != 0)])


def is_pow2(x: float) -> bool:
    if x == 0 or not math.isfinite(x):
        return False
    m, _ = math.frexp(abs(x))
    return m == 0.5
