"""Multiplication transfer: the blocker weights and the output weight A whose rounded product
chain y (x) A (x) T'(b_n) (x) a_n ... gives g* exactly, decided on sets of format values;
joins from both ends and zero ends (``Transfers``, a part of ``Context``).
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import near_grid, near_values
from ..errors import CondcheckError
from ..ops import add_array, mul_array
from . import tuning
from .errors import SearchGaveUp
from .rows import rn_chain_2d
from .sets import GainGroups, log2_abs, preimage_bisect, spread_sample, stable_first
from .steps import distinct_indices


class Transfers:
    """The transfer searches of ``Context``: blocker and output weights on exact sets."""

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
        r, self.transfer_why = self.cached(("transfer", y, g, Gz, d3, tuple(tail_factors), bmax, h_max, quarter,
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
            V = preimage_bisect(F, V, [g], tail_factors)
            after_gate, image = self._rn_chain(V, [d3]), self._rn_chain(V, tail_factors)
        elif self.nonzero_values is not None:
            # V is every nonzero value whatever g: its images under the chains are the same arrays for
            # every branch with these factors (branches of one slice share them)
            after_gate = self.cached(("chain", float(d3)), lambda: self._rn_chain(V, [d3]))
            image = self.cached(("chain",) + tuple(float(f) for f in tail_factors),
                                 lambda: self._rn_chain(V, tail_factors))
        else:
            after_gate, image = self._rn_chain(V, [d3]), self._rn_chain(V, tail_factors)
        S = V[(image == g) & (np.abs(after_gate) * bmax * self.share <= F.max_float)]
        if len(S) == 0:
            self.transfer_why = "no value reaches the gradient through the factors before the gate"
            return None
        fixed = all(tail_factors)
        need = (log2_abs(g) - log2_abs(y) - sum(log2_abs(f) for f in tail_factors)) if y and fixed else 0.0
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
                return (a, c, t, d, gain, inexact, abs_t) + (GainGroups(gain, inexact, abs_t),)
            # a function of the on value where every weight is tried (weights None: enumerated formats),
            # else of the on value and the weight window (the key of ``_blockers``' cache)
            if weights is None:
                rkey = ("ranked_blockers", v_on)
            else:
                m = np.abs(weights)
                rkey = ("ranked_blockers", v_on, len(m)) + ((float(m.min()), float(m.max())) if len(m) else ())
            a, c, t, d, gain, inexact, abs_t, groups = self.cached(rkey, ranked)
            if len(a) == 0:
                self.transfer_why = f"no blocker for layer {k + 1} (on value {v_on!r}, gain 2^{share:.0f})"
                return None
            # the first of np.lexsort((abs_t, off, inexact)) without sorting (one blocker is tried): by
            # the groups of equal gain, kept with the ranked blockers (``GainGroups``)
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
                    As = near_values(F, spread_sample(S, 16)[:, None] / y / d[chunk][None, :] / a[chunk][None, :], 2)
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
        As_all = near_values(F, np.array([math.ldexp(sg, k) / y for k in ks[:16] for sg in (1.0, -1.0)]), 1)
        As_all = As_all[np.abs(As_all) * h_max <= F.max_float]
        t1, o = mul_array(np.full(len(As_all), y), As_all, F)
        cand_A = np.where(o | (t1 == 0), np.nan, t1)
        strong = np.union1d(np.unique(np.abs(self.block_d))[::-1][:4], reached)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):   # near_values drops what is not finite
            want = spread_sample(S, 8)[:, None, None] / (cand_A[None, :, None] * strong[None, None, :])
        a, c, p, t, d = self._blockers(v_on, weights=np.union1d(near_values(F, want, 2), -near_values(F, want, 2)))
        r = self._last_layer((a, c, t, d), np.arange(len(a)), lambda chunk: (As_all, cand_A), S, quarter)
        if r is None and self.join:
            r = self._last_join(y, S, v_on, h_max, quarter)
        return None if r is None else (post + [r[0]], r[1], r[2])

    def _output_weights(self, h_max):
        """The output weights A of an enumerated format with |A| h_max finite (the backward value y A at
        every other point), in value order; kept per h_max."""
        return self.cached(("output_weights", h_max),
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
        for s in spread_sample(S, 8):
            s = float(s)
            ag = near_grid(F, abs(s) / ww, 2)          # |a| with RN(|w| |a|) = |s|
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
        return self.cached(("join_reach", y, h_max, quarter), lambda: self._join_reach_search(y, h_max, quarter))

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
        Ac = near_grid(F, W / ay / ad[:, None], 1)
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
        cap = log2_abs(float(ww.max())) + log2_abs(F.max_float) - log2_abs(y)
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
        (``stable_first``), as the chunked scan over that order picks.

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
            # a column per distinct (T'(p), a) of the blockers (relu: one per weight, T' = 1), then one per
            # blocker; a last row for the overflow index, which maps to itself (what a where() on iu did
            # per call)
            uk, g = np.unique(tb.index(d).astype(np.intp) * (tb.over + 1) + tb.index(a), return_inverse=True)
            MU = tb.mul(tb.mul(np.arange(tb.over)[:, None], uk[None, :] // (tb.over + 1)), uk[None, :] % (tb.over + 1))
            MU = np.vstack([MU, np.full((1, MU.shape[1]), tb.over, MU.dtype)])
            hit_maps = maps[v_on] = (MU[:, g], {}, {}, [], [], (MU, g))
        M, absorbed, reach, runs, amps, distinct = hit_maps
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
        if "R" not in r and r["calls"] > tuning.REACH_ROWS_AFTER:
            hit_u = M[iu]                                     # (A, blocker) -> the index u reaches
            R = np.zeros((tb.over + 1, M.shape[1]), bool)
            ia, ik = np.nonzero(absorbed_grid())
            R[hit_u[ia, ik], ik] = True
            r["R"] = np.packbits(R, axis=1)
        si = self._set_index(S)
        if si is None:
            si = tb.index(S)                    # (raises, as it did)
        si = distinct_indices(si, tb.over + 1)
        if "R" in r:
            cols = np.unpackbits(np.bitwise_or.reduce(r["R"][si], axis=0), count=M.shape[1]).astype(bool)
        else:
            cols = self._last_cols_by_runs(M, runs, r, amp, As, si, quarter, absorbed_grid, distinct)
        hits = np.flatnonzero(cols)
        if not len(hits):
            return None
        i = int(hits[stable_first(key[hits])])
        in_S = np.zeros(tb.over + 1, bool)
        in_S[si] = True
        # column i of the absorbed grid, by the same elementwise test
        Ai = As[in_S[M[iu, i]] & ((np.abs(As) * amp[i] < quarter) | (amp[i] == 0))]
        return (float(a[i]), float(c[i])), float(Ai[np.argmin(np.abs(np.log2(np.abs(Ai))))]), (float(t[i]), self.st.L, 1.0)

    def _last_cols_by_runs(self, M, runs, r, amp, As, si, quarter, absorbed_grid, distinct):
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
        table over u, once per y).  ``distinct`` = (MU, g): M's distinct columns, M = MU[:, g]; the runs
        and their range maxima are found on those (blockers with one (T', a) share a column), and
        blocker P[j] has a hit iff the largest of those maxima over the s of S (where its column has a
        run) exceeds j: one comparison per blocker."""
        tb = self.tables
        n_u = tb.over
        if not runs:                                   # once per on value: P and the runs of every (s, column)
            P = np.argsort(amp, kind="stable")
            MU, g = distinct
            lo, hi, whole = _value_runs(MU[:n_u], n_u)
            # each run's two overlapping power-of-two windows [lo, lo + 2^p) and (hi - 2^p, hi], as flat
            # positions in the sparse table of maxima (levels x n_u: the same shape for every y), and
            # whether the run is not empty: a function of the on value only
            l, h = lo.astype(np.int64), hi.astype(np.int64)
            ne = l <= h
            p = np.frexp(np.where(ne, h - l + 1, 1))[1] - 1      # floor(log2(run length))
            at_lo = np.where(ne, p * n_u + l, 0).astype(np.int32)
            at_hi = np.where(ne, p * n_u + h - (1 << p) + 1, 0).astype(np.int32)
            runs += [P, ne, at_lo, at_hi, whole, *np.unique(amp[P], return_counts=True), g[P]]
        P, ne, at_lo, at_hi, whole, au, ac, gP = runs
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
        table = r["table"].reshape(-1)
        best = np.full(ne.shape[1], -1, np.int64)      # per distinct column: the largest maximum over S
        step = max(1, (1 << 18) // max(1, ne.shape[1]))
        for s0 in range(0, len(si), step):              # the values s of S, many at a time: (s, column)
            s = si[s0:s0 + step]
            top = np.maximum(table[at_lo[s]], table[at_hi[s]])
            np.maximum(best, np.where(ne[s], top, -1).max(axis=0), out=best)
        cols = np.empty(len(gP), bool)
        cols[P] = best[gP] > np.arange(len(gP))
        return cols

    def _rn_chain_2d(self, t, d, a):
        """RN(RN(t_i d_k) a_k) for every (i, k), NaN on overflow."""
        F = self.F
        tb = self.tables
        if tb is not None:
            i = tb.mul(tb.index(t)[:, None], tb.index(d)[None, :])
            return tb.value(tb.mul(i, tb.index(a)[None, :]))
        r = rn_chain_2d(F, t, d, a)           # (16-bit formats: one compiled pass, the same numbers)
        if r is not None:
            return r
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
        return near_values(self.F, q, 4) if len(q) else np.zeros(0)

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
                return preimage_bisect(self.F, V, S, [d, a])
            if self.tables is not None:         # 8-bit formats: the image of V is kept per (d, a)
                tb = self.tables
                iS = self._set_index(S)
                if iS is not None:
                    # isin on table indices: the same test (equal values share an index, -0 and +0 too,
                    # as == matches them; NaN, the overflow index, matches nothing, as in isin)
                    img = self.cached(("chain_index", float(d), float(a)), lambda: tb.mul(
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
                return V[np.isin(self.cached(("chain", float(d), float(a)), lambda: self._rn_chain(V, [d, a])), S)]
        return V[np.isin(self._rn_chain(V, [d, a]), S)]


def _value_runs(MP, n_s):
    """(lo, hi, whole) of the columns of MP (indices u x columns k, values s in 0..n_s): lo[s, k] and
    hi[s, k] the first and last u with MP[u, k] = s (n_s and -1 where there is none), and whole[s]
    whether in every column the u's with MP[u, k] = s fill [lo, hi] (``Transfers._last_cols_by_runs``).

    lo and hi: lo[MP[u, k], k] = u from the last row up and hi from the first down, on the flat
    positions of (MP[u, k], k) (one index array per row).  whole, without counting every (s, k): the
    overflow index n_s is counted per column (both ends of a column may reach it, so its rows need not be
    one run); every other value's rows lie in its [lo, hi], and these sets partition the column's other
    rows, so their spans hi - lo + 1 add up to that number of rows exactly when every one fills its span.
    Only a column where they do not is counted value by value, and there, as in every column, whole[s]
    asks that the count be 0 or the span (elu on the float8_e5m2 box: 247 x 8,583 blockers; counting
    every (s, k) took 0.05-0.07 s, the rest of this 0.03 s)."""
    n, nk = MP.shape
    flat = MP.astype(np.intp) * nk + np.arange(nk)
    lo = np.full((n_s + 1) * nk, n_s, np.int16)
    hi = np.full((n_s + 1) * nk, -1, np.int16)
    for u in range(n - 1, -1, -1):
        lo[flat[u]] = u
    for u in range(n):
        hi[flat[u]] = u
    lo, hi = lo.reshape(n_s + 1, nk), hi.reshape(n_s + 1, nk)
    span = np.maximum(hi.astype(np.int32) - lo + 1, 0)
    # the overflow index n_s (which both ends of a column may reach) by its count; the other values by
    # their spans: they partition the column's other rows
    n_over = np.count_nonzero(MP == n_s, axis=0)
    bad = np.flatnonzero(span[:n_s].sum(axis=0) != n - n_over)
    whole = np.ones(n_s + 1, bool)
    whole[n_s] = ((n_over == 0) | (n_over == span[n_s])).all()
    if len(bad):
        sub = MP[:, bad].astype(np.int64) * len(bad) + np.arange(len(bad))
        cnt = np.bincount(sub.ravel(), minlength=(n_s + 1) * len(bad)).reshape(n_s + 1, len(bad))
        whole &= ((cnt == 0) | (cnt == span[:, bad])).all(axis=1)
    return lo, hi, whole
