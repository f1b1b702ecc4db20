r"""Condition 2 from chunk summaries: the chunked exhaustive check (:mod:`conditions.chunked`).

Condition 2 is about pairs (delta_0, delta_1) of F x F, and the two points of a pair can lie in any two
chunks.  What the whole-table checker (:func:`conditions.condition2.check_exhaustive`) computes, for
clauses (i)..(s) ("stage s"), is the best admissible pair in the order: largest eta_0 = k - c0, then
smallest |delta_1|, delta_1 positive first, then smallest |delta_0|, delta_0 positive first, where
sigma~'(delta_1) = +-2^k and c0 = ceil(log2 |sigma~'(delta_0)|) (-inf, "unbounded", for sigma~' = 0).

**The compatibility of a pair depends on the two sigma~ values only.**  With T = 2^e_max, admissible
points (sigma~, sigma~' finite, |sigma~| <= T), s1 = sigma~(delta_1), s0 = sigma~(delta_0): the pair is
compatible iff s0 != s1 and |s0 - s1| <= T, and at stage 4 also |s1|, |s0| <= hi_k = 2^(e_max + k)
and max(|s0|, |s1|) >= lo_k = 2^(e_min + k) (eta_1 = -k, eta_2 = k, the weakest admissible choice).
Same-sign pairs (zero counts with either sign) always have |s0 - s1| <= T; opposite-sign pairs need
|s0| + |s1| <= T.  Hence, for sets W (values s1) and V (values s0) in [-T, T]:

  **Lemma.**  A compatible pair of W x V exists iff one exists among the *tops*: the two values closest
  to 0 on each side (two distinct negatives, two distinct positives) and whether 0 is in the set.
  (Same side: if a pair w != v exists, the least value of one set and one of the two least of the
  other differ; zero with a nonzero: take the closest nonzero; opposite sides: the closest to 0 on
  each side minimise |s0| + |s1|.)  Restricting a set to |v| <= hi keeps its tops (filtered), and for
  |s1| < lo_k a partner needs lo_k <= |s0| <= hi_k, never equal to s1, where the value closest to 0
  on each side within [lo_k, oo) decides (the **band** of V at k).

So a chunk keeps, per class c0 (the d0 side: all admissible points), the tops of its sigma~ values and
its bands for every k in [-M, 0]; per k (the d1 side: pass points sigma~' = +-2^k, -M <= k <= 0), the
tops of its sigma~ values and of those with |sigma~| >= lo_k; and the tops of all admissible values
(stage 1).  Tops merge by the tops of the union, bands by the closest of the two: associative,
commutative, a few hundred numbers per chunk.

**Deciding from the merged summary**: the largest eta_0 over compatible pairs is the largest k - c0
over (k, c0) with a compatible pair in W_k x V_c0 (the Lemma), so every stage's existence and its best
eta_0 are exact from the summaries; this decides the verdict and the failing clause.  The witness
needs points, which a summary does not keep: the best delta_1 is the least |delta_1| among pass
points with a compatible partner of class k - eta_0; chunks are magnitude ranges in ascending order,
and the Lemma tells exactly which chunk holds the first such delta_1 (its own W summary against the
merged V), so one chunk is evaluated again to find it (:func:`query_best_d1`); then the first chunk
whose class summary has a partner for that delta_1 holds the best delta_0 (:func:`query_best_d0`).
Two chunk re-evaluations per witness, each must reproduce its chunk's digest.

The summaries hold no list of distinct sigma~' values (the counterexample of (ii) without any pass
state lists them); that rare case makes one more pass over every chunk (:func:`distinct_abs_derivatives`).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ._search import NO_DERIVATIVE_EXPONENT, exact_lower_bound, exact_upper_bound
from .chunks import float_bits
from .condition2 import check_pair, pair_report, stage_text
from .verdict import Verdict, exact_value

NOD = NO_DERIVATIVE_EXPONENT
#: distinct |sigma~'| values kept exactly in the (ii) counterexample; beyond, the count is "more than"
DISTINCT_CAP = 1 << 16


# ---- tops and bands ------------------------------------------------------------------------------------
def tops(v: np.ndarray) -> np.ndarray:
    """[n2, n1, zero, p1, p2]: the two distinct negatives and positives closest to 0 and 0.0 if present
    (NaN where absent); NaNs in ``v`` are ignored."""
    out = np.full(5, np.nan)
    with np.errstate(invalid="ignore"):
        pos, neg = v[v > 0], v[v < 0]
        if pos.size:
            out[3] = p1 = pos.min()
            rest = pos[pos > p1]
            if rest.size:
                out[4] = rest.min()
        if neg.size:
            out[1] = n1 = neg.max()
            rest = neg[neg < n1]
            if rest.size:
                out[0] = rest.max()
        if (v == 0).any():
            out[2] = 0.0
    return out


def bands(v: np.ndarray, fmt) -> np.ndarray:
    """(M + 1, 2) array: for k = -M .. 0, the largest value <= -lo_k and the least >= lo_k (NaN: none)."""
    lo = np.ldexp(1.0, fmt.e_min + np.arange(-fmt.M, 1))
    small = 2.0 ** fmt.e_min                                  # lo_0, the largest threshold
    out = np.full((fmt.M + 1, 2), np.nan)
    for col, a in ((1, v[v > 0]), (0, -v[v < 0])):
        if not a.size:
            continue
        big = a[a >= small]
        b = big.min() if big.size else np.nan
        tiny = np.unique(a[a < small])
        j = np.searchsorted(tiny, lo, "left")
        got = np.where(j < tiny.size, tiny[np.minimum(j, max(tiny.size - 1, 0))] if tiny.size else np.nan, b)
        out[:, col] = got if col == 1 else -got
    return out


def _merge_tops(a, b):
    return tops(np.concatenate([a, b]))


def _merge_bands(a, b):
    return np.stack([np.fmax(a[:, 0], b[:, 0]), np.fmin(a[:, 1], b[:, 1])], axis=1)


def _cands(top):
    return [float(v) for v in top if not np.isnan(v)]


def _pair_exists(ws, vs, T: Fraction) -> bool:
    return any(v != w and abs(Fraction(v) - Fraction(w)) <= T for w in ws for v in vs)


# ---- per-chunk arrays and the summary ------------------------------------------------------------------
def _arrays(c, fmt):
    """Admissible points of a chunk: their indices, sigma~, sigma~', class c0, pass mask, k."""
    T = 2.0 ** fmt.e_max
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(c.S) & np.isfinite(c.D) & (np.abs(c.S) <= T)
    iv = np.flatnonzero(valid)
    Sv, Dv = c.S[iv], c.D[iv]
    kk, p2 = float_bits(Dv)                                   # |D| = 2^kk when p2 (D != 0)
    nz = Dv != 0
    cv = np.where(nz, kk + ~p2, NOD)                          # ceil(log2 |D|)
    passm = nz & p2 & (kk >= -fmt.M) & (kk <= 0)
    return iv, Sv, Dv, cv, passm, kk


