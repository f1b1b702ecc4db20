"""Theorem 5: a network with f(x) = f*(x) and D_(f,x)(h*(x)) = g*(x) on every point of a finite domain.

The construction (condcheck's own; the paper's weights were not available) rests on one property of
the rounded activation T = sigma~, the *dead tail* of Condition 1: pre-activations z <= z_d where
T(z) = L and T'(z) = 0 exactly.  A neuron pushed into the dead tail outputs the constant L and passes
no gradient at all, whatever its upstream.  Layers (d = input dimension):

1. separators, sources, constants.  For every coordinate j and every gap between consecutive
   coordinate values of the domain, a neuron n = T(w x_j + b) whose values on one side of the gap are
   all below (or all above) its values on the other side (a *monotone separator*, found by search
   over (w, b)).  For every gradient branch (point z, coordinate j) a *source* T(w_g x_j + b_g) whose
   pre-activation at z is a state with T' != 0 (Condition 3).  Constant neurons (zero weights) give
   the constants the next row needs.
2. steps and passes.  A *step* row v = s*n (+) kappa (+) c_k0 (+) (-c_k0) (+) ... (+) c_K (+) (-c_K)
   (+) z_d.  kappa puts the gap at 0: v <= 0 on the *dead side*, v >= g > 0 on the *on side*.  The
   chain of constants c_k = succ(2^k) (rounding to nearest, ties to even) snaps any v >= g up to at
   least 2^(K-M) and keeps v <= 0 at most 0, so the step's pre-activation is <= z_d (dead) on one side
   and far from the tail on the other.  Two steps per gap: "x_j >= upper value" and
   "x_j <= lower value".  The *pass* neuron of a gradient branch carries its source on (states
   with T' != 0 at z).
3. boosts.  B = T(a U + c) of each step U keeps L dead and moves the on value as far from L as a
   power-of-two weight allows (the chain ends at 2^(K-M), which can leave the on value near L, e.g.
   swish~(-2) = -0.23 on float8_e4m3; a gate would then need large weights, and a gate's weights
   multiply its backward value).  A second pass beside them relays each gradient branch.  Boost
   weights are powers of two; where a value gate's backward gain overflows (upstream values near
   Omega) the construction is retried with *wide boosts*: any weight, every step boosted twice, on
   values next to Omega (``_boost_weights``).
4. gates.  For point z the gating steps are the down-step of the gap below z_j and the up-step of the
   gap above z_j, for each j: all of them are dead exactly at x = z, and at any other point of the
   domain at least one is on.  The value neuron V_z = T(beta * sum(boosts) + gamma) and the gradient
   gate G_z = T(beta * sum(boosts) + a3 * pass + gamma) are in a live state at z and pushed into the
   dead tail elsewhere.  At z the steps they read are dead, so no gradient reaches the separators
   through them; elsewhere V_z and G_z are dead.  So the value path has AD gradient exactly 0 on the
   whole domain, and a gradient branch is nonzero only at its own point.  The backward values that
   a point's gates send into its shared gating steps meet in one sum, so each is kept below
   Omega / (1 + 2d).
5. value outputs.  V'_z = T(a_v V_z + c_v) maps L to a zero of T and the on value of V_z to a power
   of two P_z, so that the output weight f*(z)/P_z is exact.  A value branch shorter than the gradient
   branches is padded with relays after V'_z (0 -> a zero of T, P_z -> P_z) or, when their weights
   would overflow the backward value at the other points (tanh~'(0) = 1), with blockers between V_z
   and V'_z, through which L stays dead.  Two constant neurons give +C and -C.
   Gradient branches get *blocker* layers B_k = T(a_k B_(k-1) + c_k) (B_0 = G_z): at z the
   pre-activation is a state with T' != 0, at every other point (input L) it is dead.  So at the
   other points the backward value stops right after the output weight, whatever the weights a_k,
   and the a_k carry the ratio g*/h* (up to about Omega per layer) where only z sees them.
6. output: C (+) A_1 B_1 (+) ... (-C) (+) f_1 V'_1 (+) ...  Every gradient-branch term is 0 or below a
   quarter ulp of C, so it is absorbed: the partial sum stays C, then C - C = 0, and the value terms
   (exactly one nonzero at each domain point) give f*(x).  C is the largest power of two whose constant
   neurons keep every upstream value finite (``_Constants.absorber``).  AD still sees the weights A: the backward
   chain y (x) A (x) T'(b_n) (x) a_n ... (x) T'(b_1) (x) a_1 (x) T'(gate) (x) a3 (x) T'(p2) (x) a2 (x)
   T'(s0) (x) w_g equals g*_j(z) exactly.  Exactness is decided on sets (every value of the format
   tried): the values the fixed factors map to g*, their preimages through each blocker layer, and an
   A with RN(y A) in the last set.  Every suffix product of the chain must keep the backward value a
   finite value of the format, which is why the weights before the gate are chosen by size; when the
   source cannot (|g*| / (|w_g| |T'(s0)|) > Omega, e.g. sigmoid with T' <= 1/4), two branches carry
   g*/2 each and their contributions meet exactly in x_j's sum.

Sharpened steps (8-bit formats with a narrow range, only where a step fails as above): on
float8_e4m3b11fnuz (Omega = 30, dead tails from -5 to -13) a separator's gap is far below |z_d| and the
chain lifts on values to at most 2^(e_max - M) = 2, so the step row stays next to the tail.  Such a step
reads *sharpening* layers T(w n + b) (``_sharpen_layer``: exhaustive over F x F on the RN tables) that
pull the two sides into far-apart clusters, and its row may be scaled up.  Every step then spans the
same layers (the others are boosted again, or sharpened to the same depth), and every gradient branch
relays its second pass through as many pass layers (weight -1, a pass state at its point), whose
derivatives join the backward chain.

Domains with d >= 2 and more than EXACT_GATE_POINTS points use *sliced gating* (``_SlicedCtx``): the
gates of layer 4 are built per coordinate value (an indicator per slice x_j = v, and a slice gate per
gradient source), and each point gets AND gates of those in a fifth layer.  A point's gates then read d
neurons that are dead off two slices, instead of 2d steps that vary over the whole domain, so building
and verifying them costs about N (not N^2) rounded sums, and every AND gate's pre-activation takes at
most 2^d values on the whole domain, all checked exactly.

Formats too large to enumerate (float32, float64): the activation is known on sampled states only
(``find_states``: short significands of every binade, the preimages of powers of two, nothing inside
the dead tail), separators are evaluated on demand (``separators._SampledAct``), and every set above
(S_0, preimages, weights, biases) is a candidate set around the solution of its equation, kept only
where the exact test holds.  A coarse candidate set can make a search fail, never make it wrong.

Every number is chosen by exact computation on the domain and the network is verified exactly on
every point before it is returned.  A failure of any requirement raises ConstructionError naming it.
"""
from __future__ import annotations

import itertools
import bisect
import math
from fractions import Fraction
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from . import kernels
from .errors import CondcheckError
from .formats import Format, get_format
from .network import Layer, Network
from .op_tables import op_tables
from .ops import add_array, add_float, mul_array, mul_float
from .rounded_activation import get_rounded
from .rounding import round_array, round_float
from .targets import enumerated


#: domains with at most this many points evaluate each gate's sum on every point; larger ones bound it
EXACT_GATE_POINTS = 512

#: transfer searches (``_Ctx._transfer_search``, uncached) one attempt of ``_gradient_branches`` may run
#: on a format with more than 4,096 values before it gives up (SearchGaveUp); each retry (join, gates near
#: 1) gets as many again.  relu on 1,024 bfloat16 box points: at most 145 for every point that its first
#: attempt builds
TRANSFER_BUDGET = 400

#: when every budgeted attempt of a point gave up, search once more without a budget (as before the budget
#: existed: sigmoid on 4,096 distinguishable bfloat16 points, point 21, g*/h* = 2^203, needs it); False
#: lets SearchGaveUp through (tests of the budget)
UNBUDGETED_LAST = True

#: the blocker searches with a window of weights (large formats) kept per on value, most recent first
BLOCKER_WINDOWS = 16

#: 8-bit networks with at most this many (points x nonzero parameters) are verified by the dense numpy
#: interpreter (no compiled code to load: the full float8 box, d = 1, is at most 233 x 27,000)
NUMPY_VERIFY_WORK = 10_000_000

#: the last-layer search (``_Ctx._last_layer_tables``) builds an upstream value's reach rows after this many calls
REACH_ROWS_AFTER = 32

#: sliced gating (d >= 2) on the small formats: each gradient branch is searched from one layer after its
#: gate upwards (the point's own fewest layers), and a branch shorter than the final depth is padded with
#: exact relays (``_Ctx.pad_gradient``), rebuilt at that depth only where no relay pads it.  Searching
#: from the depth reached so far first cost a full failing sweep (every source, scale and gate) for each
#: point that works only with fewer layers, and a rebuild for each one built before the depth grew
SHORTEST_FIRST_SLICED = True


class ConstructionError(CondcheckError):
    """The constructor could not build the network; the message names the requirement that failed."""


class ValueGainOverflow(ConstructionError):
    """A value gate's backward gain overflows (large |h*| |f*|): construct_theorem5 retries with wide boosts."""


class SearchGaveUp(ConstructionError):
    """A gradient branch search used up its transfer budget (``TRANSFER_BUDGET``): ``_gradient_branches``
    moves on to its next variant (or raises this, naming the point) instead of trying every source weight,
    scale, gate and depth, which can take hours on a 16-bit format."""


class ConditionFailure(ConstructionError):
    """The activation fails one of Conditions 1-3 on the format (a refusal, not a construction attempt)."""


# ---- exact arithmetic on arrays of format values ------------------------------------------------------
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
        if (type(a) is float and type(b) is float) or (np.ndim(a) == 0 and np.ndim(b) == 0):
            return self._scalar(mul_float, a, b, what)
        return self._ok(*mul_array(np.asarray(a, float), np.asarray(b, float), self.fmt), what)   # broadcasts

    def add(self, a, b, what="a sum"):
        if self._fits and type(a) is float and type(b) is float:
            r = round_float(a + b, self.fmt)          # = ops.add_float under fits_float64
            if r is None:
                raise ConstructionError(f"{what} overflows {self.fmt.name}")
            return r
        if (type(a) is float and type(b) is float) or (np.ndim(a) == 0 and np.ndim(b) == 0):
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

    def T(self, z, what="an activation value"):
        if self._enumerated and (type(z) is float or np.ndim(z) == 0):
            return self._table_lookup(z, False, what)
        z = np.asarray(z, float)
        r = self._indexed_T(z, False)
        if r is not None:
            return self._ok(*r, what)
        v, o = self.R.value_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def dT(self, z, what="an activation derivative"):
        if self._enumerated and (type(z) is float or np.ndim(z) == 0):
            return self._table_lookup(z, True, what)
        z = np.asarray(z, float)
        r = self._indexed_T(z, True)
        if r is not None:
            return self._ok(*r, what)
        v, o = self.R.derivative_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def row(self, terms, bias):
        """The paper-order affine row: products, summed left to right, bias last."""
        if terms and np.ndim(bias) == 0 and not (bias == 0 and math.copysign(1.0, bias) < 0):
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
            return tb.index_of(float(v)) if np.ndim(v) == 0 else tb.index(v)
        except CondcheckError:
            return None

    def _row_indexed(self, terms, bias):
        """``row`` on the index tables of a tabulated format, when some input is an array and every input
        is a value (else None): the same products and left-to-right sums, looked up, raising on the same
        first overflow.  The result's zeros are +0 as the rounded row's are, since the bias added last
        is not -0 (the caller checks), and RN(x + y) is -0 only for x = y = -0."""
        tb = self.tables
        if tb is None or not any(np.ndim(v) or np.ndim(w) for w, v in terms):
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
            p = tb.mul_table[iw, iv]
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
        return tb.value(s)


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


# ---- the activation's states ----------------------------------------------------------------------------
@dataclass
class States:
    """Pre-activation states of T that the construction uses (all values of an enumerable format)."""

    z: np.ndarray            # candidate pre-activations, ascending
    t: np.ndarray            # T(z)
    dt: np.ndarray           # T'(z)
    L: float                 # the dead-tail value
    z_dead: float            # every candidate <= z_dead is dead: T = L and T' = 0
    dead_count: int

    def dead(self, z) -> np.ndarray:
        return np.asarray(z) <= self.z_dead

    @property
    def passes(self):
        """States with T' a nonzero power of two (exact gradient scaling)."""
        m = np.array([_pow2(v) for v in self.dt])
        return self.z[m], self.t[m], self.dt[m]

    @property
    def constants(self):
        """States whose value is a positive power of two (constant neurons)."""
        m = np.array([_pow2(v) and v > 0 for v in self.t])
        return self.z[m], self.t[m]


def _state_candidates(F: Format, z_dead: float) -> np.ndarray:
    """Pre-activations whose states stand for the activation on formats too large to enumerate.

    The values +-m 2^e with a short significand m (1, 1.25, 1.5, 1.75; 1 and 1.5 for float64-sized
    formats, whose certified evaluations are slow), every exponent for formats up to float32's size and
    |e| <= 96 beyond (with the powers of two of every exponent), above the dead tail, plus 0, z_d and the
    values next to z_d.  Every search of the construction keeps
    only what its exact test accepts, so a coarse set can make a search fail but never make it wrong.
    """
    wide = F.e_max > 255
    mants = np.array([1.0, 1.5] if wide else [1.0, 1.25, 1.5, 1.75])
    lo, hi = (max(F.e_min - F.M, -96), min(F.e_max, 96)) if wide else (F.e_min - F.M, F.e_max)
    e = np.arange(lo, hi + 1)
    m = np.ldexp(mants[None, :], e[:, None]).ravel()
    if wide:       # powers of two of every exponent: sources and passes must meet huge and tiny inputs
        m = np.concatenate([m, np.ldexp(1.0, np.arange(F.e_min - F.M, F.e_max + 1))])
    z = np.concatenate([m, -m, [0.0]])
    z = z[z > z_dead]       # the tail below z_d is dead by Condition 1: only st.dead() asks about it
    z = np.concatenate([z, _near(F, np.array([z_dead]), 2), [z_dead]])
    r, over = round_array(z, F)
    return np.unique(r[~over])


def find_states(kit: Kit, tail: dict) -> States:
    """The states of T on every value of the format (at most 16 bits), else on ``_state_candidates``;
    the dead tail is Condition 1's witness ``tail``."""
    z_dead = float(Fraction(tail["z_dead"]["fraction"]))
    L = float(Fraction(tail["L"]["fraction"]))
    if enumerated(kit.fmt):
        tab = kit.R.table()
        z, t, dt, o1, o2 = tab.points, tab.sigma, tab.dsigma, tab.sigma_overflow, tab.dsigma_overflow
    else:
        z = _state_candidates(kit.fmt, z_dead)
        t, o1 = kit.R.value_array(z)
        extra = np.setdiff1d(_pow2_preimages(kit, z[~o1], t[~o1]), z)
        te, oe = kit.R.value_array(extra)
        order = np.argsort(np.concatenate([z, extra]), kind="stable")
        z, t, o1 = (np.concatenate(p)[order] for p in ((z, extra), (t, te), (o1, oe)))
        dt, o2 = kit.R.derivative_array(z)
    ok = ~(o1 | o2)
    z, t, dt = z[ok], t[ok], dt[ok]
    return States(z, t, dt, L, z_dead, int(np.count_nonzero(z <= z_dead)))


def _ordinal(x: np.ndarray) -> np.ndarray:
    """float64 -> int64, strictly increasing with the value (-0 and +0 both map to 0)."""
    b = np.asarray(x, np.float64).view(np.int64)
    return np.where(b < 0, -(b & np.int64(0x7FFFFFFFFFFFFFFF)), b)


def _from_ordinal(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, np.int64)
    return np.where(k < 0, -(-k).view(np.float64), k.view(np.float64))


def _pow2_preimages(kit: Kit, z: np.ndarray, t: np.ndarray, span: int = 64) -> np.ndarray:
    """Values q of the format with T(q) a positive power of two 2^k (|k| <= span) that the sampled
    states miss (tanh~(q) = 1/2 at q = 0.549...): wherever T crosses 2^k between consecutive samples,
    bisect on the values between them (float64 order, rounded to the format) and keep the neighbours q
    with T(q) = 2^k exactly.  Constants and value outputs need such states (a power of two P makes f*/P
    exact); a bounded activation has few of them among short significands."""
    F = kit.fmt
    lo_k, hi_k = max(F.e_min - F.M, -span), min(F.e_max, span)
    P = np.ldexp(1.0, np.arange(lo_k, hi_k + 1))
    P = P[~np.isin(P, t)]                       # powers of two some sampled state already gives
    side = np.sign(t[:, None] - P[None, :])
    i, j = np.nonzero(side[:-1] * side[1:] < 0)
    if len(i) == 0:
        return np.zeros(0)
    target, rising = P[j], t[i + 1] > t[i]
    lo, hi = _ordinal(z[i]), _ordinal(z[i + 1])
    for _ in range(64):
        open_ = hi - lo > 1
        if not open_.any():
            break
        mid = lo + (hi - lo) // 2
        zm, over = round_array(_from_ordinal(mid), F)
        tm, ot = kit.R.value_array(np.where(over, 0.0, zm))
        below = np.where(rising, tm < target, tm > target) & ~over & ~ot
        lo = np.where(open_ & below, mid, lo)
        hi = np.where(open_ & ~below, mid, hi)
    cand = _near(F, _from_ordinal(np.concatenate([lo, hi])), 2)
    tc, oc = kit.R.value_array(cand)
    return cand[~oc & (tc > 0) & (np.abs(np.frexp(tc)[0]) == 0.5)]


# ---- step layer ----------------------------------------------------------------------------------------
@dataclass
class Step:
    coord: int
    gap: int                 # index of the upper value of the gap in the coordinate's sorted values
    up: bool                 # True: on iff x_j >= upper value; False: on iff x_j <= lower value
    w: float
    b: float
    s: float                 # sign applied to the separator
    kappa: float
    k0: int
    K: int
    on_min: float = 0.0      # min |T - L| of the boosted step over the on side
    on_max: float = 0.0
    on_sign: float = 0.0
    boost_a: float = 1.0     # the boost T(boost_a U + boost_c) of the step U (layer 3)
    boost_c: float = 0.0
    on_lo: float = 0.0       # smallest and largest boosted on value (the gates' bound over other points)
    on_hi: float = 0.0
    sharpen: tuple = ()      # (w, b) of layers T(w n + b) between the separator and the step row
    reboost: tuple = ()      # (a, c) of boosts after the boost (pad the step to the network's step depth)
    lift: tuple = ()         # ((a, c),) of the boost after a lift; boost_a, boost_c are then the lift


def _separator_table(kit: Kit, vals: np.ndarray, st: States):
    """T(w x + b) for every (w, b) pair of candidates, on the coordinate values; rows finite only."""
    F = kit.fmt
    V = F.values()
    tb = op_tables(F)
    if tb is not None:
        return _separator_table_indexed(kit, tb, vals)
    cands = []
    for w in V:
        if w == 0:
            continue
        wx, o = mul_array(np.full_like(vals, w), vals, F)
        if o.any():
            continue
        pre, o2 = add_array(np.broadcast_to(wx, (len(V), len(vals))), np.broadcast_to(V[:, None], (len(V), len(vals))), F)
        good = ~o2.any(axis=1)
        if not good.any():
            continue
        pre = pre[good]
        t, ov = kit.R.value_array(pre.ravel())
        t = t.reshape(pre.shape)
        fine = ~ov.reshape(pre.shape).any(axis=1)
        cands.append((np.full(fine.sum(), w), V[good][fine], t[fine]))
    W = np.concatenate([c[0] for c in cands])
    B = np.concatenate([c[1] for c in cands])
    Tv = np.concatenate([c[2] for c in cands])
    return W, B, Tv


def _separator_table_indexed(kit: Kit, tb, vals: np.ndarray):
    """``_separator_table`` on the format's index tables: the same sums, products and T values (T is a
    function of the value: sigma~'s table maps -0 and +0 alike), looked up instead of rounded
    (tests/test_op_tables.py compares the two)."""
    W, B, I, t_all = _separator_rows_indexed(kit, tb, vals)
    return W, B, t_all[I]


def _separator_rows_indexed(kit: Kit, tb, vals: np.ndarray):
    """(W, B, I, t): the candidates of ``_separator_table`` and the table index of each pre-activation
    (a row per candidate), and T on every index (NaN at the overflow index)."""
    V = tb.values
    n = tb.over
    iv = tb.index(vals)
    t_all, t_bad = kit.by_index()                   # the overflow index: never a finite row
    iV = np.arange(n)[:, None]
    cands = []
    for k in range(n):
        w = V[k]
        if w == 0:
            continue
        iwx = tb.mul_table[k, iv]
        if (iwx == n).any():
            continue
        ipre = tb.add_table[iwx[None, :], iV]
        good = ~(ipre == n).any(axis=1)
        if not good.any():
            continue
        ipre = ipre[good]
        fine = ~t_bad[ipre].any(axis=1)
        cands.append((np.full(fine.sum(), w), V[good][fine], ipre[fine]))
    W = np.concatenate([c[0] for c in cands])
    B = np.concatenate([c[1] for c in cands])
    I = np.concatenate([c[2] for c in cands])
    return W, B, I, t_all


def _separator_extremes(kit: Kit, vals):
    """``_extremes(_separator_table(kit, vals, None))`` (without the table itself, which the choice does
    not read): on a tabulated format, T on the value-major grid straight from the pre-activations'
    indices, in float32 exactly when _extremes would use it (every T value of the table a float32)."""
    tb = op_tables(kit.fmt)
    if tb is None:
        return _extremes(_separator_table(kit, vals, None))
    W, B, I, t_all = _separator_rows_indexed(kit, tb, vals)
    used = np.zeros(len(t_all), bool)
    used[I] = True
    tv = t_all[used]
    src = t_all.astype(np.float32) if np.array_equal(tv.astype(np.float32), tv) else t_all
    T = src[I.T]                                    # (values, candidates), C order
    return (W, B, None, _accumulate(np.minimum, T, False), _accumulate(np.maximum, T, False),
            _accumulate(np.minimum, T, True), _accumulate(np.maximum, T, True))


def _extremes(table):
    """Prefix and suffix minima and maxima of every candidate separator along the sorted values, as
    (value index, candidate) arrays, so that the rows of a gap are contiguous."""
    W, B, Tv = table
    T32 = Tv.astype(np.float32) if np.array_equal(Tv.astype(np.float32), Tv) else Tv
    T = np.ascontiguousarray(T32.T)
    return (W, B, Tv, _accumulate(np.minimum, T, False), _accumulate(np.maximum, T, False),
            _accumulate(np.minimum, T, True), _accumulate(np.maximum, T, True))


def _accumulate(op, T, reverse):
    """op.accumulate of the rows of T (from the last row up if reverse), one whole row at a time (numpy's
    accumulate along axis 0 walks each column with a stride: ~50x slower here).  The same values: each
    row is op of the previous result row and T's row, in the same order."""
    out = np.empty_like(T)
    n = len(T)
    rows = range(n - 1, -1, -1) if reverse else range(n)
    prev = None
    for i in rows:
        if prev is None:
            out[i] = T[i]
        else:
            op(out[prev], T[i], out=out[i])
        prev = i
    return out


def _choose_steps(ext, n_vals: int, chunk: int = 16) -> dict:
    """{(gap, up): (w, b, s, kappa) or None} for every gap of the coordinate: the separator with the
    smallest on-side spread relative to the gap, and its sign and kappa (all gaps at once, vectorized
    over the candidates; ties go to the first candidate and to s = +1).

    Sign s = +1: every on-side value is above every dead-side value; s = -1: below.  kappa = -(the
    dead-side value nearest to the on side) * s, so that s n + kappa <= 0 exactly on the dead side.
    """
    W, B, Tv, pmin, pmax, smin, smax = ext
    out = {}
    buf = np.empty((chunk, pmin.shape[1]), dtype=bool)
    for start in range(1, n_vals, chunk):
        stop = min(start + chunk, n_vals)
        gaps = np.arange(start, stop)
        at, below = slice(start, stop), slice(start - 1, stop - 1)       # rows gap and gap - 1
        for up in (True, False):
            if up:       # on = [gap:], dead = [:gap]
                on_min, on_max, d_min, d_max = smin[at], smax[at], pmin[below], pmax[below]
            else:        # on = [:gap], dead = [gap:]
                on_min, on_max, d_min, d_max = pmin[below], pmax[below], smin[at], smax[at]
            best = [None] * len(gaps)
            for s in (1.0, -1.0):
                # ok: every on-side value above the dead side (s = +1) or below it (s = -1: the spreads
                # are those of -T, so -on_max > -d_min, that is on_max < d_min); the spreads only on
                # the candidates that separate some gap of the chunk (a few in ten), in their order:
                # the first smallest finite spread is the same candidate (the comparison writes into
                # one buffer: fresh large temporaries cost more in page faults than in arithmetic)
                ok_all = buf[:len(gaps)]
                if s > 0:
                    np.greater(on_min, d_max, out=ok_all)
                else:
                    np.less(on_max, d_min, out=ok_all)
                cols = np.flatnonzero(ok_all.any(axis=0))
                if s > 0:
                    lo_on, hi_on, edge = on_min[:, cols], on_max[:, cols], d_max[:, cols]
                else:
                    lo_on, hi_on, edge = -on_max[:, cols], -on_min[:, cols], -d_min[:, cols]
                ok = ok_all[:, cols]
                spread = np.where(ok, (hi_on - edge) / np.where(ok, lo_on - edge, 1), np.inf)
                idx = np.argmin(spread, axis=1) if len(cols) else np.zeros(len(gaps), int)
                for k in np.flatnonzero(ok.any(axis=1)):
                    i = int(cols[int(idx[k])])
                    sp = spread[k, int(idx[k])]
                    if sp == np.inf:     # every spread infinite: argmin over all candidates, as in full
                        lo_k, hi_k, ed_k = (on_min[k], on_max[k], d_max[k]) if s > 0 else (-on_max[k], -on_min[k], -d_min[k])
                        row = np.where(ok_all[k], (hi_k - ed_k) / np.where(ok_all[k], lo_k - ed_k, 1), np.inf)
                        i = int(np.argmin(row))
                        edge_i = float(ed_k[i])
                    else:
                        edge_i = float(edge[k, int(idx[k])])
                    if best[k] is None or sp < best[k][0]:
                        best[k] = (sp, s, i, edge_i)
            for k, gap in enumerate(gaps):
                if best[k] is None:
                    out[(int(gap), up)] = None
                else:
                    _, s, i, edge = best[k]
                    out[(int(gap), up)] = (float(W[i]), float(B[i]), s, -edge)
    return out


def _choose_steps_compiled(kit: Kit, vals):
    """``_choose_steps(_separator_extremes(kit, vals), len(vals))`` by the compiled one-pass search
    (``kernels.best_separators``; on formats of at most NUMPY_SEPARATORS_BITS bits its numpy twin
    ``_best_separators_np``, which needs no compiled code), or None where that does not apply (no
    numba on a wider format, no index tables, or a -0 among the T values, whose sign the numpy
    extremes would pass on to kappa).

    Why it is the same choice: the kernel sees the same candidates in the same order with the same
    values (float32 exactly where ``_separator_extremes`` uses it) and keeps, per gap, side and sign,
    what np.argmin keeps in ``_choose_steps`` (its first NaN, else its first minimum); the two signs
    are then combined as there (s = -1 only when strictly smaller), and the rows whose spreads all
    overflowed to inf take candidate 0, as ``_choose_steps``' argmin over all candidates does.  kappa
    is -(the chosen candidate's dead-side extreme), computed as there."""
    tb = op_tables(kit.fmt)
    compiled = kernels.HAVE_NUMBA and kit.fmt.bits > NUMPY_SEPARATORS_BITS
    if tb is None or not (compiled or kit.fmt.bits <= NUMPY_SEPARATORS_BITS):
        return None
    W, B, I, t_all = _separator_rows_indexed(kit, tb, vals)
    used = np.zeros(len(t_all), bool)
    used[I] = True
    tv = t_all[used]
    if ((tv == 0) & np.signbit(tv)).any():
        return None
    src = t_all.astype(np.float32) if np.array_equal(tv.astype(np.float32), tv) else t_all
    return _choose_from_rows(W, B, I, src, len(vals), compiled)


