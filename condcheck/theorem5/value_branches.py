"""Value outputs (layer 5): V'_z = T(a_v V_z + c_v) maps the value gate's on value to a
power of two P_z so that the output weight f*(z)/P_z is exact; relays and blockers pad a
value branch to the network's depth (``ValueBranches``, a part of ``Context``).
"""
from __future__ import annotations

import numpy as np

from ..constructors.kit import in_format, near_values
from .errors import ConstructionError, ValueGainOverflow
from .records import Branch
from .sets import lexsort_head, log2_abs


class ValueBranches:
    """The value-branch searches of ``Context``: V'_z, relays and value blockers."""

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
                if not in_format(self.F, part):
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
        if used < self.F.max_float and not self.SLICED:
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
                pows = [P for P in self.pow2_values if in_format(F, f / P)]
            return [(P, f / P) for P in sorted(pows, key=lambda P: (abs(f) > P, abs(log2_abs(f) - log2_abs(P))))]
        # a function of f only (f != 0: -0 never keys it); pairs is rebound below, never mutated
        pairs = self.cached(("pow2_pairs", f), pow2_pairs)
        if any_P:
            pairs = []
            for P in np.unique(np.abs(cand_t[cand_t != 0]))[::-1]:
                for sP in (float(P), -float(P)):
                    pairs += [(sP, float(A)) for A in near_values(F, np.array([f / sP]), 1)
                              if float(kit.mul(float(A), sP)) == f]
            pairs.sort(key=lambda pa: abs(pa[1]))
            pairs = pairs[:16]
        if not pairs:
            what = "value P of T with RN(A P) = f* for a value A" if any_P else "power of two P with f*/P exact"
            raise ConstructionError(f"point {zi + 1}: no {what} for f* = {f!r}")
        best = None
        # live states for V: prefer values near each candidate P and small derivatives
        keys = lambda: [np.abs(cand_d), np.abs(lt - log2_abs(f))]        # |T(q3)| near |f*|: a_v near 1
        if self.small_format:       # the order is a function of |f|: kept (a new list each time: it is edited)
            prefs = list(self.cached(("value_prefs", abs(f)), lambda: tuple(cand_z[np.lexsort(keys())])))
        else:   # few weights are tried: a power-of-two T(q3) maps onto P exactly; 1,024 by that order and
                # 1,024 farthest from L (a gate can not land on a value much finer than its sum's spacing,
                # e.g. tanh~(q) = q = 2^-587 for a tiny f* on float64; and V' needs a weight of about
                # |q4 - z0| / |T(q3) - L|, which multiplies the backward value elsewhere)
            # (the first 1,024 of each sort: ``lexsort_head``; the second is a function of the context only)
            order = lexsort_head(keys() + [not_pow2], 1024)
            far = self.cached(("value_far",), lambda: cand_z[np.lexsort([np.abs(cand_d), -np.abs(cand_t - st.L),
                                                                         not_pow2])][:1024])
            prefs = list(dict.fromkeys(np.concatenate([cand_z[order], far]).tolist()))
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

            def consider(post, g_on, g_off, A):
                nonlocal best
                worst = max(g_on * y_at, g_off * y_max)       # the largest backward value
                key = (worst > F.max_float, max(g_on, g_off))
                if best is None or key < best[0]:
                    best = (key, Branch(zi, gate, post, A), g_on, g_off)
                return worst <= F.max_float

            # the six powers of two nearest |f*| first; the others only when none of those fits (the
            # nearest can all be out of reach: sigmoid~ on float64 maps L = 0 to a zero of T only by a
            # bias c <= z_d ~ -745, so RN(a Pv + c) lands on multiples of ulp(c) = 2^-43 and misses the
            # single fine preimage q of a tiny P, while P = 1 has every q >= 37 as preimage)
            for i, (P, A) in enumerate(pairs):
                if i >= 6 and best is not None and not best[0][0]:
                    break
                fits = False
                m = self.cached(("v_prime", Pv, P), lambda: self._v_prime(Pv, P))
                if m is not None:
                    a, c, d4, d0 = m
                    # every prefix of the backward chain y A (relays) T'(q4) a T'(q3) beta at the point,
                    # where y = h*(z), and y A (relays) T'(z0) a elsewhere, where |y| <= y_max, must stay
                    # finite: each gain is the largest prefix product
                    g_on = abs(A) * max(1.0, d4, d4 * abs(a), d4 * abs(a) * d3, d4 * abs(a) * d3 * bmax * share)
                    g_off = abs(A) * max(1.0, d0, d0 * abs(a))
                    post = [(a, c)]
                    # n_post - 1 copies of P's relay (the same factors each time, multiplied in one by one)
                    r = self.cached(("v_relay", P), lambda: self._v_relay(P)) if n_post > 1 else None
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
                # (the chains and their last layers are functions of (Pv, n_post, P): kept, in their order)
                ends = self.cached(("value_block_ends", Pv, n_post, P), lambda: self._value_block_ends(Pv, n_post, P))
                for chain, a2, d4, d0, gains in ends:
                    prefix = [1.0, d4, d4 * abs(a2)]
                    for gk in gains:                        # T'(p_k) a_k, last blocker first
                        prefix.append(prefix[-1] * gk)
                    prefix += [prefix[-1] * d3, prefix[-1] * d3 * bmax * share]
                    consider(list(chain), abs(A) * max(prefix), abs(A) * max(1.0, d0, d0 * abs(a2)), A)
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

    def _value_block_ends(self, Pv, n_post, P):
        """value_branch's blocker padding between a value gate with on value Pv and V' onto P, in the
        order tried: (the layers, V' included, as a tuple; V''s weight a2; |T'| of V' at the point and at
        L; the blockers' gains |T'(p_k) a_k|, last first) for each of ``_value_blockers``' chains and each
        V' of ``_map_two`` after it."""
        kit, L = self.kit, self.st.L
        out = []
        for chain, t_last, gains in self._value_blockers(Pv, n_post - 1):
            for a2, c2 in self._map_two(L, t_last, "zero", P, choices=True):
                d4 = abs(float(kit.dT(kit.add(kit.mul(a2, t_last), c2))))
                d0 = abs(float(kit.dT(kit.add(kit.mul(a2, L), c2))))
                out.append((tuple(chain) + ((a2, c2),), a2, d4, d0, tuple(gains)))
        return out

    def _value_blockers(self, v_on, n, n_last=8):
        return self.cached(("value_blockers", v_on, n, n_last), lambda: self._value_blockers_search(v_on, n, n_last))

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
