"""Gradient branches: source, pass, gate, blockers.  The backward chain of a branch
must equal g*_j(z) exactly at its point and be stopped everywhere else
(``GradientBranches``, a part of ``Context``).
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import in_format, near_values
from ..ops import add_array, mul_array
from . import tuning
from .errors import ConstructionError
from .gates import memo, solve_affine
from .records import Branch
from .rows import t_row
from .sets import log2_abs, rn_products


def _scale_pairs():
    """(k2, k3, 2^k2, 2^(k2 + k3), |k2 - k3|) for every pair in -12..12 (``_scales_search``'s grid)."""
    k2 = np.repeat(np.arange(-12, 13), 25)
    k3 = np.tile(np.arange(-12, 13), 25)
    return k2, k3, np.ldexp(1.0, k2), np.ldexp(1.0, k2 + k3), np.abs(k2 - k3)


_SCALE_PAIRS = _scale_pairs()


#: the scales 2^m of ``GradientBranches._pad_relays``, in the order the padding tries them
PAD_SCALES = (0, 1, 2, 3, -1, -2)


class LazyRow:
    """A memo of a generator's items, made as they are first read: iterating yields the items made so far,
    then makes more.  A padding relay is searched among every pass state (46,325 of them for gelu on
    bfloat16) but the first few usually fit; the whole lists, kept per (on, off) value pair, made the
    bfloat16 chunks at depth 13 spend minutes and 2.7 GB on relays never read."""

    def __init__(self, items):
        self._items, self._made = items, []

    def __iter__(self):
        i = 0
        while True:
            if i == len(self._made):
                if self._items is None:
                    return
                try:
                    self._made.append(next(self._items))
                except StopIteration:
                    self._items = None
                    return
            yield self._made[i]
            i += 1


class GradientBranches:
    """The gradient-branch searches of ``Context``: pass, gate, blockers, relays, padding."""

    # memo tables (``gates.memo``)
    _reach_memo = memo()                # (base, its sign) -> (c, q): ``_reach`` on the small formats
    _blocker_lru = memo()               # the last BLOCKER_WINDOWS on values' windows: ``_blockers``

    def _reach(self, base: float):
        """(c, q): the bias c with q = RN(base + c) the best-ranked pass state (``pass_z`` order), or None.

        Small formats try every value as c; large ones the values near q - base for the 256 best-ranked
        states q (the exact sum decides).  On small formats the answer is remembered per base (with the
        sign of a zero): it depends on nothing else, and the searches ask for the same bases often."""
        if self.small_format:
            known = self._reach_memo
            key = (base, math.copysign(1.0, base))
            if key not in known:
                known[key] = self._reach_search(base)
            return known[key]
        return self._reach_search(base)

    def _reach_search(self, base: float):
        F = self.F
        if self.small_format:
            G = F.values()
        else:
            G = near_values(F, self.pass_z[:256] - base, 2)
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
            return c, p, t_row(kit, a, v, c)
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
                br = Branch(zi, gate, post, A, coord=j, w_g=w_g, b_g=b_g, a2=a2, c2=c2, a2b=a2b, c3=c3,
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
        xs, vi = self.coord_values(j), self._coord_index(zi, j)    # the source row's inputs, z's index
        xz = float(xs[vi])
        # source weights: a backward value must stay a finite value of the format all the way, so near
        # the input the suffix products |w_g|, |T'(s0) w_g| must reach |g| / Omega; small |w_g| first

        def source_weights():           # a function of coordinate j's values only (sorted per g below)
            xmax = float(np.max(np.abs(xs)))
            powers = [math.ldexp(sg, k) for k in (0, -1, 1, -2, 2, -3, 3) for sg in (1.0, -1.0)]
            return [w for w in powers if in_format(F, w) and abs(w) * xmax <= F.max_float]
        # the order is a function of (j, |g|): kept (a new list each time, as the sort made one)
        powers = list(self.cached(("source_order", j, abs(g)), lambda: sorted(
            self.cached(("source_weights", j), source_weights),
            key=lambda w: (abs(w) / 2 < abs(g) / float(F.max_float), abs(math.log2(abs(w)))))))
        def source(w_g):
            try:
                src = self._reach(float(kit.mul(w_g, xz)))
                if src is None:
                    return None
                b_g, s0 = src
                return b_g, s0, t_row(kit, w_g, xs, b_g), float(kit.dT(s0))
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
            added, ow2, ok = self.cached(("pad", br.y, ow, v_on, v_off, gain, need, h_max, quarter) + sgn,
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
            relays = self.cached(("pad_relays", v_on, v_off, math.copysign(1.0, v_on), math.copysign(1.0, v_off)),
                                  lambda: self._pad_relay_rows(v_on, v_off))
            for m, rel in relays:
                ow2 = math.ldexp(ow, -m)
                if not in_format(F, ow2):
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
                relay = self.cached(("odd_relay", y, ow, v_on, v_off, gain, h_max, quarter) + sgn,
                                     lambda: self._odd_relay(y, ow, t1, v_on, v_off, gain, h_max, quarter))
                if relay is None:
                    return post, None, False
                (a, c), (v_on, v_off, g2), ow = relay
                post.append((a, c))
                gain = max(gain, g2)
        return post, ow, True

    def _pad_relay_rows(self, v_on, v_off):
        """[(m, the relays of scale 2^m, ``_pad_relays``, as a LazyRow)] for m in ``PAD_SCALES``."""
        return [(m, LazyRow(self._pad_relays(m, v_on, v_off))) for m in PAD_SCALES]

    def _pad_relays(self, m, v_on, v_off):
        """The relays T(a v + c) with a = 2^m / T'(q) at each pass state q in turn, c putting the on value
        v_on at q: (a, c, T(on), T(off), T'(q), |T'(off)|) each, made as they are read (``LazyRow``)."""
        kit, F = self.kit, self.F
        for q, d in zip(self.pass_z, self.pass_d):
            a = math.ldexp(1.0, m) / float(d)
            if not in_format(F, a):
                continue
            try:
                c = solve_affine(kit, float(kit.mul(a, v_on)), float(q))
                if c is None:
                    continue
                off = float(kit.add(kit.mul(a, v_off), c))
                t_on, t_off = float(kit.T(q)), float(kit.T(off))
                d_off = abs(float(kit.dT(off)))
            except ConstructionError:
                continue
            yield a, c, t_on, t_off, d, d_off

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
                          if in_format(F, math.ldexp(k, e))}, key=lambda w: (abs(log2_abs(abs(w)) - log2_abs(abs(ow))), abs(w)))
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
                for a in near_values(F, t1 / b, 2):
                    a = float(a)
                    try:
                        if a == 0 or float(kit.mul(b, a)) != t1:
                            continue
                        c = solve_affine(kit, float(kit.mul(a, v_on)), float(q))
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

    def _gradient_gates(self, zi, j, vi, a3, P3, key):
        """The gate options of a gradient branch, each (gate, slice gate, factors between them) or the
        ConstructionError saying why there is none: here one gate reading the pass P3 (weight a3)."""
        # remembered per (point, source, passes, a3): the pass P3 is a function of those (``_pass`` results
        # are cached by them), and the branch search asks again for each number of layers it tries; and
        # per retry flag that changes the gate search
        ck = ("gradient_gate", zi, key, self.offset_gates, self.near_one, self.least_gates)
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
        return self.cached(("scales", g, w_g, d1, bmax, tries), lambda: self._scales_search(g, w_g, d1, bmax, tries))

    def _scales_search(self, g, w_g, d1, bmax, tries):
        F = self.F
        want = (log2_abs(4 * bmax) + log2_abs(g) - log2_abs(F.max_float) - log2_abs(w_g) - log2_abs(d1) + 3) if g and d1 else 0.0
        floor = abs(g) / float(F.max_float)           # every suffix product of the backward chain reaches this
        base = abs(w_g * d1)
        # every (k2, k3) in -12..12, sorted by (unsafe, |k2 + k3 - want|, |k2 - k3|, k2, k3): the same
        # float64 operations as a loop over the pairs, and a stable lexicographic order
        k2, k3, p2, p23, spread = _SCALE_PAIRS
        unsafe = (base * p2 / 2 < floor) | (base * p23 / 4 < floor)
        order = np.lexsort((k3, k2, spread, np.abs((k2 + k3) - want), unsafe))
        ok = self.__dict__.get("_scale_ok")
        if ok is None:       # which powers of two are values, once
            ok = self._scale_ok = {(sg, k): in_format(F, math.ldexp(sg, k)) for k in range(-12, 13) for sg in (-1.0, 1.0)}
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
        return rn_products(F, t, factors)

    def _blockers(self, v_on, share=None, weights=None):
        """``_blockers_search`` with the given weights (uncached), else once per on value (branches share
        gates) and weight window: every weight where ``_weights_for(share)`` gives None, else that window,
        a band of |a| fixed by its size and its smallest and largest |a| (the key)."""
        if weights is not None:
            return self._blockers_search(v_on, weights)
        weights = None if share is None else self._weights_for(share)
        if weights is None:
            return self.cached(("blockers", v_on), lambda: self._blockers_search(v_on))
        m = np.abs(weights)
        key = ("blockers", v_on, len(m)) + ((float(m.min()), float(m.max())) if len(m) else ())
        # a window of a large format's weights against every target state keeps about 36 MB per on value
        # (tanh on 256 float64 points: about 200 on values, 5.2 GiB in all), and an on value is asked for
        # by its own point's searches: the most recent BLOCKER_WINDOWS of them are kept (a pure function
        # of the key, so the results are the same)
        lru = self._blocker_lru
        if key in lru:
            lru[key] = lru.pop(key)                  # most recent last
            return lru[key]
        r = lru[key] = self._blockers_search(v_on, weights)
        while len(lru) > tuning.BLOCKER_WINDOWS:
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
            dead = st.dead_by_index(tb)
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
        if self.small_format:
            p_on, o3 = add_array(np.broadcast_to(m_on[:, None], c.shape), np.where(oc, 0.0, c), F)
            p_off, o4 = add_array(np.broadcast_to(m_off[:, None], c.shape), np.where(oc, 0.0, c), F)
            good = ~(oc | o3 | o4) & (p_on == P[None, :]) & st.dead(p_off)
            ia, ip = np.nonzero(good)
            return A[ia], c[ia, ip], P[ip], self.block_t[ip], self.block_d[ip]
        # large formats: RN(a v_on + c) need not land on the aimed state; any live state with T' != 0
        # will do (looked up in the table), once per (a, state).  The pairs whose sum at L is dead first,
        # then RN(a v_on + c) for those alone (the same sums, on fewer pairs)
        p_off, o4 = add_array(np.broadcast_to(m_off[:, None], c.shape), np.where(oc, 0.0, c), F)
        ia, ip = np.nonzero(~(oc | o4) & st.dead(p_off))
        p_on, o3 = add_array(m_on[ia], c[ia, ip], F)
        keep = ~o3 & ~st.dead(p_on)
        ia, ip = ia[keep], ip[keep]
        q = p_on[keep]
        k = np.clip(np.searchsorted(st.z, q), 0, len(st.z) - 1)
        hit = (st.z[k] == q) & (st.dt[k] != 0)
        ia, ip, q, k = ia[hit], ip[hit], q[hit], k[hit]
        _, first = np.unique(np.stack([A[ia], q]), axis=1, return_index=True)
        first = np.sort(first)
        ia, ip, q, k = ia[first], ip[first], q[first], k[first]
        return A[ia], c[ia, ip], q, st.t[k], st.dt[k]