def _best_separators_np(I, src):
    """``kernels.best_separators(I, src)`` in numpy, on the separating (gap, candidate) pairs only: the same
    (best_i, best_sp) arrays, without loading numba's compiled code (its first load in a process costs
    0.4-0.6 CPU s, more than this whole search on an 8-bit format: 0.1-0.2 s).

    Why the same: the extremes are the kernel's prefix and suffix minima and maxima (``_accumulate``
    rows, in src's dtype; no NaN reaches them from finite rows, and signed zeros are the caller's
    concern as for the kernel); a pair (gap g, candidate c) of case q separates exactly where the
    kernel's ``lo > edge`` holds, and its spread is the kernel's (hi - edge) / (lo - edge) in src's
    dtype.  Per gap, the kernel keeps the first separating candidate and replaces it only by a later
    NaN spread (while its own is not NaN) or a strictly smaller one: that is the first NaN if there
    is one, else the first minimum, which is what the segment minimum (NaN-propagating) and the first
    position equal to it pick here.  A gap without a separating candidate keeps (-1, 0).
    tests/test_theorem5_fast_paths.py compares the arrays with the kernel's."""
    n = I.shape[1]
    dt = src.dtype
    best_i = np.full((n, 4), -1, dtype=np.int64)
    best_sp = np.zeros((n, 4), dtype=dt)
    if n < 2 or I.shape[0] == 0:
        return best_i, best_sp
    # the extremes on the ranks of src's values (a byte each on 8-bit formats: a quarter of the memory
    # traffic of the values; the order, and so every minimum, maximum and comparison, is the same), the
    # values looked up at the separating pairs only.  Where a row reads a NaN, the values themselves
    uv, inv = np.unique(src, return_inverse=True)
    if np.isnan(uv).any() and np.isnan(src)[I].any():
        uv, key = None, src
    else:
        key = inv.reshape(-1).astype(np.uint8 if len(uv) <= 256 else np.int32)
    # (values, candidates); transposing bytes costs less than I, and a block of candidates at a time
    # less than the whole (the gather's index copy stays in cache)
    T = np.empty((I.shape[1], I.shape[0]), dtype=key.dtype)
    for c0 in range(0, I.shape[0], SEPARATOR_BLOCK):
        T[:, c0:c0 + SEPARATOR_BLOCK] = key[I[c0:c0 + SEPARATOR_BLOCK]].T
    pmin, pmax = _accumulate(np.minimum, T, False), _accumulate(np.maximum, T, False)
    smin, smax = _accumulate(np.minimum, T, True), _accumulate(np.maximum, T, True)
    pmin, pmax, smin, smax = pmin[:-1], pmax[:-1], smin[1:], smax[1:]   # row g - 1: the gap g
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # q = 0 (on [g:], s = +1) and q = 3 (on [:g], s = -1) separate where smin[g] > pmax[g-1];
        # q = 1 (on [g:], s = -1) and q = 2 (on [:g], s = +1) where pmin[g-1] > smax[g].
        # Case q's (lo, hi, edge) (negated for s = -1) give the kernel's spread (hi - edge) / (lo - edge);
        # (-x) - (-y) = y - x exactly (IEEE subtraction adds the negation, and addition commutes), so
        # the two cases of a mask share the denominator: q = 0 (lo, hi, edge) = (smin, smax, pmax) and
        # q = 3 (-pmax, -pmin, -smin) both divide by smin - pmax; q = 1 (-smax, -smin, -pmin) and
        # q = 2 (pmin, pmax, smax) by pmin - smax.  Per case: (q, minuend, subtrahend) of the numerator
        for mask, (top, bottom), cases in (
                (smin > pmax, (smin, pmax), ((0, smax, pmax), (3, smin, pmin))),
                (pmin > smax, (pmin, smax), ((1, pmin, smin), (2, pmax, smax)))):
            f = np.flatnonzero(mask)                   # np.nonzero's (r, c), in a third of its time
            if not len(f):
                continue
            r = f // mask.shape[1]
            c = f - r * mask.shape[1]
            starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
            seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(r))))
            # a[r, c] by the flat positions (the arrays are C-contiguous, mask's shape)
            vals = {}

            def at(a):
                if id(a) not in vals:
                    v = a.ravel()[f]
                    vals[id(a)] = uv[v] if uv is not None else v
                return vals[id(a)]
            den = at(top) - at(bottom)
            for q, x_a, y_a in cases:
                sp = (at(x_a) - at(y_a)) / den
                m = np.minimum.reduceat(sp, starts)[seg]
                first = np.flatnonzero((sp == m) | (np.isnan(sp) & np.isnan(m)))
                sf = seg[first]                        # nondecreasing: each segment's first is where it changes
                pick = first[np.flatnonzero(np.concatenate(([True], sf[1:] != sf[:-1])))]
                best_i[r[pick] + 1, q] = c[pick]
                best_sp[r[pick] + 1, q] = sp[pick]
    return best_i, best_sp


#: candidates per block of ``_best_separators_np``'s gather
SEPARATOR_BLOCK = 4096

#: formats of at most this many bits choose separators by ``_best_separators_np`` (no compiled code)
NUMPY_SEPARATORS_BITS = 8


def _choose_from_rows(W, B, I, src, n_vals: int, compiled: bool = True) -> dict:
    """``_choose_steps``' dict from candidate rows (candidate c: weight W[c], bias B[c], values
    src[I[c, :]] on the sorted coordinate values) by ``kernels.best_separators`` (or, not
    ``compiled``, by ``_best_separators_np``: the same arrays)."""
    best_i, best_sp = kernels.best_separators(I, src) if compiled else _best_separators_np(I, src)
    out = {}
    for gap in range(1, n_vals):
        for up, cases in ((True, ((0, 1.0), (1, -1.0))), (False, ((2, 1.0), (3, -1.0)))):
            best = None
            for q, s in cases:
                i = int(best_i[gap, q])
                if i < 0:
                    continue
                sp = best_sp[gap, q]
                if sp == np.inf:
                    i = 0
                col = src[I[i]]
                dead = col[:gap] if up else col[gap:]
                edge = float(dead.max()) if s > 0 else float(-dead.min())
                if best is None or sp < best[0]:
                    best = (sp, s, i, edge)
            out[(gap, up)] = None if best is None else (float(W[best[2]]), float(B[best[2]]), best[1], -best[3])
    return out


def _chosen_steps(kit: Kit, vals) -> dict:
    """``_choose_steps`` over every (w, b) in F x F for every gap: the compiled pass where it applies
    (the same choices), else the numpy extremes."""
    chosen = _choose_steps_compiled(kit, vals)
    return chosen if chosen is not None else _choose_steps(_separator_extremes(kit, vals), len(vals))


def _separator_chooser(kit: Kit, vals, states=None):
    """choose(gap, up) -> (w, b, s, kappa) or None.  Every (w, b) in F x F when that is small (8-bit
    formats: the smallest spread), else the restricted search of condcheck.separators (16-bit formats;
    its "not found" is not a proof of inseparability, and the error says distinguishability fails)."""
    if kit.fmt.count_finite() ** 2 * len(vals) <= 2e8:
        chosen = _chosen_steps(kit, vals)
        return lambda gap, up: chosen[(gap, up)]
    from .separators import find_separators
    found = find_separators(kit, vals, states=None if enumerated(kit.fmt) else states)
    return lambda gap, up: found.get((gap, up))


def _quantize(kit: Kit, st: States, v, on, why: str):
    """((pre, k0, K), why): the longest quantizer chain c_k0 .. c_K that fits and leaves the on side
    (v >= g > 0) live, on one side of L, and the dead side (v <= 0) dead; pre = chain(v) (+) z_d.
    (None, reason) when no chain does."""
    F, L = kit.fmt, st.L
    k0 = max(math.frexp(float(v[on].min()))[1] - 1 + F.M, F.e_min)
    chains = _chains(kit, v, k0)
    # (K = e_max last: c_K = succ(2^e_max) exists in most formats but leaves little room below Omega)
    for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1, F.e_max]:
        if K not in chains:
            continue
        try:
            pre = kit.add(chains[K], st.z_dead)        # K = k0 - 1: no chain at all
            sign = np.sign(kit.T(pre[on]) - L)
        except ConstructionError:
            continue
        if not (st.dead(pre[~on]).all() and not st.dead(pre[on]).any()):
            why = "quantized pre-activations do not split into dead and live states"
        elif (sign == 0).any() or (sign != sign[0]).any():
            why = f"on-side values are not all on one side of the dead value {L!r}"
        else:
            return (pre, k0, K), why
    return None, why


def _chains(kit: Kit, v, k0: int) -> dict:
    """{K: v (+) c_k0 (+) (-c_k0) (+) ... (+) c_K (+) (-c_K)} (c_k = succ(2^k), rounded sums left to right)
    for K = k0 - 1 (no chain) up to the first K whose c_K is not a value of the format or whose sums
    overflow (that K and every longer chain are absent).  Each chain extends the one before by one step
    (the same sums in the same order), so all of them cost one pass.  On float64 (about 2,000 exponents)
    the steps run in numpy directly: IEEE float64 addition is RN_float64."""
    F = kit.fmt
    native = F.name == "float64" and np.ndim(v) == 1
    tb = None if native or np.ndim(v) != 1 else op_tables(F)
    if tb is None and np.ndim(v) == 1 and enumerated(F) and len(v) >= CHAIN_MAP_MIN:
        steps = _ChainMaps.of(F)
        iv = steps.index(v)
        if iv is not None:
            return steps.chains(v, iv, k0)
    if tb is not None:
        try:
            iv = tb.index(v)
        except CondcheckError:                     # v holds a number outside the format: round it
            tb = None
    out = {k0 - 1: v}
    if tb is not None:
        # on the index tables (8-bit formats): the same sums, looked up; an overflow index propagates
        # through the table, so the chain stops where the rounded sums would overflow.  Every sum adds
        # a nonzero c, so a zero result is +0, the table's zero (tests/test_op_tables.py).  The steps
        # k0 .. K composed into one index map per K (once per format and k0), so a row costs one gather:
        # the map of an index is the chain of that index, step by step as on the row itself
        ks, maps = _chain_index_maps(tb, F, k0)
        rows = maps[:, iv]
        bad = (rows == tb.over).any(axis=1)
        n = int(np.argmax(bad)) if bad.any() else len(ks)
        vals = tb.value(rows[:n])
        for j in range(n):
            out[ks[j]] = vals[j]
        return out
    for k in range(k0, F.e_max + 1):
        c = math.ldexp(1 + 2.0 ** -F.M, k)
        if not _in(F, c):
            break
        if native:
            with np.errstate(over="ignore", invalid="ignore"):
                w = v + c
                w = w - c if np.isfinite(w).all() else w
            if not np.isfinite(w).all():
                break
            v = w
        else:
            try:
                v = kit.add(kit.add(v, c), -c)
            except ConstructionError:
                break
        out[k] = v
    return out


def _distinct_indices(idx, n: int) -> np.ndarray:
    """np.unique(idx)'s values (as intp) for indices in [0, n): by a mask over the n indices instead of a
    sort (the last layer's sets S repeat values; tests/test_op_tables.py compares the two)."""
    seen = np.zeros(n, bool)
    seen[idx] = True
    return np.flatnonzero(seen)


def _chain_index_maps(tb, F: Format, k0: int):
    """(ks, maps): maps[j][i] = the index of the chain i (+) c_k0 (+) (-c_k0) ... (+) c_K (+) (-c_K) for
    K = ks[j], the steps of ``_chains`` on the index tables up to the first c_K that is not a value of F
    (the overflow index maps to itself), kept per (tables, k0)."""
    cache = tb.__dict__.setdefault("_chain_maps", {})
    hit = cache.get(k0)
    if hit is None:
        m = np.arange(tb.over + 1, dtype=np.int16)
        ks, rows = [], []
        for k in range(k0, F.e_max + 1):
            c = math.ldexp(1 + 2.0 ** -F.M, k)
            if not _in(F, c):
                break
            ic = tb.index_of(c)
            m = tb.add_table[tb.add_table[m, ic], int(tb.neg_table[ic])]
            ks.append(k)
            rows.append(m)
        hit = cache[k0] = (ks, np.array(rows, dtype=np.int16).reshape(len(rows), tb.over + 1))
    return hit


#: rows at least this long take the chain maps of ``_ChainMaps`` on 16-bit formats (shorter rows: the
#: rounded sums cost less than building the maps, about 2 CPU s once per format and process)
CHAIN_MAP_MIN = 256


class _ChainMaps:
    """One chain step v -> RN(RN(v + c_k) - c_k) (c_k = succ(2^k)) as an index map over every value of a
    16-bit format (no ``op_tables``: 65,279 x 65,279 sums would not fit), built once per k by the same
    two ``add_array`` passes over all values that ``_chains`` makes on each row, then a gather per row.

    Why it is the same chain: each step is a function of the value alone, so looking up its result is
    the rounded sums themselves; an overflow in either sum maps to ``over``, and a row that reaches it
    stops the chain there, as the ConstructionError of ``Kit.add`` does.  Every sum adds c_k != 0, so a
    zero result is +0 (RN(x + y) is -0 only for x = y = -0), the zero ``fmt.values()`` holds.  Only the
    unchained row k0 - 1 keeps the caller's array (its zeros may be -0).  On bfloat16 a chain runs over
    about 250 exponents, and a 4,096-point sample has 8,190 steps over 4,096 values: 4 x 10^9 rounded
    sums as arrays, or 8,190 x 250 gathers."""

    _of: dict = {}

    def __init__(self, F: Format):
        self.F, self.V = F, F.values()
        self.over = len(self.V)
        self.maps = {}          # k -> uint16 index map (over -> over), or None when c_k is not a value

    @classmethod
    def of(cls, F: Format) -> "_ChainMaps":
        hit = cls._of.get(F.name)
        if hit is None or hit.F is not F:
            hit = cls._of[F.name] = cls(F)
        return hit

    def index(self, v):
        """Indices of v's elements in the values, or None when one is not a value (NaN, out of format)."""
        k = np.minimum(np.searchsorted(self.V, v), self.over - 1)
        return k if (self.V[k] == v).all() else None

    def step(self, k: int):
        if k not in self.maps:
            F = self.F
            c = math.ldexp(1 + 2.0 ** -F.M, k)
            if not _in(F, c):
                self.maps[k] = None
            else:
                V = self.V
                s1, o1 = add_array(V, np.full_like(V, c), F)
                s2, o2 = add_array(np.where(o1, 0.0, s1), np.full_like(V, -c), F)
                bad = o1 | o2
                m = np.full(self.over + 1, self.over, np.uint16)
                m[:-1][~bad] = np.searchsorted(V, s2[~bad])
                self.maps[k] = m
        return self.maps[k]

    def chains(self, v, iv, k0: int) -> dict:
        """``_chains(kit, v, k0)`` by the maps (iv: v's indices)."""
        out = {k0 - 1: v}
        for k in range(k0, self.F.e_max + 1):
            m = self.step(k)
            if m is None:
                break
            iv = m[iv]
            if (iv == self.over).any():
                break
            out[k] = self.V[iv]
        return out


# ---- the builder ---------------------------------------------------------------------------------------
@dataclass
class _Cols:
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


def _one_term_layer(blocks, n_in, fmt):
    """The layer of rows with one term each, given as blocks (columns, weights, biases) in row order (a
    column -1: a row without terms, a constant): what ``_Cols.add({col: w}, b)`` per row (``{}`` for -1)
    and ``_Cols.layer`` give, the same entries in the same order, without a dict per row (the layers
    after the gates hold one row per branch: 145,000 per layer on the d = 2 float8 box).
    tests/test_theorem5_fast_paths.py compares the two."""
    cols = np.concatenate([np.asarray(c, np.int64).reshape(-1) for c, _, _ in blocks])
    w = np.concatenate([np.asarray(x, np.float64).reshape(-1) for _, x, _ in blocks])
    bias = np.concatenate([np.asarray(b, np.float64).reshape(-1) for _, _, b in blocks])
    keep = (cols >= 0) & (w != 0)
    return _layer_of(w[keep], np.arange(len(cols))[keep], cols[keep], bias, n_in, fmt)


def _require_conditions(kit: Kit, F: Format, implementation: str) -> dict:
    """Refuse an activation that fails a condition, naming the condition and its failing clause;
    return Condition 1's witness (its dead tail is the one the construction gates into)."""
    from .check import check_activation

    res = check_activation(kit.act, F, implementation)
    for k in ("1", "2", "3"):
        c = res.conditions[k]
        if c["holds"] is False:
            raise ConditionFailure(f"{kit.act.name} on {F.name} fails Condition {k}: {c['failing_clause']}")
    return res.conditions["1"]["witness"]


def _boost(kit: Kit, st: States, on_vals, low=None):
    """_boost_search, remembered per set of on values (most steps share theirs) and dead-side value."""
    key = (tuple(np.unique(np.asarray(on_vals, float)).tolist()), low)
    if key not in kit.boosts:
        kit.boosts[key] = _boost_search(kit, st, on_vals, low)
    return kit.boosts[key]


def _boost_search(kit: Kit, st: States, on_vals, low=None):
    """(a, c) of the boost B = T(a U + c) of a step U: L -> dead, the on values -> as far from L as possible.

    A step's on value can be close to L (the quantizer chain ends at 2^(e_max-1-M) and the dead tail
    must be reached on the other side, e.g. swish~(-2) = -0.23 on float8_e4m3), and a gate then needs
    a large weight on it, which multiplies the gate's backward value.  The boost re-maps the on values
    far from L (every power-of-two weight and the largest bias that keeps L dead are tried).
    ``low``: U's value on the dead side when it is not L (a boost after a *lift*, ``_lifted_boost``).
    """
    F, L = kit.fmt, st.L
    low = L if low is None else low
    on = np.unique(np.asarray(on_vals, float))
    sg = float(np.sign(on[0] - low))
    G = F.values() if enumerated(F) else None
    best = None
    for a in _boost_weights(F, sg, kit.wide_boosts):
        m_on, o1 = mul_array(np.full_like(on, a), on, F)
        m_dead, o2 = mul_array(np.array([a]), np.array([low]), F)
        if o1.any() or o2.any():
            continue
        # the biases tried: every value, or (large formats) the values within a few ulps of z_d - a L,
        # where the largest bias keeping L dead lies (RN is monotone)
        cand = G if G is not None else np.union1d(_near(F, np.array([st.z_dead - m_dead[0]]), 3), [0.0])
        q, oq = add_array(np.full_like(cand, m_dead[0]), cand, F)
        ok = ~oq & st.dead(q)
        if not ok.any():
            continue
        c = float(cand[ok].max())                 # the largest bias keeping L dead
        p, op = add_array(m_on, np.full_like(m_on, c), F)
        if op.any():
            continue
        t, ot = kit.R.value_array(p)
        if ot.any() or st.dead(p).any():
            continue
        side = np.sign(t - L)
        if (side == 0).any() or (side != side[0]).any():
            continue
        score = float(np.abs(t - L).min())
        if best is None or score > best[0]:
            best = (score, a, c)
    if best is None:
        raise ConstructionError(f"no boost T(a U + c) keeps the dead value {L!r} dead and moves the step's on "
                                f"values {on.tolist()} away from it")
    return best[1], best[2]


def _boost_weights(F: Format, sg: float, wide: bool):
    """The weights a a boost tries, in order: powers of two, largest first, each sign.

    wide (``Kit.wide_boosts``, a retry after a value gate's backward gain overflowed): then every value
    of an enumerated format of at most 8 bits (else the powers of two times 1 + k/8), so that a step's on
    value can be mapped next to Omega rather than to the largest power of two below it.  A value gate
    must be dead wherever one of its gating steps is on, so its weights are at least about its on value
    over the boosts' smallest on value, and at its point the backward value y A a_v reaches the steps
    through them: y f* / on_min, which overflows for |h*| |f*| near Omega^2 / on_min (relu on
    float8_e4m3 at H_sigma: f* = 160 with h* = 208 needs on_min > 139, the powers of two give 128).
    """
    if wide and F.enumerable and F.count_finite() <= 256:
        mags = np.unique(np.abs(F.values()))
        mags = mags[(mags > 0) & np.isfinite(mags)][::-1]
    else:
        ks = range(F.e_max, F.e_min - 1, -1)
        sig = [1 + j / 8 for j in range(8)] if wide else [1.0]
        mags = [x for x in (math.ldexp(m, k) for k in ks for m in sig[::-1]) if _in(F, x)]
    return [float(sgn * m) for m in mags for sgn in (sg, -sg)]


def _step_split(kit: Kit, st: States, n, s0: float, kappa0: float, push_need: float, up: bool = False):
    """(best, why): the step row s n + kappa (+) chain (+) z_d of a separator's values n and its boost,
    best = (reach, s, kappa, on, (pre, k0, K), boost a, boost c), or (None, why) when no scale works.

    The separator as it is, else scaled by 2^-k (large separator values can make every chain long
    enough to leave the dead tail overflow); the split is checked exactly.  The first scale whose
    boosted step a gate can use (``_gate_reach``) is taken, else the one that comes nearest.
    With ``up`` (sharpened separators), scales 2^k > 1 are tried after 1: the chain lifts the on values
    to at most 2^(e_max - M) (2 on float8_e4m3b11fnuz, while its dead tail starts at -5 to -10), and a
    sharpened separator, whose sides are a few clusters far apart, can be stretched instead."""
    F = kit.fmt
    why, best = "no quantizer chain fits (every chain overflows)", None
    ups = [2.0 ** k for k in range(1, F.e_max + 1)] if up else []
    for scale in [1.0] + ups + [2.0 ** -k for k in range(2, 17, 2)]:
        s, kappa = s0 * scale, kappa0 * scale
        if not (_in(F, s) and _in(F, kappa)):
            continue
        try:
            v = kit.add(kit.mul(s, n), kappa)
        except ConstructionError:
            continue
        on = v > 0
        found = None
        if on.any():
            found, why = _quantize(kit, st, v, on, why)
        if found is None:
            continue
        pre, k0, K = found
        try:
            ba, bc = _boost(kit, st, kit.T(pre[on]))
        except ConstructionError as e:
            why = str(e)
            continue
        reach = _gate_reach(F, st, kit.T(kit.add(kit.mul(ba, kit.T(pre[on])), bc)))
        if best is None or reach > best[0]:
            best = (reach, s, kappa, on, found, ba, bc)
        if reach >= push_need:
            break
    return best, why


def _orient(n, on):
    """(s, kappa) of a separation: s = +1 when every on value is above every dead value, else -1, and
    kappa = -(the dead value nearest to the on side) * s (as ``_choose_steps`` gives them)."""
    if n[on].min() > n[~on].max():
        return 1.0, -float(n[~on].max())
    return -1.0, float(n[~on].min())


def _sharpen_layer(kit: Kit, n, on):
    """(w, b) of the layer T(w n + b) over all of F x F that best separates a step's on values from its
    dead values, or None: the largest gap between the two sides relative to the whole range of values,
    then the largest gap relative to the largest |value| (T values on the format's RN index tables;
    every sum and product exact).  The second key is what the next layer (or the step row) can stretch:
    a weight w keeps w n finite only for |w| <= Omega / max |n|, and |w| <= Omega, so it lifts the gap
    to at most Omega gap / max(|n|, 1) (two clusters at 18 and 20 allow w <= 1.5 and a gap of 3; at 0
    and 2, a gap of 30; at -0.28 and 0.28 only 17).

    Why it helps: on float8_e4m3b11fnuz a first-layer separator can move by at most 7.5 x 1/4 between
    neighbouring box inputs, so its gaps are far below |z_d| (gelu: 5) and the step row lands next to
    the dead tail where no boost can lift it.  A layer T(w n + b) pushes the far values of one side into
    the dead tail or a saturated region (collapsing them) and stretches the gap by up to |w T'|; a few
    such layers leave two well separated clusters, and then the gap itself grows."""
    u, inv = np.unique(n, return_inverse=True)
    u_on = np.zeros(len(u), bool)
    u_on[inv[on]] = True
    # the score is symmetric in the two sides, and many steps meet the same values (the up and down
    # steps of a gap; two clusters after a layer or two): remembered per (values, side of each)
    key = (u.tobytes(), (u_on ^ u_on[0]).tobytes())
    memo = kit.__dict__.setdefault("_sharpen_memo", {})
    if key not in memo:
        v, o = kit.by_index()
        memo[key] = _sharpen_search(kit, kit.tables, np.where(o, np.nan, v), u, u_on)
    return memo[key]


