"""Exact arithmetic on arrays of format values (``Kit``: rounded sums, products and the rounded
activation T and T'), and the small set helpers the searches share.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from .. import kernels
from ..errors import CondcheckError
from ..formats import Format, get_format
from ..op_tables import op_tables
from ..ops import add_array, add_float, mul_array, mul_float
from ..rounded_activation import get_rounded
from ..rounding import round_array, round_float
from ..targets import enumerated
from .errors import ConstructionError


def _neg_zero(x) -> bool:
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
        self.boosts = {}            # step on values -> (a, c) of their boost (see _boost)
        self.wide_boosts = False    # boost weights beyond the powers of two (see _boost_weights)

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
        if terms and _ndim(bias) == 0 and not _neg_zero(bias):
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
        if terms and _ndim(bias) == 0 and not _neg_zero(bias):
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


#: id(format) -> (format, the set of its values as floats), for ``_in`` on enumerated formats
_VALUE_SETS: dict = {}


def _in(F: Format, v) -> bool:
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


def _near_grid(F: Format, x, k: int = 2) -> np.ndarray:
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


def _near(F: Format, x, k: int = 2) -> np.ndarray:
    """The distinct finite nonzero values of F within about k ulps of the reals x (any shape).

    Candidate sets for searches on formats too large to try every value: the values RN(x + j u/2),
    |j| <= 2k, u the spacing at x (half steps also reach the finer binade below a power of two).
    """
    r = _near_grid(F, x, k).ravel()
    return np.unique(r[np.isfinite(r) & (r != 0)])


def _sample(S, n: int) -> np.ndarray:
    """At most n elements of the sorted array S, evenly spread, ends included."""
    S = np.asarray(S, float)
    return S if len(S) <= n else S[np.unique(np.linspace(0, len(S) - 1, n).astype(int))]


def _first_reached(tv: np.ndarray, fine: np.ndarray, k: int, chunk: int = 1024) -> np.ndarray:
    """Row r: tv at the first k columns j with |tv_j| >= fine[r], in column order, NaN-padded to k.

    What a stable argsort of the unreached columns picks (tests/test_theorem5_fast_paths.py compares
    the two), found by scanning |tv| in chunks once per distinct threshold: the first k columns are
    usually near the front, and a gate's rows share a few thresholds."""
    a = np.abs(tv)
    out = np.full((len(fine), k), np.nan)
    for f in np.unique(fine):
        found, n = [], 0
        for s in range(0, len(a), chunk):
            found.append(s + np.flatnonzero(a[s:s + chunk] >= f))
            n += len(found[-1])
            if n >= k:
                break
        idx = np.concatenate(found)[:k] if found else np.zeros(0, int)
        out[np.ix_(fine == f, np.arange(len(idx)))] = tv[idx]
    return out


def _rn_products(F: Format, t, factors) -> np.ndarray:
    """RN(...RN(RN(t f_1) f_2)... f_k) for an array t, NaN where a product overflows."""
    out = np.asarray(t, float)
    for f in factors:
        r, o = mul_array(out, np.full_like(out, f), F)
        out = np.where(o | np.isnan(out), np.nan, r)
    return out


def _preimage_bisect(F: Format, V: np.ndarray, S, factors) -> np.ndarray:
    """The values t of the ascending array V with RN(...RN(t f_1)... f_k) in S, in V's order: what
    ``V[np.isin(_rn_products(F, V, factors), S)]`` gives, by bisection instead of a pass over V.

    t -> RN(t f) is monotone (RN is, and so is multiplication by a constant), so is the chain, and the
    t's mapped to one s form a run of V: two bisections per s (2 log2 |V| scalar chains, ``mul_float``)
    find it.  An overflowing product lies at an end of V; it is keyed as the infinity of the product's
    sign and never matches, since only finite s are searched."""
    sign = math.prod(math.copysign(1.0, float(f)) for f in factors)
    fs = [float(f) for f in factors]
    # (the compiled kernel multiplies in float64 before rounding to F: exact only while a product of two
    # values of F, subnormals included, has at most 53 bits and stays inside float64's normal range)
    exact64 = 2 * (F.M + 1) <= 53 and 2 * (F.e_min - F.M) >= -1022 and 2 * (F.e_max + 1) <= 1023
    if kernels.HAVE_NUMBA and F.fits_float64 and exact64 and V.dtype == np.float64:
        # the same bisections compiled (``kernels.preimage_runs``; tests/test_theorem5_fast_paths.py)
        Su = np.unique(np.asarray(S, float))
        Su = Su[np.isfinite(Su)]
        if not len(Su):
            return V[:0]
        lo, hi = kernels.preimage_runs(V, fs, sign * Su, sign, F)
        return V[np.unique(np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())]))]

    def key(t):
        r = float(t)
        for f in fs:
            r = mul_float(r, f, F)
            if r is None:
                return math.copysign(math.inf, float(t))
        return sign * r

    runs = []
    for s in np.unique(np.asarray(S, float)):
        if math.isfinite(s):
            lo = bisect.bisect_left(V, sign * s, key=key)
            runs.append(np.arange(lo, bisect.bisect_right(V, sign * s, lo=lo, key=key)))
    return V[np.unique(np.concatenate(runs))] if runs else V[:0]


