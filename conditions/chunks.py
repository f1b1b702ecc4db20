"""Chunks of a format for the exhaustive checks beyond 16 bits: magnitude ranges, their points, and
sigma~ and sigma~' on them as one implementation computes them.

A chunk is a range ``[lo, hi)`` of **magnitude indices** (0 is zero, m >= 1 the positive values in
ascending order, so m is the bit pattern of |x| for an IEEE-like format) and holds *both* signs of each
magnitude: -v and v are always in the same chunk.  Condition 3 asks for sigma~ bounded at -t, 0 and t
together, which a chunk can then decide on its own.  Inside a chunk the points are in ascending value
order (the negatives, zero when lo = 0, the positives).

Every finite value of a format is a magnitude of a symmetric grid fixed by (M, e_min, Omega)
(:meth:`condcheck.formats.Format.values`: one zero), for IEEE and non-IEEE (fn, fnuz) formats alike, so
the index <-> value maps below are arithmetic, exact, and the same for every format.

How sigma~ and sigma~' are obtained (:func:`evaluate`):

* ``source="table"``: read off ``RoundedActivation.table()`` (formats of at most 24 bits that have a
  table): exactly the arrays the whole-table checkers of conditions/condition1-3.py use, so a chunked
  decision can be compared with theirs value for value (tests);
* ``source="direct"``: computed for the chunk's points only, as the implementation computes them
  (:func:`condcheck.rounded_activation.evaluate_points`; for ``torch``, PyTorch's CPU kernel and autograd
  in float32, :func:`condcheck.torch_impl.torch_points`).

Overflow (Inf or NaN) is NaN in ``S`` and ``D`` (finite semantics: such a point is not admissible).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from condcheck.activations import Activation, get_activation
from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import Format, get_format


class Magnitudes:
    """The magnitude indices of a format: m = 0 is zero, m = 1 .. n - 1 the positive values ascending."""

    def __init__(self, fmt: Format):
        self.fmt = fmt
        self.n = (fmt.count_finite() + 1) // 2          # zero and the positive values
        self.total = 2 * self.n - 1                      # finite values (one zero)
        self._frac = 1 << fmt.M

    def values(self, lo: int, hi: int) -> np.ndarray:
        """The magnitudes with index in [lo, hi), ascending, as float64 (exact)."""
        return self.values_of(np.arange(lo, hi, dtype=np.int64))

    def values_of(self, m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.int64)
        fmt, F = self.fmt, self._frac
        binade = m >> fmt.M                               # 0 for zero and the subnormals
        sig = np.where(binade == 0, m, F + (m & (F - 1))).astype(np.float64)
        exp = np.where(binade == 0, fmt.e_min - fmt.M, fmt.e_min + binade - 1 - fmt.M)
        return np.ldexp(sig, exp.astype(np.int64))

    def index(self, a) -> np.ndarray:
        """The magnitude index of |a| for float64 values of the format (vectorized)."""
        a = np.abs(np.asarray(a, dtype=np.float64))
        fmt, F = self.fmt, self._frac
        _, ex = np.frexp(a)
        e = ex.astype(np.int64) - 1                       # floor(log2 a) for a > 0
        normal = a >= 2.0 ** fmt.e_min
        sub = np.ldexp(a, fmt.M - fmt.e_min)              # subnormal: the integer significand
        nor = (e - fmt.e_min + 1) * F + (np.ldexp(a, (fmt.M - e)) - F)
        return np.where(normal, nor, sub).astype(np.int64)

    def rank(self, x: float) -> int:
        """How many finite values are below x (x a value of the format)."""
        m = int(self.index(np.array([x]))[0])
        return self.n - 1 - m if x < 0 else self.n - 1 + m

    def at_rank(self, r: int) -> float:
        """The finite value with ``r`` values below it."""
        m = r - (self.n - 1)
        v = float(self.values_of(np.array([abs(m)]))[0])
        return -v if m < 0 else v

    def points(self, lo: int, hi: int) -> np.ndarray:
        """The values of a chunk in ascending order: -v for m in [max(lo, 1), hi) descending, zero if lo = 0,
        then v ascending."""
        pos = self.values(max(lo, 1), hi)
        parts = [-pos[::-1]] + ([np.zeros(1)] if lo == 0 else []) + [pos]
        return np.concatenate(parts)


def plan_chunks(n: int, size: int | None = None, splits=None) -> list[tuple[int, int]]:
    """Chunks [lo, hi) covering magnitude indices 0 .. n-1: every ``size`` indices, or at the given split
    points (strictly inside (0, n), any order, duplicates ignored)."""
    if splits is not None:
        cuts = sorted({int(s) for s in splits if 0 < int(s) < n})
    else:
        if size is None or size < 1:
            raise CondcheckError(f"chunk size must be a positive number of magnitudes, not {size!r}")
        cuts = list(range(size, n, size))
    edges = [0] + cuts + [n]
    return list(zip(edges[:-1], edges[1:]))


def check_cover(ranges, n: int):
    """The ranges, sorted, tile [0, n) exactly (no gap, no overlap); else a CondcheckError naming the gap."""
    at = 0
    for lo, hi in sorted(ranges):
        if lo != at:
            what = f"magnitudes {at} .. {lo - 1} were not checked" if lo > at else f"magnitudes from {lo} were checked twice"
            raise CondcheckError(f"the chunk results do not cover the format exactly: {what}; no verdict is given")
        at = hi
    if at != n:
        raise CondcheckError(f"the chunk results do not cover the format exactly: magnitudes {at} .. {n - 1} were "
                             f"not checked; no verdict is given")


@dataclass(frozen=True)
class ChunkJob:
    """What a worker needs to evaluate one chunk (picklable; a plug-in activation travels as its object)."""

    activation: object          # a registry name, or an Activation (plug-ins are not registered on workers)
    format: str
    implementation: str
    lo: int
    hi: int
    source: str = "direct"      # "direct" or "table"
    plugin: object = None       # a plug-in implementation travels as its object (condcheck.implementations)

    def act(self) -> Activation:
        return self.activation if isinstance(self.activation, Activation) else get_activation(self.activation)

    def with_range(self, lo: int, hi: int) -> "ChunkJob":
        return ChunkJob(self.activation, self.format, self.implementation, lo, hi, self.source, self.plugin)


@dataclass
class ChunkData:
    """One evaluated chunk: points P (ascending), sigma~ S and sigma~' D (NaN where they overflow), the
    magnitude index of each point, and a digest of all of it (a re-evaluation must reproduce it)."""

    lo: int
    hi: int
    P: np.ndarray
    S: np.ndarray
    D: np.ndarray
    m: np.ndarray
    n_neg: int
    fmt: Format
    digest: str
    fallbacks: int = 0

    @property
    def size(self) -> int:
        return int(self.P.size)


def expected_points(lo: int, hi: int) -> int:
    return 2 * (hi - max(lo, 1)) + (1 if lo == 0 else 0)


def evaluate(job: ChunkJob) -> ChunkData:
    """sigma~ and sigma~' on every point of the chunk, as the job's implementation computes them."""
    fmt = get_format(job.format)
    mags = Magnitudes(fmt)
    if not 0 <= job.lo < job.hi <= mags.n:
        raise CondcheckError(f"chunk [{job.lo}, {job.hi}) is outside the magnitudes 0 .. {mags.n - 1} of {fmt.name}")
    P = mags.points(job.lo, job.hi)
    act = job.act()
    fallbacks = 0
    if job.source == "table":
        from condcheck.rounded_activation import get_rounded
        t = get_rounded(act, fmt, job.implementation).table()
        idx = np.searchsorted(t.points, P)
        if not np.array_equal(t.points[idx], P):
            raise AssertionError("internal: chunk points missing from the table")
        s, so, d, do = t.sigma[idx], t.sigma_overflow[idx], t.dsigma[idx], t.dsigma_overflow[idx]
    elif job.source == "direct" and job.plugin is not None:
        from condcheck.implementations import implementation_points
        s, so, d, do = implementation_points(job.plugin, act, fmt, P)
    elif job.source == "direct" and job.implementation == "exact" and not act.is_callable:
        s, so, d, do, fallbacks = exact_by_ranges(act, fmt, P)
    elif job.source == "direct":
        from condcheck.rounded_activation import evaluate_points
        s, so, d, do, fallbacks = evaluate_points(act, fmt, job.implementation, P)
    else:
        raise CondcheckError(f"unknown chunk source {job.source!r}; choose 'direct' or 'table'")
    S = np.where(so, np.nan, s).astype(np.float64)
    D = np.where(do, np.nan, d).astype(np.float64)
    S[S == 0] = 0.0                                           # one zero (+0) in S and D
    D[D == 0] = 0.0
    npos = job.hi - max(job.lo, 1)
    m = np.concatenate([np.arange(job.hi - 1, max(job.lo, 1) - 1, -1, dtype=np.int64),
                        np.zeros(1 if job.lo == 0 else 0, dtype=np.int64),
                        np.arange(max(job.lo, 1), job.hi, dtype=np.int64)])
    return ChunkData(job.lo, job.hi, P, S, D, m, npos, fmt, checksum(S, D), fallbacks)


#: a run of consecutive points is first tried whole, then in this many parts, for a constant rounding
RANGE_PARTS = 8
RANGE_PRECISION = 96


def _constant_runs(act: Activation, derivative: bool, fmt: Format, x: np.ndarray, out: np.ndarray,
                   done: np.ndarray):
    """Where sigma~ (or sigma~') is provably one value on a run of consecutive points of one sign: the
    interval enclosure of the expression over the real interval between the run's ends
    (:func:`conditions._tail.enclose_interval`) lies in the exact set of reals that round to the value at
    the run's ends.  Then every real in between, so every point of the run, rounds to it.  Tried on the
    whole run, then on RANGE_PARTS parts (only where a part's two ends round alike); fills ``out``/``done``."""
    from condcheck.rounded_activation import evaluate_array

    from ._tail import enclose_interval, rounding_set
    n = x.size
    if n < 2:
        return
    expr = act.derivative if derivative else act.expr
    cuts = np.unique(np.linspace(0, n, RANGE_PARTS + 1).astype(int)) if n >= 2 * RANGE_PARTS else np.array([0, n])
    runs = [(0, n)] + [(int(i), int(j)) for i, j in zip(cuts[:-1], cuts[1:])]
    ends = np.unique([k for i, j in runs for k in (i, j - 1)])
    v, over, _ = evaluate_array(act, fmt, "exact", derivative, x[ends])
    at = dict(zip(ends.tolist(), zip(v.tolist(), over.tolist())))

    def attempt(i, j):
        (a, oa), (b, ob) = at[i], at[j - 1]
        if oa or ob or a != b:                                  # overflow, or not constant: no enclosure
            return False
        if not rounding_set(fmt, Fraction(a)).contains_enclosure(
                enclose_interval(expr, Fraction(float(x[i])), Fraction(float(x[j - 1])), RANGE_PRECISION)):
            return False
        out[i:j], done[i:j] = a, True
        return True
    if not attempt(0, n):
        for i, j in runs[1:]:
            attempt(i, j)


def exact_by_ranges(act: Activation, fmt: Format, P: np.ndarray):
    """The "exact" implementation on a chunk's points (ascending; the negatives, maybe 0, the positives):
    runs where sigma~ or sigma~' is provably constant (:func:`_constant_runs`, certified by interval
    arithmetic over the run) and tiny arguments decided by the tangent at zero
    (:func:`conditions.near_zero.fill_tiny`) are filled without evaluating their points; every other point by
    :func:`condcheck.rounded_activation.evaluate_points` (numpy enclosures rounded at both ends, the
    certain path where they disagree).  The same values as evaluating every point (tests)."""
    from condcheck.rounded_activation import evaluate_array

    from .near_zero import fill_tiny
    n_neg = int(np.searchsorted(P, 0.0))
    parts = (slice(0, n_neg), slice(n_neg + (1 if n_neg < P.size and P[n_neg] == 0 else 0), P.size))
    res = []
    fallbacks = 0
    for deriv in (False, True):
        vals, done = np.zeros(P.size), np.zeros(P.size, dtype=bool)
        for sl in parts:
            if sl.stop > sl.start:
                _constant_runs(act, deriv, fmt, P[sl], vals[sl], done[sl])      # views: filled in place
                fill_tiny(act.derivative if deriv else act.expr, fmt, P[sl], vals[sl], done[sl])
        over = np.zeros(P.size, dtype=bool)
        if not done.any():
            vals, over, f = evaluate_array(act, fmt, "exact", deriv, P)
        elif not done.all():
            rest = np.flatnonzero(~done)
            vals[rest], over[rest], f = evaluate_array(act, fmt, "exact", deriv, P[rest])
        else:
            f = 0
        fallbacks += f
        res += [vals, over]
    return res[0], res[1], res[2], res[3], fallbacks


def checksum(*arrays) -> str:
    """A digest of float64 arrays that changes with any single value (bit pattern): blake2b over their
    bytes and lengths (about 25 ms per 4M-value array; it detects a re-evaluation that differs)."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        b = np.ascontiguousarray(a, dtype=np.float64)
        h.update(np.uint64(b.size).tobytes())
        h.update(b.data)
    return h.hexdigest()


def float_bits(a: np.ndarray):
    """(exponent, significand is a power of two) of float64 values from their bit patterns: |a| = 2^e
    exactly when the second is true and a != 0; ceil(log2 |a|) = e + (not a power of two).  Values of the
    formats checked here are float64 normal numbers or zero; the caller masks zeros, Inf and NaN."""
    b = np.asarray(a, dtype=np.float64).view(np.uint64)
    e = ((b >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    return e, (b & np.uint64((1 << 52) - 1)) == 0


class RecordedRounded:
    """sigma~ and sigma~' at the points a chunked check evaluated, as those evaluations gave them.

    Duck-types :class:`condcheck.rounded_activation.RoundedActivation` (``value``, ``derivative``,
    ``format``, ``activation``, ``implementation``) for the exact re-checks of the condition modules
    (``check_pair``, ``check_route_a/b``, ``recheck``): the witness clauses are re-checked with exact
    rationals on the values the enumeration saw.  A point that was not recorded is an internal error."""

    def __init__(self, rounded, values: dict):
        self.activation = rounded.activation
        self.format = rounded.format
        self.implementation = rounded.implementation
        self.values = values                                    # float x -> (S, D), NaN for overflow

    def _get(self, z, i: int) -> Fraction:
        q = Fraction(z)
        x = float(q)
        if x not in self.values:
            raise AssertionError(f"internal: {x!r} was not evaluated by the chunked check")
        v = self.values[x][i]
        if np.isnan(v):
            raise FormatOverflowError(f"{self.activation.name}{chr(39) * i}({x!r}) overflows {self.format.name}")
        return Fraction(v)

    def value(self, z) -> Fraction:
        return self._get(z, 0)

    def derivative(self, z) -> Fraction:
        return self._get(z, 1)
