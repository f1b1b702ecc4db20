"""Condition 3 from chunk summaries: the chunked exhaustive check (:mod:`conditions.chunked`).

Both routes rest on the set G of magnitudes t > 0 with sigma~ finite and |sigma~| <= 2^e_max at -t and
at t (and at 0).  A chunk holds -t and t together (:mod:`conditions.chunks`), so it knows G on its
magnitude range and keeps it as **runs** of magnitude indices; runs merge by concatenation (adjacent
runs joined).  Exact, associative and commutative; its size is the number of times "bounded at +-t"
switches, a handful for every built-in, and never more than half a chunk's magnitudes.

* Route (a) needs sigma~'(0) (the chunk holding 0 keeps it) and the best zeta in G in the order
  (|floor log2 zeta|, zeta): read off the runs exactly (the least value >= 1 of each run and the least
  value of the highest binade below 1 of each run are the only candidates).
* Route (b) needs the best x (order (|floor log2 |x||, |x|, x < 0)) among even x with sigma~(x),
  sigma~'(x) finite, |sigma~'(x)| >= 2^-M, whose window of reachable s = RN(zeta + |x|) (from |x|, or
  its successor when ulp(|x|) is the smallest subnormal, up to 2|x| or Omega) meets G.  The window
  test needs all of G, so a chunk keeps, per binade and sign of its candidates, their least and
  greatest magnitude: the union of their windows meeting G, or not, rules whole groups out, and the
  least candidate of a group bounds its order from below.  Chunks are evaluated again in the order of
  those bounds until the best x found is below every remaining bound (:func:`query_best_x`; route (b)
  is needed only when route (a) fails, e.g. ReLU, whose sigma~'(0) = 0).  Its zeta is read off G:
  binade by binade from 1 outwards, the least zeta <= |x| with RN(zeta + |x|) in G.
* The counterexample needs counts and the largest |sigma~'|: sums and a maximum.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from condcheck.rounding import round_array

from .condition3 import check_route_a, check_route_b
from .verdict import Verdict, exact_value


def _runs(g: np.ndarray, m0: int) -> np.ndarray:
    """Half-open runs [a, b) of magnitude indices where g (over m0, m0 + 1, ...) holds."""
    e = np.diff(np.concatenate([[0], g.astype(np.int8), [0]]))
    return np.stack([np.flatnonzero(e == 1), np.flatnonzero(e == -1)], axis=1).astype(np.int64) + m0


def merge_runs(*parts) -> np.ndarray:
    r = np.concatenate([p for p in parts if p.size] or [np.zeros((0, 2), np.int64)])
    if not r.size:
        return r.reshape(0, 2)
    r = r[np.argsort(r[:, 0], kind="stable")]
    out = [list(r[0])]
    for a, b in r[1:]:
        if a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return np.array(out, dtype=np.int64)


def _meets(runs: np.ndarray, lo, hi):
    """Does [lo, hi] (inclusive magnitude indices, arrays) meet a run?"""
    lo, hi = np.asarray(lo), np.asarray(hi)
    if not runs.size:
        return np.zeros(lo.shape, dtype=bool)
    j = np.searchsorted(runs[:, 1], lo, "right")            # first run with end > lo
    jj = np.minimum(j, len(runs) - 1)
    return (j < len(runs)) & (runs[jj, 0] <= hi) & (lo <= hi)


def _merge_groups(a, b):
    """Candidate groups of a union: per (binade, sign) the least and greatest magnitude (still bounds)."""
    out = {}
    for e, neg, lo, hi in a + b:
        g = out.get((e, neg))
        out[(e, neg)] = (lo, hi) if g is None else (min(g[0], lo), max(g[1], hi))
    return sorted((e, neg, lo, hi) for (e, neg), (lo, hi) in out.items())


def _binade(a):
    _, e = np.frexp(np.abs(np.asarray(a, dtype=np.float64)))
    return e.astype(np.int64) - 1


class Summary3:
    """G as runs, sigma~ and sigma~' at 0, the route (b) candidate groups, counts."""

    def __init__(self, runs, zero, groups, n_x, n_even_big, max_abs_d):
        self.runs, self.zero, self.groups = runs, zero, groups
        self.n_x, self.n_even_big, self.max_abs_d = n_x, n_even_big, max_abs_d

    @classmethod
    def of_chunk(cls, c) -> "Summary3":
        fmt, P, S, D = c.fmt, c.P, c.S, c.D
        T = 2.0 ** fmt.e_max
        with np.errstate(invalid="ignore"):
            B = np.isfinite(S) & (np.abs(S) <= T)
            bigd = np.isfinite(D) & (np.abs(D) >= 2.0 ** -fmt.M)
        z = 1 if c.lo == 0 else 0
        n = c.n_neg
        ipos, ineg = slice(n + z, P.size), slice(n - 1, None, -1) if n else slice(0, 0)
        runs = _runs(B[ipos] & B[ineg], max(c.lo, 1))
        zero = (bool(B[n]), float(S[n]), float(D[n])) if z else None
        even = (c.m % 2 == 0) & (P != 0)
        xok = even & np.isfinite(S) & bigd
        groups = []
        for sl, neg in ((ipos, False), (ineg, True)):            # each in ascending magnitude
            sel = np.flatnonzero(xok[sl])
            if sel.size:
                e = _binade(P[sl][sel])
                ms = c.m[sl][sel]
                cut = np.flatnonzero(np.diff(e)) + 1
                for a, b in zip(np.r_[0, cut], np.r_[cut, sel.size]):
                    groups.append((int(e[a]), neg, int(ms[a]), int(ms[b - 1])))
        fd = np.isfinite(D)
        return cls(runs, zero, groups, int(xok.sum()), int((even & bigd).sum()),
                   float(np.max(np.abs(D[fd]))) if fd.any() else -np.inf)

    def merge(self, o: "Summary3") -> "Summary3":
        return Summary3(merge_runs(self.runs, o.runs), self.zero or o.zero, _merge_groups(self.groups, o.groups),
                        self.n_x + o.n_x, self.n_even_big + o.n_even_big, max(self.max_abs_d, o.max_abs_d))

    def same(self, o: "Summary3") -> bool:
        return (np.array_equal(self.runs, o.runs) and self.zero == o.zero
                and _merge_groups(self.groups, []) == _merge_groups(o.groups, [])
                and (self.n_x, self.n_even_big, self.max_abs_d) == (o.n_x, o.n_even_big, o.max_abs_d))