def _groups(keys: np.ndarray, few: int = 16):
    """(key, indices) for each distinct key, ascending (keys: integers, NO_DERIVATIVE_EXPONENT allowed)."""
    if not keys.size:
        return []
    nod = keys == NOD
    rest = keys[~nod]
    present = [NOD] if nod.any() else []
    if rest.size:
        off = int(rest.min())
        span = int(rest.max()) - off + 1
        if span <= 1 << 16:
            present += (np.flatnonzero(np.bincount(rest - off, minlength=span)) + off).tolist()
        else:
            present += np.unique(rest).tolist()
    if len(present) <= few:
        return [(int(k), np.flatnonzero(keys == k)) for k in present]
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    cut = np.flatnonzero(np.diff(sk)) + 1
    return [(int(sk[a]), order[a:b]) for a, b in zip(np.r_[0, cut], np.r_[cut, sk.size])]


class Summary2:
    """Per class c0: (tops, bands) of sigma~ (the d0 side); per k: (tops, tops of |sigma~| >= lo_k) of the
    pass points (the d1 side); the tops of all admissible values; counts."""

    def __init__(self, V, W, W_all, n_valid, n_pass):
        self.V, self.W, self.W_all, self.n_valid, self.n_pass = V, W, W_all, n_valid, n_pass

    @classmethod
    def of_chunk(cls, c) -> "Summary2":
        fmt = c.fmt
        iv, Sv, Dv, cv, passm, kk = _arrays(c, fmt)
        V = {cl: (tops(Sv[ix]), bands(Sv[ix], fmt)) for cl, ix in _groups(cv)}
        W = {}
        Sp, kp = Sv[passm], kk[passm]
        for k, ix in _groups(kp):
            w = Sp[ix]
            W[k] = (tops(w), tops(w[np.abs(w) >= 2.0 ** (fmt.e_min + k)]))
        return cls(V, W, tops(Sv), int(iv.size), int(passm.sum()))

    def merge(self, o: "Summary2") -> "Summary2":
        V = dict(self.V)
        for cl, (t, b) in o.V.items():
            V[cl] = (_merge_tops(V[cl][0], t), _merge_bands(V[cl][1], b)) if cl in V else (t, b)
        W = dict(self.W)
        for k, (t, h) in o.W.items():
            W[k] = (_merge_tops(W[k][0], t), _merge_tops(W[k][1], h)) if k in W else (t, h)
        return Summary2(V, W, _merge_tops(self.W_all, o.W_all), self.n_valid + o.n_valid, self.n_pass + o.n_pass)

    def same(self, o: "Summary2") -> bool:
        """Equal as summaries (NaN == NaN); for the merge-order tests."""
        eq = lambda a, b: np.array_equal(a, b, equal_nan=True)          # noqa: E731
        return (self.V.keys() == o.V.keys() and self.W.keys() == o.W.keys() and eq(self.W_all, o.W_all)
                and all(eq(self.V[c][0], o.V[c][0]) and eq(self.V[c][1], o.V[c][1]) for c in self.V)
                and all(eq(self.W[k][0], o.W[k][0]) and eq(self.W[k][1], o.W[k][1]) for k in self.W)
                and (self.n_valid, self.n_pass) == (o.n_valid, o.n_pass))


