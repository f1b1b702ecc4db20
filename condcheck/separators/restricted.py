"""The restricted separator search: monotone first-layer separators found without enumerating F x F.

For sorted distinct coordinate values ``vals`` and a gap ``g`` (1 <= g < n: between ``vals[g-1]`` and
``vals[g]``) a *separator* is a neuron n(x) = T(RN(RN(w x) + b)) (w, b values of the format, every
intermediate finite on all of ``vals``) whose values on the *on side* are all strictly above (s = +1) or
all strictly below (s = -1) its values on the *dead side*.  ``up=True``: on side ``vals[g:]``;
``up=False``: on side ``vals[:g]``.  The result per (g, up) is ``(w, b, s, kappa)`` with the meaning of
``exhaustive.choose_steps``: kappa = -(dead-side value nearest the on side) * s, and among the candidates
tried the one with the smallest spread (hi_on - edge) / (lo_on - edge) is kept.

How it scales (theorem5 tries every (w, b) in F x F on every value: 4 * 10^9 pairs for 16-bit formats):

1. Candidates are restricted to w = +-2^k (every power of two of the format whose product with the
   largest |value| stays finite; scaling by 2^k is exact away from underflow) and a few biases.
2. *Global round*: w = +-2^k with b in {0} and a few anchor states of T (the ends of its jumps).  Each
   candidate is evaluated on all values, and prefix/suffix minima and maxima give, for every gap at once,
   whether it separates and its spread (exact for any T).
3. *Targeted rounds* for the gaps still open: per gap, b = RN(z - RN(w x0)) (and its neighbours in F)
   puts the pre-activation of x0 in {a, a'} on an anchor z where T jumps (T(z) != T(next z)), for a few
   k chosen from the magnitudes (the largest admissible w; w x0 ~ z; w (a' - a) ~ a few ulps of z).
   When T (its table on F) is monotone or unimodal, T o P (P(x) = RN(RN(w x) + b) is monotone in x) is
   monotone or unimodal along the sorted values, so four values (first, a, a', last) decide separation
   exactly; these rounds then cost four evaluations per candidate.  Other shapes evaluate the screened
   candidates on all values.
4. Every chosen separator is verified on all values (exact RN arithmetic and the table of T) and its
   s, kappa and spread recomputed from that evaluation.
5. Gaps still open: for formats small enough the full F x F search of theorem5 decides them (a gap is
   reported *inseparable* only then); otherwise they are reported as not found by the restricted search.

Known open gaps: sigmoid on bfloat16 with the box [-2^126, 2^126] (|w| <= ~4 keeps w x finite) leaves the
gaps between values below ~2e-4 in magnitude open: their widths (~2e-6 and less) times |w| stay below the
narrowest jump of sigmoid~ (3e-5, near z = -0.0039).  For one of them (6.69e-31 | 6.87e-31) every admissible
(w, b) in F x F was tried on the two values (outside this module): none tells them apart, so that gap is
inseparable; the others are reported as "not found".

Arithmetic is the exact RN_F arithmetic of ``condcheck.ops`` and T is looked up in the exact table of
the rounded activation; the spread is a float64 score (as in theorem5).
"""
from __future__ import annotations

import numpy as np

from ..ops import add_array, mul_array
from ..rounding import round_down_up
from ..rounded_activation import table_index
from .exhaustive import choose_steps, extremes, separator_table

_SMALL = 2e8                    # |F|^2 * len(vals) of the formats where spreads are optimized by default
_CHUNK_ELEMS = 1 << 20          # elements per (candidates x values) block: ~8 MB per float64 array


