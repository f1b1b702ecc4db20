"""Certified decision of Condition 2's pair clauses over every pair of values of a format.

Condition 2 asks for a *pair* (delta_0, delta_1) of values of F.  Clauses (ii)-(iii) restrict each
point on its own (delta_1 a pass state sigma~'(delta_1) = +-2^k, delta_0 a shrinking state
|sigma~'(delta_0)| <= 2^(k-1), i.e. eta_0 >= 1), and clauses (i) and (iv) couple the two points only
through their rounded values s_0 = sigma~(delta_0), s_1 = sigma~(delta_1):

    s_0 != s_1,  |s_0|, |s_1|, |s_0 - s_1| <= T = 2^e_max,   (i)
    2^(e_min + k) <= max(|s_0|, |s_1|) <= 2^(e_max + k)      (iv, with eta_1 = -k, eta_2 = k, the
                                                              weakest admissible choice)

So "some pair satisfies clauses (i)..(stage)" is decided here without enumerating F x F, by branch and
bound over a **cover** of the values of F (from -Omega to Omega, by ordinals) with intervals:

* every interval [a, b] of format values carries an over-approximation of the rounded values at its
  format values: for g = sigma and g = sigma', the range between RN_F(lo) and RN_F(hi), where [lo, hi]
  is the interval-arithmetic enclosure of g over the whole real interval [a, b]
  (:func:`conditions._tail.enclose_interval`; RN_F is monotone, so every RN_F(g(z)), z in [a, b], lies
  in that range).  Tag ``m``: for each g that is smooth and whose derivative's enclosure over [a, b] is
  finite and of one sign (:func:`conditions._exists.slopes`), the range is intersected with the exact
  range between the certain roundings g~(a) and g~(b) (monotonicity).  Tag ``p``: a single value, its
  rounded values by the certain (Ziv, mpmath) evaluation, exact.  Nothing is evaluated by numpy.
* for each admissible exponent k (stage 2: -M <= k <= 0; stages 3, 4: also -k <= e_max and
  k <= -e_min + M) an interval is a possible **pass** interval when its sigma~' range contains +-2^k,
  and a possible **shrinking** interval when its sigma~' range meets [-2^(k-1), 2^(k-1)]; at stage 1
  every interval is both (no derivative clause).  Its s-range is its sigma~ range clipped to [-T, T]
  (an interval whose sigma~ range misses [-T, T], or whose sigma~' range has no finite value, takes no
  part).
* a pass interval and a shrinking interval are **compatible** when some real s_0 in the one's s-range
  and s_1 in the other's satisfy the (real) inequalities above, with s_0 != s_1.  That is decided
  exactly on the interval ends (Fractions): with the ranges clipped to [-2^(e_max+k), 2^(e_max+k)]
  (stage 4), the pair is compatible iff some piece of one range with |s| >= 2^(e_min+k) lies within T
  of the other range (or the other way round), two equal single values excepted.  Compatibility over
  the reals is implied by compatibility over the format values, so "no compatible pair" proves that no
  pair of F x F satisfies the clauses.
* every interval (of more than one value) with a compatible partner is tightened by monotonicity once,
  then bisected; a compatible pair of two single values is checked exactly (``condition2.check_pair``)
  and is a **witness**.  When no interval has a compatible partner the clauses are **refuted**: the
  cover, in order (``e[a, b] m[c, d] p[z, z] ...``, hex floats), is the certificate, re-proved by
  ``condcheck recheck`` (:mod:`condcheck.recheck`) from the cover alone (it recomputes every range and
  the compatibility).

Outcome: "refuted", "witness" (a pair satisfying the clauses of the stage), or "undecided" (a cap on
interval evaluations or seconds was hit).  Only for the "exact" implementation of a sympy expression.

ASSUMPTION: the same as :mod:`conditions._tail` (mpmath's functions accurate within 2^-(prec-8)).
"""
from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from fractions import Fraction

from condcheck.errors import CondcheckError
from condcheck.rounded_activation import round_end, exact_point

