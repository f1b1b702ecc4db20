"""Chains of rounded products, the backward pass of Theorem 7's networks at a fixed point: the exact
primitives on arrays (every y at once), the threshold and saturation searches of relu's construction
and of the generic one (composite steps u -> RN(RN(u w) d)), the paired indicator terms of a table, and
``Chains``, one activation's chains built and checked (docs/theorem7.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..constructors.errors import ConstructionError
from ..formats import Format, get_format
from ..ops import add_array, mul_array, mul_float


def rn_mul(a, w, fmt: Format) -> np.ndarray:
    """RN_F(a * w) elementwise; +-inf where it overflows (never silently), NaN for inf * 0."""
    a, w = np.broadcast_arrays(np.asarray(a, float), np.asarray(w, float))
    with np.errstate(invalid="ignore", over="ignore"):
        r, over = mul_array(a, w, fmt)
        return np.where(over, np.copysign(np.inf, a * w), r)


def rn_add(a, b, fmt: Format) -> np.ndarray:
    r, over = add_array(np.asarray(a, float), np.asarray(b, float), fmt)
    return np.where(over, np.inf, r)


def chain(y, weights, fmt: Format) -> np.ndarray:
    """The backward value of a chain of relays: RN(...RN(RN(y w_1) w_2)... w_k) for every y."""
    u = np.asarray(y, float)
    for w in weights:
        u = rn_mul(u, w, fmt)
    return u


def underflow_threshold(y, k: int, fmt: Format) -> np.ndarray:
    """RN(RN(y 2^-k) 2^k): y rounded to the grid s 2^k where y 2^-k falls in the subnormal range."""
    return chain(y, [2.0 ** -k, 2.0 ** k], fmt)


def subnormal_quantizer(y, c: float, fmt: Format) -> np.ndarray:
    """RN(y c) where |y c| < 2^(e_min+1): s * round_half_even(y c / s)."""
    return chain(y, [c], fmt)


def positive_values(fmt: Format) -> np.ndarray:
    v = fmt.values()
    return v[v > 0]


def compression_weight(fmt: Format) -> float:
    """h = the smallest value above 1/2: RN(s h) = s and RN(u h) < u for every u >= 2s."""
    h = float(fmt.next_up(0.5)) if fmt.contains(0.5) else None
    if h is None or not h < 1:
        raise ConstructionError(f"{fmt.name} has no value strictly between 1/2 and 1, so a single product cannot "
                                f"compress the backward range while keeping the smallest subnormal "
                                f"(saturation step); this format is not supported")
    return h


def saturation_length(u_max: float, fmt: Format) -> int:
    """Number of products by h that take every value in (0, u_max] to s (the smallest subnormal)."""
    h, s = compression_weight(fmt), float(fmt.smallest_subnormal)
    pos = positive_values(fmt)
    u = pos[pos <= u_max]
    n = 0
    while u.size and u.max() > s:
        u = rn_mul(u, h, fmt)
        n += 1
        if n > 4 * (fmt.e_max - fmt.e_min + fmt.M + 4):
            raise ConstructionError("the compression chain does not converge")   # pragma: no cover
    if u.size and not (u == s).all():
        raise ConstructionError("the compression chain sends a nonzero value to zero")  # pragma: no cover
    return n


def saturating_indicator(y, prefix, n_comp: int, fmt: Format) -> np.ndarray:
    """sign(y) s [|y| >= t] when prefix has threshold t and n_comp is long enough (checked by callers)."""
    return chain(y, list(prefix) + [compression_weight(fmt)] * n_comp, fmt)


@lru_cache(maxsize=None)
def _threshold_prefixes_cached(name: str, max_len: int, wide: bool) -> tuple:
    fmt = get_format(name)
    pos = positive_values(fmt)
    mults = pos if wide else pos[pos <= 1]
    return tuple(sorted(_chain_bfs(fmt, pos, mults, 1.0, max_len).items()))


def _chain_bfs(fmt: Format, pos: np.ndarray, mults: np.ndarray, d: float, max_len: int) -> dict[int, tuple]:
    """Breadth-first over chains of steps u -> RN(RN(u w) d) (w in mults) applied to every y in pos:
    {index i: the shortest chain found whose image is nonzero exactly from pos[i] on} (i = 0: the empty
    chain, nonzero iff y != 0).  Rows already seen are not expanded again."""
    n = len(pos)
    found: dict[int, tuple] = {0: ()}
    frontier = {pos.tobytes(): (pos, ())}
    seen = set(frontier)
    for _ in range(max_len):
        if len(found) == n or not frontier:
            break
        states = np.stack([v[0] for v in frontier.values()])
        chains = [v[1] for v in frontier.values()]
        P = rn_mul(states[:, None, :], mults[None, :, None], fmt)       # (state, multiplier, y)
        if d != 1.0:
            P = rn_mul(P, d, fmt)
        ok = np.isfinite(P).all(axis=2) & (P != 0).any(axis=2)
        new = {}
        for a, b in zip(*np.nonzero(ok)):
            row = P[a, b]
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            ch = chains[a] + (float(mults[b]),)
            new[key] = (row, ch)
            i = int(np.argmax(row != 0))
            if i not in found or len(ch) < len(found[i]):
                found[i] = ch
        frontier = new
    return found


def threshold_prefixes(fmt, max_len: int = 4) -> dict[float, tuple]:
    """For every positive value t reachable: a chain of weights whose product chain is nonzero iff |y| >= t.

    Breadth-first over chains of weights in (0, 1] (then any weight, without overflow, for the thresholds
    still missing), deduplicated by the chain's values on every positive y.
    """
    fmt = get_format(fmt)
    pos = positive_values(fmt)
    found = dict(_threshold_prefixes_cached(fmt.name, max_len, False))
    if len(found) < len(pos):
        for i, ch in _threshold_prefixes_cached(fmt.name, max_len, True):
            found.setdefault(i, ch)
    return {float(pos[i]): ch for i, ch in found.items()}


def step_chain(y, steps, fmt: Format) -> np.ndarray:
    """Backward value through composite steps (w, d): u -> RN(RN(u w) d), then a final weight if a float."""
    u = np.asarray(y, float)
    for st in steps:
        if isinstance(st, tuple):
            w, d = st
            u = rn_mul(u, w, fmt)
            if d != 1.0:
                u = rn_mul(u, d, fmt)
        else:
            u = rn_mul(u, st, fmt)
    return u


def step_chain_scalar(y: float, steps, fmt: Format) -> float:
    """``step_chain`` for one value with the scalar fast path; inf where a product overflows."""
    u = float(y)
    for st in steps:
        for w in (st if isinstance(st, tuple) else (st,)):
            if w == 1.0:
                continue
            u = mul_float(u, w, fmt)
            if u is None:
                return math.inf
    return u


@lru_cache(maxsize=None)
def _generic_prefixes_cached(name: str, d: float, ymax: float, max_len: int, wide: bool) -> tuple:
    """Breadth-first over chains of composite steps u -> RN(RN(u w) d), on the positive y <= ymax."""
    fmt = get_format(name)
    allpos = positive_values(fmt)
    pos = allpos[allpos <= ymax]
    mults = allpos if wide else allpos[allpos <= 1.0 / d]
    found = _chain_bfs(fmt, pos, mults, d, max_len)
    return tuple((float(pos[i]), ch) for i, ch in sorted(found.items()))


def generic_threshold_prefixes(fmt, d: float, ymax: float, max_len: int = 4) -> dict:
    """For every positive t <= ymax reachable: weights (w_1, ..., w_r) whose composite chain (each
    step RN(RN(u w_i) d)) is nonzero exactly for |y| >= t (on |y| <= ymax).  d = 1: ``threshold_prefixes``."""
    fmt = get_format(fmt)
    found = dict(_generic_prefixes_cached(fmt.name, float(d), float(ymax), max_len, False))
    pos = positive_values(fmt)
    if len(found) < int((pos <= ymax).sum()):
        for t, ch in _generic_prefixes_cached(fmt.name, float(d), float(ymax), max_len, True):
            found.setdefault(t, ch)
    return found


@lru_cache(maxsize=None)
def generic_compression(name: str, d: float, u_max: float) -> tuple:
    """(weights, c): composite steps u -> RN(RN(u w_i) d) that take every value of (0, u_max] to one
    value c > 0.  First one weight repeated (the fewest steps, then the smallest c; for d = 1 this is
    ``compression_weight`` with c = s); where no single weight saturates (d = 1/4 on float8_e4m3: the
    integer map k -> RN(RN(k w s)/4)/s has no weight fixing 1 and lowering 2), a beam search over
    sequences of weights, keeping the images with the fewest distinct values."""
    F = get_format(name)
    pos = positive_values(F)
    u0 = pos[pos <= u_max]
    if not u0.size:
        return (), float(F.smallest_subnormal)
    cap = 4 * (F.e_max - F.e_min + F.M + 4)
    best = None
    for w in pos.tolist():
        u = u0
        for n in range(1, cap + 1):
            u = step_chain(u, [(w, d)], F)
            if not np.isfinite(u).all() or (u == 0).any():
                break
            if (u == u[0]).all():
                c = float(u[0])
                if step_chain(np.array([c]), [(w, d)], F)[0] == c and (best is None or (n, c) < (best[1], best[2])):
                    best = (w, n, c)
                break
            if best is not None and n >= best[1]:
                break
    if best is not None:
        return (best[0],) * best[1], best[2]
    beam = [(np.unique(u0), ())]
    seen = {np.unique(u0).tobytes()}
    for _ in range(cap):
        cand = []
        for u, ws in beam:
            P = rn_mul(u[None, :], pos[:, None], F)
            if d != 1.0:
                P = rn_mul(P, d, F)
            ok = np.isfinite(P).all(axis=1) & (P != 0).all(axis=1)
            for i in np.flatnonzero(ok):
                v = np.unique(P[i])
                key = v.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                if len(v) == 1:
                    return ws + (float(pos[i]),), float(v[0])
                cand.append((len(v), float(v.max()), v, ws + (float(pos[i]),)))
        if not cand:
            break
        cand.sort(key=lambda r: (r[0], r[1]))
        beam = [(v, ws) for _, _, v, ws in cand[:64]]
    raise ConstructionError(f"{F.name}: no sequence of weights w makes u -> RN(RN(u w) {d!r}) saturate every value "
                            f"up to {u_max!r} at one nonzero value")


@dataclass
class Term:
    sign: float                   # +1 or -1: which member of a pair
    d: float                      # the coefficient (a value of the format)
    threshold: float
    weights: list = field(default_factory=list)    # input -> output: w_1 (input weight), ..., w_L (output)
    biases: list = field(default_factory=list)     # hidden layers 1..L-1


def point_terms(F: Format, Y: np.ndarray, Grow: np.ndarray, prefixes: dict) -> list:
    """The paired saturating-indicator terms of one point's odd table (docs/theorem7.md, "Point indicators
    and the table")."""
    pos = positive_values(F)
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    vs = pos[pos <= ymax]
    table = {}
    for y, g in zip(Y.tolist(), Grow.tolist()):
        if y > 0:
            table[y] = g
        elif y < 0:
            table[-y] = -g
    terms = []
    for k, v in enumerate(vs.tolist()):
        d = table.get(v, 0.0)
        if d == 0:
            continue
        upper = float(vs[k + 1]) if k + 1 < len(vs) else None
        for sign, t in ((1.0, v), (-1.0, upper)):
            if t is None:
                continue
            if t not in prefixes:
                raise ConstructionError(f"no chain of products has threshold {t!r} in {F.name} (needed for the "
                                        f"point indicator of |y| = {v!r})")
            terms.append(Term(sign, d, t))
    return terms