def _same_values(F: Format, name: str) -> bool:
    """Whether F has the finite values of the built-in format ``name`` (by its fields, not its name: a
    custom b7_8 has bfloat16's values, b10_5 float16's)."""
    G = get_format(name)
    return (F.M, F.e_min, F.e_max, F.max) == (G.M, G.e_min, G.e_max, G.max)


def _codes16(F: Format):
    """For formats with the values of bfloat16 or float16: a function from an array of values of F
    (float64) to their 16-bit encodings (exact conversions: every value of F is a float32, and a float16);
    None for other formats."""
    if _same_values(F, "bfloat16"):
        return lambda v: (np.asarray(v, np.float64).astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    if _same_values(F, "float16"):
        return lambda v: np.asarray(v, np.float64).astype(np.float16).view(np.uint16).astype(np.int64)
    return None


def _stable_first(k: np.ndarray) -> int:
    """``int(np.argsort(k, kind="stable")[0])`` without the sort: the first smallest value, NaN after
    every number (as the sort places it), the first NaN when all are NaN.  (k not empty.)"""
    nan = np.isnan(k)
    if not nan.any():
        return int(np.argmin(k))
    if nan.all():
        return 0
    num = np.flatnonzero(~nan)
    return int(num[int(np.argmin(k[num]))])


def _lex_first(*keys) -> int:
    """The first index of np.lexsort(keys[::-1]) (keys[0] the primary key; ties to the lowest index, as
    the stable sort keeps them), by successive minima instead of a sort.  Keys hold no NaN."""
    m = np.ones(len(keys[0]), bool)
    for k in keys:
        m &= k == k[m].min()
    return int(np.argmax(m))


class _GainGroups:
    """``_lex_first(inexact, np.round(np.abs(gain - share)), abs_t)`` for any share, from a table made once
    per ranked blocker list (``_Ctx._transfer_greedy`` asks for one share per layer and branch: 233,000
    times on the d = 2 float8_e5m2 box with relu).

    Why it is the same index: the first key is fixed, so only the entries with the smallest inexact
    compete; the second key is a function of the gain alone (the same float operations on the same
    value), so all entries of one gain value tie on it, and the winner is, among the gain values with
    the smallest rounded distance to share, the entry with the smallest (abs_t, index), which is kept
    per gain value here.  Keys hold no NaN.  tests/test_theorem5_fast_paths.py compares it with
    ``_lex_first``."""

    def __init__(self, gain, inexact, abs_t):
        idx = np.flatnonzero(inexact == inexact.min()) if len(inexact) else np.zeros(0, np.int64)
        self.gains, inv = np.unique(gain[idx], return_inverse=True)
        inv = inv.reshape(-1)
        o = np.lexsort((idx, abs_t[idx], inv))              # by gain value, then abs_t, then index
        starts = np.flatnonzero(np.concatenate(([True], inv[o][1:] != inv[o][:-1]))) if len(o) else o
        self.best = idx[o][starts]                          # per gain value: its smallest (abs_t, index)
        self.best_t = abs_t[self.best]
        self._lists = (self.gains.tolist(), self.best.tolist(), self.best_t.tolist())

    def first(self, share: float) -> int:
        """The index for this share: among the gain values (ascending) the ones with the smallest
        round(|gain - share|), a function that does not increase up to share's position and does not
        decrease after it, so they are a run around that position, found by bisection and a walk (the same
        float64 differences, and Python's round ties to even as np.round does); then the smallest
        (abs_t, index).  ``_first_np`` is the whole-array version (empty tables, a share that is not
        finite); tests/test_theorem5_fast_paths.py compares both with ``_lex_first``."""
        g, best, best_t = self._lists
        n = len(g)
        if not n or not math.isfinite(share):
            return self._first_np(share)
        p = bisect.bisect_left(g, share)
        m = min(round(abs(g[k] - share)) for k in (p - 1, p) if 0 <= k < n)
        lo = p - 1 if p > 0 and round(abs(g[p - 1] - share)) == m else p
        while lo > 0 and round(abs(g[lo - 1] - share)) == m:
            lo -= 1
        hi = p if p < n and round(abs(g[p] - share)) == m else p - 1
        while hi < n - 1 and round(abs(g[hi + 1] - share)) == m:
            hi += 1
        if lo == hi:
            return best[lo]
        return best[min(range(lo, hi + 1), key=lambda k: (best_t[k], best[k]))]

    def _first_np(self, share: float) -> int:
        off = np.round(np.abs(self.gains - share))
        k = np.flatnonzero(off == off.min())
        if len(k) == 1:
            return int(self.best[k[0]])
        return int(self.best[k][_lex_first(self.best_t[k], self.best[k])])


def _lg(x) -> float:
    """log2 |x| of a nonzero float (subnormals included); sums of these replace products and quotients
    that would overflow or underflow float64 when the format is float64 itself."""
    return math.log2(abs(float(x)))


def _pow2(x: float) -> bool:
    if x == 0 or not math.isfinite(x):
        return False
    m, _ = math.frexp(abs(x))
    return m == 0.5