from ._exists import CoverScan, one_sign, slopes
from ._search import value_at, value_index
from ._tail import enclose_interval

__all__ = ["PairScan", "scan_pairs", "stage_exponents", "stage_bounds", "compatible_pairs"]

INF = float("inf")


def stage_exponents(fmt, stage: int) -> list:
    """The exponents k a pass state 2^k may have at a stage ([None] at stage 1: no derivative clause)."""
    if stage <= 1:
        return [None]
    lo, hi = -fmt.M, 0
    if stage >= 3:
        lo, hi = max(lo, -fmt.e_max), min(hi, -fmt.e_min + fmt.M)
    return list(range(hi, lo - 1, -1))


def stage_bounds(fmt, stage: int, k):
    """(T, lo, hi): |s_0 - s_1| <= T, and lo <= max(|s_0|, |s_1|) <= hi (lo = 0, hi = T before stage 4)."""
    T = Fraction(2) ** fmt.e_max
    if stage >= 4:
        return T, Fraction(2) ** (fmt.e_min + k), min(T, Fraction(2) ** (fmt.e_max + k))
    return T, Fraction(0), T


def _roles(fmt, stage, k, s, d):
    """(clipped s-range or None, is pass, is shrinking) of one interval for exponent k."""
    T = Fraction(2) ** fmt.e_max
    om = Fraction(fmt.max)
    slo, shi = max(s[0], -T), min(s[1], T)
    dlo, dhi = max(d[0], -om), min(d[1], om)
    if slo > shi or dlo > dhi:
        return None, False, False
    if stage <= 1:
        return (Fraction(slo), Fraction(shi)), True, True
    p, h = Fraction(2) ** k, Fraction(2) ** (k - 1)
    is_pass = (dlo <= p <= dhi) or (dlo <= -p <= dhi)
    is_block = dlo <= h and dhi >= -h
    return (Fraction(slo), Fraction(shi)), is_pass, is_block


def _merge(ranges):
    """Sorted disjoint closed components of a union of closed ranges."""
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _clip(r, hi):
    lo_, hi_ = max(r[0], -hi), min(r[1], hi)
    return (lo_, hi_) if lo_ <= hi_ else None


def _big(r, lo, hi):
    """The pieces of range r with lo <= |s| <= hi."""
    out = []
    for a, b in ((max(r[0], lo), min(r[1], hi)), (max(r[0], -hi), min(r[1], -lo))):
        if a <= b:
            out.append((a, b))
    return out


def _near(piece, comps, starts, T) -> bool:
    """Some s_0 in piece and s_1 in a component with |s_0 - s_1| <= T and s_0 != s_1?"""
    p, q = piece
    i = bisect.bisect_right(starts, q + T) - 1
    for j in (i, i - 1):
        if j < 0:
            return False
        c, d = comps[j]
        if d < p - T:
            return False
        if not (p == q == c == d):
            return True
    return False


class _Side:
    """The components of one role's s-ranges (all, and the pieces with |s| >= lo)."""

    def __init__(self, ranges, lo, hi, stage):
        full = [c for c in (_clip(r, hi) for r in ranges) if c is not None]
        self.full = _merge(full)
        self.fstarts = [c[0] for c in self.full]
        self.big = _merge([b for r in full for b in _big(r, lo, hi)]) if stage >= 4 else self.full
        self.bstarts = [c[0] for c in self.big]


def _compatible(r, other: _Side, T, lo, hi, stage) -> bool:
    r = _clip(r, hi)
    if r is None or not other.full:
        return False
    pieces = _big(r, lo, hi) if stage >= 4 else [r]
    if any(_near(pc, other.full, other.fstarts, T) for pc in pieces):
        return True
    return stage >= 4 and bool(other.big) and _near(r, other.big, other.bstarts, T)