class Chains:
    """Composite-step chains of one activation: thresholds, saturation, amplification (docs/theorem7.md)."""

    def __init__(self, act: "ActivationTable", ymax: float):
        self.act, self.F, self.d = act, act.F, act.d
        self.ymax = ymax
        self.g = int(round(-math.log2(self.d)))
        self.prefixes = generic_threshold_prefixes(self.F, self.d, ymax) if ymax > 0 else {}
        self.ident = 1.0 / self.d                        # RN(RN(u / d) d) = u while |u / d| <= Omega
        self._checked = set()                            # chains already checked on every y
        self._amp, self._built, self._tails = {}, {}, {}   # caches of amplify, build, the relay tails
        self._steps = {}                                    # (input on, input off, weight) -> relay_bias
        self._pending = []                                  # built chains not yet checked (check_built)

    def lengths(self, terms):
        """(R, compression weights, c): the longest threshold prefix, and the saturation of its outputs."""
        F, d = self.F, self.d
        R = max([len(self.prefixes[t.threshold]) for t in terms] + [1])
        top = 0.0
        for th in {t.threshold for t in terms}:
            top = max(top, abs(step_chain(np.array([self.ymax]), [(w, d) for w in self.prefixes[th]], F)[0]))
        comp, c = generic_compression(F.name, d, float(top)) if top > 0 else ((), float(F.smallest_subnormal))
        return R, list(comp), c

    def amplify(self, tau: float, c: float, a_on: float, a_off=None):
        """(w_1, amps, biases, z_on list, z_off list): the input weight w_1 > 0 and the amplification relays
        (forward order) with RN(...RN(RN(c 2^k_A) d)... 2^k_1) d) w_1) = |tau| exactly; the largest
        amplification first (|w_1| in [1, 2) when c is the smallest subnormal).  Cached: a box has
        tens of thousands of chains but few distinct (|tau|, gate value) pairs."""
        key = (abs(float(tau)), float(c), float(a_on), None if a_off is None else float(a_off))
        if key not in self._amp:
            try:
                self._amp[key] = self._amplify(tau, c, a_on, a_off)
            except ConstructionError as e:
                self._amp[key] = e
        r = self._amp[key]
        if isinstance(r, ConstructionError):
            raise r
        return r

    def _amplify(self, tau: float, c: float, a_on: float, a_off=None):
        F, d, act = self.F, self.d, self.act
        Kmax = int(math.floor(math.log2(abs(tau) / c))) if tau else 0
        err = None
        for K in range(Kmax, -1, -1):
            m = abs(tau) / (c * 2.0 ** K)
            if not F.contains(m):
                continue
            w1 = m              # positive: the on value stays above the off value (the sign is in the output weight)
            try:
                P = mul_float(w1, a_on, F)
                Poff = None if a_off is None else mul_float(w1, a_off, F)
                if P is None or (a_off is not None and Poff is None):
                    continue
                b, z, zo = act.relay_bias(P, Poff)
                amps, biases, zs, zos = [], [b], [z], [zo]
                cur, curo, rest = act.T(z), None if zo is None else act.T(zo), K
                while rest > 0:
                    k = rest + self.g
                    while k > self.g and (not F.contains(2.0 ** k) or mul_float(2.0 ** k, cur, F) is None
                                          or (curo is not None and mul_float(2.0 ** k, curo, F) is None)):
                        k -= 1
                    if k <= self.g:
                        raise ConstructionError(f"cannot amplify past forward value {cur!r}")
                    b, z, zo = act.relay_bias(mul_float(2.0 ** k, cur, F),
                                              None if curo is None else mul_float(2.0 ** k, curo, F))
                    amps.append(2.0 ** k)
                    biases.append(b)
                    zs.append(z)
                    zos.append(zo)
                    cur, curo = act.T(z), None if zo is None else act.T(zo)
                    rest -= k - self.g
            except ConstructionError as e:
                err = e
                continue
            back = step_chain(np.array([c]), [(w, d) for w in reversed(amps)] + [w1], F)[0]
            if back == abs(tau):
                return w1, amps, biases, zs, zos
        raise ConstructionError(f"no amplification takes the saturated value {c!r} exactly to {tau!r}"
                                + (f" ({err})" if err else ""))

    def build(self, t, tau, R, comp, c, w1, amps, biases, zs, zos, A):
        """Weights (input -> output) and biases of one chain, its forward values on and off (cached: the
        chain is a function of these arguments only; callers do not modify the lists)."""
        key = (t.threshold, float(tau), R, tuple(comp), float(c), float(w1), tuple(amps), tuple(biases),
               tuple(zs), tuple(zos), A)
        if key not in self._built:
            self._built[key] = self._build(t, tau, R, comp, c, w1, amps, biases, zs, zos, A)
        return self._built[key]

    def _build(self, t, tau, R, comp, c, w1, amps, biases, zs, zos, A):
        act = self.act
        pad = [self.ident] * (A - len(amps))
        pre = list(self.prefixes[t.threshold]) + [self.ident] * (R - len(self.prefixes[t.threshold]))
        ws = [w1] + list(amps) + pad + list(reversed(comp)) + list(reversed(pre))
        ws[-1] = math.copysign(ws[-1], tau)       # RN is odd: the output weight's sign flips the whole chain
        tb, tz, tzo = self._tail(zs[-1], zos[-1], tuple(ws[len(biases):-1]))
        bs, z_on, z_off = list(biases) + tb, list(zs) + tz, list(zos) + tzo
        dT = act.dT_table
        steps = tuple(zip(reversed(ws[1:]), [dT[float(z)] for z in reversed(z_on)])) + (ws[0],)
        key = (steps, t.threshold, tau)
        if key not in self._checked:
            self._checked.add(key)
            self._pending.append(key)
        return ws, bs, z_on, z_off

    def _tail(self, z_on: float, z_off, weights: tuple):
        """(biases, z_on list, z_off list) of the relays after the amplification (cached: the tail is
        a function of the last amplification states and the weights only)."""
        key = (z_on, z_off, weights)
        if key in self._tails:
            return self._tails[key]
        F, act = self.F, self.act
        bs, zl, zol = [], [], []
        cur = act.T(z_on)
        curo = None if z_off is None else act.T(z_off)
        memo = self._steps                  # one relay: a function of (its input values, its weight)
        for w in weights:
            sk = (cur, curo, w)
            if sk in memo:
                b, z, zo = memo[sk]
            else:
                P = mul_float(w, cur, F)
                Po = None if curo is None else mul_float(w, curo, F)
                if P is None or (curo is not None and Po is None):
                    raise ConstructionError("a relay's forward product overflows")
                b, z, zo = memo[sk] = act.relay_bias(P, Po)
            bs.append(b)
            zl.append(z)
            zol.append(zo)
            cur, curo = act.T(z), None if zo is None else act.T(zo)
        self._tails[key] = (bs, zl, zol)
        return self._tails[key]

    def check_built(self) -> None:
        """Every chain built so far, exactly, on every positive y: tau for y >= its threshold, 0 below.
        Every factor is positive but the output weight, and RN is monotone, so |chain(y)| is nondecreasing
        in y > 0: 0 just below t and tau at both t and max|y| decide every y.  All chains at once (they
        have one length per construction; grouped by length otherwise)."""
        F = self.F
        by_len = {}
        for key in self._pending:
            by_len.setdefault(len(key[0]), []).append(key)
        self._pending = []
        for keys in by_len.values():
            for steps, _, _ in keys:
                if any(not (w > 0 and dd > 0) for w, dd in steps[1:-1]) or steps[-1] <= 0:
                    raise ConstructionError("internal: a chain factor is not positive")   # pragma: no cover
            th = np.array([k[1] for k in keys])
            tau = np.array([k[2] for k in keys])
            ut, inv = np.unique(th, return_inverse=True)
            below = np.array([float(F.next_down(t)) for t in ut.tolist()])[inv.reshape(-1)]
            Y = np.stack([below, th, np.full(len(keys), self.ymax)], axis=1)         # (chain, 3)
            want = np.stack([np.zeros(len(keys)), tau, tau], axis=1)
            u = Y
            n = len(keys[0][0])
            WD = np.array([key[0][:-1] for key in keys], float).reshape(len(keys), n - 1, 2)   # (chain, step, w|d)
            for k in range(n - 1):
                u = rn_mul(rn_mul(u, WD[:, k, 0:1], F), WD[:, k, 1:2], F)
            u = rn_mul(u, np.array([key[0][-1] for key in keys])[:, None], F)
            bad = (u != want) & (Y > 0)
            if bad.any():
                c, j = np.argwhere(bad)[0]
                raise ConstructionError(f"internal: the chain for threshold {th[c]!r} gives {u[c, j]!r} at "
                                        f"y = {Y[c, j]!r}, not {want[c, j]!r}")


def plan_chains(ch: "Chains", items, c: float, a_on: float, a_off=None) -> list:
    """[(term, tau, amplification plan)] for items [(term, tau)]; a tau that no amplification reaches (the
    last product w_1 a_on would overflow, e.g. sigmoid at x = 64 with tau = Omega) becomes two chains
    carrying tau / 2 each, next to each other: their contributions meet in a left-to-right sum, tau/2
    (+) tau/2 = tau exactly, and the partial sums of the paired terms stay values of the format."""
    out = []
    for t, tau in items:
        try:
            out.append((t, tau, ch.amplify(tau, c, a_on, a_off)))
        except ConstructionError:
            half = tau / 2
            if not ch.F.contains(half) or half == 0:
                raise
            p = ch.amplify(half, c, a_on, a_off)
            out += [(t, half, p), (t, half, p)]
    return out