# ---- the activation on the format ------------------------------------------------------------------------
class _Act:
    """T on arrays of format values (table lookup), the shape of T and its anchor states."""

    def __init__(self, kit):
        F = self.F = kit.fmt
        tab = kit.R.table()
        self.pts = tab.points
        self.sig = np.where(tab.sigma_overflow, np.nan, tab.sigma)
        self.over = tab.sigma_overflow
        s = np.where(tab.sigma_overflow, np.copysign(np.inf, tab.sigma), tab.sigma)
        self.shape = _shape(s)                       # "valley", "peak" or None (monotone is a valley)
        self.monotone = bool((s[1:] >= s[:-1]).all() or (s[1:] <= s[:-1]).all())
        fin = ~tab.sigma_overflow
        self.tmin = float(np.min(self.sig[fin]))
        self.tmax = float(np.max(self.sig[fin]))
        both = fin[:-1] & fin[1:]
        self.jumps = np.nonzero(both & (self.sig[:-1] != self.sig[1:]))[0]     # i: T(pts[i]) != T(pts[i+1])
        self.p2 = np.array([2.0 ** k for k in range(F.e_min - F.M, F.e_max + 1)])

    def T(self, z):
        """(T(z), overflow) for an array of finite values of F."""
        flat = z.ravel()
        idx = table_index(self.F, self.pts, flat)
        return self.sig[idx].reshape(z.shape), self.over[idx].reshape(z.shape)

    def offset(self, z, offsets):
        """The values k places above (k > 0) or below z in F, for each k of offsets (new last axis)."""
        j = table_index(self.F, self.pts, np.asarray(z, float).ravel()).reshape(np.shape(z))[..., None]
        return self.pts[np.clip(j + np.asarray(offsets), 0, len(self.pts) - 1)]

    def top_weights(self, vmax: float, n: int) -> np.ndarray:
        """The n largest positive values w of F with RN(w vmax) finite."""
        V = self.pts[self.pts > 0]
        _, o = mul_array(V, np.full_like(V, vmax), self.F)
        return V[~o][-n:]

    def anchors(self, level: int) -> np.ndarray:
        """States around the jumps of T: level 0 a few (extreme jumps, the jumps nearest 0, 0),
        level 1 about 24 jumps spread over all of them."""
        J, p = self.jumps, self.pts
        if len(J) == 0:
            return np.array([0.0])
        if level == 0:
            sel = [J[0], J[-1]]
            neg, pos = J[p[J + 1] <= 0], J[p[J] >= 0]
            if len(neg):
                sel.append(neg[-1])
            if len(pos):
                sel.append(pos[0])
            if self.shape is not None:                # the ends of the bottom (top) plateau
                i = int(np.nanargmin(self.sig) if self.shape == "valley" else np.nanargmax(self.sig))
                k = np.searchsorted(J, i)
                sel += [J[max(k - 1, 0)], J[min(k, len(J) - 1)]]
        else:
            sel = J[np.unique(np.linspace(0, len(J) - 1, 24).astype(int))]
        sel = np.asarray(sel)
        return np.unique(np.concatenate([p[sel], p[sel + 1], [0.0]]))


class _SampledAct(_Act):
    """T on formats too large to tabulate (float32, float64): evaluated on demand (certified rounding),
    with anchors from the sampled states of theorem5's ``find_states``.  Its shape is not known, so every
    screened candidate is evaluated on all values (``_targeted`` with shape None): exact, only slower."""

    def __init__(self, kit, states):
        F = self.F = kit.fmt
        self.R = kit.R
        self.pts = states.z
        self.sig = states.t
        self.shape, self.monotone = None, False
        self.jumps = np.nonzero(self.sig[:-1] != self.sig[1:])[0]
        self.p2 = np.array([2.0 ** k for k in range(F.e_min - F.M, F.e_max + 1)])
        # float64: Condition 1's dead tail (T = L for every z <= z_dead, proved by the condition check)
        # answers without a certified evaluation; every other value is certified
        self.dead = (states.z_dead, states.L) if F.p > 24 else None

    def T(self, z):
        if self.dead is None:
            return self.R.value_array(z)
        z = np.asarray(z, float)
        dead = z <= self.dead[0]
        if not dead.any():
            return self.R.value_array(z)
        t = np.full(z.shape, self.dead[1])
        o = np.zeros(z.shape, bool)
        if not dead.all():
            t[~dead], o[~dead] = self.R.value_array(z[~dead])
        return t, o

    def offset(self, z, offsets):
        z = np.asarray(z, float)
        out = []
        for k in np.asarray(offsets).tolist():
            v = z.copy()
            for _ in range(abs(k)):
                v = neighbours(self.F, v, 1 if k > 0 else -1)
            out.append(v)
        return np.stack(out, axis=-1)

    def top_weights(self, vmax: float, n: int) -> np.ndarray:
        F = self.F
        w = np.array([float(round_down_up(min(float(F.max_float) / float(vmax), F.max_float), F)[0])])
        out = []
        while len(out) < n and w[0] > 0:
            _, o = mul_array(w, np.full_like(w, vmax), F)
            if not o[0]:
                out.append(float(w[0]))
            w = neighbours(F, w, -1)
        return np.array(out[::-1])