def compatible_pairs(fmt, stage: int, items):
    """For each exponent k of the stage: the indices of items that are a pass interval with a compatible
    shrinking partner, and of shrinking intervals with a compatible pass partner.  ``items`` are
    (s-range, d-range) pairs (Fractions or +-inf).  Returns {k: (pass indices, shrinking indices)}."""
    out = {}
    for k in stage_exponents(fmt, stage):
        T, lo, hi = stage_bounds(fmt, stage, k)
        P, B = [], []
        for i, (s, d) in enumerate(items):
            r, is_pass, is_block = _roles(fmt, stage, k, s, d)
            if r is None:
                continue
            if is_pass:
                P.append((i, r))
            if is_block:
                B.append((i, r))
        if not P or not B:
            out[k] = ([], [])
            continue
        sideP = _Side([r for _, r in P], lo, hi, stage)
        sideB = _Side([r for _, r in B], lo, hi, stage)
        out[k] = ([i for i, r in P if _compatible(r, sideB, T, lo, hi, stage)],
                  [i for i, r in B if _compatible(r, sideP, T, lo, hi, stage)])
    return out


@dataclass(kw_only=True)
class PairScan(CoverScan):
    """The outcome of :func:`scan_pairs`."""

    stage: int
    witness: tuple | None = None        # (delta_0, delta_1)
    tightened: int = 0                  # intervals narrowed by monotonicity
    rounds: int = 0

    def summary(self) -> str:
        n = {h: sum(1 for c in self.cover if c[2] == h) for h in "emp"}
        return (f"{len(self.cover)} intervals cover every value from -Omega to Omega ({n['e']} by interval "
                f"enclosure, {n['m']} also by monotonicity, {n['p']} single values by certain rounding), and no "
                f"pass interval has a compatible shrinking partner for any admissible k; {self.rounds} "
                f"refinement rounds, {self.intervals} interval evaluations, {self.points} certain point "
                f"evaluations, {self.prec} bits, {self.seconds:.2f} s")


def _point(rounded, derivative, q):
    return exact_point(rounded.activation, derivative, q, rounded.format)


def _enc(expr, a, b, fmt, prec):
    lo, hi = enclose_interval(expr, a, b, prec)
    try:
        return round_end(lo, fmt), round_end(hi, fmt)
    except CondcheckError:                              # NaN in the enclosure: no information
        return -INF, INF


def _mono(slope, point, a, b, prec):
    """The exact range of g~ over [a, b] from monotonicity, or None when the sign is not proved."""
    if not slope or not one_sign(slope, a, b, prec):
        return None
    va, vb = point(a), point(b)
    return min(va, vb), max(va, vb)


def _meet(r, m):
    return (max(r[0], m[0]), min(r[1], m[1])) if m is not None else r


def interval_ranges(rounded, a, b, how, prec, counter=None):
    """(sigma~ range, sigma~' range) over the format values of [a, b] by ``how`` ("p", "e" or "m")."""
    act, fmt = rounded.activation, rounded.format
    if how == "p":
        s, d = _point(rounded, False, a), _point(rounded, True, a)
        if counter is not None:
            counter.points += 2
        return (s, s), (d, d)
    s = _enc(act.expr, a, b, fmt, prec)
    d = _enc(act.derivative, a, b, fmt, prec)
    if counter is not None:
        counter.intervals += 2
    if how == "m":
        s = _meet(s, _mono(slopes(act.expr), lambda q: _point(rounded, False, q), a, b, prec))
        d = _meet(d, _mono(slopes(act.derivative), lambda q: _point(rounded, True, q), a, b, prec))
        if counter is not None:
            counter.intervals += 4
            counter.points += 4
    return s, d