# ---- compatibility -------------------------------------------------------------------------------------
def _stage_ks(W, stage, fmt):
    ks = sorted(W)
    if stage >= 3:
        ks = [k for k in ks if -k <= fmt.e_max and k <= -fmt.e_min + fmt.M]
    return ks


def exists(Wk, Vc, stage: int, k: int, fmt) -> bool:
    """A compatible pair in (pass points of class k, or all admissible points at stage 1) x (class c0),
    from their summaries (the Lemma): ``Wk`` = (tops, high tops), ``Vc`` = (tops, bands)."""
    T = Fraction(2) ** fmt.e_max
    if stage < 4:
        return _pair_exists(_cands(Wk[0]), _cands(Vc[0]), T)
    hi, lo = 2.0 ** (fmt.e_max + k), 2.0 ** (fmt.e_min + k)
    if _pair_exists([w for w in _cands(Wk[1]) if abs(w) <= hi], [v for v in _cands(Vc[0]) if abs(v) <= hi], T):
        return True
    band = [v for v in _cands(Vc[1][k + fmt.M]) if abs(v) <= hi]
    return _pair_exists([w for w in _cands(Wk[0]) if abs(w) < lo], band, T)


def compatible(s1: np.ndarray, Vc, stage: int, k: int, fmt) -> np.ndarray:
    """For each delta_1 value s1 (pass exponent k; any k at stages 1-3), whether class summary ``Vc`` =
    (tops, bands or None) holds a compatible partner (the Lemma with W = {s1})."""
    s1 = np.asarray(s1, dtype=np.float64)
    T = 2.0 ** fmt.e_max
    lb, ub = exact_lower_bound(s1, -T), exact_upper_bound(s1, T)

    def any_of(vs):
        ok = np.zeros(s1.shape, dtype=bool)
        for v in vs:
            ok |= (v != s1) & (v >= lb) & (v <= ub)
        return ok
    if stage < 4:
        return any_of(_cands(Vc[0]))
    hi, lo = 2.0 ** (fmt.e_max + k), 2.0 ** (fmt.e_min + k)
    a = np.abs(s1)
    high = any_of([v for v in _cands(Vc[0]) if abs(v) <= hi])
    low = any_of([v for v in _cands(Vc[1][k + fmt.M]) if abs(v) <= hi])
    return (a <= hi) & np.where(a >= lo, high, low)


def _class_for(k: int, eta):
    return NOD if eta == math.inf else k - eta


def best_eta(sm: Summary2, stage: int, fmt):
    """The largest eta_0 = k - c0 over compatible pairs at stage >= 2 (math.inf: unbounded), or None."""
    best = None
    classes = sorted(sm.V)
    for k in _stage_ks(sm.W, stage, fmt):
        for cl in classes:
            if exists(sm.W[k], sm.V[cl], stage, k, fmt):
                eta = math.inf if cl == NOD else k - cl
                best = eta if best is None else max(best, eta)
                break
    return best


def _union_V(sm):
    t = np.full(5, np.nan)
    for top, _ in sm.V.values():
        t = _merge_tops(t, top)
    return (t, None)


# ---- worker-side queries (one chunk evaluated again) ----------------------------------------------------
def _first_by_magnitude(P, sel):
    if not sel.size:
        return None
    x = P[sel]
    return int(sel[np.lexsort((x < 0, np.abs(x)))[0]])