def neighbours(F, z, direction: int):
    """The neighbour of each value z of F one place up (direction 1) or down (-1); Omega stays Omega."""
    z = np.asarray(z, float)
    a = np.abs(z)
    e = np.frexp(np.where(a == 0, 1.0, a))[1] - 1                  # exact: |z| in [2^e, 2^(e+1))
    u = np.ldexp(1.0, np.maximum(e, F.e_min) - F.M)               # the spacing above |z|
    below = np.where((a == np.ldexp(1.0, e)) & (e > F.e_min), u / 2, u)  # the spacing below |z|
    away = np.sign(z) == direction                                 # moving away from 0
    sub = F.smallest_subnormal
    step = np.where(z == 0, float(sub), np.where(away, u, below))
    r = z + direction * step
    return np.where(np.abs(r) > F.max_float, z, r)


def _shape(s: np.ndarray):
    """'valley' if s is nonincreasing then nondecreasing, 'peak' if the reverse, else None."""
    inc, dec = s[1:] > s[:-1], s[1:] < s[:-1]
    if not (inc | dec | (s[1:] == s[:-1])).all():
        return None
    for name, down, rise in (("valley", dec, inc), ("peak", inc, dec)):
        first_rise = np.argmax(rise) if rise.any() else len(rise)
        if not down[first_rise:].any():
            return name
    return None


# ---- the search state: best candidate per (gap, direction) ------------------------------------------------
class _Best:
    def __init__(self, n):
        m = n - 1
        self.spread = np.full((2, m), np.inf)          # [0]: up=False, [1]: up=True; column g - 1
        self.w = np.zeros((2, m))
        self.b = np.zeros((2, m))

    def offer(self, d, cols, spread, w, b):
        """Keep candidates with a strictly smaller spread (per column; several offers per column allowed)."""
        if len(cols) == 0:
            return
        o = np.lexsort((spread, cols))                 # per column, the smallest spread first
        cols, spread, w, b = cols[o], spread[o], w[o], b[o]
        first = np.ones(len(cols), bool)
        first[1:] = cols[1:] != cols[:-1]
        cols, spread, w, b = cols[first], spread[first], w[first], b[first]
        better = spread < self.spread[d, cols]
        c = cols[better]
        self.spread[d, c], self.w[d, c], self.b[d, c] = spread[better], w[better], b[better]

    def open(self):
        return ~np.isfinite(self.spread)


def _spreads(on_min, on_max, d_min, d_max):
    """(spread, ok) for s = +1 and s = -1 (exhaustive.choose_steps' criterion); spread inf if not ok."""
    out = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for lo_on, hi_on, edge in ((on_min, on_max, d_max), (-on_max, -on_min, -d_min)):
            ok = lo_on > edge
            out.append(np.where(ok, (hi_on - edge) / np.where(ok, lo_on - edge, 1.0), np.inf))
    return out