def scan_pairs(rounded, stage: int, check_pair, *, max_intervals: int = 40000, time_limit: float = 20.0,
               prec: int | None = None, dive_budget: int = 4000) -> PairScan:
    """Decide whether some pair of values of F satisfies Condition 2's clauses (i)..(``stage``) (see the
    module docstring).  ``check_pair(rounded, d0, d1)`` is Condition 2's exact check of one pair."""
    t0 = time.perf_counter()
    fmt, act = rounded.format, rounded.activation
    if act.is_callable or act.expr is None:
        raise CondcheckError("the pair scan needs sympy expressions (a callable activation has none)")
    if rounded.implementation != "exact":
        raise CondcheckError("the pair scan certifies the correctly rounded ('exact') implementation only")
    prec = prec or max(64, 2 * (fmt.M + 1) + 24)
    out = PairScan(status="undecided", stage=stage, prec=prec)
    smooth = bool(slopes(act.expr)) or bool(slopes(act.derivative))
    om = Fraction(fmt.max)

    def make(lo_i, hi_i, how="e"):
        a, b = value_at(fmt, lo_i), value_at(fmt, hi_i)
        how = "p" if lo_i == hi_i else how
        s, d = interval_ranges(rounded, a, b, how, prec, out)
        return [lo_i, hi_i, how, s, d, how != "e" or not smooth]       # last: monotonicity tried

    items = [make(value_index(fmt, -om), value_index(fmt, om))]
    diver = _Diver(rounded, stage, check_pair, out, prec, smooth, dive_budget, t0 + time_limit)
    while True:
        out.rounds += 1
        if out.intervals >= max_intervals or time.perf_counter() - t0 > time_limit:
            out.reason = (f"cap reached ({out.intervals} interval evaluations, {time.perf_counter() - t0:.1f} s, "
                          f"{len(items)} intervals; limits {max_intervals} and {time_limit:g} s)")
            break
        comp = compatible_pairs(fmt, stage, [(it[3], it[4]) for it in items])
        hot = set()
        for k, (P, B) in comp.items():
            hot.update(P)
            hot.update(B)
            if P and B and time.perf_counter() - t0 <= time_limit:
                w = diver.dive(k, [items[i] for i in P], [items[i] for i in B])
                if w is not None:
                    out.status, out.witness = "witness", w
                    break
        if out.status == "witness":
            break
        grow = [i for i in sorted(hot) if items[i][2] != "p"]
        if not grow:
            if not hot:
                out.status = "refuted"
                break
            # only single values are compatible: every compatible pair of them, exactly
            for k, (P, B) in comp.items():
                w = _point_pair(rounded, fmt, stage, k, items, P, B, check_pair)
                if w is not None:
                    out.status, out.witness = "witness", w
                    break
            if out.status == "witness":
                break
            raise AssertionError("internal: compatible single values without an exact witness "
                                 "(the certain evaluation and check_pair disagree)")
        new = []
        gi = set(grow)
        if out.intervals + 6 * len(grow) > max_intervals:            # a round costs at most 6 per interval
            out.reason = (f"cap reached ({out.intervals} interval evaluations, {len(items)} intervals, "
                          f"{len(grow)} of them still to refine; limit {max_intervals})")
            break
        for i, it in enumerate(items):
            if i not in gi:
                new.append(it)
                continue
            lo_i, hi_i, how, _, _, tried = it
            if not tried:
                s, d = interval_ranges(rounded, value_at(fmt, lo_i), value_at(fmt, hi_i), "m", prec, out)
                out.tightened += 1
                new.append([lo_i, hi_i, "m", s, d, True])
                continue
            mid = lo_i + (hi_i - lo_i) // 2
            new.append(make(lo_i, mid))
            new.append(make(mid + 1, hi_i))
        items = new
    if out.status == "refuted":
        out.cover = [(value_at(fmt, it[0]), value_at(fmt, it[1]), it[2]) for it in items]
    out.seconds = time.perf_counter() - t0
    return out