def query_best_d1(c, stage: int, partners: dict):
    """The best delta_1 of the chunk: least |x| (positive first) among its candidates with a compatible
    partner in ``partners`` ({k: class summary}, or {None: the union} at stage 1).  (x, s, d, k) or None."""
    fmt = c.fmt
    iv, Sv, Dv, cv, passm, kk = _arrays(c, fmt)
    ok = np.zeros(iv.size, dtype=bool)
    if stage == 1:
        ok = compatible(Sv, partners[None], 1, 0, fmt)
    else:
        ip = np.flatnonzero(passm)
        for k, ix in _groups(kk[ip]):
            if k in partners and (stage < 3 or (-k <= fmt.e_max and k <= -fmt.e_min + fmt.M)):
                ok[ip[ix]] = compatible(Sv[ip[ix]], partners[k], stage, k, fmt)
    i = _first_by_magnitude(c.P[iv], np.flatnonzero(ok))
    if i is None:
        return None
    j = iv[i]
    return (float(c.P[j]), float(c.S[j]), float(c.D[j]), int(kk[i]))


def query_best_d0(c, stage: int, d1, cls: int):
    """The best delta_0 of class ``cls`` in the chunk for delta_1 = (x, s, d, k): least |x|, positive first."""
    fmt = c.fmt
    iv, Sv, Dv, cv, passm, kk = _arrays(c, fmt)
    s1, k1 = d1[1], d1[3]
    T = 2.0 ** fmt.e_max
    lb = exact_lower_bound(np.array([s1]), -T)[0]
    ub = exact_upper_bound(np.array([s1]), T)[0]
    ok = (cv == cls) & (Sv != s1) & (Sv >= lb) & (Sv <= ub)
    if stage >= 4:
        hi, lo = 2.0 ** (fmt.e_max + k1), 2.0 ** (fmt.e_min + k1)
        ok &= np.abs(Sv) <= hi
        if abs(s1) < lo:
            ok &= np.abs(Sv) >= lo
    i = _first_by_magnitude(c.P[iv], np.flatnonzero(ok))
    if i is None:
        return None
    j = iv[i]
    return (float(c.P[j]), float(c.S[j]), float(c.D[j]))


def distinct_abs_derivatives(c):
    """Sorted distinct |sigma~'| over the chunk's admissible points (at most DISTINCT_CAP, then flagged)."""
    iv, Sv, Dv, *_ = _arrays(c, c.fmt)
    u = np.unique(np.abs(Dv))
    return (u[:8], False, 0) if u.size > DISTINCT_CAP else (u, True, int(u.size))


# ---- the search for the best pair of a stage --------------------------------------------------------------
def search(ctx, sm: Summary2, stage: int, need_eta: bool = True):
    """The whole-table checker's best pair of clauses (i)..(stage): {"d0", "d1", "eta"} or None."""
    fmt = ctx.fmt
    chunks = ctx.chunk_summaries("c2")
    if stage == 1:
        union = _union_V(sm)
        if not _pair_exists(_cands(sm.W_all), _cands(union[0]), Fraction(2) ** fmt.e_max):
            return None
        eta = 0
        partners = {None: union}
        rng = next(r for r, s in chunks if _pair_exists(_cands(s.W_all), _cands(union[0]), Fraction(2) ** fmt.e_max))
    else:
        eta = best_eta(sm, stage, fmt)
        if eta is None or (need_eta and eta < 1):
            return None
        partners = {k: sm.V[_class_for(k, eta)] for k in _stage_ks(sm.W, stage, fmt) if _class_for(k, eta) in sm.V}
        rng = next(r for r, s in chunks if any(exists(s.W[k], partners[k], stage, k, fmt)
                                               for k in _stage_ks(s.W, stage, fmt) if k in partners))
    d1 = ctx.query(rng, query_best_d1, stage, partners)
    if d1 is None:
        raise AssertionError(f"internal: chunk {rng} has a delta_1 by its summary but not when evaluated again")
    if stage == 1:
        cls = next(cl for cl in sorted(sm.V) if compatible([d1[1]], sm.V[cl], 1, 0, fmt)[0])
    else:
        cls = _class_for(d1[3], eta)
    rng0 = next(r for r, s in chunks if cls in s.V and compatible([d1[1]], s.V[cls], stage, d1[3], fmt)[0])
    d0 = ctx.query(rng0, query_best_d0, stage, d1, cls)
    if d0 is None:
        raise AssertionError(f"internal: chunk {rng0} has a delta_0 by its summary but not when evaluated again")
    ctx.record([d0, d1[:3]])
    return {"d0": d0, "d1": d1, "eta": eta}