# ---- windows, zeta ----------------------------------------------------------------------------------------
def _window(mags, m):
    """The reachable s of x with magnitude index m, as inclusive magnitude indices [lo, hi]."""
    fmt = mags.fmt
    m = np.asarray(m, dtype=np.int64)
    ax = mags.values_of(m)
    lo = m + (ax < 2.0 ** (fmt.e_min + 1))
    two = 2.0 * ax
    hi = np.where(two <= float(fmt.max), mags.index(np.minimum(two, float(fmt.max))), mags.n - 1)
    return lo, hi


def best_zeta(mags, runs: np.ndarray):
    """The least value in the order (|floor log2 t|, t) among the magnitudes in the runs, or None."""
    one = int(mags.index(np.array([1.0]))[0])
    best = None
    for a, b in runs.tolist():
        cands = []
        if b - 1 >= one:
            cands.append(max(a, one))
        if a < one:
            top = min(b - 1, one - 1)
            e = int(_binade(mags.values_of(np.array([top])))[0])
            cands.append(max(a, int(mags.index(np.array([2.0 ** e]))[0])))
        for m in cands:
            v = float(mags.values_of(np.array([m]))[0])
            key = (abs(int(_binade(np.array([v]))[0])), v)
            best = key if best is None or key < best else best
    return None if best is None else best[1]


def zeta_for(mags, runs: np.ndarray, ax: float, batch: int = 1 << 22):
    """The least zeta <= |x| = ax in the order (|floor log2 zeta|, zeta) with RN(zeta + ax) finite and in the
    runs, binade by binade from 1 outwards; None if there is none."""
    fmt = mags.fmt
    lo_b, hi_b = fmt.e_min - fmt.M, int(_binade(np.array([ax]))[0])
    m_x = int(mags.index(np.array([ax]))[0])
    for d in range(0, max(abs(lo_b), abs(hi_b)) + 1):
        for b in sorted({-d, d}):
            if not lo_b <= b <= hi_b:
                continue
            m_a = int(mags.index(np.array([2.0 ** b]))[0])
            m_b = min(int(mags.index(np.array([2.0 ** (b + 1)]))[0]) if b + 1 <= fmt.e_max else mags.n, m_x + 1)
            for a in range(m_a, m_b, batch):
                z = mags.values(a, min(a + batch, m_b))
                s, over = round_array(z + ax, fmt)
                ok = ~over & _meets(runs, mags.index(np.where(over, 0.0, s)), mags.index(np.where(over, 0.0, s)))
                if ok.any():
                    return float(z[np.argmax(ok)])
    return None


# ---- worker-side query ------------------------------------------------------------------------------------
def query_best_x(c, runs: np.ndarray):
    """The best route (b) x of the chunk whose window meets the runs of G: (x, sigma~, sigma~') or None."""
    from .chunks import Magnitudes
    fmt = c.fmt
    with np.errstate(invalid="ignore"):
        xok = ((c.m % 2 == 0) & (c.P != 0) & np.isfinite(c.S) & np.isfinite(c.D)
               & (np.abs(c.D) >= 2.0 ** -fmt.M))
    sel = np.flatnonzero(xok)
    lo, hi = _window(Magnitudes(fmt), c.m[sel])
    sel = sel[_meets(runs, lo, hi)]
    if not sel.size:
        return None
    x = c.P[sel]
    i = sel[np.lexsort((x < 0, np.abs(x), np.abs(_binade(x))))[0]]
    return (float(c.P[i]), float(c.S[i]), float(c.D[i]))