# ---- full evaluation of candidates on all values ---------------------------------------------------------
def _sequences(act: _Act, vals, W, B):
    """T(RN(RN(w x) + b)) for candidate rows (w, b) on all values; rows with any overflow are NaN."""
    F = act.F
    wx, o1 = mul_array(W[:, None], vals[None, :], F)
    pre, o2 = add_array(wx, np.broadcast_to(B[:, None], wx.shape), F)
    bad = (o1 | o2).any(axis=1)
    pre[bad] = 0.0
    t, o3 = act.T(pre)
    bad |= o3.any(axis=1)
    t[bad] = np.nan
    return t


def _evaluate_all(act: _Act, vals, W, B, best: _Best):
    """Every candidate on every value; offers every (gap, direction) it separates."""
    n = len(vals)
    C = max(1, _CHUNK_ELEMS // n)
    for i in range(0, len(W), C):
        w, b = W[i:i + C], B[i:i + C]
        t = _sequences(act, vals, w, b)
        keep = ~np.isnan(t).any(axis=1)
        t, w, b = t[keep], w[keep], b[keep]
        if len(t) == 0:
            continue
        pmin, pmax = np.minimum.accumulate(t, axis=1), np.maximum.accumulate(t, axis=1)
        smin = np.minimum.accumulate(t[:, ::-1], axis=1)[:, ::-1]
        smax = np.maximum.accumulate(t[:, ::-1], axis=1)[:, ::-1]
        P = (pmin[:, :-1], pmax[:, :-1])               # column g - 1: values[:g]
        S = (smin[:, 1:], smax[:, 1:])                 # column g - 1: values[g:]
        for d, (on, dead) in ((1, (S, P)), (0, (P, S))):
            sp = np.minimum(*_spreads(on[0], on[1], dead[0], dead[1]))
            j = np.argmin(sp, axis=0)
            cols = np.arange(n - 1)
            s = sp[j, cols]
            f = np.isfinite(s)
            best.offer(d, cols[f], s[f], w[j[f]], b[j[f]])


# ---- four-point screening of gap-specific candidates -------------------------------------------------------
def _four_point(act: _Act, vals, g, d, W, B):
    """Spread bound of candidates (rows of W, B: one row per entry (g, d), candidates along axis 1).

    Exact separation test when T is monotone or unimodal (see the module docstring); the spread is exact
    except for the on-side extreme that the bottom (top) of the unimodal T may reach, which is bounded by
    T's extreme value (so the score is an upper bound).  Returns the spread (inf: no separation)."""
    F = act.F
    idx = np.stack([np.zeros_like(g), g - 1, g, np.full_like(g, len(vals) - 1)], axis=1)   # (E, 4)
    X = vals[idx][:, None, :]                                                              # (E, 1, 4)
    wx, o1 = mul_array(W[:, :, None], X, F)
    pre, o2 = add_array(wx, np.broadcast_to(B[:, :, None], wx.shape), F)
    bad = (o1 | o2).any(axis=2)
    pre[bad] = 0.0
    t, o3 = act.T(pre)
    bad |= o3.any(axis=2)
    if act.shape == "peak":
        t = -t
    t0, ta, tb, tn = t[..., 0], t[..., 1], t[..., 2], t[..., 3]
    # the lowest value of T o P on the values: at an end, unless P's range holds T's bottom
    lo_all = np.minimum(t0, tn)
    if act.shape is not None and not act.monotone:
        lo_all = np.minimum(lo_all, -act.tmax if act.shape == "peak" else act.tmin)
    up = (d == 1)[:, None]
    # up: dead = [:g] (ends t0, ta), on = [g:] (ends tb, tn); down: the mirror image
    e_first, e_near, o_near, o_last = (np.where(up, t0, tn), np.where(up, ta, tb),
                                       np.where(up, tb, ta), np.where(up, tn, t0))
    dead_max = np.maximum(e_first, e_near)
    on_max = np.maximum(o_near, o_last)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # s' = +1 (in the orientation of t): the near on value above both dead ends
        ok_p = o_near > dead_max
        sp_p = np.where(ok_p, (on_max - dead_max) / np.where(ok_p, o_near - dead_max, 1.0), np.inf)
        # s' = -1: both on ends below the near dead value
        ok_m = on_max < e_near
        on_min = np.minimum(np.minimum(o_near, o_last), lo_all) if not act.monotone else np.minimum(o_near, o_last)
        sp_m = np.where(ok_m, (e_near - on_min) / np.where(ok_m, e_near - on_max, 1.0), np.inf)
    sp = np.minimum(sp_p, sp_m)
    sp[bad] = np.inf
    return sp


def _per_entry(nz, ntop, noff):
    """Candidates per entry of a targeted round: x0 in {a, a'} x anchors x (18 powers of two + top w's)
    x bias offsets."""
    return 2 * nz * (18 + ntop) * noff


def _exponent(x):
    """floor(log2 |x|) for nonzero x (0 -> a very small exponent)."""
    with np.errstate(divide="ignore"):
        m, e = np.frexp(np.abs(x))
    return np.where(x == 0, -10000, e - 1).astype(np.int64)


def _targeted(act: _Act, vals, best: _Best, anchors, offsets, kmax, kmin, w_top, entries=None):
    """One targeted round for the open entries (see the module docstring)."""
    F = act.F
    dd, cols = np.nonzero(best.open() if entries is None else entries)
    if len(cols) == 0:
        return
    g = cols + 1
    Z = np.asarray(anchors, float)
    ez = _exponent(Z)
    eu = np.maximum(ez - F.M, F.e_min - F.M)                 # exponent of the spacing near z
    offsets = np.asarray(offsets)
    nC = _per_entry(len(Z), len(w_top), len(offsets))
    step = max(1, _CHUNK_ELEMS // (4 * nC))
    for i in range(0, len(g), step):
        sl = slice(i, i + step)
        gs = g[sl]
        X0 = np.stack([vals[gs - 1], vals[gs]], axis=1)                     # (E, 2)
        ex = _exponent(X0)[:, :, None, None]
        ed = _exponent(vals[gs] - vals[gs - 1])[:, None, None, None]
        E = len(gs)
        K = np.empty((E, 2, len(Z), 9), np.int64)
        for m, t in enumerate((0, -1, -2)):
            K[..., m] = kmax + t
        for m, t in enumerate((-1, 0, 1)):
            K[..., 3 + m] = (ez[None, None, :, None] - ex + t)[..., 0]
        for m, t in enumerate((0, 1, 3)):
            K[..., 6 + m] = (eu[None, None, :, None] - ed + t)[..., 0]
        K = np.clip(K, kmin, kmax)
        W = (np.ldexp(1.0, K)[..., None] * np.array([1.0, -1.0])).reshape(E, 2, len(Z), 18)
        W = np.concatenate([W, np.broadcast_to(w_top, (E, 2, len(Z), len(w_top)))], axis=3)
        U, ou = mul_array(W, np.broadcast_to(X0[:, :, None, None], W.shape), F)
        Bz, ob = add_array(np.broadcast_to(Z[None, None, :, None], U.shape), -U, F)
        bad = ou | ob
        Bz[bad] = 0.0
        B = act.offset(Bz, offsets)                                          # (..., nOff)
        W = np.where(bad, 0.0, W)[..., None] * np.ones(len(offsets))
        W, B = W.reshape(E, -1), B.reshape(E, -1)
        sp = _four_point(act, vals, gs, dd[sl], W, B)
        sp[W == 0] = np.inf
        if act.shape is None:
            # screening only: evaluate the best few per entry on all values
            top = np.argsort(sp, axis=1)[:, :4]
            r = np.arange(len(top))[:, None]
            fin = np.isfinite(sp[r, top])
            ww, bb = W[r, top][fin], B[r, top][fin]
            if len(ww):
                uw = np.unique(np.stack([ww, bb], axis=1), axis=0)
                _evaluate_all(act, vals, uw[:, 0], uw[:, 1], best)
            continue
        jb = np.argmin(sp, axis=1)
        r = np.arange(len(jb))
        s = sp[r, jb]
        f = np.isfinite(s)
        for d in (0, 1):
            m = f & (dd[sl] == d)
            best.offer(d, cols[sl][m], s[m], W[r, jb][m], B[r, jb][m])


# ---- verification ------------------------------------------------------------------------------------------
def _verify(act: _Act, vals, best: _Best):
    """Evaluate every chosen (w, b) on all values; (s, kappa, spread) per entry, or None if it fails."""
    dd, cols = np.nonzero(np.isfinite(best.spread))
    W, B = best.w[dd, cols], best.b[dd, cols]
    out = {}
    if len(cols) == 0:
        return out
    pairs, inv = np.unique(np.stack([W, B], axis=1), axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    n = len(vals)
    C = max(1, _CHUNK_ELEMS // n)
    starts = np.searchsorted(inv[order], np.arange(0, len(pairs) + C, C))
    for ci, i in enumerate(range(0, len(pairs), C)):
        t = _sequences(act, vals, pairs[i:i + C, 0], pairs[i:i + C, 1])
        for e in order[starts[ci]:starts[ci + 1]]:
            row = t[inv[e] - i]
            if np.isnan(row).any():
                continue
            g, up = int(cols[e]) + 1, bool(dd[e])
            on, dead = (row[g:], row[:g]) if up else (row[:g], row[g:])
            res = None
            for s, lo_on, hi_on, edge in ((1.0, on.min(), on.max(), dead.max()),
                                          (-1.0, -on.max(), -on.min(), -dead.min())):
                if lo_on > edge:
                    sp = (hi_on - edge) / (lo_on - edge)
                    if res is None or sp < res[0]:
                        res = (sp, s, float(-edge))
            if res is not None:
                out[(g, up)] = (float(W[e]), float(B[e]), res[1], res[2], float(res[0]))
    return out


# ---- the public function -----------------------------------------------------------------------------------
def find_separators(kit, vals, stats: dict | None = None, full_search_limit: float = 2e8,
                    budget: float = 1e7, optimize: bool | None = None, n_top: int = 8, states=None,
                    gaps: tuple[int, int] | None = None):
    """Monotone separators for every gap of the sorted distinct values ``vals`` and both directions.

    Returns {(gap, up): (w, b, s, kappa)} (see the module docstring); entries that are missing were not
    found.  ``stats`` (a dict, optional) receives: ``rounds`` (candidates tried per round),
    ``spread`` {(gap, up): spread}, ``open`` [(gap, up, reason)] with reason ``"inseparable"`` (the full
    F x F search was done and found nothing) or ``"not found"`` (only the restricted search was done), and
    ``full_search`` (whether it ran).  The full search runs for the entries left open when
    |F|^2 * len(vals) <= ``full_search_limit``.  A targeted round is skipped when (open entries) x
    (candidates per entry) exceeds ``budget`` (its entries stay "not found"; ``stats["skipped"]`` names
    the rounds skipped).  ``optimize``: run the first targeted round for every entry too (smaller
    spreads), within the budget; None (default): only when the full search would be affordable too
    (8-bit formats), since it costs a few seconds on 16-bit formats.  ``n_top``: how many of the largest admissible weights (of each sign)
    the targeted rounds try besides the powers of two.  ``states`` (theorem5.States, for formats too
    large to tabulate): T is evaluated on demand and its anchors come from these sampled states.
    ``gaps`` = (lo, hi): a targeted round over the budget for all open entries runs for the open
    entries of gaps lo..hi only (a chunk of a construction needs no others; a whole 16-bit box of
    sigmoid leaves 47,292 entries open after the global round, 3 * 10^7 candidates).  A round within the
    budget runs for every open entry as without ``gaps``, so no choice made without it changes.
    """
    vals = np.asarray(vals, float)
    if vals.ndim != 1 or len(vals) < 2 or (np.diff(vals) <= 0).any():
        raise ValueError("vals must be at least two strictly increasing values")
    act = _Act(kit) if states is None else _SampledAct(kit, states)
    F = act.F
    n = len(vals)
    best = _Best(n)
    rounds = []
    # admissible powers of two: RN(w * max|vals|) finite (RN is monotone)
    vmax = np.max(np.abs(vals))
    _, o = mul_array(act.p2, np.full_like(act.p2, vmax), F)
    ks = np.arange(F.e_min - F.M, F.e_max + 1)[~o]
    kmin, kmax = int(ks.min()), int(ks.max())
    P = np.ldexp(1.0, ks)
    Wg = np.concatenate([P, -P])
    # the largest admissible weights (not only powers of two: their rounding resolves the finest gaps)
    top = act.top_weights(vmax, n_top)
    w_top = np.concatenate([top, -top])

    # global round: +-2^k with b = 0 and the anchor states
    # (kept on the kit: the chunks of one construction ask again, each for its range of gaps)
    def global_round():
        Z0 = act.anchors(0)
        first = _Best(n)
        _evaluate_all(act, vals, np.repeat(Wg, len(Z0)), np.tile(Z0, len(Wg)), first)
        return len(Wg) * len(Z0), first

    tried, first = kit.kept("_separators_global", vals.tobytes(), states, global_round)
    best.spread, best.w, best.b = first.spread.copy(), first.w.copy(), first.b.copy()
    rounds.append(("global", tried, int(best.open().sum())))
    # targeted rounds
    skipped = []
    asked = None
    if gaps is not None:
        asked = np.zeros((2, n - 1), dtype=bool)
        asked[:, max(gaps[0], 1) - 1:min(gaps[1], n - 1)] = True
    for level, offsets in ((0, (0,)), (0, (-1, 1)), (1, (0,)), (1, (-1, 1))):
        n_open = int(best.open().sum())
        if n_open == 0:
            break
        Z = act.anchors(level)
        per = _per_entry(len(Z), len(w_top), len(offsets))
        name = f"targeted level {level} offsets {offsets}"
        entries = None
        if n_open * per > budget and asked is not None:
            # over the budget for every open entry: only the asked ones (where the round would not
            # have run at all without ``gaps``, so every choice made with the whole round is unchanged)
            entries = best.open() & asked
            n_open = int(entries.sum())
            if n_open == 0:
                continue
        cost = n_open * per
        if cost > budget:
            skipped.append((name, cost))
            continue
        _targeted(act, vals, best, Z, offsets, kmax, kmin, w_top, entries=entries)
        rounds.append((name, cost, int(best.open().sum())))
    if optimize is None:
        optimize = F.count_finite() ** 2 * n <= _SMALL
    if optimize:
        # smaller spreads: the first targeted round for every entry (within the budget)
        for level, offsets in ((0, (0,)), (1, (-1, 0, 1))):
            Z = act.anchors(level)
            cost = (n - 1) * 2 * _per_entry(len(Z), len(w_top), len(offsets))
            name = f"optimize level {level} offsets {offsets}"
            if cost <= budget:
                _targeted(act, vals, best, Z, offsets, kmax, kmin, w_top, entries=np.ones_like(best.open()))
                rounds.append((name, cost, int(best.open().sum())))
            else:
                skipped.append((name, cost))
    res = _verify(act, vals, best)
    full = False
    open_entries = [(g, up) for up in (False, True) for g in range(1, n) if (g, up) not in res]
    if open_entries and F.count_finite() ** 2 * n <= full_search_limit:
        full = True
        chosen = choose_steps(extremes(separator_table(kit, vals)), n)
        for g, up in open_entries:
            ch = chosen[(g, up)]
            if ch is not None:
                w, b, s, kappa = ch
                res[(g, up)] = (w, b, s, kappa, np.nan)
    if stats is not None:
        stats["rounds"] = rounds
        stats["spread"] = {k: v[4] for k, v in res.items()}
        stats["full_search"] = full
        stats["skipped"] = skipped
        stats["open"] = [(g, up, "inseparable" if full else "not found")
                         for g, up in open_entries if (g, up) not in res]
    return {k: v[:4] for k, v in res.items()}