def _pair_dict(fmt, best) -> dict:
    (x0, s0, g0), (x1, s1, g1) = best["d0"], best["d1"][:3]
    q = Fraction
    return pair_report(fmt, q(x0), q(x1), q(s0), q(s1), q(g0), q(g1))


def decide(sm: Summary2, ctx) -> Verdict:
    """The exhaustive Condition 2 verdict from the merged summary (``ctx``: see conditions.chunked.Context)."""
    fmt, names = ctx.fmt, ctx.names(2)
    head = (f"{ctx.head}; {sm.n_valid} admissible points (sigma~, sigma~' finite, |sigma~| <= 2^{fmt.e_max}); "
            f"{sm.n_pass} pass candidates delta_1 (sigma~' = +-2^k, -{fmt.M} <= k <= 0); per chunk the tops of sigma~ "
            f"per class of sigma~' (conditions.condition2_chunks), the best pair from two chunks evaluated again")
    best = search(ctx, sm, 4)
    if best is not None:
        q = Fraction
        w, fail = check_pair(ctx.recorded, q(best["d0"][0]), q(best["d1"][0]))
        if w is None:
            raise AssertionError(f"internal: chunked witness {best} fails the exact re-check: {fail}")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=ctx.seconds(),
                       evidence=f"{head}; eta_0 = {w.eta_0_text()} is the largest over all pairs", **names)
    failing = next(st for st in (1, 2, 3, 4) if not _stage_exists(sm, st, fmt))
    if failing == 1:
        vals = sorted(set(_cands(sm.W_all)))
        if len(vals) > 2:
            raise AssertionError("internal: clause (i) fails although sigma~ takes three admissible values")
        if sm.n_valid == 0:
            text = f"(i) no point where sigma~ and sigma~' are finite and |sigma~| <= 2^{fmt.e_max}"
        else:
            text = (f"(i) no delta_0, delta_1 with sigma~(delta_0) != sigma~(delta_1) and "
                    f"|sigma~(delta_0) - sigma~(delta_1)| <= 2^{fmt.e_max} (sigma~ takes {len(vals)} distinct "
                    f"admissible value(s))")
        counter = {"distinct_sigma_values": [exact_value(Fraction(v), fmt) for v in vals[:8]], "count": len(vals)}
    elif failing == 2 and sm.n_pass == 0:
        text = f"(ii) no delta_1 with sigma~'(delta_1) a power of two in [2^-{fmt.M}, 1]"
        u, exact, count = ctx.distinct_abs_derivatives()
        counter = {"best_pair_for_(i)": _pair_dict(fmt, search(ctx, sm, 1)),
                   "distinct_|sigma'|_values": [exact_value(Fraction(float(v)), fmt) for v in u[:8]],
                   "count": count if exact else f"more than {DISTINCT_CAP}"}
    elif failing == 2:
        text = stage_text(fmt, 2)
        b = search(ctx, sm, 2, need_eta=False)
        counter = {"best_pair": _pair_dict(fmt, b), "largest_eta_0": int(b["eta"])}
    elif failing == 3:
        text = stage_text(fmt, 3)
        counter = {"best_pair_for_(i)-(ii)": _pair_dict(fmt, search(ctx, sm, 2))}
    else:
        text = stage_text(fmt, 4)
        prev = search(ctx, sm, 3)
        counter = {"best_pair_for_(i)-(iii)": _pair_dict(fmt, prev)}
        _, detail = check_pair(ctx.recorded, Fraction(prev["d0"][0]), Fraction(prev["d1"][0]))
        counter["why"] = detail[1] if detail else None
    clause = {1: "(i)", 2: "(ii)", 3: "(iii)", 4: "(iv)"}[failing]
    return Verdict(method="exhaustive", holds=False, failing_clause=text, counterexample=counter,
                   seconds=ctx.seconds(), evidence=f"{head}; no pair satisfies (i)-(iv) (first failing clause {clause})",
                   **names)


def _stage_exists(sm: Summary2, stage: int, fmt) -> bool:
    if stage == 1:
        return _pair_exists(_cands(sm.W_all), _cands(_union_V(sm)[0]), Fraction(2) ** fmt.e_max)
    eta = best_eta(sm, stage, fmt)
    return eta is not None and eta >= 1


def merge_distinct(a, b):
    """Merge two (sorted distinct |sigma~'| values, exact?, count) results."""
    u = np.union1d(a[0], b[0])
    if a[1] and b[1] and u.size <= DISTINCT_CAP:
        return (u, True, int(u.size))
    return (u[:8], False, 0)