def _sharpen_search(kit: Kit, tb, t_all, u, u_on, chunk: int = 16):
    """``_sharpen_layer``'s search: chunks of weights at once, on the (weight, value, bias) grid of table
    indices; the on values first, so that each side is a slice.  Ties go to the first weight (ascending)
    and then to the first bias."""
    V, nV = tb.values, tb.over
    n_on = int(u_on.sum())
    iu = np.concatenate([tb.index(u[u_on]), tb.index(u[~u_on])])
    ws = np.flatnonzero(V != 0)
    ib = np.arange(nV)
    best = None
    for start in range(0, len(ws), chunk):
        wi = ws[start:start + chunk]
        m = tb.mul_table[wi[:, None], iu[None, :]]                          # (weights, values)
        t = t_all[tb.add_table[m[:, :, None], ib[None, None, :]]]           # (weights, values, biases)
        on_lo, on_hi = t[:, :n_on].min(1), t[:, :n_on].max(1)
        d_lo, d_hi = t[:, n_on:].min(1), t[:, n_on:].max(1)
        gap = np.maximum(on_lo - d_hi, d_lo - on_hi)                     # NaN where some value overflows
        width = np.maximum(on_hi, d_hi) - np.minimum(on_lo, d_lo)
        ok = gap > 0
        if not ok.any():
            continue
        rel = np.where(ok, gap / np.where(ok, width, 1.0), -1.0).ravel()
        top = np.maximum(np.maximum(np.abs(on_lo), np.abs(on_hi)), np.maximum(np.abs(d_lo), np.abs(d_hi)))
        g = np.where(ok, gap / np.maximum(top, 1.0), -1.0).ravel()
        k = int(np.lexsort((-g, -rel))[0])
        key = (float(rel[k]), float(g[k]))
        if best is None or key > best[0]:
            best = (key, float(V[wi[k // nV]]), float(V[k % nV]))
    return None if best is None else best[1:]


#: the most sharpening layers a step may take before its row
MAX_SHARPEN = 6


def _sharpened_split(kit: Kit, st: States, n, on, push_need: float):
    """(layers, n', best): sharpening layers (``_sharpen_layer``, greedily, at most MAX_SHARPEN) after
    which the step row on their output n' splits (``_step_split``); (None, None, why) otherwise.
    Used only where the separator itself does not split (8-bit formats with a narrow range, where
    the format's tables make the exhaustive layer search cheap)."""
    layers, why = [], "no sharpening layer separates the step's sides"
    for _ in range(MAX_SHARPEN):
        wb = _sharpen_layer(kit, n, on)
        if wb is None:
            break
        layers.append(wb)
        n = kit.T(kit.row([(wb[0], n)], wb[1]))
        best, why = _step_split(kit, st, n, *_orient(n, on), push_need, up=True)
        if best is not None:
            return layers, n, best
    return None, None, why


def _padded_split(kit: Kit, st: States, n, on, m: int, depth: int, push_need: float):
    """(layers, best, reboosts) of a step that must span ``depth`` layers before its row and boosts
    and splits after m but whose boost can not be boosted again: k = m + 1 .. depth greedy sharpening
    layers (``_sharpen_layer``), the step row and boost on their output, then depth - k re-boosts; the
    first k that works.  The reason of the last failure (a str) when none does."""
    layers, why = [], "no sharpening layer separates the step's sides"
    for k in range(1, depth + 1):
        wb = _sharpen_layer(kit, n, on)
        if wb is None:
            return why
        layers.append(wb)
        n = kit.T(kit.row([(wb[0], n)], wb[1]))
        if k <= m:
            continue
        best, why = _step_split(kit, st, n, *_orient(n, on), push_need, up=True)
        if best is None:
            continue
        pre = kit.add(kit.mul(best[5], kit.T(best[4][0])), best[6])
        extra = _reboosts(kit, st, pre, on, depth - k)
        if extra is not None:
            return list(layers), best, extra
        why = f"{k} sharpening layers split it, but its boost can not be boosted again"
    return why


def _reboosts(kit: Kit, st: States, pre, on, k: int):
    """k boosts (a, c) applied one after another to a boosted step with pre-activations pre (on side
    ``on``), or None when one of them finds no boost."""
    out = []
    for _ in range(k):
        try:
            a, c = _boost(kit, st, kit.T(pre[on]))
        except ConstructionError:
            return None
        out.append((a, c))
        pre = kit.add(kit.mul(a, kit.T(pre)), c)
    return out


def _lifted_boost(kit: Kit, st: States, pre, on, push_need: float, top: int = 64):
    """(lift, boost, reach) for a step row with pre-activations pre whose plain boost leaves a gate too
    little push (reach < push_need), or None: a *lift* T(a1 U + c1) between the step row U and its boost,
    with any (a1, c1) of the format, then the boost T(a2 Y + c2) that maps the lift's dead-side value
    back into the dead tail.

    Why: the boost keeps L dead, so its bias is at most z_d - a L, and an on value next to L can only be
    moved by about |a| |on - L| - |z_d|: swish~ on float8_e4m3b11fnuz has on values at its minimum -0.28,
    L = 0 and z_d = -13, so no boost lifts them and a gate (|beta| <= Omega = 30) pushes by 8.4 where
    12.5 is needed.  The lift need not keep anything dead (its dead-side input is the dead step row U,
    whose T' = 0 stops every backward value that reaches it), so T(-30 U + 0) maps -0.28 to 8.4 and 0 to
    0, and the boost after it has a wide gap to work with.  The boosted step is dead on the dead side as
    before, so the gates see what they always see.  Only 8-bit formats (exhaustive over F x F on the RN
    tables); the ``top`` lifts with the widest gap relative to max(|value|, 1) get a boost, the largest
    gate reach wins."""
    tb = kit.tables
    if tb is None:
        return None
    F, L = kit.fmt, st.L
    u_on = np.unique(kit.T(pre[on]))
    V = tb.values
    v_all, o_all = kit.by_index()
    t_all = np.where(o_all, np.nan, v_all)
    iu = tb.index(np.append(u_on, L))
    wi = np.flatnonzero(V != 0)
    m = tb.mul_table[wi[:, None], iu[None, :]]                              # (weights, values)
    t = t_all[tb.add_table[m[:, :, None], np.arange(tb.over)[None, None, :]]]   # (weights, values, biases)
    lo = t[:, -1, :]
    d = t[:, :-1, :] - lo[:, None, :]
    one_side = (np.sign(d) == np.sign(d[:, :1, :])).all(1) & (d[:, 0, :] != 0)
    gap = np.abs(d).min(1)
    big = np.maximum(np.abs(t).max(1), 1.0)
    score = np.where(one_side & np.isfinite(gap), gap / big, -1.0).ravel()
    order = np.argsort(-score, kind="stable")[:top]
    best = None
    for k in order:
        if score[k] <= 0:
            break
        a1, c1 = float(V[wi[k // tb.over]]), float(V[k % tb.over])
        y = kit.T(kit.add(kit.mul(a1, kit.T(pre)), c1))
        try:
            a2, c2 = _boost(kit, st, y[on], low=float(y[~on][0]))
        except ConstructionError:
            continue
        out = kit.add(kit.mul(a2, y), c2)
        if not (st.dead(out[~on]).all() and not st.dead(out[on]).any()):
            continue
        reach = _gate_reach(F, st, kit.T(out[on]))
        if best is None or reach > best[2]:
            best = ((a1, c1), (a2, c2), reach)
        if reach >= push_need:
            break
    return best


def _gate_push_need(st: States) -> float:
    """The least push a gradient gate needs from a gating step that is on: from the dead tail z_d up to
    its smallest strong state (|T'| within a factor 4 of the largest; every gradient gate target is one)."""
    live = (st.z > st.z_dead) & (st.dt != 0)
    if not live.any():
        return 0.0
    d = np.abs(st.dt[live])
    return float(st.z[live][d * 4 >= d.max()].min()) - st.z_dead


def _gate_reach(F: Format, st: States, on_t) -> float:
    """The largest push beta |T - L| a gate can take from a boosted step with on values on_t at its
    nearest on point: a power-of-two weight beta must keep beta T finite at every on value.

    Why a step is rescaled for it: a step's on values spread as its separator's do (the quantizer chain
    only lifts the small ones), and the boost T(a U + c) cannot narrow that spread (c <= z_d - a L keeps
    L dead, so for an activation with T(z) ~ z above, like swish, the smallest on value shrinks by
    about |z_d| while the largest grows by a).  A down-step between adjacent float16 values of a
    4,096-point swish sample had on values from 2.82 to 65,152: no power-of-two weight both pushes the
    neighbour 21.6 down into the dead tail (from swish's strong states) and keeps 65,152 beta finite.
    Scaling the separator by 2^-k keeps the small on values at the chain's floor and divides the large
    ones, so the ratio (and with it the gate's reach) improves by 2^k."""
    on_t = np.asarray(on_t, float)
    top = float(np.max(np.abs(on_t)))
    lo = float(np.min(np.abs(on_t - st.L)))
    if top == 0:
        return math.inf
    beta = math.ldexp(1.0, min(math.floor(_lg(float(F.max_float)) - _lg(top)), F.e_max))   # a value of F
    return beta * lo


def _live_pass(st: States):
    """Pass states (T' a nonzero power of two, not dead): the largest |T'| first, up to 1 (a pass should
    not shrink the backward value: every suffix of the chain must keep it a finite value), then the
    smallest |T| (a small forward value is cheap to re-centre and keeps the next product finite)."""
    z, t, dt = st.passes
    m = z > st.z_dead
    z, t, dt = z[m], t[m], dt[m]
    o = np.lexsort((np.abs(t), np.maximum(0.0, -np.log2(np.abs(dt)))))
    return z[o], t[o], dt[o]


def _solve_affine(kit: Kit, x_at: float, target: float):
    """c with RN(x_at + c) == target, or None."""
    c = kit.add(target, -x_at)
    c = float(c)
    return c if float(kit.add(x_at, c)) == target else None


def construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation="exact",
                       verify_result=True, max_post=None, progress=None, gating="auto"):
    """Build a network f with f(x) = values and D_(f,x)(upstream) = gradients on every point.

    ``progress(done, total)`` is called once per point for the gradient branches, then the values.
    ``gating``: "points" (each point's gates read the gating steps), "slices" (d >= 2: AND gates of
    slice neurons, ``_SlicedCtx``) or "auto" (slices for d >= 2 beyond EXACT_GATE_POINTS points, where
    per-point gates would cost N x N rounded sums to build and to verify).

    On formats outside both branches of the paper's theorems (E < 4) the construction is an attempt:
    its errors say so."""
    from .check import theorem_branch

    args = (activation, fmt, points, values, upstream, gradients, implementation, verify_result, max_post,
            progress, gating)
    try:
        try:
            return _construct_theorem5(*args)
        except ValueGainOverflow:
            # boosts with any weight put the steps' on values next to Omega (``_boost_weights``); tried
            # only here, so every network the powers of two build stays as it was
            return _construct_theorem5(*args, wide_boosts=True)
    except ConditionFailure:
        raise
    except ConstructionError as e:
        F = get_format(fmt)
        branch = theorem_branch(F)
        if branch.startswith("not covered"):
            raise ConstructionError(f"{e} [{F.name} is outside both branches of the paper's "
                                    f"theorems ({branch}): there the construction is an attempt, not a "
                                    f"consequence of Conditions 1-3]") from None
        raise


def _construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation, verify_result,
                        max_post, progress, gating, wide_boosts=False):
    from .netfile import Claim
    from .verify import verify as _verify

    from .targets import validate

    if gating not in ("auto", "points", "slices"):
        raise CondcheckError(f"gating must be 'auto', 'points' or 'slices', not {gating!r}")
    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    kit.wide_boosts = wide_boosts
    X = np.asarray(points, float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    X, fv, hv, gv = validate(F, kit.act.name, X, values, upstream, gradients)
    N, d = X.shape
    st = find_states(kit, _require_conditions(kit, F, implementation))
    L = st.L

    # constants: constant neurons whose values are positive powers of two
    cz, ct = st.constants
    if len(cz) == 0:
        raise ConditionFailure(f"Condition 1 (constants) fails: {kit.act.name} takes no positive power of two "
                                f"value on {F.name}")

    # ---- steps ------------------------------------------------------------------------------------------
    coord_vals = [np.unique(X[:, j]) for j in range(d)]
    coord_idx = [np.searchsorted(coord_vals[j], X[:, j]) for j in range(d)]
    push_need = _gate_push_need(st)
    steps: list[Step] = []
    step_pre = []            # pre-activation of each step on its coordinate's values
    step_of = {}
    for j in range(d):
        vals = coord_vals[j]
        if len(vals) < 2:
            continue
        choose = _separator_chooser(kit, vals, st)
        for gap in range(1, len(vals)):
            for up in (True, False):
                ch = choose(gap, up)
                if ch is None:
                    raise ConstructionError(
                        f"distinguishability fails: no neuron T(w x_{j + 1} + b) separates coordinate values "
                        f"<= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
                w, b, s0, kappa0 = ch
                n = kit.T(kit.row([(w, vals)], b))
                best, why = _step_split(kit, st, n, s0, kappa0, push_need)
                sharpen = ()
                if best is None and op_tables(F) is not None:
                    # only where the separator does not split: sharpening layers first
                    on_side = np.arange(len(vals)) >= gap if up else np.arange(len(vals)) < gap
                    layers, n2, best2 = _sharpened_split(kit, st, n, on_side, push_need)
                    if layers is not None:
                        sharpen, n, best = tuple(layers), n2, best2
                if best is None:
                    raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: {why}")
                _, s, kappa, on, (pre, k0, K), ba, bc = best
                lift = _lifted_boost(kit, st, pre, on, 2 * push_need) if best[0] < 2 * push_need else None
                lift = lift if lift is not None and lift[2] > best[0] else None
                if lift is not None:
                    (ba, bc), lift = lift[0], (lift[1],)
                pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
                for a2, c2 in lift or ():
                    pre = kit.add(kit.mul(a2, kit.T(pre)), c2)
                step_of[(j, gap, up)] = len(steps)
                steps.append(Step(j, gap, up, w, b, s, kappa, k0, K, boost_a=ba, boost_c=bc, sharpen=sharpen,
                                  lift=lift or ()))
                step_pre.append((pre, on))
    # every step spans the same layers: a step with fewer sharpening layers than the deepest is boosted
    # again after its boost (each boost keeps L dead and its on values on one side of L, so the step
    # stays a step), else sharpened to the full depth (one layer deeper for all steps when some step can
    # not be padded: a longer greedy chain can split where a shorter one did not); without sharpening
    # (every format but the narrow 8-bit ones) nothing changes.  With wide boosts (a retry for large
    # upstream values, see _boost_weights) every step is boosted twice: one boost can leave an on value
    # near L far from Omega (swish~ on float8_e4m3: the step's on value -0.23 boosts to at most 48, the
    # second boost takes it to 224)
    depth = max([len(s.sharpen) + len(s.lift) for s in steps] + [1 if kit.wide_boosts else 0])
    while True:
        padded, failure = [], None
        for i, s in enumerate(steps):
            pre, on = step_pre[i]
            extra = _reboosts(kit, st, pre, on, depth - len(s.sharpen) - len(s.lift))
            if extra is not None:
                padded.append((None, extra))
                continue
            r = _padded_split(kit, st, kit.T(kit.row([(s.w, coord_vals[s.coord])], s.b)), on,
                              len(s.sharpen), depth, push_need)
            if isinstance(r, str):
                failure = (f"step at coordinate {s.coord + 1} gap {s.gap}: neither boosts nor sharpening "
                           f"layers pad it to {depth} layers: {r}")
                break
            padded.append(r)
        if failure is None:
            break
        if depth >= MAX_SHARPEN:
            raise ConstructionError(failure)
        depth += 1
    for i, s in enumerate(steps):
        pre, on = step_pre[i]
        layers, extra = padded[i][0], padded[i][-1]
        if layers is not None:
            _, s.s, s.kappa, on, (pre, s.k0, s.K), s.boost_a, s.boost_c = padded[i][1]
            s.sharpen, s.lift = tuple(layers), ()
            pre = kit.add(kit.mul(s.boost_a, kit.T(pre)), s.boost_c)
        for a, c in extra:
            pre = kit.add(kit.mul(a, kit.T(pre)), c)
        on_t = kit.T(pre[on])
        tv = on_t - L
        s.on_min, s.on_max, s.on_sign = float(np.abs(tv).min()), float(np.abs(tv).max()), float(np.sign(tv)[0])
        s.on_lo, s.on_hi, s.reboost = float(on_t.min()), float(on_t.max()), tuple(s.lift) + tuple(extra)
        step_pre[i] = pre
    step_val = [kit.T(p) for p in step_pre]
    step_pre = None          # (steps x values floats: only step_val is read from here on)

    def gating_steps(zi):
        """Indices of the steps that are dead exactly at point zi (and at least one on elsewhere)."""
        out = []
        for j in range(d):
            m = coord_idx[j][zi]
            if m > 0:
                out.append(step_of[(j, m, False)])          # on iff x_j <= value below z_j
            if m < len(coord_vals[j]) - 1:
                out.append(step_of[(j, m + 1, True)])       # on iff x_j >= value above z_j
        return out

    def step_on_X(si):
        s = steps[si]
        return step_val[si][coord_idx[s.coord]]

    if gating == "auto":
        gating = "slices" if d >= 2 and N > EXACT_GATE_POINTS else "points"
    if gating == "slices" and d >= 2 and N > 1:
        ctx = _SlicedCtx(kit, st, F, X, steps, step_val, coord_vals, coord_idx, step_of)
    else:
        ctx = _Ctx(kit, st, F, X, steps, [step_on_X(i) for i in range(len(steps))], gating_steps)
    step_val = None          # the gates read the steps' values from ctx now
    h_max = float(np.max(np.abs(hv))) if N else 0.0
    consts = _Constants(F, cz, ct)
    C = consts.absorber(h_max, kit.dT)
    # the number of layers after the gates: each extra pass layer lets a gradient branch carry a larger
    # ratio g*/h* (its forward value at z is re-centred once more); every branch gets the same depth
    quarter = math.ldexp(1.0, math.frexp(C)[1] - 1 - F.M - 2)
    # every branch must span the same layers: build each with at least the depth reached so far, and
    # rebuild (or pad) the ones that came out shorter than the final depth
    grad_part, n_cur = [], 1
    # only where T(0) != 0 (the activations with T(0) = 0 built their branches faster from the depth
    # reached so far: relu on the float8_e5m2 box 108 s from one layer up against 61 s, elu, gelu, swish,
    # tanh on float8_e4m3 20-30 % slower; sigmoid on float8_e4m3 331 s -> 85 s)
    shortest = (SHORTEST_FIRST_SLICED and isinstance(ctx, _SlicedCtx) and ctx.small_format
                and float(kit.T(0.0)) != 0)
    if shortest:
        ctx.depth_hint = {1: 0}          # how many branches were built with each number of layers after the gate
        ctx.depth_last = 1               # and the number of the branch built last
    for zi in range(N):
        if progress:
            progress(zi + 1, 2 * N)
        for j in range(d):
            if gv[zi, j] != 0:
                brs = _gradient_branches(ctx, zi, j, float(hv[zi]), float(gv[zi, j]), h_max, C, max_post,
                                         1 if shortest else n_cur)
                n_cur = max(n_cur, len(brs[0].post))
                grad_part += brs
    for i, br in enumerate(grad_part):
        if shortest and len(br.post) < n_cur:
            # padded with relays on a copy of its layers (the branch stays as it was where padding fails)
            post, ow = br.post, br.out_weight
            br.post = list(post)
            try:
                ctx.pad_gradient(br, n_cur, h_max, quarter)
                continue
            except ConstructionError:
                br.post, br.out_weight = post, ow
        if len(br.post) < n_cur:
            # with the gate targets the branch was found with, and a budget (SearchGaveUp: padded too)
            ctx.near_one = getattr(br, "near_one", False)
            ctx.transfer_budget = ctx.budget()
            try:
                grad_part[i] = ctx.gradient_branch(br.zi, br.coord, br.y, br.g, h_max, C, n_cur)
                grad_part[i].part = br.part
            except ConstructionError:
                pass                                   # pad_gradient below appends exact relays instead
            finally:
                ctx.near_one, ctx.transfer_budget = False, None
    n_final = max([len(br.post) for br in grad_part] + [1])
    for br in grad_part:
        ctx.pad_gradient(br, n_final, h_max, quarter)
    values_part = []
    for br in grad_part:
        ctx.gradient_gates[br.zi] = ctx.gradient_gates.get(br.zi, 0) + 1
        ctx.gradient_at.setdefault(br.zi, []).append(br)
    for zi in range(N):
        if progress:
            progress(N + zi + 1, 2 * N)
        if fv[zi] != 0:
            values_part += ctx.value_branches(zi, fv[zi], h_max, n_final, float(hv[zi]))
    net = _assemble(kit, st, F, d, steps, values_part, grad_part, consts, C, activation, implementation,
                    ctx if isinstance(ctx, _SlicedCtx) else None)
    claim = Claim(5, X, fv, hv, gv)
    ctx = None               # its per-point arrays (steps x points) and caches are not needed to verify
    if verify_result:
        # the sparse interpreter (the same numbers, computed on the neurons live at each point) where it
        # applies; the dense one otherwise.  Small networks on 8-bit formats (the d = 1 float8 boxes):
        # the dense one by numpy, which costs less there (0.1-0.2 s) than loading the compiled kernels
        if F.bits <= 8 and N * net.nonzero_parameters <= NUMPY_VERIFY_WORK:
            from .network import numpy_path
            with numpy_path():
                res = _verify(net, claim, method="fast")
        else:
            res = _verify(net, claim, method="sparse")
        if not res.ok:
            raise ConstructionError("the constructed network failed exact verification: " + res.summary())
    return net, claim


def _post_limit(F: Format, y: float, g: float, max_post) -> int:
    """The most layers after a gradient gate to try: max_post if given, else enough for the ratio g/y.

    A blocker layer's forward value is at least about an ulp of its a v (relu: T(p) = p), so one layer
    separates its backward gain from its forward value by about 2^(M+1) only; a ratio |g/y| = 2^r needs
    about r / (M+1) layers beyond the first (measured: relu on the float8_e5m2 box with g*/h* = 2^28.5
    needs 10).  At least 5, at most 40.

    Why relu needs these layers and the others do not: relu~'(0) = 0, so relu has no live zero, and a
    blocker's forward value at its point is a nonzero RN(a v + c) of at least about 2^-(M+1) |a v| (the
    cancellation leaves an ulp of a v): each layer widens the ratio of backward gain to forward value by
    at most about 2^(M+1).  tanh, elu, gelu and swish have T(0) = 0 with T'(0) = 1 or 1/2: a blocker at
    p = 0 passes the gain a T'(0) with forward value exactly 0, limited only by Omega, so one or two
    layers carry any ratio.  Measured on float64 box samples (random targets over all values): max
    log2 |g*/h*| = 1291 on 16 points gives depth 22, 1882 on 256 points depth 32: about 59 bits per
    extra layer between the two (M + 1 = 53, and the states a layer can reach), the rest carried by
    the output weight, the gate and the fixed factors.  The 40-layer cap covers float64's whole range (log2 |g/y| <= 2098).
    """
    if max_post is not None:
        return max_post
    r = _lg(g) - _lg(y) if y and g else 0.0
    return int(min(40, max(5, math.ceil(max(r, 0.0) / (F.M + 1)) + 2)))


def _gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min=1):
    """The branches that carry g*_j at point zi: one, or k = 2, 4, ... carrying g/k each
    (``_gradient_branches_search``), with a budget of TRANSFER_BUDGET transfer searches for this attempt
    (each retry it makes gets its own) on formats with many values, where one transfer search costs up
    to a second (on the small formats it costs milliseconds, and a search may need thousands: relu on an
    8 x 8 float8_e5m2 grid, point 3, g*/h* = 2^16.8)."""
    saved = ctx.transfer_budget
    ctx.transfer_budget = ctx.budget()
    try:
        return _gradient_branches_search(ctx, zi, j, y, g, h_max, C, max_post, n_min)
    except SearchGaveUp:
        # every budgeted attempt (and retry) gave up: the whole search once more without a budget, so that
        # no point that an unlimited search builds is lost to the budget (only at the top level)
        if not UNBUDGETED_LAST or ctx.unbudgeted or ctx.retrying:
            raise
        ctx.unbudgeted = True
        try:
            return _gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min)
        finally:
            ctx.unbudgeted = False
    finally:
        ctx.transfer_budget = saved


def _gradient_branches_search(ctx, zi, j, y, g, h_max, C, max_post, n_min=1):
    """The branches that carry g*_j at point zi: one, or k = 2, 4, ... carrying g/k each.

    The backward value arriving at the source's output is g / (w_g T'(s0)); with a small |T'| (sigmoid:
    at most 1/4) and |w_g| <= Omega / max|x_j|, it can exceed Omega for a large |g|.  k branches with
    g/k each then meet at x_j's sum: 0 (+) ... (+) g/k (+) ... (+) g/k, where every other first-layer
    neuron contributes exactly 0 at the point; k is used only when that left-to-right rounded sum of k
    copies of g/k is exactly g (always for k = 2; for k = 4, 3g/4 must be a value too).  The fewest
    branches that can fit come first, then twice as many.
    """
    F, kit = ctx.F, ctx.kit

    def source_gain():
        xmax = float(np.max(np.abs(ctx._coord_values(j))))
        w_max = math.ldexp(1.0, min(math.floor(_lg(F.max_float) - _lg(xmax)), F.e_max)) if xmax else F.max_float
        return w_max * float(np.max(np.abs(ctx.pass_d)))
    gain = ctx._cached(("source_gain", j), source_gain)       # a function of coordinate j's values only
    first = next((k for k in (1, 2, 4, 8) if abs(g) / k / gain <= F.max_float), 16)
    err = ConstructionError(f"point {zi + 1}: the gradient {g!r} needs more than {2 * first} branches")

    def sums_to_g(part, k):
        acc = part
        for _ in range(k - 1):
            acc = kit.add(acc, part)
        return acc == g

    try:
        for parts in ((1, 2) if first == 1 else (first, 2 * first)):
            part = g / parts
            if not _in(F, part):
                break
            if not sums_to_g(part, parts):
                continue
            top = max(n_min, _post_limit(F, y, part, max_post))
            if not ctx.small_format:
                # formats with many values: each (source, pass, gate) tries every depth up to the limit
                # before the next is tried (a full sweep per depth costs ~150 transfers); then the depths
                # below n_min (the caller pads a shorter branch with exact relays: a branch whose ratio
                # shrinks can not take many blocker layers, each of which needs a weight that crosses the tail)
                for lo, hi in ((n_min, top), (1, n_min - 1)):
                    if lo > hi:
                        continue
                    try:
                        return _parts([ctx.gradient_branch(zi, j, y, part, h_max, C, lo, hi) for _ in range(parts)])
                    except SearchGaveUp:
                        raise
                    except ConstructionError as e:
                        err = e
                continue
            # the fewest layers that work from the depth reached so far, then fewer (the caller rebuilds or
            # pads a shorter branch with exact relays; sigmoid on a 64 x 64 float8_e4m3 grid: a point whose
            # transfer fits only without the blocker layers the branches before it needed)
            order = list(range(n_min, top + 1)) + list(range(1, min(n_min, top + 1)))
            hint = getattr(ctx, "depth_hint", None)
            if hint is not None and n_min == 1:
                # sliced search from the fewest layers (SHORTEST_FIRST_SLICED): the last branch's depth
                # first (neighbouring points mostly need the same), then the depth most branches built so
                # far have, then from one layer upwards; so no branch is longer than both those depths and
                # its own fewest layers, and the final depth is the largest of the points' fewest.  relu on
                # the float8_e4m3 box: 32 s with the last depth first, 77 s from one layer up
                first = [min(ctx.depth_last, top), min(max(hint, key=lambda n: (hint[n], -n)), top)]
                order = list(dict.fromkeys(first + list(range(1, top + 1))))
            for n_post in order:
                try:
                    brs = _parts([ctx.gradient_branch(zi, j, y, part, h_max, C, n_post) for _ in range(parts)])
                    if hint is not None:
                        hint[n_post] = hint.get(n_post, 0) + 1
                        ctx.depth_last = n_post
                    return brs
                except SearchGaveUp:
                    raise
                except ConstructionError as e:
                    err = e
    except SearchGaveUp as e:
        # the budget is spent: the retries below (each with a budget of its own), then this error
        err = SearchGaveUp(f"point {zi + 1} {ctx.X[zi].tolist()}, coordinate {j + 1}: the gradient branch search "
                           f"gave up after {TRANSFER_BUDGET} transfer searches (h* = {y!r}, g* = {g!r}; {e})")
    # every chain the greedy transfer found fell short: once more with a wider search, only here, so that
    # every branch found before stays as it was.  8-bit formats: the beam over the blocker layers.
    # Enumerated formats with many values: first layers aimed at what the last layer can carry, with a
    # last layer joined from both ends of the backward chain (``_Ctx._last_join``; sigmoid on 256 float16
    # box points, point 162: h* = -2^-24, g* = 777.5, g*/h* = 2^33.6, gates with T' = 1/4)
    def again_with(flag):
        """This search once more with ctx.<flag> set, or None when it fails too."""
        setattr(ctx, flag, True)
        try:
            return _gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min)
        except ConstructionError:
            return None
        finally:
            setattr(ctx, flag, False)

    # formats with many values, a ratio |g*/h*| below 1: gates near 1 before the join (the join aims the
    # last layer at large ratios; the default gates, on the smallest values, can not shrink the chain: relu
    # on 4,096 bfloat16 box points spent ~125 CPU s on each of a few such points in a join that gave up)
    near_first = _near_one_first(ctx, y, g)
    if near_first and ctx.NEAR_ONE and not ctx.retrying:
        r = again_with("near_one")
        if r is not None:
            return r
    retry = "beam" if ctx.small_format else "join" if ctx.nonzero_values is not None else None
    if retry and not getattr(ctx, retry) and not (near_first and ctx.near_one):
        r = again_with(retry)
        if r is not None:
            return r
    # tabulated formats whose dead value L is not 0, where even the beam failed: the zero end (see
    # ``_Ctx._zero_end``), greedy then beam, only here, so every branch found before stays as it was
    if ctx.tables is not None and ctx.small_format and ctx.st.L != 0 and not (ctx.zero_end or ctx.beam):
        r = again_with("zero_end")
        if r is not None:
            return r
    # 8-bit formats where all of that failed at the gate: gates with per-step weight sizes
    # (``_Ctx._offset_rows``; mish on float8_e4m3b11fnuz), only here
    if (ctx.small_format and not (ctx.offset_gates or ctx.near_one or ctx.beam or ctx.zero_end)
            and "no gate" in str(err)):
        r = again_with("offset_gates")
        if r is not None:
            return r
    # every search above failed: gradient gates on the targets whose value is nearest 1 (``_gradient_targets``),
    # only here, so every branch found before stays as it was.  The gates' usual first targets are the
    # smallest values (relu on bfloat16: the smallest subnormal 2^-133), from which the blocker layers
    # can not shrink the chain by a ratio g*/h* = 2^-80 without their forward values underflowing
    if ctx.NEAR_ONE and not (near_first or ctx.retrying):
        r = again_with("near_one")
        if r is not None:
            return r
    raise err


def _near_one_first(ctx, y, g) -> bool:
    """Whether a gradient search that gave up retries with gates near 1 before the join: on formats with
    many values (not small_format), where the chain must shrink (|g*| < |h*|).  A gate's value Gz is the
    forward value the blocker layers start from; the default gate targets put it on the smallest values
    (relu on bfloat16: 2^-133), from which no blocker has a gain below 1, so a ratio far below 1 finds no
    last layer whatever the join adds to it, while gates near 1 leave room both ways."""
    return (not ctx.small_format and ctx.nonzero_values is not None and y != 0 and g != 0
            and abs(g) < abs(y))


def _parts(branches):
    """Number the equal branches of a split gradient (they must stay separate neurons: their
    contributions meet only in x_j's sum)."""
    for k, br in enumerate(branches):
        br.part = k
    return branches


@dataclass
class Gate:
    """A gate neuron T(sum_k beta_k u_k (+) gamma) of one point: live at it (pre-activation pz), dead at
    every other point of the domain.  ``inputs`` are what it reads (boosted step indices; for the AND
    gates of ``_SlicedCtx`` slice-neuron keys), in the row's summation order; ``bmax`` bounds the
    backward gain from its output into the layers below (max |beta|, times the slice neurons' gains)."""
    inputs: list
    betas: list
    gamma: float
    pz: float
    bmax: float


@dataclass
class _Branch:
    zi: int
    gate: Gate
    post: list            # (a, c) of each layer after the gate: V' then relays, or the passes
    out_weight: float
    # gradient branches only
    coord: int = -1
    w_g: float = 0.0
    b_g: float = 0.0
    a2: float = 0.0
    c2: float = 0.0
    a2b: float = 0.0
    c3: float = 0.0
    a3: float = 0.0
    slice_gate: Gate | None = None      # sliced gating: the gate of the pass on its coordinate's slice
    part: int = 0                       # which of the equal branches of a split gradient
    relays: tuple = ()                  # (a, c) of the relays between the second pass and the gate


class _Ctx:
    NEAR_ONE = True         # _gradient_gates reads _gradient_targets (the retry on gates near 1 applies)
    #: _gate_indexed chooses by the compiled kernel (``kernels.gate_pick``): set on sliced gating's slices
    compiled_gates = False
    #: id -> (target list, name) of lists never edited after they are made, beside gate_targets (sliced
    #: gating: its own, shared with its slices): ``_fixed_targets`` keeps their sort and ranks
    fixed_lists = None

    def __init__(self, kit, st, F, X, steps, U_X, gating):
        self.kit, self.st, self.F, self.X, self.steps, self.U_X, self.gating = kit, st, F, X, steps, U_X, gating
        # the layers a step spends on sharpening (and the boosts that pad it): each gradient branch
        # relays its pass through as many layers, so that its gate sits in the same layer as the others
        self.relays = max([len(s.sharpen) + len(s.reboost) for s in steps] + [0])
        z, t, dt = st.z, st.t, st.dt
        live = z > st.z_dead
        self.zero_states = z[(t == 0)]
        self.pass_z, self.pass_t, self.pass_d = _live_pass(st)
        o = np.argsort(self.pass_z, kind="stable")
        self._pass_keys, self._pass_ranks = self.pass_z[o], o          # sorted states, their ranks
        self.pow2_values = sorted({float(v) for v in t[live] if _pow2(v) and v > 0})
        # gate states of gradient branches: pass states whose value differs from L by at least
        # 2 |z_d| / Omega first (a weight below Omega/2 can then separate them from the dead tail)
        # (gate states whose derivative is within a factor 4 of the largest: the gate should not eat the
        # gain the blocker layers after it provide)
        far = np.abs(self.pass_t - st.L) >= 2 * abs(st.z_dead) / float(F.max_float)
        strong = np.abs(self.pass_d) * 4 >= np.max(np.abs(self.pass_d)) if len(self.pass_d) else far
        self.gate_targets = list(self.pass_z[far & strong])
        self.small_format = F.enumerable and F.count_finite() <= 4096   # searches may try every value
        self.tables = kit.tables            # grids of RN sums and products as lookups (8-bit formats)
        if not self.small_format:
            # large formats: a gate's sum at its point can be coarse (RN(at_z + gamma) lands only on
            # multiples of at_z's spacing), so strong states whose T' is not a power of two come next
            # (the transfer's preimage sets handle any T')
            ok = (z > st.z_dead) & (dt != 0) & (np.abs(t - st.L) >= 2 * abs(st.z_dead) / float(F.max_float))
            ok &= np.abs(dt) * 4 >= np.max(np.abs(dt[ok])) if ok.any() else ok
            ok &= ~np.isin(z, self.pass_z)
            self.gate_targets += list(z[ok][np.argsort(-np.abs(dt[ok]), kind="stable")])
        # every nonzero value where the format is enumerated (None beyond: candidates instead)
        V = F.values() if enumerated(F) else None
        self.nonzero_values = None if V is None else V[V != 0]
        # blocker layers: weights (every nonzero value, or the values with one or two significant bits
        # when the format is large) and target states (live, T' != 0; at most 4,096, evenly spread)
        if V is not None and len(V) <= 2048:
            self.block_weights = self.nonzero_values
        else:
            m = np.ldexp(np.array([1.0, 1.5])[None, :], np.arange(F.e_min - F.M, F.e_max + 1)[:, None]).ravel()
            r, over = round_array(m, F)
            m = np.unique(r[~over & (r == m)])
            self.block_weights = np.concatenate([-m[::-1], m])
        tgt = (z > st.z_dead) & (dt != 0) & np.isfinite(t) & np.isfinite(dt)
        idx = np.nonzero(tgt)[0]
        n_tgt = 4096 if self.small_format else 1024
        if len(idx) > n_tgt:
            idx = idx[np.linspace(0, len(idx) - 1, n_tgt).astype(int)]
        if not self.small_format:       # and the strongest states (largest |T'|): the most gain per weight
            idx = np.union1d(idx, np.nonzero(tgt)[0][np.argsort(-np.abs(dt[tgt]), kind="stable")[:256]])
        self.block_targets, self.block_t, self.block_d = z[idx], t[idx], dt[idx]
        self.push_min = 2 * abs(st.z_dead) / float(F.max_float)
        self._bmax = {}
        # the gates of one point (its value gate and up to two gradient gates per coordinate) all read
        # that point's gating steps: their backward contributions beta (x) delta meet in one sum there,
        # so each is kept below Omega / share
        self.share = 1 + 2 * X.shape[1]
        self.gradient_gates = {}        # point -> its number of gradient gates (set once they are built)
        self.gradient_at = {}           # point -> its gradient branches (set once they are built)
        self._memo = {}                 # _cached
        self._last_maps = {}            # _last_layer_tables: blocker index maps by on value (at most 64)
        self.transfer_why = ""          # why the last _transfer_search found nothing
        self.beam = False               # _transfer_search may try _transfer_beam (set by _gradient_branches)
        self.join = False               # _last_join and the greedy chain aimed at it (set by _gradient_branches)
        self.zero_end = False           # the transfer ends in an L-state layer and a zero layer (_zero_end)
        self.offset_gates = False       # gates may try per-step weight sizes (_offset_rows; set by _gradient_branches)
        self.near_one = False           # gradient gates on targets with |T - L| nearest 1 first (_gradient_targets)
        self.transfer_budget = None     # transfer searches left to this gradient search (None: no limit)
        self.unbudgeted = False         # the last, unlimited search of _gradient_branches (UNBUDGETED_LAST)

    #: the flags _gradient_branches sets for a retry of a point's search (each one at most once)
    RETRY_FLAGS = ("beam", "join", "zero_end", "offset_gates", "near_one")

    @property
    def retrying(self) -> bool:
        """Whether this search is a retry (a flag of RETRY_FLAGS set): the retries that try every flag
        in turn start only from the first, plain search."""
        return any(getattr(self, f) for f in self.RETRY_FLAGS)

    def budget(self):
        """The transfer budget of one gradient search: TRANSFER_BUDGET on formats with many values (one
        transfer search costs up to a second there), None (no limit) on small formats and in the last,
        unbudgeted search."""
        return None if (self.small_format or self.unbudgeted) else TRANSFER_BUDGET

    def _betas(self, gating, shift_exp):
        out = []
        for i in gating:
            s = self.steps[i]
            e = shift_exp - math.frexp(s.on_min)[1] + 1
            out.append(-s.on_sign * math.ldexp(1.0, e))
        return out

    def _shifts(self, gating):
        """(the shifts whose gating weights are all values, their weights as rows): once per gating set."""
        cache = self.__dict__.setdefault("_shift_rows", {})
        key = tuple(gating)
        if key not in cache:
            F = self.F
            shifts = [e for e in range(-F.M - 2, F.e_max + 1) if all(_in(F, b) for b in self._betas(gating, e))]
            B = np.array([self._betas(gating, e) for e in shifts]).reshape(len(shifts), len(gating))
            cache[key] = (shifts, B)
        return cache[key]

    def _gate_row(self, zi, gating, betas, extra, gamma):
        terms = [(b, self.U_X[i]) for b, i in zip(betas, gating)]
        if extra is not None:
            terms.append(extra)
        return np.broadcast_to(self.kit.row(terms, gamma), (len(self.X),))     # no terms: the bias alone

    def _offset_rows(self, gating):
        """Gating weight rows beyond ``_shifts``: each step's weight times 2^-1, 1 or 2, independently
        (not all 1), at every shift where all of them are values; tried only where the shared rows fail.

        Why: the shared rows normalize each step's weight to its smallest on value, so beta |on - L|
        lies in [2^e, 2^(e+1)) for all of them at once, and the largest weight the format allows caps
        e for every step.  mish~ on float8_e4m3b11fnuz: two gating steps with on values 0.875 and 16;
        the first caps beta at 16 (push 14) and the second then gets 2^-1 (push 8) where 14 is needed,
        though 1 (push 16) is a value too.  Also each step at its largest weight (any value of F, 1.875
        for an on value 16 where Omega = 30: push 30), alone and where the powers of two do not fit."""
        cache = self.__dict__.setdefault("_offset_shift_rows", {})
        key = tuple(gating)
        if key not in cache:
            F = self.F
            # each step's largest weight (any value of F) that keeps beta times its on values finite
            mags = np.unique(np.abs(F.values()))
            mags = mags[(mags > 0) & np.isfinite(mags)]
            top = []
            for i in gating:
                s = self.steps[i]
                ok = mags * max(abs(s.on_lo), abs(s.on_hi)) <= float(F.max_float)
                top.append(-s.on_sign * float(mags[ok].max()) if ok.any() else None)
            rows = [] if None in top else [top]
            for e in range(-F.M - 3, F.e_max + 2):
                base = self._betas(gating, e)
                for offs in itertools.product((0, 1, -1), repeat=len(gating)):
                    row = [math.ldexp(b, o) for b, o in zip(base, offs)]
                    if any(offs) and all(_in(F, b) for b in row):
                        rows.append(row)
                if None not in top:
                    # the powers of two where they fit, else the largest weight
                    row = [b if abs(b) <= abs(t) else t for b, t in zip(base, top)]
                    if all(_in(F, b) for b in row):
                        rows.append(row)
            cache[key] = np.array(rows, float).reshape(len(rows), len(gating))
        return cache[key]

    def _gate(self, zi, extra, targets, small_first=False):
        """(betas, gamma, pre on X) with pre[zi] one of targets (earliest preferred), others dead.

        For each size of the gating weights (all sizes at once, as rows of 2-D arrays) the candidate
        biases gamma are tried: every value of the format (small formats), else the values near
        target - sum (``_near``; the exact test decides).  The sum is monotone in gamma and in each
        term, so the largest sum over the other points decides deadness: computed on every point for
        small domains, else bounded (see ``_gate_sums``).  ``small_first``: take the smallest weights
        that reach any target (a gradient gate's weights multiply its backward value, which must stay
        finite); otherwise the best-ranked target, then the smallest weights.  Where no shared size
        works and ``offset_gates`` is set, per-step offsets of the sizes are tried (``_offset_rows``).
        """
        gating = sorted(self.gating(zi))
        if not gating and len(self.X) > 1:
            raise ConstructionError(f"point {zi + 1} has no gating step")
        shifts, B = self._shifts(gating)
        rows = [B] if shifts else []
        if self.offset_gates and len(gating) > 1:
            rows.append(self._offset_rows(gating))
        err = ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no gate puts it live and all other points dead")
        for Bk in rows:
            try:
                r = self._gate_with(zi, gating, Bk, extra, targets, small_first) if len(Bk) else None
            except ConstructionError as e:          # the indexed search's own verdict
                r, err = None, e
            if r is not None:
                return r
        raise err

    def _gate_with(self, zi, gating, B, extra, targets, small_first):
        """``_gate`` for the gating weight rows B: (betas, gamma, pre) or None."""
        st, F = self.st, self.F
        tv, order, tv_sorted = self._sorted_targets(targets)
        if not len(tv):
            return None
        if (self.small_format and self.tables is not None and len(self.X) <= EXACT_GATE_POINTS
                and (gating or extra is not None)):
            r = self._gate_indexed(zi, gating, B, extra, targets, tv, small_first)
            if r is not None:
                return r
        at_z, hi_o, lo_o, bad = self._gate_sums(zi, gating, B, extra)
        if self.small_format:
            G = F.values()
            Gb = np.broadcast_to(G[None, :], (len(B), len(G)))
        else:
            # per row, the 64 best-ranked targets not finer than the sum's spacing (RN(at_z + gamma)
            # cannot land on a value much finer than at_z's ulp unless gamma cancels it exactly)
            fine = np.exp2(np.floor(np.log2(np.where(at_z == 0, 1.0, np.abs(at_z)))) - F.M)
            want = _first_reached(tv, np.where(at_z == 0, -np.inf, fine), min(64, len(tv)))
            Gb = _near_grid(F, want - at_z[:, None], 2).reshape(len(B), -1)
            bad |= np.isnan(Gb).all(axis=1)
            Gb = np.where(np.isnan(Gb), 0.0, Gb)
        shape = Gb.shape
        pz, o1 = add_array(np.broadcast_to(at_z[:, None], shape), Gb, F)
        # the rank of each sum at z among the targets; the bounds over the other points are added only
        # where it hits one (the same test as on the whole grid: ok = no overflow, the upper bound dead)
        rank_z = self._ranks_of(targets, tv, order, tv_sorted, pz, ~o1 & ~bad[:, None])
        ri, ci = np.nonzero(rank_z <= len(tv))
        g = Gb[ri, ci]
        hi, o2 = add_array(hi_o[ri], g, F)
        lo, o3 = add_array(lo_o[ri], g, F)
        good = ~(o2 | o3) & st.dead(hi)
        ranks = np.full(shape, len(tv) + 1, dtype=np.int64)
        ranks[ri[good], ci[good]] = rank_z[ri[good], ci[good]]
        best_s = ranks.min(axis=1)
        if (best_s <= len(tv)).any():
            si = int(np.nonzero(best_s <= len(tv))[0][0]) if small_first else int(np.argmin(best_s))
            gi = int(np.argmin(ranks[si]))
            betas, gamma = [float(b) for b in B[si]], float(Gb[si, gi])
            pre = self._gate_row(zi, gating, betas, extra, gamma)
            if (tv == pre[zi]).any() and st.dead(np.delete(pre, zi)).all():      # (isin would sort tv)
                return betas, gamma, pre
        return None

    def _ranks_of(self, targets, tv, order, tv_sorted, v, mask):
        """rank[i] = the first position in tv of the value v[i] where mask holds and v[i] is a target, else
        len(tv) + 1: what the stable sorted search finds (``order[k]`` at the first k with
        tv_sorted[k] == v[i]).  bfloat16 and float16 look the value up by its 16-bit encoding (a
        table over every encoding, made once per fixed target list; -0 and +0 share a rank)."""
        none = len(tv) + 1
        code = _codes16(self.F)
        if code is not None:
            fixed = self._fixed_targets(targets)
            tables = self.__dict__.setdefault("_fixed_codes", {})
            table = tables.get(id(targets)) if fixed else None
            if table is None:
                table = np.full(1 << 16, none, dtype=np.int64)
                np.minimum.at(table, code(tv), np.arange(len(tv)))
                z0, z1 = code(np.array([0.0, -0.0]))
                table[z0] = table[z1] = min(table[z0], table[z1])
                if fixed:
                    tables[id(targets)] = table
            return np.where(mask, table[code(np.where(mask, v, 0.0))], none)
        k = np.clip(np.searchsorted(tv_sorted, v), 0, len(tv_sorted) - 1)
        return np.where(mask & (tv_sorted[k] == v), order[k], none)

    def _fixed_targets(self, targets) -> bool:
        """Whether ``targets`` is one of the context's fixed target lists (gate_targets, or the same
        states nearest 1 first): what is derived from those is kept, keyed by the list's id."""
        if targets is self.gate_targets or targets is getattr(self, "_near_one_targets", None):
            return True
        # sliced gating and its slices: the sliced context's fixed lists too (``_SlicedCtx.fixed_lists``)
        lists = self.fixed_lists
        return lists is not None and lists.get(id(targets), (None,))[0] is targets

    def _sorted_targets(self, targets):
        """(targets as an array, their stable sort order, the sorted array): made once for the fixed
        list gate_targets (47,446 states on bfloat16, asked for by every gradient gate), else per call."""
        fixed = self._fixed_targets(targets)
        cache = self.__dict__.setdefault("_fixed_sorted", {})
        if fixed and id(targets) in cache:
            return cache[id(targets)]
        tv = np.asarray(targets, float)
        order = np.argsort(tv, kind="stable")
        r = (tv, order, tv[order])
        if fixed:
            cache[id(targets)] = r
        return r

    def point_gate(self, zi, extra, targets, small_first=False) -> Gate:
        """``_gate`` as a Gate record (what the value and gradient branches read)."""
        betas, gamma, pre = self._gate(zi, extra, targets, small_first)
        return Gate(sorted(self.gating(zi)), betas, gamma, float(pre[zi]), max((abs(b) for b in betas), default=1.0))

    def _gate_sums(self, zi, gating, B, extra):
        """For each row of gating weights B: the gate's sum (without bias) at point zi, an upper and a
        lower bound of it over the other points, and a mask of rows where a product or sum overflows.

        Small domains: the sums on every point.  Large ones: the sum is computed in a fixed order and
        RN is monotone, so it is monotone in every term; at another point each coordinate of x is below,
        equal to or above z's, which fixes which gating steps are dead (term beta L) and which are on
        (term within beta [on_lo, on_hi]); the extra input (a pass) is bounded by its extremes over the
        other points.  Evaluating the sum at the terms' extremes, for every pattern but "all equal",
        bounds the sum at every other point (no overflow at the extremes means none in between).
        The extra input is summed last, so the sums of the gating terms alone (at z and per pattern) are
        the same for every gate of the point: they are kept for the point's next gate (``_gate_base``).
        """
        F, n = self.F, len(self.X)
        R = len(B)
        rowsum = self._rowsum

        cols = [(B[:, k:k + 1], self.U_X[i][None, :]) for k, i in enumerate(gating)]
        if extra is not None:
            cols.append((np.full((R, 1), extra[0]), np.asarray(extra[1], float)[None, :]))
        if n <= EXACT_GATE_POINTS:
            allx, bad = rowsum(R, cols)
            allx = np.where(bad[:, None], 0.0, allx)
            others = np.delete(allx, zi, axis=1) if n > 1 else np.full((R, 1), -F.max_float)
            return allx[:, zi], others.max(axis=1), others.min(axis=1), bad
        # (gating is not empty here: _gate refuses a point without gating steps on a domain of 2 or more)
        acc_z, over_z, bad_g, pats = self._gate_base(zi, gating, B)
        bad = over_z | bad_g
        if extra is None:
            at_z = acc_z
            ex = None
        else:
            at_z, o = rowsum(R, [(w, v[:, zi:zi + 1]) for w, v in cols[-1:]], acc_z, over_z)
            bad |= o
            v = np.delete(np.asarray(extra[1], float), zi)
            pr, o = mul_array(np.broadcast_to(np.full((R, 1), extra[0]), (R, 2)),
                              np.broadcast_to(np.array([[v.min(), v.max()]]), (R, 2)), F)
            bad |= o.any(axis=1)
            ex = (pr.min(axis=1, keepdims=True), pr.max(axis=1, keepdims=True))
        at_z = at_z[:, 0]
        hi_o = np.full(R, -np.inf)
        lo_o = np.full(R, np.inf)
        for hi_acc, hi_ov, lo_acc, lo_ov in pats:
            if ex is not None:
                hi_acc, hi_ov = rowsum(R, [(1.0, ex[1])], hi_acc, hi_ov)
                lo_acc, lo_ov = rowsum(R, [(1.0, ex[0])], lo_acc, lo_ov)
            bad |= hi_ov | lo_ov
            hi_o, lo_o = np.maximum(hi_o, hi_acc[:, 0]), np.minimum(lo_o, lo_acc[:, 0])
        if n > 1 and not np.isfinite(hi_o).all():
            raise ConstructionError(f"point {zi + 1}: no other point found for the gate bound")   # pragma: no cover
        hi_o = np.where(bad | ~np.isfinite(hi_o), 0.0, hi_o)
        lo_o = np.where(bad | ~np.isfinite(lo_o), 0.0, lo_o)
        return np.where(bad, 0.0, at_z), hi_o, lo_o, bad

    def _rowsum(self, R, cols, acc=None, over=None):
        """The left-to-right rounded sum of the products w v (continuing the partial sum acc), and the
        rows where one overflows (or over already holds)."""
        F = self.F
        over = np.zeros(R, bool) if over is None else over.copy()
        for w, v in cols:
            shape = np.broadcast_shapes(np.shape(w), np.shape(v))
            p, o = mul_array(np.broadcast_to(w, shape), np.broadcast_to(v, shape), F)
            over |= o.any(axis=1)
            if acc is None:
                acc = p
            else:
                acc, o2 = add_array(acc, p, F)
                over |= o2.any(axis=1)
        return (np.zeros((R, 1)) if acc is None else acc), over

    def _pattern_cols(self, zi, gating, B):
        """Per pattern of sides (see ``_gate_sums``): the gating terms' (lo columns, hi columns) and the rows
        where a product overflows."""
        F, R, L = self.F, len(B), self.st.L
        steps = [self.steps[i] for i in gating]
        coords = sorted({s.coord for s in steps})
        exists = {(s.coord, 1 if s.up else -1) for s in steps}   # the sides of z_j that hold points
        out = []
        for pattern in itertools.product((-1, 0, 1), repeat=len(coords)):
            side = dict(zip(coords, pattern))
            if not any(pattern) or any(v and (j, v) not in exists for j, v in side.items()):
                continue
            lo_cols, hi_cols, bad = [], [], np.zeros(R, bool)
            for k, s in enumerate(steps):
                on = side[s.coord] == (1 if s.up else -1)
                vals = np.array([[s.on_lo, s.on_hi]]) if on else np.array([[L, L]])
                pr, o = mul_array(np.broadcast_to(B[:, k:k + 1], (R, 2)), np.broadcast_to(vals, (R, 2)), F)
                bad |= o.any(axis=1)
                lo_cols.append((1.0, pr.min(axis=1, keepdims=True)))
                hi_cols.append((1.0, pr.max(axis=1, keepdims=True)))
            out.append((lo_cols, hi_cols, bad))
        return out

    def _gate_base(self, zi, gating, B):
        """(sum of the gating terms at zi, its overflow rows, the rows where a pattern's product overflows,
        per pattern (hi sum, its overflow rows, lo sum, its overflow rows)) of the gating terms alone:
        what every gate of point zi shares, kept for the last point asked."""
        key = (zi, tuple(gating), id(B), B.shape)
        last = getattr(self, "_gate_base_last", None)
        if last is not None and last[0] == key and last[1] is B:
            return last[2]
        R = len(B)
        cols = [(B[:, k:k + 1], self.U_X[i][None, :]) for k, i in enumerate(gating)]
        acc_z, over_z = self._rowsum(R, [(w, v[:, zi:zi + 1]) for w, v in cols])
        bad_g = np.zeros(R, bool)
        pats = []
        for lo_cols, hi_cols, bad in self._pattern_cols(zi, gating, B):
            bad_g |= bad
            hi_acc, hi_ov = self._rowsum(R, hi_cols)
            lo_acc, lo_ov = self._rowsum(R, lo_cols)
            pats.append((hi_acc, hi_ov, lo_acc, lo_ov))
        r = (acc_z, over_z, bad_g, pats)
        self._gate_base_last = (key, B, r)
        return r

    def _gate_indexed(self, zi, gating, B, extra, targets, tv, small_first):
        """``_gate`` on every point (small domains) of a tabulated format, in index space: the same
        left-to-right products and sums, bias grid and target ranks as lookups, so the same gate (or the
        same error); None when an input is not a value of the format (the caller rounds instead).

        Indices ascend with the values (one zero), so the bounds over the other points are index
        extremes; an overflow index propagates through sums, so a row is bad exactly where a product or
        a sum overflows; a target's rank is the first position holding its value, as the stable sorted
        search finds.  The gate's row ends with a bias of the grid (never -0), so its zeros are +0 as
        the rounded row's are.  tests/test_op_tables.py compares every call with the rounded ``_gate``."""
        tb, kit, F, st = self.tables, self.kit, self.F, self.st
        over, n = tb.over, len(self.X)
        acc = self._gating_sums_indexed(gating, B)
        if acc is False:
            return None
        iex, pe = None, None
        if extra is not None:
            iex = (kit.index(extra[0]), self._index_array(extra[1]))
            if iex[0] is None or iex[1] is None:
                return None
            p = tb.mul_table[iex[0], iex[1]][None, :]
            if acc is None:
                acc = np.broadcast_to(p, (len(B), n))
            elif self.compiled_gates:
                pe = p[0]           # the kernel adds it to each row it reads (acc stays the gating sums)
            else:
                acc = np.broadcast_to(tb.add_table[acc, p], (len(B), n))
        if self._fixed_targets(targets):
            ranks = self.__dict__.setdefault("_fixed_ranks", {})
            rank = ranks.get(id(targets))
            if rank is None:
                rank = ranks[id(targets)] = self._target_ranks(tv)
        else:
            rank = self._target_ranks(tv)
        if rank is None:
            return None
        dead = getattr(self, "_dead_idx", None)
        if dead is None:
            dead = self._dead_idx = np.append(st.dead(tb.values), False)
        add = tb.add_table
        if self.compiled_gates:
            # the same choice by a compiled loop over the rows (``kernels._gate_pick_py``; sliced gating's
            # slice gates, where numba is loaded anyway): it stops at the first row that hits with
            # small_first, and makes no (rows x values) arrays.  tests/test_theorem5_fast_paths.py
            low = kit.index(-F.max_float) if n == 1 else 0
            if low is None:
                return None
            si, gi = kernels.gate_pick(acc, zi, low, over, add, dead, rank, len(tv), small_first, pe)
        else:
            si, gi = self._gate_pick_np(acc, zi, n, over, add, dead, rank, len(tv), small_first)
            if si is None:
                return None
        if si >= 0:
            betas, gamma = [float(b) for b in B[si]], float(tb.values[gi])
            # the gate's row as Kit.row computes it: its products and sums without the bias are row si
            # of acc (the same terms in the same order; row si is not bad, so none of them overflows)
            s = add[acc[si] if pe is None else add[acc[si], pe], gi]
            if (s == over).any():
                raise ConstructionError(f"a sum overflows {F.name}")
            if rank[s[zi]] < len(tv) and dead[s[:zi]].all() and dead[s[zi + 1:]].all():
                return betas, gamma, tb.value(s)
        raise ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no gate puts it live and all other points dead")

    def _gate_pick_np(self, acc, zi, n, over, add, dead, rank, ntv, small_first):
        """``_gate_indexed``'s (row, bias index) by numpy arrays ((-1, -1) where none is ok; None where the
        one point's bound -Omega is not a value)."""
        kit, F = self.kit, self.F
        bad = (acc == over).any(axis=1)
        ia = acc[:, zi]
        if n > 1:
            ih = np.maximum(acc[:, :zi].max(axis=1, initial=0), acc[:, zi + 1:].max(axis=1, initial=0))
            il = np.minimum(acc[:, :zi].min(axis=1, initial=over), acc[:, zi + 1:].min(axis=1, initial=over))
        else:                                                  # no other point: the bound is -Omega
            low = kit.index(-F.max_float)
            if low is None:
                return None
            ih = il = np.full(len(acc), low, dtype=acc.dtype)
        Pz = add[ia, :over]
        ok = (Pz != over) & (add[il, :over] != over) & dead[add[ih, :over]] & ~bad[:, None]   # dead[over]: False
        ranks = np.where(ok, rank[Pz], ntv + 1)
        best_s = ranks.min(axis=1)
        if (best_s <= ntv).any():
            si = int(np.nonzero(best_s <= ntv)[0][0]) if small_first else int(np.argmin(best_s))
            return si, int(np.argmin(ranks[si]))
        return -1, -1

    def _index_array(self, v):
        """Table indices of an array of values, the last one remembered (a gate's pass input is read by
        its sums and its row); None when v holds a number outside the format."""
        last = getattr(self, "_last_index", None)
        if last is not None and last[0] is v:
            return last[1]
        i = self.kit.index(v)
        self._last_index = (v, i)
        return i

    def _ux_index(self, i):
        """Table indices of the gating step values U_X[i] (computed once: the steps are fixed)."""
        cache = self.__dict__.setdefault("_ux_idx", {})
        if i not in cache:
            cache[i] = self.kit.index(self.U_X[i])
        return cache[i]

    def _gating_sums_indexed(self, gating, B):
        """The index array of the left-to-right sums of the gating terms (rows of B) on every point, once
        per gating set; None without gating terms, False when a step value is not a value."""
        cache = self.__dict__.setdefault("_gating_acc", {})
        key = (tuple(gating), B.tobytes())
        if key not in cache:
            tb, acc = self.tables, None
            for k, i in enumerate(gating):
                iw, iv = self.kit.index(B[:, k]), self._ux_index(i)
                if iw is None or iv is None:
                    acc = False
                    break
                p = tb.mul_table[iw[:, None], iv[None, :]]
                acc = p if acc is None else tb.add_table[acc, p]
            cache[key] = acc
        return cache[key]

    def _target_ranks(self, tv):
        """rank[i] = the first position in tv of the value of index i (len(tv) + 1 where none), or None
        when a target is not a value of the format."""
        it = self.kit.index(tv)
        if it is None:
            return None
        rank = np.full(self.tables.over + 1, len(tv) + 1, dtype=np.int64)
        np.minimum.at(rank, it, np.arange(len(tv)))
        return rank

    def _map_two(self, v_off, v_on, off_ok, on_target, choices=False):
        """(a, c) with off_ok(T(RN(a v_off + c))) and T(RN(a v_on + c)) == on_target.

        With choices: a list of up to two such pairs, the preferred one and the smallest |a|.
        Maps onto a zero of T ("zero") are cached: every value branch asks for the same few."""
        if isinstance(off_ok, str):
            r = self._cached(("map_two", v_off, v_on, off_ok, on_target, choices),
                             lambda: self._map_two_search(v_off, v_on, off_ok, on_target, choices))
            return list(r) if choices else r
        return self._map_two_search(v_off, v_on, off_ok, on_target, choices)

    def _map_two_search(self, v_off, v_on, off_ok, on_target, choices=False):
        kit, F = self.kit, self.F
        zs = self.zero_states if off_ok == "zero" else off_ok
        zs = zs[np.argsort(np.abs(zs - 0))][:16]
        if self.small_format and self.tables is not None:
            r = self._map_two_indexed(v_off, v_on, zs, on_target)
            if r is not NotImplemented:
                return ([] if r is None else [r]) if choices else r
        return self._map_two_rounded(v_off, v_on, zs, on_target, choices)

    def _map_two_indexed(self, v_off, v_on, zs, on_target):
        """``_map_two_rounded`` on a small format with index tables, every z0 of zs at once: the pair it
        returns (with choices: its one pair, since there k is k_all), or None; NotImplemented when an
        input is not a value of the format (the rounded search then decides).

        Why the same pair: the products, sums and their overflows are the tables' (made by the same
        array operations, index equality is value equality with -0 = +0 as the comparison p_off == z0
        has it), T by index is T of the value (sigma~ maps -0 and +0 alike); the first z0 (in zs' order)
        with a hit and its first candidate (in A's order) are taken, as the loop does.  The returned c
        is computed again from the floats (RN(z0 - RN(a v_off)), the scalar twins of the array
        operations), so that the sign of a zero c is the rounded search's."""
        tb, kit = self.tables, self.kit
        iv_off, iv_on, iz = kit.index(v_off), kit.index(v_on), kit.index(zs)
        if iv_off is None or iv_on is None or iz is None or (iz == tb.over).any():
            return NotImplemented
        if not hasattr(self, "_map_two_A"):
            A = self.nonzero_values
            A = A[np.argsort(np.abs(A), kind="stable")]
            self._map_two_A = (A, tb.index(A))
        A, iA = self._map_two_A
        n = tb.over
        ro, rn = tb.mul_table[iA, iv_off], tb.mul_table[iA, iv_on]
        ok = (ro != n) & (rn != n)
        A, ro, rn = A[ok], ro[ok], rn[ok]
        C = tb.add_table[iz[:, None], tb.neg_table[ro][None, :]]          # (z0, a): RN(z0 - RN(a v_off))
        p_off = tb.add_table[ro[None, :], C]
        p_on = tb.add_table[rn[None, :], C]
        tv, t_over = kit.by_index(False)
        hit = (C != n) & (p_off != n) & (p_on != n) & (p_off == iz[:, None])
        hit &= ~t_over[p_on] & (tv[p_on] == on_target)
        rows = np.flatnonzero(hit.any(axis=1))
        if not len(rows):
            return None
        j = int(np.argmax(hit[rows[0]]))
        a, z0 = float(A[j]), float(zs[rows[0]])
        return a, kit.add(z0, -kit.mul(a, float(v_off)))

    def _map_two_rounded(self, v_off, v_on, zs, on_target, choices=False):
        kit, F = self.kit, self.F
        if self.small_format:
            A = self.nonzero_values
        else:   # the short weights, and those near (q - z0) / (v_on - v_off) for states q with T(q) = target
            q = self.st.z[self.st.t == on_target][:64]
            A = np.union1d(self.block_weights, _near(F, (q[:, None] - zs[None, :]) / (v_on - v_off), 2))
        A = A[np.argsort(np.abs(A), kind="stable")]     # smallest |a| first: smaller backward products
        r_off, o1 = mul_array(A, np.full_like(A, v_off), F)
        r_on, o2 = mul_array(A, np.full_like(A, v_on), F)
        ok = ~(o1 | o2)
        A, r_off, r_on = A[ok], r_off[ok], r_on[ok]
        for z0 in zs:
            c, oc = add_array(np.full_like(r_off, z0), -r_off, F)
            p_off, o3 = add_array(r_off, c, F)
            p_on, o4 = add_array(r_on, c, F)
            good = ~(oc | o3 | o4)
            good &= p_off == z0
            if not good.any():
                continue
            t_on, ov = kit.R.value_array(p_on[good])
            hit = (~ov) & (t_on == on_target)
            if hit.any():
                k = k_all = np.nonzero(hit)[0]
                if not self.small_format:
                    # a flat on state (T' = 0, e.g. tanh saturated at 1) first: the backward value that
                    # reaches it stops there, so a large output weight costs no gain behind it
                    d_on, od = kit.R.derivative_array(p_on[good][k])
                    flat = k[(d_on == 0) & ~od]
                    k = flat if len(flat) else k
                pair = lambda i: (float(A[good][i]), float(c[good][i]))
                if choices:
                    return list(dict.fromkeys([pair(k[0]), pair(k_all[0])]))
                return pair(k[0])
        return [] if choices else None

    def _value_states(self):
        """Candidate live states of value gates (computed once): z, T, T', log2|T|, T not a power of two."""
        if not hasattr(self, "_vstates"):
            st = self.st
            live = (st.z > st.z_dead) & (st.t != st.L)
            if not self.small_format:   # V'_z's weight (about |z_d| / |T(q3) - L|) must stay inside the format
                live &= np.abs(st.t - st.L) >= 8 * self.push_min
            t = st.t[live]
            lt = np.log2(np.abs(np.where(t == 0, 1e-300, t)))
            not_pow2 = np.abs(np.frexp(t)[0]) != 0.5
            self._vstates = (st.z[live], t, st.dt[live], lt, not_pow2)
        return self._vstates

    def value_branches(self, zi, f, y_max, n_post=1, y_at=None):
        """The value branches of point zi: one, else 2 or 4 carrying f/parts each.

        Elsewhere the backward value of a branch is at least |y| |A| = |y| |f| / P, and P <= Omega:
        f* = -192 on float8_e4m3 (P <= 128) overflows for upstream values above 160.  Parts with f/2
        or f/4 (exact when they are values) meet in the output sum, where at z every other term is 0.
        The backward contributions of a point's gates meet in its gating steps' sums: each of its n_g
        gradient gates keeps below Omega / share, and the value gates split the rest, so that sum stays
        finite.
        """
        errors = []

        def split(room, any_Ps=(False,)):
            """One branch with f, else 2 or 4 with f/parts each, each with share parts / room of the gating
            steps' sums; the first that fits, or None (every failure kept in errors)."""
            for parts in (1, 2, 4):
                part = f / parts
                if not _in(self.F, part):
                    return None
                for any_P in any_Ps:
                    try:
                        return [self.value_branch(zi, part, y_max, n_post, y_at, share=parts / room,
                                                  any_P=any_P)] * parts
                    except ConstructionError as e:
                        errors.append(e)
            return None

        # the point's n_g gradient gates each keep below Omega / share; the value gates share the rest
        n_g = self.gradient_gates.get(zi, 0)
        r = split(max(self.share - n_g, 1) / self.share)     # (split gradients can take more gates than 2d)
        if r is not None:
            return r
        # the budget measured instead of bounded: the point's gradient gates put exactly
        # |delta_gate| max|beta| each into its gating steps' sums (computed from the built branches), often
        # far below Omega / share when h* is large (relu on float8_e4m3 with |h*| up to H_sigma = 240:
        # f* = -128 with h* = 240 at the point needs 1.48 Omega under the bound, 0.5 Omega measured)
        used = sum(self._gate_backward(br) for br in self.gradient_at.get(zi, []))
        if used < self.F.max_float and not isinstance(self, _SlicedCtx):
            room = (float(self.F.max_float) - used) / float(self.F.max_float) * (1 - 2.0 ** -40)
            r = split(room, (False, True) if n_g else (True,))
            if r is not None:
                return r
        raise errors[0]

    def _gate_backward(self, br) -> float:
        """|delta| max|beta|: what the gate of gradient branch br adds, at its point, to the backward sums of
        the gating steps it reads (the exact backward chain y (x) A, then T' (x) a of each post layer, then
        T' of the gate)."""
        kit = self.kit
        v, pre = float(kit.T(br.gate.pz)), []
        for a, c in br.post:
            pre.append(float(kit.add(kit.mul(a, v), c)))
            v = float(kit.T(pre[-1]))
        b = float(kit.mul(br.y, br.out_weight))
        for (a, _), p in zip(reversed(br.post), reversed(pre)):
            b = float(kit.mul(kit.mul(b, kit.dT(p)), a))
        return abs(float(kit.mul(b, kit.dT(br.gate.pz)))) * br.gate.bmax

    def value_branch(self, zi, f, y_max, n_post=1, y_at=None, share=None, any_P=False):
        """V_z (live at z, dead elsewhere), V'_z (zero of T elsewhere, a power of two P at z), then
        n_post - 1 relays that keep 0 -> a zero of T and P -> P (padding to the gradient branches' depth).

        Among the candidate live states and output scalings, one whose backward values stay finite
        (y_at = |h*(z)| at the point, default y_max; |y| <= y_max elsewhere) with the smallest backward
        gain |A| |T'(q4)| |a_v| |T'(q3)| max|beta| is kept.

        any_P: V' may target any nonzero value P of T with RN(A P) = f* exactly, the largest |P| (smallest
        |A|) first.  The backward value y (x) A must stay finite, and with powers of two P <= P_max it
        needs |h*| |f*| <= Omega P_max (relu on float8_e4m3: f* = 144 with h* = 224 needs P >= 135 > 128,
        and P = 144, A = 1 fits).
        """
        kit, st, F = self.kit, self.st, self.F
        y_at = y_max if y_at is None else abs(y_at)
        share = self.share if share is None else share
        cand_z, cand_t, cand_d, lt, not_pow2 = self._value_states()

        def pow2_pairs():
            with np.errstate(over="ignore", under="ignore"):
                pows = [P for P in self.pow2_values if _in(F, f / P)]
            return [(P, f / P) for P in sorted(pows, key=lambda P: (abs(f) > P, abs(_lg(f) - _lg(P))))]
        # a function of f only (f != 0: -0 never keys it); pairs is rebound below, never mutated
        pairs = self._cached(("pow2_pairs", f), pow2_pairs)
        if any_P:
            pairs = []
            for P in np.unique(np.abs(cand_t[cand_t != 0]))[::-1]:
                for sP in (float(P), -float(P)):
                    pairs += [(sP, float(A)) for A in _near(F, np.array([f / sP]), 1)
                              if float(kit.mul(float(A), sP)) == f]
            pairs.sort(key=lambda pa: abs(pa[1]))
            pairs = pairs[:16]
        if not pairs:
            what = "value P of T with RN(A P) = f* for a value A" if any_P else "power of two P with f*/P exact"
            raise ConstructionError(f"point {zi + 1}: no {what} for f* = {f!r}")
        best = None
        # live states for V: prefer values near each candidate P and small derivatives
        keys = lambda: [np.abs(cand_d), np.abs(lt - _lg(f))]        # |T(q3)| near |f*|: a_v near 1
        if self.small_format:       # the order is a function of |f|: kept (a new list each time: it is edited)
            prefs = list(self._cached(("value_prefs", abs(f)), lambda: tuple(cand_z[np.lexsort(keys())])))
        else:   # few weights are tried: a power-of-two T(q3) maps onto P exactly; 1,024 by that order and
                # 1,024 farthest from L (a gate can not land on a value much finer than its sum's spacing,
                # e.g. tanh~(q) = q = 2^-587 for a tiny f* on float64; and V' needs a weight of about
                # |q4 - z0| / |T(q3) - L|, which multiplies the backward value elsewhere)
            order = np.lexsort(keys() + [not_pow2])
            far = np.lexsort([np.abs(cand_d), -np.abs(cand_t - st.L), not_pow2])
            prefs = list(dict.fromkeys(np.concatenate([cand_z[order][:1024], cand_z[far][:1024]]).tolist()))
        unit_tried = False
        for attempt in range(8):
            if attempt == 6 and best is not None:
                break
            if (attempt == 2 and best is not None and best[0][0]) or attempt == 6:
                # the backward value overflows (at z it is about y f / T(q3) times the gate's weights), or
                # (attempts 6 and 7) no V' maps the gate's on values near |f*| onto a power of two (a tiny
                # f* among sigma~'s smallest values: sigmoid~ on float8_e4m3fnuz, f* = 3 * 2^-10, whose V_z
                # value 2^-10 would need a weight of about 4,096 to reach sigmoid~'s live side, Omega =
                # 240): the gate's on values farthest from L come next
                far_from_L = dict(zip(cand_z.tolist(), (-np.abs(cand_t - st.L)).tolist()))
                prefs.sort(key=far_from_L.__getitem__)
            try:
                gate = self.point_gate(zi, None, prefs)
            except ConstructionError:
                if self.small_format or best is not None or unit_tried:
                    break
                # no gate lands on a state near |f*| or far from L (their first 64 are tried): states with
                # |T(q3)| nearest 1 (relu on 256 float64 points, f* = -2^1013.6: the gating steps' on values
                # reach Omega, so the weights and the bias stay far below 2^1013)
                unit_tried = True
                prefs = list(cand_z[np.lexsort([np.abs(cand_d), np.abs(lt), not_pow2])][:1024])
                try:
                    gate = self.point_gate(zi, None, prefs)
                except ConstructionError:
                    break
            prefs.remove(gate.pz)
            Pv = float(kit.T(gate.pz))
            d3 = abs(float(kit.dT(gate.pz)))
            bmax = gate.bmax
            blocker_chains = None

            def consider(post, g_on, g_off, A):
                nonlocal best
                worst = max(g_on * y_at, g_off * y_max)       # the largest backward value
                key = (worst > F.max_float, max(g_on, g_off))
                if best is None or key < best[0]:
                    best = (key, _Branch(zi, gate, post, A), g_on, g_off)
                return worst <= F.max_float

            # the six powers of two nearest |f*| first; the others only when none of those fits (the
            # nearest can all be out of reach: sigmoid~ on float64 maps L = 0 to a zero of T only by a
            # bias c <= z_d ~ -745, so RN(a Pv + c) lands on multiples of ulp(c) = 2^-43 and misses the
            # single fine preimage q of a tiny P, while P = 1 has every q >= 37 as preimage)
            for i, (P, A) in enumerate(pairs):
                if i >= 6 and best is not None and not best[0][0]:
                    break
                fits = False
                m = self._cached(("v_prime", Pv, P), lambda: self._v_prime(Pv, P))
                if m is not None:
                    a, c, d4, d0 = m
                    # every prefix of the backward chain y A (relays) T'(q4) a T'(q3) beta at the point,
                    # where y = h*(z), and y A (relays) T'(z0) a elsewhere, where |y| <= y_max, must stay
                    # finite: each gain is the largest prefix product
                    g_on = abs(A) * max(1.0, d4, d4 * abs(a), d4 * abs(a) * d3, d4 * abs(a) * d3 * bmax * share)
                    g_off = abs(A) * max(1.0, d0, d0 * abs(a))
                    post = [(a, c)]
                    # n_post - 1 copies of P's relay (the same factors each time, multiplied in one by one)
                    r = self._cached(("v_relay", P), lambda: self._v_relay(P)) if n_post > 1 else None
                    if r is not None:
                        ra, rc, don, doff = r
                        f_on, f_off = max(1.0, don, abs(ra) * don), max(1.0, doff, abs(ra) * doff)
                        for _ in range(n_post - 1):
                            g_on *= f_on
                            g_off *= f_off
                        post += [(ra, rc)] * (n_post - 1)
                    if len(post) == n_post:
                        fits = consider(post, g_on, g_off, A)
                if fits or n_post == 1:
                    continue
                # the padding as blockers between V_z and V' instead: L stays dead through them, so at
                # the other points the backward value stops at the last blocker (relays after V' map 0
                # to a zero of T, where T' can be 1, and multiply it by their weights there)
                if blocker_chains is None:
                    blocker_chains = self._value_blockers(Pv, n_post - 1)
                for chain, t_last, gains in blocker_chains:
                    for a2, c2 in self._map_two(st.L, t_last, "zero", P, choices=True):
                        d4 = abs(float(kit.dT(kit.add(kit.mul(a2, t_last), c2))))
                        d0 = abs(float(kit.dT(kit.add(kit.mul(a2, st.L), c2))))
                        prefix = [1.0, d4, d4 * abs(a2)]
                        for gk in gains:                        # T'(p_k) a_k, last blocker first
                            prefix.append(prefix[-1] * gk)
                        prefix += [prefix[-1] * d3, prefix[-1] * d3 * bmax * share]
                        consider(chain + [(a2, c2)], abs(A) * max(prefix), abs(A) * max(1.0, d0, d0 * abs(a2)), A)
            if best is not None and not best[0][0]:
                break
        if best is None:
            raise ConstructionError(f"point {zi + 1}: no output scaling realizes the value {f!r}")
        if best[0][0]:
            _, _, g_on, g_off = best
            raise ValueGainOverflow(
                f"point {zi + 1}: the value {f!r} needs a backward gain of {g_on:g} at the point (upstream "
                f"{y_at:g} there) and {g_off:g} elsewhere (upstream up to {y_max:g}), which overflows {F.name}")
        return best[1]

    # V' and its relays depend on the gate's on value and P only (every value branch asks again): cached
    # by those; a ConstructionError (an overflow) is raised again on each call, as it is not cached
    def _v_prime(self, Pv, P):
        """(a, c, |T'(q4)|, |T'(z0)|) of V' = T(a V + c) mapping Pv to P (q4 = RN(a Pv + c)) and L to a
        zero of T (z0 = RN(a L + c)), or None."""
        kit, L = self.kit, self.st.L
        m = self._map_two(L, Pv, "zero", P)
        if m is None:
            return None
        a, c = m
        q4 = float(kit.add(kit.mul(a, Pv), c))
        return a, c, abs(float(kit.dT(q4))), abs(float(kit.dT(kit.add(kit.mul(a, L), c))))

    def _v_relay(self, P):
        """(a, c, |T'| at P, |T'| at 0) of a relay T(a v + c) after V' keeping 0 -> a zero of T and
        P -> P, or None."""
        kit = self.kit
        r = self._map_two(0.0, P, "zero", P)
        if r is None:
            return None
        ra, rc = r
        return ra, rc, abs(float(kit.dT(kit.add(kit.mul(ra, P), rc)))), abs(float(kit.dT(rc)))

    def _value_blockers(self, v_on, n, n_last=8):
        return self._cached(("value_blockers", v_on, n, n_last), lambda: self._value_blockers_search(v_on, n, n_last))

    def _value_blockers_search(self, v_on, n, n_last=8):
        """Up to n_last chains of n blocker layers after a value gate whose on value is v_on: each
        layer is dead at L and live at the point.  Returns (post, T at the point after the last layer,
        [|T'(p_k) a_k| for the layers, last first]).  Layers with |a T'| <= 1 and on values far from L
        come first (the next layer's weight then stays small); the last layer keeps n_last choices."""
        L = self.st.L
        post, gains, v = [], [], v_on
        for k in range(n):
            a, c, _, t, d = self._blockers(v)
            if not len(a):
                return []
            order = np.lexsort([-np.abs(t - L), np.maximum(np.abs(a * d), 1.0)])
            if k == n - 1:
                return [(post + [(float(a[i]), float(c[i]))], float(t[i]), [abs(float(a[i] * d[i]))] + gains)
                        for i in order[:n_last]]
            i = order[0]
            post.append((float(a[i]), float(c[i])))
            gains.insert(0, abs(float(a[i] * d[i])))
            v = float(t[i])
        return []

    def _reach(self, base: float):
        """(c, q): the bias c with q = RN(base + c) the best-ranked pass state (``pass_z`` order), or None.

        Small formats try every value as c; large ones the values near q - base for the 256 best-ranked
        states q (the exact sum decides).  On small formats the answer is remembered per base (with the
        sign of a zero): it depends on nothing else, and the searches ask for the same bases often."""
        if self.small_format:
            memo = self.__dict__.setdefault("_reach_memo", {})
            key = (base, math.copysign(1.0, base))
            if key not in memo:
                memo[key] = self._reach_search(base)
            return memo[key]
        return self._reach_search(base)

    def _reach_search(self, base: float):
        F = self.F
        if self.small_format:
            G = F.values()
        else:
            G = _near(F, self.pass_z[:256] - base, 2)
        ib = self.kit.index(base) if self.small_format and self.tables is not None else None
        if ib is not None:
            # RN(base + G) for every value G: a row of the sum table (NaN where it overflows; a zero sum
            # is +0 either way, G holding no -0)
            qi = self.tables.add_table[ib, :-1]
            q, o = self.tables.value(qi), qi == self.tables.over
        else:
            q, o = add_array(np.full_like(G, base), G, F)
        keys, vals = self._pass_keys, self._pass_ranks
        k = np.clip(np.searchsorted(keys, q), 0, len(keys) - 1)
        r = np.where(~o & (keys[k] == q), vals[k], np.iinfo(np.int64).max)
        i = int(np.argmin(r))
        if r[i] == np.iinfo(np.int64).max:
            return None
        return float(G[i]), float(q[i])

    def _pass(self, v, a, zi):
        """(c, p, T(a v + c) on X): a pass reading v with weight a whose pre-activation at point zi is
        the best-ranked state p; None if none is reachable or a value overflows."""
        kit = self.kit
        try:
            r = self._reach(float(kit.mul(a, v[zi])))
            if r is None:
                return None
            c, p = r
            return c, p, kit.T(kit.row([(a, v)], c))
        except ConstructionError:
            return None

    def gradient_branch(self, zi, j, y, g, h_max, C, n_post=1, n_top=None):
        """Source, pass, gate, n_post passes, absorbed output weight: AD gradient g at z, 0 elsewhere.
        With n_top: n_post .. n_top passes (the fewest that work) for each source, pass and gate."""
        kit, F = self.kit, self.F
        X = self.X
        vi = self._coord_index(zi, j)                                  # z's index in the source row's inputs
        quarter = math.ldexp(1.0, math.frexp(C)[1] - 1 - F.M - 2)      # ulp(C) / 4
        last_err = "no source state reachable"
        # the (source, passes, scales) before the gate, in the order tried, with the reasons the ones
        # between them failed ("relay", "reach")
        for c in self._pre_gate(zi, j, g):
            if c.__class__ is str:
                last_err = c
                continue
            w_g, b_g, a2, c2, a2b, c3, a3, relays, P3, tail = c
            for option in self._gradient_gates(zi, j, vi, a3, P3, (j, w_g, b_g, a2, a3)):
                if isinstance(option, ConstructionError):
                    last_err = str(option)
                    continue
                gate, slice_gate, front = option
                Gz = float(kit.T(gate.pz))
                d3 = float(kit.dT(gate.pz))
                factors = [d3] + front + tail
                for n in range(n_post, (n_top or n_post) + 1):
                    r = self._transfer(y, g, Gz, d3, factors, gate.bmax, h_max, quarter, n)
                    if r is not None:
                        break
                if r is None:
                    last_err = (f"no transfer pair (a, A) maps upstream {y!r} to gradient {g!r}: "
                                f"{self.transfer_why}")
                    continue
                post, A, ends = r
                post = list(post)           # pad_gradient appends to it; r may be shared (cached)
                br = _Branch(zi, gate, post, A, coord=j, w_g=w_g, b_g=b_g, a2=a2, c2=c2, a2b=a2b, c3=c3,
                             a3=a3, slice_gate=slice_gate, relays=relays)
                br.ends, br.y, br.g, br.near_one = ends, y, g, self.near_one
                return br
        if last_err == "relay":
            last_err = "no relay of the pass reaches a pass state"
        elif last_err == "reach":
            # every gate's transfer would find no value reaching g through the factors before the
            # gate (their last factors are these): its gate searches were skipped (the same branch)
            last_err = (f"no transfer pair (a, A) maps upstream {y!r} to gradient {g!r}: no value "
                        f"reaches the gradient through the factors before the gate")
        raise ConstructionError(f"point {zi + 1} {X[zi].tolist()}, coordinate {j + 1}: gradient branch not "
                                f"found ({last_err})")

    def _pre_gate(self, zi, j, g):
        """gradient_branch's (source, pass, second pass, relays, scales) in the order tried, each as
        (w_g, b_g, a2, c2, a2b, c3, a3, relays, P3, the backward factors before the gate), or the reason
        one failed: "relay" (no relay of the pass reaches a pass state) or "reach" (``_reaches``: no value
        reaches g through those factors, so every gate's transfer would fail at once)."""
        kit, F = self.kit, self.F
        xs, vi = self._coord_values(j), self._coord_index(zi, j)    # the source row's inputs, z's index
        xz = float(xs[vi])
        # source weights: a backward value must stay a finite value of the format all the way, so near
        # the input the suffix products |w_g|, |T'(s0) w_g| must reach |g| / Omega; small |w_g| first

        def source_weights():           # a function of coordinate j's values only (sorted per g below)
            xmax = float(np.max(np.abs(xs)))
            powers = [math.ldexp(sg, k) for k in (0, -1, 1, -2, 2, -3, 3) for sg in (1.0, -1.0)]
            return [w for w in powers if _in(F, w) and abs(w) * xmax <= F.max_float]
        # the order is a function of (j, |g|): kept (a new list each time, as the sort made one)
        powers = list(self._cached(("source_order", j, abs(g)), lambda: sorted(
            self._cached(("source_weights", j), source_weights),
            key=lambda w: (abs(w) / 2 < abs(g) / float(F.max_float), abs(math.log2(abs(w)))))))
        def source(w_g):
            try:
                src = self._reach(float(kit.mul(w_g, xz)))
                if src is None:
                    return None
                b_g, s0 = src
                return b_g, s0, kit.T(kit.row([(w_g, xs)], b_g)), float(kit.dT(s0))
            except ConstructionError:
                return None

        for w_g in powers[:6]:
            # sources and passes are cached by (coordinate, value index, weights): the branches of one
            # slice (sliced gating) or of one point share them
            src = self._cached_at(vi, ("source", j, vi, w_g), lambda: source(w_g))
            if src is None:
                continue
            b_g, s0, S, d1 = src
            for a2, a3 in self._scales(g, w_g, d1, self._gate_weight(zi, j) * self.share):
                # the passes of (source, a2), with their factors of the backward chain (kept together)
                pp = self._cached_at(vi, ("passes", j, vi, w_g, a2), lambda: self._passes(j, vi, w_g, S, d1, a2))
                if pp is None:
                    continue
                if pp.__class__ is str:
                    yield pp
                    continue
                c2, a2b, c3, relays, P3, front = pp
                # every gate's transfer would find no value reaching g through the factors before the
                # gate (their last factors are these): its gate searches are skipped (the same branch)
                if not self._reaches(g, None, ("reaches", float(a3)) + front):
                    yield "reach"
                    continue
                yield w_g, b_g, a2, c2, a2b, c3, a3, relays, P3, [a3] + list(front)

    def _passes(self, j, vi, w_g, S, d1, a2):
        """The passes after source S (weight w_g on x_j, value index vi) with weight a2: (c2, a2b, c3,
        relays, P3, (the factors of the backward chain from the relays down to the source)), None where
        the pass or the second pass reaches no pass state, "relay" where a relay does not."""
        kit = self.kit
        r2 = self._cached_at(vi, ("pass2", j, vi, w_g, a2), lambda: self._pass(S, a2, vi))
        if r2 is None:
            return None
        c2, p2, P2 = r2
        d2 = float(kit.dT(p2))
        # the second pass (layer 3, beside the boosted steps): weight -1 keeps it small
        a2b = -1.0
        r3 = self._cached_at(vi, ("pass3", j, vi, w_g, a2), lambda: self._pass(P2, a2b, vi))
        if r3 is None:
            return None
        c3, p3, P3 = r3
        d2b = float(kit.dT(p3))
        # relays after the second pass, one per sharpening layer of the steps (none on most
        # formats): passes like the second one (weight -1, a pass state at the point), whose
        # derivatives and weights join the backward chain
        relays, relay_f = [], []
        for k in range(self.relays):
            r = self._cached_at(vi, ("relay", k, j, vi, w_g, a2), lambda: self._pass(P3, -1.0, vi))
            if r is None:
                break
            relays.append((-1.0, r[0]))
            relay_f = [float(kit.dT(r[1])), -1.0] + relay_f
            P3 = r[2]
        if len(relays) < self.relays:
            return "relay"
        return c2, a2b, c3, tuple(relays), P3, tuple(float(f) for f in relay_f + [d2b, a2b, d2, a2, d1, w_g])

    def pad_gradient(self, br, n_total, h_max, quarter):
        """Append relays to a gradient branch until it has n_total layers after its gate.

        A relay T(a v + c) sits at a pass state r with T'(r) = 2^k and a = 2^-k, so at the branch's
        point the backward value y (x) A is multiplied by T'(r) and then by a and comes back unchanged
        (checked exactly); its forward value stays small enough to be absorbed, and at the other points
        the backward gain it adds is checked against h_max.
        """
        v_on, v_off, gain = br.ends
        ow, need = br.out_weight, n_total - len(br.post)
        if need > 0:
            # the relays appended are a function of these numbers only (the same ones recur: branches that
            # end on the same values with the same upstream and output weight), so they are kept by them
            # (signs too: -0 == 0 as a key); a failure keeps what was appended before it, as the loop did
            sgn = tuple(math.copysign(1.0, v) for v in (br.y, ow, v_on, v_off, gain))
            added, ow2, ok = self._cached(("pad", br.y, ow, v_on, v_off, gain, need, h_max, quarter) + sgn,
                                          lambda: self._pad_search(br.y, ow, v_on, v_off, gain, need, h_max, quarter))
            br.post.extend(added)
            if not ok:
                raise ConstructionError(f"point {br.zi + 1}: no relay pads its gradient branch to "
                                        f"{n_total} layers after the gate")
            ow = ow2
        br.out_weight = ow
        return br

    def _pad_search(self, y, ow, v_on, v_off, gain, need, h_max, quarter):
        """``pad_gradient``'s relays: (the need (a, c) appended, the output weight, True), or (the ones
        appended before no relay fitted, None, False)."""
        kit, F = self.kit, self.F
        post = []
        while len(post) < need:
            t1 = float(kit.mul(y, ow))      # the backward value the branch's last layer must keep
            done = False
            # m = 0 first (T'(r) a = 1, the output weight stays); then relays with T'(r) a = 2^m and the
            # output weight ow 2^-m: sigmoid's pass states have T' = 1/4, and t1 (x) 1/4 (x) 4 != t1 when
            # t1 / 4 is subnormal (a 64 x 64 sigmoid grid on float8_e4m3); a larger output weight keeps
            # the product normal, and the exact check decides
            # the relays that fit the on and off values (a function of them only: kept for the branches
            # that end on the same values), in the order tried
            relays = self._cached(("pad_relays", v_on, v_off, math.copysign(1.0, v_on), math.copysign(1.0, v_off)),
                                  lambda: self._pad_relays(v_on, v_off))
            for m, rel in relays:
                ow2 = math.ldexp(ow, -m)
                if not _in(F, ow2):
                    continue
                try:
                    yw = kit.mul(y, ow2)
                except ConstructionError:
                    continue
                yd = {}                         # RN(RN(y ow2) T'(q)) per derivative T'(q)
                for a, c, t_on, t_off, d, d_off in rel:
                    g2 = gain * d_off * abs(a)
                    if not (abs(ow2) * max(abs(t_on), abs(t_off)) < quarter
                            and abs(ow2) * h_max * max(1.0, g2) <= F.max_float):
                        continue
                    try:
                        if d not in yd:
                            yd[d] = kit.mul(yw, d)
                        back = float(kit.mul(yd[d], a))
                    except ConstructionError:
                        continue
                    if back == t1:
                        post.append((a, c))
                        v_on, v_off, gain, ow = t_on, t_off, max(gain, g2), ow2
                        done = True
                        break
                if done:
                    break
            if not done:
                sgn = tuple(math.copysign(1.0, v) for v in (y, ow, v_on, v_off))
                relay = self._cached(("odd_relay", y, ow, v_on, v_off, gain, h_max, quarter) + sgn,
                                     lambda: self._odd_relay(y, ow, t1, v_on, v_off, gain, h_max, quarter))
                if relay is None:
                    return post, None, False
                (a, c), (v_on, v_off, g2), ow = relay
                post.append((a, c))
                gain = max(gain, g2)
        return post, ow, True

    def _pad_relays(self, v_on, v_off):
        """[(m, [(a, c, T(on), T(off), T'(q), |T'(off)|), ...]) for m = 0, 1, 2, 3, -1, -2]: the relays
        T(a v + c) with a = 2^m / T'(q) at each pass state q, c putting the on value v_on at q."""
        kit, F = self.kit, self.F
        out = []
        for m in (0, 1, 2, 3, -1, -2):
            rel = []
            for q, d in zip(self.pass_z, self.pass_d):
                a = math.ldexp(1.0, m) / float(d)
                if not _in(F, a):
                    continue
                try:
                    c = _solve_affine(kit, float(kit.mul(a, v_on)), float(q))
                    if c is None:
                        continue
                    off = float(kit.add(kit.mul(a, v_off), c))
                    t_on, t_off = float(kit.T(q)), float(kit.T(off))
                    d_off = abs(float(kit.dT(off)))
                except ConstructionError:
                    continue
                rel.append((a, c, t_on, t_off, d, d_off))
            out.append((m, rel))
        return out

    def _odd_relay(self, y, ow, t1, v_on, v_off, gain, h_max, quarter):
        """A relay whose weights are not powers of two: ((a, c), (on, off, gain), output weight) or None.

        When y (x) ow is subnormal, a power-of-two relay loses bits: with sigmoid's T' = 1/4 on float8_e4m3,
        y = -2^-9 and ow = -5.5 give t1 = 6 x 2^-9, and t1 / 4 rounds.  An output weight ow2 with
        y (x) ow2 (x) T' an exact multiple of the smallest subnormal, and a relay weight a with
        b (x) a == t1 (a = 3 for ow2 = -8), carry t1 back unchanged; every product is checked exactly,
        the forward values must still be absorbed (|ow2| |T| < ulp(C)/4) and the backward gain must stay
        finite at every other point.  Tried only where every power-of-two relay failed.
        """
        kit, F = self.kit, self.F
        sg = 1.0 if ow > 0 else -1.0
        e0 = math.frexp(abs(ow))[1]
        weights = sorted({sg * math.ldexp(k, e) for k in range(1, 16) for e in range(e0 - 8, e0 + 4)
                          if _in(F, math.ldexp(k, e))}, key=lambda w: (abs(_lg(abs(w)) - _lg(abs(ow))), abs(w)))
        for q, d in zip(self.pass_z, self.pass_d):
            t_on = float(kit.T(q))
            for ow2 in weights:
                if abs(ow2) * abs(t_on) >= quarter:
                    continue
                try:
                    b = float(kit.mul(kit.mul(y, ow2), d))
                except ConstructionError:
                    continue
                if b == 0:
                    continue
                for a in _near(F, t1 / b, 2):
                    a = float(a)
                    try:
                        if a == 0 or float(kit.mul(b, a)) != t1:
                            continue
                        c = _solve_affine(kit, float(kit.mul(a, v_on)), float(q))
                        if c is None:
                            continue
                        off = float(kit.add(kit.mul(a, v_off), c))
                        t_off = float(kit.T(off))
                    except ConstructionError:
                        continue
                    g2 = gain * abs(float(kit.dT(off))) * abs(a)
                    if abs(ow2) * abs(t_off) < quarter and abs(ow2) * h_max * max(1.0, g2) <= F.max_float:
                        return (a, c), (t_on, t_off, max(gain, g2)), ow2
        return None

    def _reaches(self, g, factors, key=None) -> bool:
        """False only when no value u of the format (0 and the overflow index included) has
        RN(...RN(RN(u f_1) f_2)... f_k) = g for these factors (8-bit formats; True elsewhere).

        Why the gate searches it skips would have found nothing: a transfer's set S_0 holds the values t
        whose image RN(...RN(t d3)... f_k) through the whole chain before the gate is g
        (``_transfer_search``), and these factors are the end of that chain, so every such image is the
        image of some u (u = the product up to them) through these factors alone.  Without a u, S_0 is
        empty for every gate and the transfer fails at once, whatever the gate, its weights, the number of
        layers and the retry flags.  (Sigmoid on float8_e4m3, T' <= 1/4: most (source, scale) pairs miss
        g, and each would search 6 slice and AND gates.)  tests/test_theorem5_fast_paths.py checks it."""
        tb = self.tables
        if tb is None or self.nonzero_values is None:
            return True
        if key is None:     # (the caller may pass it: ("reaches",) and the factors as floats)
            key = ("reaches",) + tuple(float(f) for f in factors)
        mask = self._memo.get(key)
        if mask is None:
            i = np.arange(tb.over + 1)
            for f in key[1:]:
                i = tb.mul(i, tb.index_of(float(f)))
            mask = np.zeros(tb.over + 1, bool)
            mask[i] = True
            mask[tb.over] = False
            self._memo[key] = mask
        return bool(mask[tb.index_of(float(g))])

    def _cached(self, key, fn):
        """fn() once per key: the searches that branches sharing a source, a slice or a gradient repeat."""
        try:
            return self._memo[key]
        except KeyError:
            r = self._memo[key] = fn()
            return r

    def _cached_at(self, vi, key, fn):
        """``_cached`` for the arrays of one value index vi (a source row and its passes on every point):
        here vi is a point, whose branches are built one after the other, so only the last point's are
        kept (4,096 bfloat16 points x ~20 arrays of 4,096 values each would be gigabytes).  A point asked
        again (a branch rebuilt at the final depth) recomputes them: the same values."""
        if getattr(self, "_point_memo_at", None) != vi:
            self._point_memo, self._point_memo_at = {}, vi
        try:
            return self._point_memo[key]
        except KeyError:
            r = self._point_memo[key] = fn()
            return r

    def _coord_values(self, j):
        """The values of x_j a first-layer row reading x_j is evaluated on (every point's)."""
        return self.X[:, j]

    def _coord_index(self, zi, j):
        """Point zi's index in ``_coord_values(j)``."""
        return zi

    def _gradient_gates(self, zi, j, vi, a3, P3, key):
        """The gate options of a gradient branch, each (gate, slice gate, factors between them) or the
        ConstructionError saying why there is none: here one gate reading the pass P3 (weight a3)."""
        # remembered per (point, source, passes, a3): the pass P3 is a function of those (``_pass`` results
        # are cached by them), and the branch search asks again for each number of layers it tries; and
        # per retry flag that changes the gate search
        ck = ("gradient_gate", zi, key, self.offset_gates, self.near_one)
        r = self._memo.get(ck)
        if r is None:
            try:
                r = self.point_gate(zi, (a3, P3), self._gradient_targets(), small_first=True)
            except ConstructionError as e:
                r = e
            self._memo[ck] = r
        yield r if isinstance(r, ConstructionError) else (r, None, [])

    def _gradient_targets(self):
        """The targets of gradient gates: gate_targets, or with ``near_one`` the same states ordered by
        |log2 |T - L||, nearest 1 first (stable; made once).  A gate's value Gz is the forward value the
        blocker layers after it start from: near 1 they can shrink it (a ratio g*/h* far below 1) as
        well as grow it without leaving the format."""
        if not self.near_one:
            return self.gate_targets
        if getattr(self, "_near_one_targets", None) is None:
            tv = np.asarray(self.gate_targets, float)
            t, _ = self.kit.R.value_array(tv)
            with np.errstate(divide="ignore", invalid="ignore"):
                key = np.abs(np.log2(np.abs(np.asarray(t, float) - self.st.L)))
            key = np.where(np.isfinite(key), key, np.inf)
            self._near_one_targets = [self.gate_targets[i] for i in np.argsort(key, kind="stable")]
        return self._near_one_targets

    def _gate_weight(self, zi, j=None):
        """The largest backward gain of a gate of point zi without the pass input (a probe)."""
        if zi not in self._bmax:
            try:
                self._bmax[zi] = self.point_gate(zi, None, self.gate_targets, small_first=True).bmax
            except ConstructionError:
                self._bmax[zi] = 1.0
        return self._bmax[zi]

    def _scales(self, g, w_g, d1, bmax=1.0, tries=24):
        """(a2, a3) powers of two, a2 < 0 first, for the gain before the gate.

        The blocker layers after the gate carry most of the ratio g / y, but the backward value at
        the gate's output is a value of the format, so the fixed factors before the gate must carry at
        least |g| |beta| / Omega (beta the gate's largest weight, from a probe gate): a2 a3 is aimed at
        4 |beta| |g| / Omega over w_g T'(source) and three derivatives of
        about 1/2 (the two passes and the gate).  a2 < 0 keeps P2 = T(a2 S + c2) small on the whole domain
        (S >= min T), so the gate needs only a small push.
        """
        return self._cached(("scales", g, w_g, d1, bmax, tries), lambda: self._scales_search(g, w_g, d1, bmax, tries))

    def _scales_search(self, g, w_g, d1, bmax, tries):
        F = self.F
        want = (_lg(4 * bmax) + _lg(g) - _lg(F.max_float) - _lg(w_g) - _lg(d1) + 3) if g and d1 else 0.0
        floor = abs(g) / float(F.max_float)           # every suffix product of the backward chain reaches this
        base = abs(w_g * d1)
        # every (k2, k3) in -12..12, sorted by (unsafe, |k2 + k3 - want|, |k2 - k3|, k2, k3): the same
        # float64 operations as a loop over the pairs, and a stable lexicographic order
        k2 = np.repeat(np.arange(-12, 13), 25)
        k3 = np.tile(np.arange(-12, 13), 25)
        unsafe = (base * np.ldexp(1.0, k2) / 2 < floor) | (base * np.ldexp(1.0, k2 + k3) / 4 < floor)
        order = np.lexsort((k3, k2, np.abs(k2 - k3), np.abs((k2 + k3) - want), unsafe))
        ok = self.__dict__.get("_scale_ok")
        if ok is None:       # which powers of two are values, once
            ok = self._scale_ok = {(sg, k): _in(F, math.ldexp(sg, k)) for k in range(-12, 13) for sg in (-1.0, 1.0)}
        out = []
        for p in order.tolist():
            e2, e3 = int(k2[p]), int(k3[p])
            for sg in (-1.0, 1.0):
                if ok[(sg, e2)] and ok[(1.0, e3)]:
                    out.append((math.ldexp(sg, e2), math.ldexp(1.0, e3)))
            if len(out) >= tries:
                break
        return out

    # ---- the layers after a gradient gate: blockers, and an exact transfer by backward preimages --------
    def _rn_chain(self, t, factors):
        """RN(...RN(RN(t f_1) f_2)... f_k) for an array t, NaN where a product overflows."""
        F = self.F
        tb = self.tables
        if tb is not None:                      # index lookups, the same values (tests/test_op_tables.py)
            i = tb.index(t)
            for f in factors:
                i = tb.mul(i, tb.index_of(float(f)))
            return tb.value(i)
        return _rn_products(F, t, factors)

    def _blockers(self, v_on, share=None, weights=None):
        """``_blockers_search`` with the given weights (uncached), else once per on value (branches share
        gates) and weight window: every weight where ``_weights_for(share)`` gives None, else that window,
        a band of |a| fixed by its size and its smallest and largest |a| (the key)."""
        if weights is not None:
            return self._blockers_search(v_on, weights)
        weights = None if share is None else self._weights_for(share)
        if weights is None:
            return self._cached(("blockers", v_on), lambda: self._blockers_search(v_on))
        m = np.abs(weights)
        key = ("blockers", v_on, len(m)) + ((float(m.min()), float(m.max())) if len(m) else ())
        # a window of a large format's weights against every target state keeps about 36 MB per on value
        # (tanh on 256 float64 points: about 200 on values, 5.2 GiB in all), and an on value is asked for
        # by its own point's searches: the most recent BLOCKER_WINDOWS of them are kept (a pure function
        # of the key, so the results are the same)
        lru = self.__dict__.setdefault("_blocker_lru", {})
        if key in lru:
            lru[key] = lru.pop(key)                  # most recent last
            return lru[key]
        r = lru[key] = self._blockers_search(v_on, weights)
        while len(lru) > BLOCKER_WINDOWS:
            del lru[next(iter(lru))]
        return r

    def _blockers_search(self, v_on, weights=None):
        """Every layer T(a v + c) after a gate whose input is v_on at the branch's point and L elsewhere:
        the pre-activation at the point is a state with T' != 0, and elsewhere it is dead (T = L,
        T' = 0), so at every other point the layer *blocks* the backward pass.

        The pre-activation targets are the live states with T' != 0 (a sample of them for formats with
        many); c = RN(p - RN(a v_on)) and the pair is kept when it lands exactly on p.  Returns arrays
        (a, c, p_on, T(p_on), T'(p_on)).
        """
        st, F = self.st, self.F
        A = self.block_weights if weights is None else np.asarray(weights, float)
        P = self.block_targets
        tb = self.tables
        if tb is not None and self.small_format:       # the same test on indices
            iA, iP = tb.index(A), tb.index(P)
            i_on = tb.mul(iA, tb.index(v_on))
            i_off = tb.mul(iA, tb.index(st.L))
            ic = tb.add(iP[None, :], tb.neg(i_on)[:, None])
            ip_on = tb.add(i_on[:, None], ic)
            ip_off = tb.add(i_off[:, None], ic)
            dead = np.append(st.dead(tb.values), False)
            good = (i_on != tb.over)[:, None] & (i_off != tb.over)[:, None] & (ic != tb.over)
            good &= (ip_on == iP[None, :]) & dead[ip_off]
            ia, ip = np.nonzero(good)
            return A[ia], tb.value(ic[ia, ip]), P[ip], self.block_t[ip], self.block_d[ip]
        if not self.small_format and len(A) * len(P) > (1 << 21):
            # large formats: the weights in chunks (tens of thousands of weights against every target
            # state held several (weights x targets) arrays at once, 5.2 GiB on tanh float64); the rows
            # come in the same order and the first of each (a, state) pair is kept as on the whole array
            step = max(1, (1 << 21) // max(1, len(P)))
            parts = [self._blockers_search(v_on, A[i:i + step]) for i in range(0, len(A), step)]
            a_, c_, q_, t_, d_ = (np.concatenate([p_[k] for p_ in parts]) for k in range(5))
            _, first = np.unique(np.stack([a_, q_]), axis=1, return_index=True)
            first = np.sort(first)
            return a_[first], c_[first], q_[first], t_[first], d_[first]
        m_on, o1 = mul_array(A, np.full_like(A, v_on), F)
        m_off, o2 = mul_array(A, np.full_like(A, st.L), F)
        ok = ~(o1 | o2)
        A, m_on, m_off = A[ok], m_on[ok], m_off[ok]
        shape = (len(A), len(P))
        c, oc = add_array(np.broadcast_to(P[None, :], shape), np.broadcast_to(-m_on[:, None], shape), F)
        p_on, o3 = add_array(np.broadcast_to(m_on[:, None], c.shape), np.where(oc, 0.0, c), F)
        p_off, o4 = add_array(np.broadcast_to(m_off[:, None], c.shape), np.where(oc, 0.0, c), F)
        if self.small_format:
            good = ~(oc | o3 | o4) & (p_on == P[None, :]) & st.dead(p_off)
            ia, ip = np.nonzero(good)
            return A[ia], c[ia, ip], P[ip], self.block_t[ip], self.block_d[ip]
        # large formats: RN(a v_on + c) need not land on the aimed state; any live state with T' != 0
        # will do (looked up in the table), once per (a, state)
        good = ~(oc | o3 | o4) & st.dead(p_off) & ~st.dead(p_on)
        ia, ip = np.nonzero(good)
        q = p_on[ia, ip]
        k = np.clip(np.searchsorted(st.z, q), 0, len(st.z) - 1)
        hit = (st.z[k] == q) & (st.dt[k] != 0)
        ia, ip, q, k = ia[hit], ip[hit], q[hit], k[hit]
        _, first = np.unique(np.stack([A[ia], q]), axis=1, return_index=True)
        first = np.sort(first)
        ia, ip, q, k = ia[first], ip[first], q[first], k[first]
        return A[ia], c[ia, ip], q, st.t[k], st.dt[k]

    def _weights_for(self, share: float):
        """Blocker weights for a layer meant to carry the gain 2^share: all of them on enumerated
        formats; on larger ones |a| from 2^-12 below the share (or below 1) to 2^40 above it (or above
        1): |T'| is rarely far below 2^-40, a blocker needs |a| (v_on - L) large enough to cross from the
        dead tail to a live state whatever the share, and the layer is ranked by how near |a T'| comes
        to the share."""
        if self.nonzero_values is not None:
            return None
        e = np.log2(np.abs(self.block_weights))
        return self.block_weights[(e >= min(share, 0.0) - 12) & (e <= max(share, 0.0) + 40)]

    def _transfer(self, y, g, Gz, d3, tail_factors, bmax, h_max, quarter, n_post):
        """``_transfer_search``, once per argument tuple (branches with equal chains and targets); its
        failure reason (``transfer_why``) is kept with it, so a cached failure reports its own."""
        def search():
            if self.transfer_budget is not None:
                if self.transfer_budget <= 0:
                    raise SearchGaveUp(f"last transfer failure: {self.transfer_why}")
                self.transfer_budget -= 1
            r = self._transfer_search(y, g, Gz, d3, tail_factors, bmax, h_max, quarter, n_post)
            return r, self.transfer_why
        r, self.transfer_why = self._cached(("transfer", y, g, Gz, d3, tuple(tail_factors), bmax, h_max, quarter,
                                             n_post, self.beam, self.join, self.zero_end), search)
        return r

    def _transfer_search(self, y, g, Gz, d3, tail_factors, bmax, h_max, quarter, n_post):
        """(post, A, ends): n_post blocker layers after the gate and the output weight A, with the
        backward chain at the point exactly equal to g, and the output term absorbed (or exactly 0).

        Every post layer is a blocker (dead at every other point), so at the other points the backward
        value stops right after y' (x) A: only |A| h_max <= Omega is needed there.  At the point the
        backward chain is y -> RN(y A) -> (x) T'(p_n) (x) a_n -> ... -> (x) T'(p_1) (x) a_1 -> the gate
        and the fixed factors before it.  Exactness is decided on sets: S_0 = the values t that the
        fixed factors map exactly to g (every value of the format tried), S_k = the values that layer k
        maps into S_(k-1); the output weight A must put RN(y A) into S_n.  Layers 1..n-1 are chosen to
        carry an even share of the gain g / y; the last layer and A are searched together.
        """
        F = self.F
        # S_0, with the gradient entering the gate's inputs (beta (x) delta) below Omega / share
        V = self._candidates_for(np.array([g]), tail_factors)
        if self.tables is None and self.nonzero_values is not None:
            # 16-bit formats: the values mapped to g, by bisection (an image of all 65,279 values per
            # factor tuple would be kept for the whole construction)
            V = _preimage_bisect(F, V, [g], tail_factors)
            after_gate, image = self._rn_chain(V, [d3]), self._rn_chain(V, tail_factors)
        elif self.nonzero_values is not None:
            # V is every nonzero value whatever g: its images under the chains are the same arrays for
            # every branch with these factors (branches of one slice share them)
            after_gate = self._cached(("chain", float(d3)), lambda: self._rn_chain(V, [d3]))
            image = self._cached(("chain",) + tuple(float(f) for f in tail_factors),
                                 lambda: self._rn_chain(V, tail_factors))
        else:
            after_gate, image = self._rn_chain(V, [d3]), self._rn_chain(V, tail_factors)
        S = V[(image == g) & (np.abs(after_gate) * bmax * self.share <= F.max_float)]
        if len(S) == 0:
            self.transfer_why = "no value reaches the gradient through the factors before the gate"
            return None
        fixed = all(tail_factors)
        need = (_lg(g) - _lg(y) - sum(_lg(f) for f in tail_factors)) if y and fixed else 0.0
        if self.zero_end:
            # the zero end spans two layers where ``_transfer_last`` places one
            if n_post < 2:
                self.transfer_why = "a zero end needs two layers after the gate"
                return None
            n_post -= 1
        r = self._transfer_greedy(y, S, Gz, need, h_max, quarter, n_post)
        if r is None and self.join and n_post >= 2:
            # the first layers aimed at what the joined last layer can carry
            reach = self._join_reach(y, h_max, quarter)
            if reach is not None:
                why = self.transfer_why
                r = self._transfer_greedy(y, S, Gz, need, h_max, quarter, n_post, last_cap=reach[-1] - 1)
                if r is None:
                    self.transfer_why = why
        if r is None and self.beam and n_post >= 2:
            # the greedy chain (an even share of the gain per layer) can fall short: each layer's forward
            # value grows with its gain and limits the next one (gelu on float8_e4m3 with |h*| up to 240,
            # where |A| <= 1 leaves all of g*/h* = 2^16 to the blockers); a beam over the layers next
            why = self.transfer_why
            r = self._transfer_beam(y, S, Gz, need, h_max, quarter, n_post)
            if r is None:
                self.transfer_why = why
        return r

    def _transfer_greedy(self, y, S, Gz, need, h_max, quarter, n_post, last_cap=None):
        """The first n_post - 1 blocker layers, each carrying an even share of the gain still needed, then
        ``_transfer_last``.

        With last_cap (log2 of the gain ``_last_join`` can give the last layer): the first layers share
        what is needed beyond it, and each takes the first blocker in the ranking whose preimage set is
        not empty (a tiny upstream leaves the last layer a gain of about |w| Omega / |y|, not the even
        share; an even share would drive the preimages into the subnormal range, where a power-of-two
        layer has no exact preimage of a single value)."""
        L = self.st.L
        post, v_on = [], Gz
        for k in range(n_post - 1):
            if v_on == L:
                self.transfer_why = f"layer {k + 1} reads the dead value"
                return None
            if last_cap is None:
                share = need / (n_post - k)          # what this layer should carry, A ~ 1 for the rest
            else:
                share = (need - last_cap) / (n_post - 1 - k)
            weights = self._weights_for(share)

            def ranked():
                a, c, p, t, d = self._blockers(v_on, share)
                keep = (t != L) & (np.abs(t - L) >= self.push_min)
                a, c, p, t, d = a[keep], c[keep], p[keep], t[keep], d[keep]
                gain = np.log2(np.abs(a)) + np.log2(np.abs(d))
                # a power-of-two gain maps the target set one to one; a small forward value leaves the
                # next layer the most room for its weight
                inexact = (np.abs(np.frexp(a * d)[0]) != 0.5).astype(float)
                abs_t = np.abs(t)
                return (a, c, t, d, gain, inexact, abs_t) + (_GainGroups(gain, inexact, abs_t),)
            # a function of the on value where every weight is tried (weights None: enumerated formats),
            # else of the on value and the weight window (the key of ``_blockers``' cache)
            if weights is None:
                rkey = ("ranked_blockers", v_on)
            else:
                m = np.abs(weights)
                rkey = ("ranked_blockers", v_on, len(m)) + ((float(m.min()), float(m.max())) if len(m) else ())
            a, c, t, d, gain, inexact, abs_t, groups = self._cached(rkey, ranked)
            if len(a) == 0:
                self.transfer_why = f"no blocker for layer {k + 1} (on value {v_on!r}, gain 2^{share:.0f})"
                return None
            # the first of np.lexsort((abs_t, off, inexact)) without sorting (one blocker is tried): by
            # the groups of equal gain, kept with the ranked blockers (``_GainGroups``)
            order = (np.lexsort((abs_t, np.round(np.abs(gain - share)), inexact)) if last_cap is not None
                     else [groups.first(share)])
            for i in order[:1 if last_cap is None else 32]:
                i = int(i)
                S_i = self._preimage(S, float(d[i]), float(a[i]))
                if len(S_i):
                    break
            need -= float(gain[i])
            S = S_i
            if len(S) == 0:
                self.transfer_why = f"empty preimage set after layer {k + 1}"
                return None
            post.append((float(a[i]), float(c[i])))
            v_on = float(t[i])
        return self._transfer_last(y, post, S, v_on, need, h_max, quarter)

    def _transfer_beam(self, y, S, Gz, need, h_max, quarter, n_post, width=6):
        """Like ``_transfer_greedy``, but each layer keeps up to ``width`` partial chains: for every chain
        the blockers nearest its even share, the most efficient ones (gain over forward value), and the
        largest gain within what is still needed, each with its exact preimage set; then
        ``_transfer_last`` on each (the fewest, most efficient chains first)."""
        L = self.st.L
        beam = [([], S, Gz, need)]
        for k in range(n_post - 1):
            nxt, seen = [], set()
            for post, S_k, v_on, need_k in beam:
                if v_on == L:
                    continue
                share = need_k / (n_post - k)
                a, c, p, t, d = self._blockers(v_on, share)
                keep = (t != L) & (np.abs(t - L) >= self.push_min)
                a, c, t, d = a[keep], c[keep], t[keep], d[keep]
                if len(a) == 0:
                    continue
                gain = np.log2(np.abs(a)) + np.log2(np.abs(d))
                eff = gain - np.log2(np.abs(t - L))
                picks = [np.lexsort((np.abs(t), np.round(np.abs(gain - share))))[:2],
                         np.lexsort((np.abs(t), -np.round(np.where(gain <= need_k + 1, eff, -1e9))))[:2],
                         np.lexsort((np.abs(t), -np.round(np.where(gain <= need_k + 1, gain, -1e9))))[:2]]
                for i in dict.fromkeys(int(i) for pk in picks for i in pk):
                    key = (tuple(post), float(a[i]), float(c[i]))
                    if key in seen:
                        continue
                    seen.add(key)
                    S2 = self._preimage(S_k, float(d[i]), float(a[i]))
                    if len(S2):
                        nxt.append((post + [(float(a[i]), float(c[i]))], S2, float(t[i]), need_k - float(gain[i])))
            # the chains with the least gain still needed per unit of forward value first
            nxt.sort(key=lambda st_: (st_[3] + np.log2(abs(st_[2] - L)), -len(st_[1])))
            beam = nxt[:width]
            if not beam:
                return None
        for post, S_k, v_on, need_k in beam:
            r = self._transfer_last(y, post, S_k, v_on, need_k, h_max, quarter)
            if r is not None:
                return r
        return None

    def _transfer_last(self, y, post, S, v_on, need, h_max, quarter):
        """(post + [last layer], A, ends), or None: the last blocker layer and the output weight A, searched
        together so that RN(y A) lands in the preimage set S."""
        F, L = self.F, self.st.L
        self.transfer_why = f"no last layer (need 2^{need:.0f}, {len(S)} targets)"
        if v_on == L:
            return None
        if self.zero_end:
            return self._zero_end(y, post, S, v_on, h_max)
        # the last layer's weights: every one on enumerated formats, else the window around the gain it
        # should carry (all of float64's 8,400 short weights against every target cost ~2 s per layer)
        a, c, p, t, d = self._blockers(v_on, need)
        if len(a) == 0:
            return None
        small = self.small_format

        def candidates(chunk):
            """(A values, RN(y A)) to try with the blockers of chunk: every value (small formats), else
            the values near s / (y d a) for s in S (the exact test in _last_layer decides)."""
            if small:
                As = self._output_weights(h_max)
            else:
                with np.errstate(over="ignore", under="ignore"):
                    As = _near(F, _sample(S, 16)[:, None] / y / d[chunk][None, :] / a[chunk][None, :], 2)
                As = As[np.abs(As) * h_max <= F.max_float]
            t1, o = mul_array(np.full(len(As), y), As, F)
            return As, np.where(o, np.nan, t1)

        # log2 |a| + log2 |d| per blocker: the blockers of an enumerated format are kept per on value
        # (``_blockers``), so this sum is too (the same arrays, the same numbers)
        memo = self.__dict__.setdefault("_gain_logs", {})
        hit = memo.get(id(a))
        if hit is not None and hit[0] is a and hit[1] is d:
            logs = hit[2]
        else:
            if len(memo) >= 64:
                memo.clear()
            logs = np.log2(np.abs(a)) + np.log2(np.abs(d))
            memo[id(a)] = (a, d, logs)
        key = np.abs(logs - need)
        if small and self.tables is not None:
            # (the first blocker in the stable order of key that has a hit: no sort of every blocker)
            r = self._last_layer_tables(v_on, (a, c, t, d), key, y, S, quarter, h_max)
        else:
            r = self._last_layer((a, c, t, d), np.argsort(key, kind="stable"), candidates, S, quarter)
        if r is not None or small:
            return None if r is None else (post + [r[0]], r[1], r[2])
        # large formats, second try: A near 2^k / y, so that u = RN(y A) has a significand near 1 and the
        # products RN(u a) of consecutive weights a reach every value near s, and last-layer weights a
        # near s / (u T'), for s in S, the strongest derivatives T' and the derivatives the first try's
        # blockers reached (a sum RN(a v_on + c) with a large a v_on lands only on states far from 0, e.g.
        # gelu's linear side with T' = 1, where the strongest states, gelu~' = 1.13 near 1.4, are not reached)
        du, dn = np.unique(np.abs(d), return_counts=True)
        reached = du[np.argsort(-dn, kind="stable")[:4]]
        # u = 2^k takes the gain need - G, the last layer G: G = need / 2, but within the gains of the first
        # try's blockers (a gain the on value v_on has no blocker for finds none: relu on bfloat16 with the
        # gate on 2^-133, where every blocker has |a| >= 3/4, and need = 2^-56 aimed the layer at 2^-28)
        share = min(max(need / 2, float(logs.min())), float(logs.max()))     # logs: the blockers' gains
        ks = sorted(range(F.e_min - F.M, F.e_max + 1), key=lambda k: abs(k - (math.log2(abs(y)) + need - share)))
        As_all = _near(F, np.array([math.ldexp(sg, k) / y for k in ks[:16] for sg in (1.0, -1.0)]), 1)
        As_all = As_all[np.abs(As_all) * h_max <= F.max_float]
        t1, o = mul_array(np.full(len(As_all), y), As_all, F)
        cand_A = np.where(o | (t1 == 0), np.nan, t1)
        strong = np.union1d(np.unique(np.abs(self.block_d))[::-1][:4], reached)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):   # _near drops what is not finite
            want = _sample(S, 8)[:, None, None] / (cand_A[None, :, None] * strong[None, None, :])
        a, c, p, t, d = self._blockers(v_on, weights=np.union1d(_near(F, want, 2), -_near(F, want, 2)))
        r = self._last_layer((a, c, t, d), np.arange(len(a)), lambda chunk: (As_all, cand_A), S, quarter)
        if r is None and self.join:
            r = self._last_join(y, S, v_on, h_max, quarter)
        return None if r is None else (post + [r[0]], r[1], r[2])

    def _output_weights(self, h_max):
        """The output weights A of an enumerated format with |A| h_max finite (the backward value y A at
        every other point), in value order; kept per h_max."""
        return self._cached(("output_weights", h_max),
                            lambda: self.nonzero_values[np.abs(self.nonzero_values) * h_max <= self.F.max_float])

    def _zero_end(self, y, post, S, v_on, h_max):
        """(post + [L layer, zero layer], A, ends), or None: the end of a transfer whose output term needs
        no absorption (tabulated formats; tried only where every other transfer failed).

        Why: with a dead value L != 0 the last blocker outputs L at every other point, so its output term
        A L must be absorbed by C <= Omega: |A| < ulp(C) / 4 / |L|.  On float8_e4m3b11fnuz (C = 16,
        ulp(C) / 4 = 1/2, tanh L = -1) that is |A| < 1/2, and with the smallest subnormal upstream
        y = 2^-13, RN(y A) = 0: no gradient at all (tanh, elu, selu on the box).

        The end: an *L layer*, a blocker from v_on onto a state p with T(p) = L and T'(p) != 0 (tanh:
        -2.5 with T' = 0.027; the rounded T saturates before T' does), so its value is L at every point
        and its derivative is nonzero only at the branch's point; then a *zero layer* T(a0 L + c0) at a
        state q with T(q) = 0 and T'(q) != 0 (tanh, elu, selu: q = 0), whose value is 0 at every point,
        so the output term A 0 vanishes whatever A.  At the other points the zero layer is live, but the
        L layer below it is dead (T' = 0): the backward value stops there, and only
        RN(RN(RN(h A) T'(q)) a0) must stay finite (checked at h = h_max; RN is monotone).  At the point
        the chain is RN(RN(RN(RN(RN(y A) T'(q)) a0) T'(p)) a1), which must land in S: every A, zero
        layer and L layer of the format is tried on the RN tables."""
        tb, st, L = self.tables, self.st, self.st.L
        a1, c1, p1, t1, d1 = self._blockers(v_on)
        m = (t1 == L) & (d1 != 0)
        a1, c1, d1 = a1[m], c1[m], d1[m]
        zq = (st.z > st.z_dead) & (st.t == 0) & (st.dt != 0)
        if len(a1) == 0 or not zq.any():
            self.transfer_why = "no zero end (no L layer or no zero state)"
            return None
        # zero layers: every weight a0 and zero state q with RN(RN(a0 L) + c0) = q for c0 = RN(q - RN(a0 L))
        W0 = self.nonzero_values
        ia0 = np.repeat(tb.index(W0), zq.sum())
        iq = np.tile(tb.index(st.z[zq]), len(W0))
        dq = np.tile(st.dt[zq], len(W0))
        im = tb.mul(ia0, tb.index_of(float(L)))
        ic0 = tb.add(iq, tb.neg(im))
        ok = (im != tb.over) & (ic0 != tb.over) & (tb.add(im, ic0) == iq)
        ia0, ic0, iq, dq = ia0[ok], ic0[ok], iq[ok], dq[ok]
        # output weights, and the backward value after the zero layer at the point (u) and its bound
        # elsewhere (|h| <= h_max), both per (A, zero layer)
        As = self._output_weights(h_max)
        iA = tb.index(As)
        idq = tb.index(dq)
        u = tb.mul(tb.mul(tb.mul(tb.index_of(float(y)), iA)[:, None], idq[None, :]), ia0[None, :])
        iabs = lambda i: tb.index(np.abs(tb.value(i)))
        far = tb.mul(tb.mul(tb.mul(tb.index_of(float(h_max)), iabs(iA))[:, None], iabs(idq)[None, :]),
                     iabs(ia0)[None, :])
        u = np.where(far == tb.over, tb.over, u)
        in_S = np.zeros(tb.over + 1, bool)
        in_S[np.unique(tb.index(S))] = True
        # the L layers: the first with some reachable u landing in S, then the smallest |A|, |a0|
        uw = np.unique(u[u != tb.over])
        hit = in_S[tb.mul(tb.mul(uw[:, None], tb.index(d1)[None, :]), tb.index(a1)[None, :])]
        ks = np.flatnonzero(hit.any(axis=0))
        if len(ks) == 0:
            self.transfer_why = f"no zero end maps upstream {y!r} into the {len(S)} targets"
            return None
        k = int(ks[0])
        good = np.isin(u, uw[hit[:, k]])
        gi, gz = np.nonzero(good)
        o = np.lexsort((np.abs(tb.value(ia0[gz])), np.abs(As[gi])))[0]
        i, z = int(gi[o]), int(gz[o])
        a0, c0 = float(tb.value(ia0[z])), float(tb.value(ic0[z]))
        gain = abs(float(dq[z]) * a0)
        return post + [(float(a1[k]), float(c1[k])), (a0, c0)], float(As[i]), (0.0, 0.0, gain)

    def _last_join(self, y, S, v_on, h_max, quarter):
        """((a, c), A, ends) of a last blocker layer found by meeting the two ends of the backward chain at
        its weight a, or None (enumerated formats; tried only where ``_last_layer`` found nothing).

        From the upstream end: the output weight A and the layer's state p give w = RN(RN(y A) T'(p)),
        with |A| max(|T(p)|, |L|) < ulp(C)/4 (absorbed) and |A| h_max <= Omega.  With a tiny upstream
        (float16 sigmoid, y = -2^-24) that bounds |w| by 8 times the smallest subnormal
        (sigmoid's T' <= T), so w takes a handful of values.  From the gradient end: the preimage set S.  The
        join is a with RN(w a) in S, so a must be about s / w: a weight with any significand, where
        ``_last_layer`` tries only short ones (1, 1.5) or those near s / (y T' a) for a sampled A.  Per
        live state p the candidates w are the largest values below the bound and the powers of two
        under it (a power-of-two w makes a = s / w exact); (a, p) must then be a blocker from v_on
        (RN(RN(a v_on) + c) = p with c, and RN(a L) + c, dead).  Every step is checked exactly.
        """
        F, st = self.F, self.st
        L = st.L
        if self.nonzero_values is None or v_on == L or y == 0:
            return None
        reach = self._join_reach(y, h_max, quarter)
        if reach is None:
            return None
        p, tp, dp, Aw, ww, _ = reach
        for s in _sample(S, 8):
            s = float(s)
            ag = _near_grid(F, abs(s) / ww, 2)          # |a| with RN(|w| |a|) = |s|
            ag = np.where(np.isfinite(ag), ag, 0.0)
            prod, o5 = mul_array(np.broadcast_to(ww[:, None], ag.shape), ag, F)
            hit = ~o5 & (ag > 0) & (prod == abs(s))
            r_, c_ = np.nonzero(hit)
            if len(r_) == 0:
                continue
            for sa in (1.0, -1.0):
                a = sa * ag[r_, c_]
                q = p[r_]
                m_on, o6 = mul_array(a, np.full(len(a), v_on), F)
                m_off, o7 = mul_array(a, np.full(len(a), L), F)
                c, o8 = add_array(q, -np.where(o6, 0.0, m_on), F)
                p_on, o9 = add_array(np.where(o6, 0.0, m_on), np.where(o8, 0.0, c), F)
                p_off, o10 = add_array(np.where(o7, 0.0, m_off), np.where(o8, 0.0, c), F)
                fine = ~(o6 | o7 | o8 | o9 | o10) & (p_on == q) & st.dead(p_off)
                for h in np.nonzero(fine)[0]:
                    n = int(r_[h])
                    # the sign of A that makes RN(RN(RN(y A) T'(p)) a) = s; the whole chain checked once more
                    A = float(Aw[n]) * float(np.sign(s) * sa * np.sign(y) * np.sign(dp[n]))
                    if float(self.kit.mul(self.kit.mul(self.kit.mul(y, A), float(dp[n])), float(a[h]))) == s:
                        return (float(a[h]), float(c[h])), A, (float(tp[n]), L, 1.0)
        return None

    def _join_reach(self, y, h_max, quarter):
        """The upstream end of ``_last_join``, once per (y, h_max, quarter): arrays (p, T(p), T'(p), |A|, |w|)
        of the (state, w) pairs that an absorbed output weight reaches, and log2 of the largest gain
        |w| Omega / |y| the last layer can carry (what the layers before it leave to it), or None."""
        return self._cached(("join_reach", y, h_max, quarter), lambda: self._join_reach_search(y, h_max, quarter))

    def _join_reach_search(self, y, h_max, quarter):
        F, st = self.F, self.st
        L = st.L
        V = self.nonzero_values
        V = V[V > 0]
        live = (st.z > st.z_dead) & (st.dt != 0)
        p, tp, dp = st.z[live], st.t[live], st.dt[live]
        amp = np.maximum(np.abs(tp), abs(L))
        with np.errstate(divide="ignore"):
            lim = np.minimum(float(F.max_float) / h_max if h_max else np.inf,
                             np.where(amp > 0, quarter / np.where(amp > 0, amp, 1.0), np.inf))
        k = np.searchsorted(V, lim, "left") - 1          # the largest |A| strictly below the bound
        ok = k >= 0
        p, tp, dp, A_top = p[ok], tp[ok], dp[ok], V[np.maximum(k[ok], 0)]
        ay, ad = abs(y), np.abs(dp)
        u, o1 = mul_array(np.full(len(A_top), ay), A_top, F)
        w_top, o2 = mul_array(u, ad, F)
        w_top = np.where(o1 | o2, 0.0, w_top)
        # |w| targets per state: the 8 largest values <= w_top and 4 powers of two below it
        i = np.searchsorted(V, w_top, "right") - 1
        tops = np.stack([np.where(i - j >= 0, V[np.maximum(i - j, 0)], 0.0) for j in range(8)], axis=1)
        with np.errstate(divide="ignore"):
            e = np.floor(np.log2(np.where(w_top > 0, w_top, 1.0)))
        pows = np.ldexp(1.0, (e[:, None] - np.arange(4)[None, :]).astype(int))
        pows = np.where((w_top[:, None] > 0) & (pows >= V[0]), pows, 0.0)
        W = np.concatenate([tops, pows], axis=1)
        W = np.where(W <= w_top[:, None], W, 0.0)
        # the output weights |A| that give each |w|: values near w / (|y| |T'|), checked exactly
        Ac = _near_grid(F, W / ay / ad[:, None], 1)
        Ac = np.where(np.isfinite(Ac) & (Ac > 0) & (Ac <= A_top[:, None, None]) & (W[:, :, None] > 0), Ac, np.nan)
        ui, o3 = mul_array(np.full(Ac.shape, ay), np.where(np.isnan(Ac), 0.0, Ac), F)
        wi, o4 = mul_array(ui, np.broadcast_to(ad[:, None, None], ui.shape), F)
        good = ~np.isnan(Ac) & ~o3 & ~o4 & (wi == W[:, :, None])
        si, wj, ak = np.nonzero(good)
        if len(si) == 0:
            return None
        _, first = np.unique(si * W.shape[1] + wj, return_index=True)      # one A per (state, w)
        si, wj, ak = si[first], wj[first], ak[first]
        ww = W[si, wj]
        cap = _lg(float(ww.max())) + _lg(F.max_float) - _lg(y)
        return p[si], tp[si], dp[si], Ac[si, wj, ak], ww, cap

    def _last_layer(self, blockers, order, candidates, S, quarter):
        """((a, c), A, ends) of the first blocker (in ``order``, 512 at a time) and output weight A from
        ``candidates(chunk)`` -> (A values, RN(y A)) with RN(RN(RN(y A) T'(p)) a) in S and the output
        term A T(p) vanishing (T(p) = 0) or absorbed by C (below a quarter ulp of C); the A nearest 1."""
        a, c, t, d = blockers
        if len(a) == 0:
            return None
        amp = np.maximum(np.abs(t), abs(self.st.L))
        S = np.unique(np.asarray(S, float))
        for chunk in np.array_split(order, max(1, len(order) // 512)):
            As_all, cand_A = candidates(chunk)
            absA = np.abs(As_all)[:, None]
            # the chunk's blockers a few columns at a time (at most about 2^20 products each), in order, so
            # the first blocker with a hit is found without the whole |As| x 512 table (tens of millions
            # of products on float64, several GiB in all); the same blocker and A as the whole table
            step = max(1, (1 << 20) // max(1, len(As_all)))
            for lo in range(0, len(chunk), step):
                cols_k = chunk[lo:lo + step]
                u = self._rn_chain_2d(cand_A, d[cols_k], a[cols_k])
                hit = np.isin(u, S, assume_unique=False)
                with np.errstate(over="ignore"):      # an overflowing |A| |T| is not absorbed (inf < quarter fails)
                    hit &= (absA * amp[cols_k][None, :] < quarter) | (amp[cols_k][None, :] == 0)
                cols = np.nonzero(hit.any(axis=0))[0]
                if len(cols):
                    k = int(cols[0])
                    As = As_all[hit[:, k]]
                    i = int(cols_k[k])
                    return (float(a[i]), float(c[i])), float(As[np.argmin(np.abs(np.log2(np.abs(As))))]), \
                        (float(t[i]), self.st.L, 1.0)
        return None

    def _last_layer_tables(self, v_on, blockers, key, y, S, quarter, h_max):
        """``_last_layer`` with every A of a tabulated format at once: the map u -> RN(RN(u T'(p)) a) of
        each blocker (every blocker of the on value v_on) is one index table, kept for the next branch
        with the same on value; the first blocker with a hit in the stable sort order of ``key``
        (``_stable_first``), as the chunked scan over that order picks.

        Which blockers have a hit depends on S only through the values it holds.  Per (v_on, y, quarter,
        h_max) seen more than REACH_ROWS_AFTER times (d = 2 boxes: thousands of calls per upstream
        value) the set R[s] of blockers k for which some A (absorbed) has RN(RN(RN(y A) T'(p_k)) a_k) = s
        is computed once (a bit row per value s, the overflow index included as in the mask of S), and a
        call ORs the rows of S's values, the same columns as "any A with a hit" over the (A x blocker)
        grid.  Before that (d = 1 boxes: a few calls per upstream value, where building R cost more than
        the calls) ``_last_cols_by_runs`` finds the same columns.  The A's of the chosen blocker are then
        read from its column alone."""
        a, c, t, d = blockers
        tb = self.tables
        maps = self._last_maps
        hit_maps = maps.get(v_on)
        if hit_maps is None:
            if len(maps) >= 64:
                maps.clear()
            M = tb.mul(tb.mul(np.arange(tb.over)[:, None], tb.index(d)[None, :]), tb.index(a)[None, :])
            # a last row for the overflow index, which maps to itself (what a where() on iu did per call)
            hit_maps = maps[v_on] = (np.vstack([M, np.full((1, M.shape[1]), tb.over, M.dtype)]), {}, {}, [], [])
        M, absorbed, reach, runs, amps = hit_maps
        As = self._output_weights(h_max)
        if amps and amps[0][0] is t:
            amp = amps[0][1]
        else:                                   # (the blockers of v_on: the same t each time)
            amp = np.maximum(np.abs(t), abs(self.st.L))
            amps[:] = [(t, amp)]

        def absorbed_grid():
            """(A, blocker): the output term absorbed; a function of the blockers (of v_on), the A tried
            (of h_max) and quarter"""
            ab = absorbed.get((quarter, h_max))
            if ab is None:
                ab = absorbed[(quarter, h_max)] = (np.abs(As)[:, None] * amp[None, :] < quarter) | (amp[None, :] == 0)
            return ab
        r = reach.get((y, quarter, h_max))
        if r is None:
            r = reach[(y, quarter, h_max)] = {"iu": tb.mul(tb.index(np.array([y]))[0], tb.index(As)), "calls": 0}
        iu = r["iu"]
        r["calls"] += 1
        if "R" not in r and r["calls"] > REACH_ROWS_AFTER:
            hit_u = M[iu]                                     # (A, blocker) -> the index u reaches
            R = np.zeros((tb.over + 1, M.shape[1]), bool)
            ia, ik = np.nonzero(absorbed_grid())
            R[hit_u[ia, ik], ik] = True
            r["R"] = np.packbits(R, axis=1)
        si = self._set_index(S)
        if si is None:
            si = tb.index(S)                    # (raises, as it did)
        si = _distinct_indices(si, tb.over + 1)
        if "R" in r:
            cols = np.unpackbits(np.bitwise_or.reduce(r["R"][si], axis=0), count=M.shape[1]).astype(bool)
        else:
            cols = self._last_cols_by_runs(M, runs, r, amp, As, si, quarter, absorbed_grid)
        hits = np.flatnonzero(cols)
        if not len(hits):
            return None
        i = int(hits[_stable_first(key[hits])])
        in_S = np.zeros(tb.over + 1, bool)
        in_S[si] = True
        # column i of the absorbed grid, by the same elementwise test
        Ai = As[in_S[M[iu, i]] & ((np.abs(As) * amp[i] < quarter) | (amp[i] == 0))]
        return (float(a[i]), float(c[i])), float(Ai[np.argmin(np.abs(np.log2(np.abs(Ai))))]), (float(t[i]), self.st.L, 1.0)

    def _last_cols_by_runs(self, M, runs, r, amp, As, si, quarter, absorbed_grid):
        """Per blocker k: is there an A with the output term absorbed and M[RN(y A), k] in si?  (The
        columns of ``_last_layer_tables``' R rows of si, without building R for this y.)

        Why it is the same answer, found from two monotone structures instead of the (A x blocker) grid:
        - the absorbed test |A| amp_k < quarter (or amp_k = 0; float64 products, monotone) holds for the
          A's with |A| below a threshold, and with the blockers sorted by amp (P) for a prefix of them.
          So with m(u) = the length of that prefix for the smallest |A| with RN(y A) = u (0 when no A
          reaches u), blocker P[j] accepts u iff j < m(u);
        - u -> M[u, k] = RN(RN(u d_k) a_k) is monotone in u (indices are in value order), so the u with
          M[u, k] = s form a run [lo, hi] of indices (overflow maps to its own index from both ends,
          so its set may not be a run: such an s takes the grid instead).
        Blocker P[j] has a hit for s iff max of m over its run exceeds j: a range maximum (sparse
        table over u, once per y), for every blocker at once."""
        tb = self.tables
        n_u = tb.over
        if not runs:                                   # once per on value: P and the runs of every (s, k)
            P = np.argsort(amp, kind="stable")
            MP = M[:n_u][:, P]
            nk = MP.shape[1]
            ar = np.arange(nk)
            # lo[MP[u, k], k] = u from the last row up, hi from the first down: the same assignments, in the
            # same order, on the flat positions of (MP[u, k], k) (one index array per row: a fifth of the time)
            flat = MP.astype(np.int64) * nk + ar
            lo = np.full((n_u + 1) * nk, n_u, np.int16)
            hi = np.full((n_u + 1) * nk, -1, np.int16)
            for u in range(n_u - 1, -1, -1):
                lo[flat[u]] = u
            for u in range(n_u):
                hi[flat[u]] = u
            lo, hi = lo.reshape(n_u + 1, nk), hi.reshape(n_u + 1, nk)
            cnt = np.bincount(flat.ravel(), minlength=(n_u + 1) * nk).reshape(n_u + 1, nk)
            whole = ((cnt == 0) | (cnt == hi.astype(np.int64) - lo + 1)).all(axis=1)
            runs += [P, lo, hi, whole, *np.unique(amp[P], return_counts=True)]
        P, lo, hi, whole, au, ac = runs
        if not whole[si].all():                        # the overflow index in S: the whole grid
            in_S = np.zeros(n_u + 1, bool)
            in_S[si] = True
            return (in_S[M[r["iu"]]] & absorbed_grid()).any(axis=0)
        if "table" not in r:                           # once per y: m(u) and its sparse table of maxima
            minA = np.full(n_u + 1, np.inf)
            np.minimum.at(minA, r["iu"], np.abs(As))
            minA = minA[:n_u]
            reached = np.isfinite(minA)
            m = np.zeros(n_u, np.int64)
            ok = (minA[reached, None] * au[None, :] < quarter) | (au[None, :] == 0)
            m[reached] = ok.astype(np.int64) @ ac
            levels, w = [m], 1
            while 2 * w <= n_u:
                levels.append(np.maximum(levels[-1][:-w], levels[-1][w:]))
                w *= 2
            table = np.zeros((len(levels), n_u), np.int64)
            for k, lv in enumerate(levels):
                table[k, :len(lv)] = lv
            r["table"] = table
        table = r["table"]
        jr = np.arange(lo.shape[1])
        hit = np.zeros(lo.shape[1], bool)
        step = max(1, (1 << 18) // max(1, lo.shape[1]))
        for s0 in range(0, len(si), step):              # the values s of S, many at a time: (s, blocker)
            s = si[s0:s0 + step]
            l, h = lo[s].astype(np.int64), hi[s].astype(np.int64)
            ne = l <= h
            p = np.frexp(np.where(ne, h - l + 1, 1))[1] - 1      # floor(log2(run length))
            top = np.maximum(table[p, np.where(ne, l, 0)], table[p, np.where(ne, h - (1 << p) + 1, 0)])
            hit |= (ne & (top > jr)).any(axis=0)
        cols = np.empty(len(hit), bool)
        cols[P] = hit
        return cols

    def _rn_chain_2d(self, t, d, a):
        """RN(RN(t_i d_k) a_k) for every (i, k), NaN on overflow."""
        F = self.F
        tb = self.tables
        if tb is not None:
            i = tb.mul(tb.index(t)[:, None], tb.index(d)[None, :])
            return tb.value(tb.mul(i, tb.index(a)[None, :]))
        T = np.broadcast_to(np.asarray(t)[:, None], (len(t), len(d)))
        r, o = mul_array(np.where(np.isnan(T), 0.0, T), np.broadcast_to(d[None, :], T.shape), F)
        r2, o2 = mul_array(r, np.broadcast_to(a[None, :], T.shape), F)
        return np.where(o | o2 | np.isnan(T), np.nan, r2)

    def _candidates_for(self, S, factors):
        """Values t that the chain of factors may map into the set S: every nonzero value of an
        enumerated format, else the values within a few ulps of s / prod(factors) for s in S (RN is
        monotone, so t's that reach s lie around that quotient; the caller's exact test decides)."""
        if self.nonzero_values is not None:
            return self.nonzero_values
        q = np.asarray(S, float)
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            for f in reversed(factors):           # the backward values between the factors, last first
                q = q / float(f)
        q = q[np.isfinite(q) & (q != 0)]
        return _near(self.F, q, 4) if len(q) else np.zeros(0)

    def _set_index(self, S):
        """Table indices of the values of S (None when one is not a value): those kept with the last
        preimage set when S is that set (``_preimage``), else tb.index(S)."""
        last = self.__dict__.get("_last_set")
        if last is not None and last[0] is S:
            return last[1]
        try:
            return self.tables.index(S)
        except CondcheckError:
            return None

    def _preimage(self, S, d, a):
        """The values t of the format with RN(RN(t d) a) in S (among ``_candidates_for``)."""
        V = self._candidates_for(S, [d, a])
        if self.nonzero_values is not None:     # V is every nonzero value
            if self.tables is None and len(S) <= 8:
                return _preimage_bisect(self.F, V, S, [d, a])
            if self.tables is not None:         # 8-bit formats: the image of V is kept per (d, a)
                tb = self.tables
                iS = self._set_index(S)
                if iS is not None:
                    # isin on table indices: the same test (equal values share an index, -0 and +0 too,
                    # as == matches them; NaN, the overflow index, matches nothing, as in isin)
                    img = self._cached(("chain_index", float(d), float(a)), lambda: tb.mul(
                        tb.mul(tb.index(V), tb.index_of(float(d))), tb.index_of(float(a))))
                    in_S = np.zeros(tb.over + 1, bool)
                    in_S[iS] = True
                    in_S[tb.over] = False
                    hit = in_S[img]
                    out = V[hit]
                    iV = self._memo.get("nonzero_index")
                    if iV is None:
                        iV = self._memo["nonzero_index"] = tb.index(V)
                    # the indices of the result, kept for the next call that reads it (the next layer's
                    # preimage, the last layer): the same indices tb.index(out) finds
                    self._last_set = (out, iV[hit])
                    return out
                return V[np.isin(self._cached(("chain", float(d), float(a)), lambda: self._rn_chain(V, [d, a])), S)]
        return V[np.isin(self._rn_chain(V, [d, a]), S)]


class _SlicedCtx(_Ctx):
    """Gating through slices, for d >= 2: a gate per point that reads the gating steps of every
    coordinate would be evaluated on every point of the domain (N gates x N points: 10^9 rounded sums on
    the float8 d = 2 box), and so would its verification.  Instead an extra layer holds *slice* neurons,
    each depending on one coordinate:

    - the indicator I_(j,v) = T(sum beta * boosted steps (+) gamma) of the gating steps of x_j = v: the
      d = 1 gate of that coordinate value (``_Ctx._gate`` on coordinate j's values), live exactly on the
      slice x_j = v (value I_on there) and dead (L, T' = 0) elsewhere;
    - the slice gate of a gradient branch: the d = 1 gradient gate of x_j = v, reading the branch's pass
      too (live on the slice, dead elsewhere).  Branches with the same source, passes and slice share it.

    A point's gates are AND gates of slice neurons: V_z reads I_(j,z_j) for every coordinate, the
    gradient gate of coordinate j reads I_(k,z_k) (k != j) and the slice gate.  Each input is L or its
    on value, so the gate's pre-activation takes at most 2^(inputs) values on the whole domain, all
    computed exactly (``_and``): live on one of the targets when every input is on (only at z), dead
    otherwise.  At z the slice neurons pass the backward value on to the boosted steps, which are dead
    there (T' = 0), so the value path's gradient is still exactly 0 and a gradient branch still reaches
    x_j only through its source.  A slice gate shared by the points of its slice gets a backward value at
    z only from z's gate (the others are dead at z).
    """
    NEAR_ONE = False        # its gradient gates are slice and AND gates on fixed target lists

    def __init__(self, kit, st, F, X, steps, step_val, coord_vals, coord_idx, step_of):
        super().__init__(kit, st, F, X, steps, None, None)
        self.coord_vals, self.coord_idx = coord_vals, coord_idx
        self.active = [j for j in range(X.shape[1]) if len(coord_vals[j]) > 1]   # coordinates that vary
        self.slices = {}
        for j in range(X.shape[1]):     # (a coordinate with one value still carries gradients: its slice is all)
            n_j = len(coord_vals[j])
            U = [step_val[i] if s.coord == j else None for i, s in enumerate(steps)]

            def gating(v, j=j, n_j=n_j):
                out = []
                if v > 0:
                    out.append(step_of[(j, v, False)])
                if v < n_j - 1:
                    out.append(step_of[(j, v + 1, True)])
                return out
            self.slices[j] = _Ctx(kit, st, F, coord_vals[j].reshape(-1, 1), steps, U, gating)
            self.slices[j].compiled_gates = kernels.HAVE_NUMBA
        self._indicators, self._slice_gates, self._ands = {}, {}, {}
        self._slice_gate_in = {}        # _gradient_gates: slice gate key -> (T' at it, its _input triple)
        self._live_orders = {}          # _live_states
        self._indicator_in = {}         # _indicator_inputs: (I, j, v) -> its _input triple
        # target lists never edited after they are made (gate_targets, _live_states): _and keys its memo by
        # a name for them instead of their 1,024 values; id -> (the list, its name)
        self.fixed_lists = {id(self.gate_targets): (self.gate_targets, "gate_targets")}
        for sl in self.slices.values():     # the slices' gates read these lists (and gate_targets) too
            sl.fixed_lists = self.fixed_lists

    def _coord_values(self, j):
        return self.coord_vals[j]

    def _coord_index(self, zi, j):
        return int(self.coord_idx[j][zi])

    def _cached_at(self, vi, key, fn):
        """Sliced gating: vi is a slice shared by the points of one coordinate value, whose branches need
        not come one after the other: every slice's arrays are kept (``_cached``)."""
        return self._cached(key, fn)

    def indicator(self, j, v) -> Gate:
        """I_(j,v) (cached): live on x_j = v, on the state farthest from L its gate reaches (the AND
        gates' weights scale as 1 / |I_on - L|; a flat state, T' = 0, stops the backward value there)."""
        key = (j, v)
        if key not in self._indicators:
            self._indicators[key] = self.slices[j].point_gate(v, None, self._indicator_targets())
        return self._indicators[key]

    def _unit_targets(self):
        """Live states with T' != 0, |T - L| nearest 1 first (a slice gate's on value there keeps the AND
        gate's weight on it, a factor of the gradient chain, near the gate's own scale); at most 1,024."""
        return self._live_states("unit", lambda t, dt: [np.abs(np.log2(np.abs(t - self.st.L)))], dt_nonzero=True)

    def _indicator_targets(self):
        """Live states, farthest from L first (then smaller |T'|); at most 1,024."""
        return self._live_states("far", lambda t, dt: [np.abs(dt), -np.abs(t - self.st.L)])

    def _live_states(self, name, keys, dt_nonzero=False):
        """Live states (T finite and != L), ordered by np.lexsort(keys(T, T')) (last key first), cached."""
        cache = self._live_orders
        if name not in cache:
            st = self.st
            ok = (st.z > st.z_dead) & np.isfinite(st.t) & np.isfinite(st.dt) & (st.t != st.L)
            if dt_nonzero:
                ok &= st.dt != 0
            cache[name] = list(st.z[ok][np.lexsort(keys(st.t[ok], st.dt[ok]))][:1024])
            self.fixed_lists[id(cache[name])] = (cache[name], "live:" + name)
        return cache[name]

    def _gate_weight(self, zi, j=None):
        """The backward gain from a gradient gate into the boosted steps goes through its slice gate (the
        AND gate's weight on it times T' there is near 1 for the preferred on values): a probe of the
        slice gate of x_j = z_j without the pass input."""
        key = (j, self._coord_index(zi, j))
        if key not in self._bmax:
            try:
                self._bmax[key] = max(1.0, self.slices[j].point_gate(key[1], None, self._unit_targets()).bmax)
            except ConstructionError:
                self._bmax[key] = 1.0
        return self._bmax[key]

    def _input(self, key, gate):
        """(key, on value, backward gain into the layers below) of a slice neuron."""
        d = abs(float(self.kit.dT(gate.pz)))
        return key, float(self.kit.T(gate.pz)), max(1.0, d, d * gate.bmax)

    def _indicator_inputs(self, zi, skip=None):
        out = []
        for j in self.active:
            if j != skip:       # an indicator's input triple is a function of (j, value index): kept
                key = ("I", j, self._coord_index(zi, j))
                r = self._indicator_in.get(key)
                if r is None:
                    r = self._indicator_in[key] = self._input(key, self.indicator(j, key[2]))
                out.append(r)
        return out

    def point_gate(self, zi, extra, targets, small_first=False) -> Gate:
        if extra is not None:
            raise ConstructionError("internal: a sliced point gate reads slice neurons only")   # pragma: no cover
        return self._and(self._indicator_inputs(zi), targets, small_first, zi)

    def _gradient_gates(self, zi, j, vi, a3, P3, key):
        """Slice gates of (source, passes, x_j = v) (cached; on the state farthest from L it reaches, so
        that the AND gate's weight on it is small, else the gate targets with the smallest weights), each
        followed by the AND gate of the point; the factors between the two in the backward chain are the
        AND gate's weight on the slice gate and T' there."""
        sl = self.slices[j]
        for variant, targets, small in ((0, self._unit_targets(), False), (1, self._indicator_targets(), False),
                                        (2, self.gate_targets, True)):
            skey = ("G", j, vi, variant) + key[1:]
            if skey not in self._slice_gates:
                try:
                    self._slice_gates[skey] = sl.point_gate(vi, (a3, P3), targets, small_first=small)
                except ConstructionError as e:
                    self._slice_gates[skey] = e
            sg = self._slice_gates[skey]
            if isinstance(sg, ConstructionError):
                yield sg
                continue
            # the AND gate on the gate targets with the smallest weights, else on the live state farthest
            # from L: with a coarse slice gate on value (RN(a3 P3 + gamma) can not land much finer than
            # a3 P3's spacing) the AND gate's weight on it, a factor of the chain, is about t / on value,
            # so a far target t keeps the fixed chain from shrinking the gradient below reach
            # T' there and the slice gate's input triple are functions of the slice gate: kept by its key
            sgi = self._slice_gate_in.get(skey)
            if sgi is None:
                d_sg = float(self.kit.dT(sg.pz))
                sgi = self._slice_gate_in[skey] = (d_sg, self._input(skey, sg) if d_sg != 0 else None)
            d_sg = sgi[0]
            if d_sg == 0:               # a flat slice gate passes no gradient at all
                yield ConstructionError(f"point {zi + 1}: the slice gate's state is flat (T' = 0)")
                continue
            inputs = self._indicator_inputs(zi, skip=j) + [sgi[1]]
            for targets, small in ((self.gate_targets, True), (self._indicator_targets(), False)):
                try:
                    gate = self._and(inputs, targets, small, zi)
                except ConstructionError as e:
                    yield e
                    continue
                yield gate, sg, [gate.betas[-1], d_sg]

    def _and(self, inputs, targets, small_first, zi) -> Gate:
        """The AND gate of slice neurons: weights beta_k = +-2^(e - exponent of |on_k - L|) (one e for all;
        sign: an input at L lowers the sum), gamma such that the sum with every input on lands on a
        target (earliest preferred) and every other on/L pattern is dead; exact on all 2^k patterns."""
        keys = [k for k, _, _ in inputs]
        ons = tuple(float(u) for _, u, _ in inputs)
        gains = tuple(float(g) for _, _, g in inputs)
        # the targets by name when they are a fixed list, else by value (a tuple: no array conversion per
        # call; by their bytes when they hold a zero, since a tuple would not tell -0 from +0)
        fixed = self.fixed_lists.get(id(targets))
        if fixed is not None and fixed[0] is targets:
            tk = fixed[1]
        else:
            tk = tuple(targets)
            if 0.0 in tk:
                tk = np.asarray(targets, float).tobytes()
        memo = (ons, gains, tk, small_first)
        hit = self._ands.get(memo, False)
        if hit is False:        # the search, and the gate's bmax (a function of its betas and the gains)
            hit = self._and_search(np.array(ons, float), np.asarray(targets, float), small_first)
            if hit is not None:
                betas = hit[0]
                hit += (float(np.max(np.abs(betas) * np.array(gains, float))) if len(betas) else 1.0,)
            self._ands[memo] = hit
        if hit is None:
            raise ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no AND gate of its slice neurons puts it "
                                    f"live and every other point dead")
        betas, gamma, pz, bmax = hit
        return Gate(keys, betas, gamma, pz, bmax)

    def _and_search(self, ons, tv, small_first):
        F, st, L = self.F, self.st, self.st.L
        k = len(ons)
        diff = ons - L
        if k == 0 or (diff == 0).any() or not len(tv):
            return None
        sg = np.sign(diff)
        ex = np.frexp(np.abs(diff))[1]
        shifts = [e for e in range(F.e_min - F.M - 2, F.e_max + 2)
                  if all(_in(F, float(b)) for b in sg * np.ldexp(1.0, e - ex))]
        if not shifts:
            return None
        B = np.array([sg * np.ldexp(1.0, e - ex) for e in shifts])                 # (S, k)
        pats = np.array(list(itertools.product((False, True), repeat=k)))           # (2^k, k), all-on last
        V = np.where(pats, ons[None, :], L)                                         # (2^k, k)
        S, Pn = len(shifts), len(pats)
        prod, over = mul_array(np.broadcast_to(B[:, None, :], (S, Pn, k)), np.broadcast_to(V[None], (S, Pn, k)), F)
        acc, bad = prod[:, :, 0], over.any(axis=(1, 2))
        for i in range(1, k):
            acc, o = add_array(acc, prod[:, :, i], F)
            bad |= o.any(axis=1)
        order = np.argsort(tv, kind="stable")
        tv_sorted = tv[order]
        if self.small_format:
            G = np.broadcast_to(F.values()[None, :], (S, len(F.values())))
        else:
            G = _near_grid(F, tv[None, :64] - acc[:, -1:], 2).reshape(S, -1)
            G = np.where(np.isnan(G), 0.0, G)
        pre, o = add_array(np.broadcast_to(acc[:, :, None], (S, Pn, G.shape[1])),
                           np.broadcast_to(G[:, None, :], (S, Pn, G.shape[1])), F)
        ok = ~o.any(axis=1) & ~bad[:, None] & st.dead(pre[:, :-1, :]).all(axis=1)
        pz = pre[:, -1, :]
        kk = np.clip(np.searchsorted(tv_sorted, pz), 0, len(tv) - 1)
        hitm = ok & (tv_sorted[kk] == pz)
        ranks = np.where(hitm, order[kk], len(tv) + 1)
        best = ranks.min(axis=1)
        if not (best <= len(tv)).any():
            return None
        si = int(np.nonzero(best <= len(tv))[0][0]) if small_first else int(np.argmin(best))
        gi = int(np.argmin(ranks[si]))
        return [float(b) for b in B[si]], float(G[si, gi]), float(pz[si, gi])


class _Constants:
    """Constant neurons T(b) = K (K a positive power of two, Condition 1 (c)) and the exact weights w
    with K * w = c for each constant c the network needs (kappa and chain constants of the steps, +-C).

    Each constant picks the state K nearest to 1 (in binades) that makes c / K a value of F, so a
    weight outside the format is never emitted; a constant no state makes exact is an error naming it.
    """

    def __init__(self, F: Format, cz, ct):
        order = np.argsort(np.abs(np.log2(ct)), kind="stable")
        self.F, self.states = F, [(float(cz[i]), float(ct[i])) for i in order]

    def pick(self, c: float):
        for b, K in self.states:
            if _in(self.F, c / K):
                return b, K
        raise ConstructionError(f"no constant state K = sigma~(b) of {self.F.name} makes the constant {c!r} an exact "
                                f"multiple K * w with w in the format")

    def absorber(self, h_max: float, slope) -> float:
        """C of the output row: the largest power of two C <= Omega with C = K w exact and the backward
        values at the constant neuron T(b) = K finite: |w| h_max and |w| h_max |T'(b)| at most Omega
        (slope(b) = T'(b): gelu~'(b) > 1 where gelu~(b) = 1).  Every constant state K is tried, nearest to 1 first
        (``pick``'s order): with upstream values up to Omega only K >= C leaves them finite, and a
        larger C absorbs larger gradient terms (a quarter ulp of C)."""
        F = self.F
        for e in range(F.e_max, F.e_min - 1, -1):
            C = math.ldexp(1.0, e)
            if C > F.max_float:
                continue
            for b, K in self.states:
                if _in(F, C / K) and (C / K) * h_max * max(1.0, abs(float(slope(b)))) <= F.max_float:
                    self.absorbing = (b, K)
                    return C
        raise ConstructionError(f"no absorbing constant C fits upstream values up to {h_max!r} in {F.name}")


def _branch_keys(br, sliced):
    """Keys of a gradient branch's source and passes (and of its relays, a list): shared by the branches
    of a slice (sliced gating: equal rows; a slice gate is live, and gets a backward value, only on its
    slice), else None."""
    if sliced is None:
        return None, None, None, [None] * len(br.relays)
    k = (br.coord, br.w_g, br.b_g, br.part)
    p3 = ("p3", br.a2, br.c2, br.a2b, br.c3)
    return ("s",) + k, ("p2", br.a2, br.c2) + k, p3 + k, [("r",) + p3 + br.relays[:i + 1] + k
                                                          for i in range(len(br.relays))]


def _assemble(kit, st, F, d, steps, values_part, grad_part, const, C, activation, implementation, sliced=None):
    M = F.M
    keys = [_branch_keys(br, sliced) for br in grad_part]

    def constants(cols, group):
        """The constants the step rows of ``group`` read (they sit in the next layer): kappa constants
        (one per constant state used), then chain constants."""
        kap_col = {}
        for s in group:
            b, _ = const.pick(s.kappa)
            if b not in kap_col:
                kap_col[b] = cols.add({}, b)
        chain_col = {}
        for k in sorted({k for s in group for k in range(s.k0, s.K + 1)}):
            b, K = const.pick(math.ldexp(1 + 2.0 ** -M, k))
            chain_col[k] = (cols.add({}, b), cols.add({}, b), K)
        return kap_col, chain_col

    def step_row(s, col, consts):
        """The step row: separator (or its last sharpening layer), kappa, then the chain in increasing
        k (the row's summation order), bias z_d."""
        kap_col, chain_col = consts
        b, K = const.pick(s.kappa)
        terms = {col: s.s, kap_col[b]: s.kappa / K}
        for k in range(s.k0, s.K + 1):
            c = math.ldexp(1 + 2.0 ** -M, k)
            terms[chain_col[k][0]] = c / chain_col[k][2]
            terms[chain_col[k][1]] = -c / chain_col[k][2]
        return terms, st.z_dead

    # layer 1: separators, sources, the constants of the step rows in layer 2
    l1 = _Cols()
    cur = [l1.add({s.coord: s.w}, s.b) for s in steps]          # each step's column in the last layer
    src = [l1.add({br.coord: br.w_g}, br.b_g, key=keys[i][0]) for i, br in enumerate(grad_part)]
    consts = constants(l1, [s for s in steps if not s.sharpen])
    layers, n_prev = [l1.layer(d, F)], len(l1.rows)
    # then, per step, its sharpening layers, the step row, the boost (the gates read the boosts) and its
    # re-boosts, all steps in step order; beside them each gradient branch's first and second pass and
    # its relays; last the constants of the step rows of the next layer.  Without sharpening: layer 2
    # steps and first passes, layer 3 boosts and second passes
    grad = src
    n_extra = max([len(s.sharpen) + len(s.reboost) for s in steps] + [0])
    for k in range(n_extra + 2):
        lk = _Cols()
        for i, s in enumerate(steps):
            m = len(s.sharpen)
            if k < m:
                cur[i] = lk.add({cur[i]: s.sharpen[k][0]}, s.sharpen[k][1])
            elif k == m:
                cur[i] = lk.add(*step_row(s, cur[i], consts))
            elif k == m + 1:
                cur[i] = lk.add({cur[i]: s.boost_a}, s.boost_c)
            else:
                a, c = s.reboost[k - m - 2]
                cur[i] = lk.add({cur[i]: a}, c)
        if k == 0:
            grad = [lk.add({grad[i]: br.a2}, br.c2, key=keys[i][1]) for i, br in enumerate(grad_part)]
        elif k == 1:
            grad = [lk.add({grad[i]: br.a2b}, br.c3, key=keys[i][2]) for i, br in enumerate(grad_part)]
        else:
            grad = [lk.add({grad[i]: br.relays[k - 2][0]}, br.relays[k - 2][1], key=keys[i][3][k - 2])
                    for i, br in enumerate(grad_part)]
        consts = constants(lk, [s for s in steps if len(s.sharpen) == k + 1])
        layers.append(lk.layer(n_prev, F))
        n_prev = len(lk.rows)
    boosted, pas3 = cur, grad
    below = boosted        # the columns gates (sliced: slice neurons) read for their step inputs
    if sliced is not None:
        # layer 4 (sliced gating): indicators, ordered by (coordinate, value) so that an AND gate's sum
        # runs over its inputs in the order _and computed it, then the slice gates (read last)
        ls = _Cols()
        col = {}
        for key in sorted({k for br in values_part + grad_part for k in br.gate.inputs if k[0] == "I"}):
            g = sliced.indicator(key[1], key[2])
            col[key] = ls.add({boosted[i]: b for i, b in zip(g.inputs, g.betas)}, g.gamma)
        for i, br in enumerate(grad_part):
            sg = br.slice_gate
            terms = {boosted[k]: b for k, b in zip(sg.inputs, sg.betas)}
            terms[pas3[i]] = br.a3
            col[(br.gate.inputs[-1], br.part)] = ls.add(terms, sg.gamma, key=(br.gate.inputs[-1], br.part))
        layers.append(ls.layer(n_prev, F))
        below = {k: c for k, c in col.items() if k[0] == "I"}
        n_below = len(ls.rows)
    else:
        n_below = n_prev
    # gates: values, then gradients
    l3 = _Cols()
    vcol = [l3.add({below[i]: b for i, b in zip(br.gate.inputs, br.gate.betas)}, br.gate.gamma) for br in values_part]
    gcol = []
    for i, br in enumerate(grad_part):
        if sliced is not None:
            ins = br.gate.inputs
            terms = {below[k]: b for k, b in zip(ins[:-1], br.gate.betas[:-1])}
            terms[col[(ins[-1], br.part)]] = br.gate.betas[-1]
        else:
            terms = {boosted[k]: b for k, b in zip(br.gate.inputs, br.gate.betas)}
            terms[pas3[i]] = br.a3
        gcol.append(l3.add(terms, br.gate.gamma))
    # layers after the gates: passes (gradient) and V' / relays (value); the last one also holds +C and -C
    n_post = len((grad_part or values_part)[0].post) if (grad_part or values_part) else 1
    layers.append(l3.layer(n_below, F))
    prev_g, prev_v, prev_n = gcol, vcol, len(l3.rows)
    b_C, K_C = const.absorbing
    if n_post >= 1 and all(len(br.post) == n_post for br in grad_part + values_part):
        # the same rows as the _Cols loop below, as arrays (``_one_term_layer``): each row reads one column
        ng, nv = len(grad_part), len(values_part)
        pg = np.array([br.post for br in grad_part], np.float64).reshape(ng, n_post, 2)
        pv = np.array([br.post for br in values_part], np.float64).reshape(nv, n_post, 2)
        cg, cv = np.asarray(prev_g, np.int64), np.asarray(prev_v, np.int64)
        for k in range(n_post):
            last = k == n_post - 1
            const_row = [([-1], [0.0], [b_C])] if last else []
            layers.append(_one_term_layer(const_row + [(cg, pg[:, k, 0], pg[:, k, 1])] + const_row
                                          + [(cv, pv[:, k, 0], pv[:, k, 1])], prev_n, F))
            first = 1 if last else 0            # +C first, -C between the gradient and the value rows
            cg = first + np.arange(ng)
            cv = 2 * first + ng + np.arange(nv)
            prev_n = ng + nv + 2 * first
        cpos, cneg = 0, ng + 1
        prev_g, prev_v, n_post = cg.tolist(), cv.tolist(), 0
    for k in range(n_post):
        lk = _Cols()
        last = k == n_post - 1
        cpos = lk.add({}, b_C) if last else None
        g_k = [lk.add({prev_g[i]: br.post[k][0]}, br.post[k][1]) for i, br in enumerate(grad_part)]
        cneg = lk.add({}, b_C) if last else None
        v_k = [lk.add({prev_v[i]: br.post[k][0]}, br.post[k][1]) for i, br in enumerate(values_part)]
        layers.append(lk.layer(prev_n, F))
        prev_g, prev_v, prev_n = g_k, v_k, len(lk.rows)
    # output: C, absorbed gradient terms, -C, value terms
    out = {cpos: C / K_C, cneg: -C / K_C}
    for i, br in enumerate(grad_part):
        out[prev_g[i]] = br.out_weight
    for i, br in enumerate(values_part):
        out[prev_v[i]] = br.out_weight
    lo = _Cols()
    lo.add(out, 0.0)
    layers.append(lo.layer(prev_n, F))
    return Network(F, kit.act.name, layers, implementation, d)


def distinguishability(activation, fmt, points, implementation="exact"):
    """Gaps of a domain that no first-layer neuron splits monotonically (empty list: step-separable).

    For every coordinate j and consecutive coordinate values a < a' of the domain, the constructor needs
    a neuron T(w x_j + b), finite on the domain, whose values at x_j <= a all lie below (or all above)
    its values at x_j >= a'.  Every (w, b) in F x F is tried (formats of at most 16 bits).  Returns a list
    of (coordinate (1-based), a, a') that fail.  A domain whose points some coordinate gap cannot even
    separate (equal first-layer outputs) cannot be represented by any network.
    """
    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    X = np.asarray(points, float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    bad = []
    for j in range(X.shape[1]):
        vals = np.unique(X[:, j])
        if len(vals) < 2:
            continue
        chosen = _chosen_steps(kit, vals)
        for gap in range(1, len(vals)):
            if chosen[(gap, True)] is None or chosen[(gap, False)] is None:
                bad.append((j + 1, float(vals[gap - 1]), float(vals[gap])))
    return bad


def indistinguishable_pairs(activation, fmt, points, implementation="exact"):
    """Consecutive coordinate values that every first-layer neuron T(w x_j + b) maps to the same output
    (d = 1 domains): no network of this activation and format can give them different values.

    Every (w, b) in F x F that stays finite on the whole domain is tried, one w at a time (memory stays
    at |F| x |domain|).  Returns [(a, a'), ...].
    """
    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    vals = np.unique(np.asarray(points, float).ravel())
    V = F.values()
    differs = np.zeros(len(vals) - 1, dtype=bool)
    for w in V:
        wx, o = mul_array(np.full_like(vals, w), vals, F)
        if o.any():
            continue
        pre, o2 = add_array(np.broadcast_to(wx, (len(V), len(vals))), np.broadcast_to(V[:, None], (len(V), len(vals))), F)
        pre = pre[~o2.any(axis=1)]
        t, ov = kit.R.value_array(pre.ravel())
        t, ov = t.reshape(pre.shape), ov.reshape(pre.shape)
        t = t[~ov.any(axis=1)]
        differs |= (t[:, 1:] != t[:, :-1]).any(axis=0)
    return [(float(vals[i]), float(vals[i + 1])) for i in np.nonzero(~differs)[0]]