class _Diver:
    """Depth-first search for one witness pair inside the compatible intervals of a round: down to a
    pass value (certain rounding) whose pass derivative and sigma~ value are compatible with the
    shrinking intervals, then down to a shrinking value compatible with that exact sigma~ value;
    ``check_pair`` decides the pair.  Ranges are memoized across rounds; each call spends at most
    ``budget`` interval and point evaluations (the breadth-first refinement of :func:`scan_pairs` is
    what refutes; this only finds witnesses sooner)."""

    def __init__(self, rounded, stage, check_pair, counter, prec, smooth, budget, deadline):
        self.r, self.fmt, self.stage = rounded, rounded.format, stage
        self.check_pair, self.counter, self.prec = check_pair, counter, prec
        self.smooth, self.budget, self.deadline = smooth, budget, deadline
        self.memo = {}
        self.rank = {"(i)": 1, "(ii)": 2, "(iii)": 3, "(iv)": 4}
        self.tried = set()

    def out_of_budget(self, spent) -> bool:
        return (self.counter.intervals + self.counter.points - spent > self.budget
                or time.perf_counter() > self.deadline)

    def ranges(self, lo_i, hi_i, pred):
        """The (s, d) ranges of [lo_i, hi_i] (monotonicity tried when the enclosure does not exclude)."""
        key = (lo_i, hi_i)
        got = self.memo.get(key)
        if got is not None:
            return got
        a, b = value_at(self.fmt, lo_i), value_at(self.fmt, hi_i)
        if lo_i == hi_i:
            got = interval_ranges(self.r, a, b, "p", self.prec, self.counter)
        else:
            got = interval_ranges(self.r, a, b, "e", self.prec, self.counter)
            if self.smooth and pred(*got):
                got = interval_ranges(self.r, a, b, "m", self.prec, self.counter)
        self.memo[key] = got
        return got

    def points(self, roots, pred, spent):
        """Values in the root intervals whose exact ranges satisfy ``pred``, depth first."""
        stack = [(it[0], it[1]) for it in sorted(roots, key=lambda it: it[1] - it[0], reverse=True)]
        while stack:
            if self.out_of_budget(spent):
                return
            lo_i, hi_i = stack.pop()
            s, d = self.ranges(lo_i, hi_i, pred)
            if not pred(s, d):
                continue
            if lo_i == hi_i:
                yield lo_i, s[0]
                continue
            mid = lo_i + (hi_i - lo_i) // 2
            stack.append((mid + 1, hi_i))
            stack.append((lo_i, mid))

    def dive(self, k, P, B):
        fmt, stage = self.fmt, self.stage
        T, lo, hi = stage_bounds(fmt, stage, k)
        spent = self.counter.intervals + self.counter.points
        sideB = _Side([_roles(fmt, stage, k, it[3], it[4])[0] for it in B], lo, hi, stage)

        def pass_ok(s, d):
            r, is_pass, _ = _roles(fmt, stage, k, s, d)
            return is_pass and _compatible(r, sideB, T, lo, hi, stage)
        for i1, s1 in self.points(P, pass_ok, spent):
            if (k, i1) in self.tried:
                continue
            self.tried.add((k, i1))
            side1 = _Side([(s1, s1)], lo, hi, stage)

            def block_ok(s, d):
                r, _, is_block = _roles(fmt, stage, k, s, d)
                return is_block and _compatible(r, side1, T, lo, hi, stage)
            for i0, _ in self.points(B, block_ok, spent):
                d0, d1 = value_at(fmt, i0), value_at(fmt, i1)
                w, fail = self.check_pair(self.r, d0, d1)
                if w is not None or self.rank[fail[0]] > stage:
                    return d0, d1
            if self.out_of_budget(spent):
                self.tried.discard((k, i1))         # cut by the budget: not fully searched
                return None
        return None


def _point_pair(rounded, fmt, stage, k, items, P, B, check_pair):
    """A pair of single values (shrinking from B, pass from P) that passes the exact check of the clauses
    of the stage (``check_pair`` finds no failing clause, or only one after them), or None."""
    T, lo, hi = stage_bounds(fmt, stage, k)
    rank = {"(i)": 1, "(ii)": 2, "(iii)": 3, "(iv)": 4}
    pp = [i for i in P if items[i][2] == "p"]
    bp = [i for i in B if items[i][2] == "p"]
    for i1 in pp:
        s1 = items[i1][3][0]
        for i0 in bp:
            s0 = items[i0][3][0]
            if s0 == s1 or abs(s0 - s1) > T or not (lo <= max(abs(s0), abs(s1)) <= hi):
                continue
            d0, d1 = value_at(fmt, items[i0][0]), value_at(fmt, items[i1][0])
            w, fail = check_pair(rounded, d0, d1)
            if w is not None or rank[fail[0]] > stage:
                return d0, d1
    return None