def _group_bound(mags, runs, g):
    e, neg, m_min, m_max = g
    lo, _ = _window(mags, np.array([m_min]))
    _, hi = _window(mags, np.array([m_max]))
    if not _meets(runs, lo, hi)[0]:
        return None
    return (abs(e), float(mags.values_of(np.array([m_min]))[0]), neg)


def decide(sm: Summary3, ctx) -> Verdict:
    """The exhaustive Condition 3 verdict from the merged summary (``ctx``: see conditions.chunked.Context)."""
    fmt, mags, names = ctx.fmt, ctx.mags, ctx.names(3)
    thr = 2.0 ** -fmt.M
    B0, S0, D0 = sm.zero
    d0_over = bool(np.isnan(D0))
    d0_ok = not d0_over and abs(D0) >= thr
    good = sm.runs if B0 else np.zeros((0, 2), np.int64)
    n_good = int((good[:, 1] - good[:, 0]).sum()) if good.size else 0
    head = f"{ctx.head}; {n_good} positive t with sigma~ finite and bounded at -t, 0, t"
    if d0_ok and n_good:
        zeta = best_zeta(mags, good)
        ctx.fetch([-zeta, 0.0, zeta])
        w, fail = check_route_a(ctx.recorded, Fraction(zeta))
        if w is None:
            raise AssertionError(f"internal: chunked route (a) witness zeta={zeta} fails: {fail}")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=ctx.seconds(),
                       evidence=f"{head}; route (a): |sigma~'(0)| = {abs(D0)!r} >= 2^-{fmt.M} and {n_good} admissible "
                                f"zeta", **names)
    x = None
    if n_good and sm.n_x:
        x, queried = _search_x(ctx, good)
    if x is not None:
        zeta = zeta_for(mags, good, abs(x[0]))
        if zeta is None:
            raise AssertionError(f"internal: route (b) x = {x[0]!r} meets G but no zeta reaches it")
        s = float(round_array(np.array([zeta + abs(x[0])]), fmt)[0][0])
        ctx.record([x])
        ctx.fetch([-s, 0.0, s])
        w, fail = check_route_b(ctx.recorded, Fraction(zeta), Fraction(x[0]))
        if w is None:
            raise AssertionError(f"internal: chunked route (b) witness zeta={zeta}, x={x[0]} fails: {fail}")
        why_a = (f"|sigma~'(0)| = {abs(D0) if not d0_over else float('inf')!r} < 2^-{fmt.M}" if not d0_ok
                 else "no zeta with sigma~ bounded at -zeta, 0, zeta")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=ctx.seconds(),
                       evidence=f"{head}; route (a) fails ({why_a}); route (b): {sm.n_x} x candidates (even, "
                                f"|sigma~'(x)| >= 2^-{fmt.M}); the best found in {queried} chunk(s) evaluated again",
                       **names)
    if d0_over:
        fa = "(a) sigma~'(0) overflows"
    elif not d0_ok:
        fa = f"(a) |sigma~'(0)| = {abs(D0)!r} < 2^-{fmt.M}"
    else:
        fa = "(a) no zeta > 0 with sigma~ finite and |sigma~| <= 2^e_max at -zeta, 0, zeta"
    if sm.n_even_big == 0:
        fb = f"(b) no x in F with an even last significand bit and |sigma~'(x)| >= 2^-{fmt.M}"
    elif sm.n_x == 0:
        fb = "(b) sigma~ overflows at every even x with |sigma~'(x)| >= 2^-M"
    else:
        fb = ("(b) for every admissible x, sigma~ is unbounded or overflows at -s, 0 or s for every reachable "
              "s = RN(zeta + |x|)")
    counter = {"sigma'(0)": exact_value(Fraction(D0), fmt) if not d0_over else "overflow",
               "largest_|sigma'|": exact_value(Fraction(sm.max_abs_d), fmt) if np.isfinite(sm.max_abs_d) else None,
               "threshold_2^-M": exact_value(Fraction(2) ** -fmt.M, fmt),
               "x_candidates_route_b": sm.n_x}
    return Verdict(method="exhaustive", holds=False, failing_clause=f"{fa}; {fb}", counterexample=counter,
                   seconds=ctx.seconds(), evidence=f"{head}; route (a) and route (b) both fail over all of F", **names)


def _search_x(ctx, good):
    """Chunks in the order of their lower bounds, evaluated again until no bound is below the best x."""
    mags = ctx.mags
    bounds = []
    for rng, s in ctx.chunk_summaries("c3"):
        bs = [b for g in s.groups if (b := _group_bound(mags, good, g)) is not None]
        if bs:
            bounds.append((min(bs), rng))
    bounds.sort()
    best, best_key, queried = None, None, 0
    for bound, rng in bounds:
        if best_key is not None and bound > best_key:
            break
        got = ctx.query(rng, query_best_x, good)
        queried += 1
        if got is not None:
            key = (abs(int(_binade(np.array([got[0]]))[0])), abs(got[0]), got[0] < 0)
            if best_key is None or key < best_key:
                best, best_key = got, key
    return best, queried
