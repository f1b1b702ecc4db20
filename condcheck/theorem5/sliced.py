"""Sliced gating for d >= 2 (``SlicedContext``): per-coordinate slice neurons and AND gates.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import kernels
from ..constructors.kit import in_format, near_grid
from ..ops import add_array, mul_array
from .context import Context
from .errors import ConstructionError
from .records import Gate


class SlicedContext(Context):
    """Gating through slices, for d >= 2: a gate per point that reads the gating steps of every
    coordinate would be evaluated on every point of the domain (N gates x N points: 10^9 rounded sums on
    the float8 d = 2 box), and so would its verification.  Instead an extra layer holds *slice* neurons,
    each depending on one coordinate:

    - the indicator I_(j,v) = T(sum beta * boosted steps (+) gamma) of the gating steps of x_j = v: the
      d = 1 gate of that coordinate value (``Context.find_gate`` on coordinate j's values), live exactly on the
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
    SLICED = True
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
            self.slices[j] = Context(kit, st, F, coord_vals[j].reshape(-1, 1), steps, U, gating)
            self.slices[j].compiled_gates = kernels.HAVE_NUMBA
        self.indicators, self._slice_gates, self._ands = {}, {}, {}
        self._slice_gate_in = {}        # _gradient_gates: slice gate key -> (T' at it, its _input triple)
        self._live_orders = {}          # _live_states
        self._indicator_in = {}         # _indicator_inputs: (I, j, v) -> its _input triple
        # target lists never edited after they are made (gate_targets, _live_states): _and keys its memo by
        # a name for them instead of their 1,024 values; id -> (the list, its name)
        self.fixed_lists = {id(self.gate_targets): (self.gate_targets, "gate_targets")}
        for sl in self.slices.values():     # the slices' gates read these lists (and gate_targets) too
            sl.fixed_lists = self.fixed_lists

    def coord_values(self, j):
        return self.coord_vals[j]

    def _coord_index(self, zi, j):
        return int(self.coord_idx[j][zi])

    def _cached_at(self, vi, key, fn):
        """Sliced gating: vi is a slice shared by the points of one coordinate value, whose branches need
        not come one after the other: every slice's arrays are kept (``cached``)."""
        return self.cached(key, fn)

    def indicator(self, j, v) -> Gate:
        """I_(j,v) (cached): live on x_j = v, on the state farthest from L its gate reaches (the AND
        gates' weights scale as 1 / |I_on - L|; a flat state, T' = 0, stops the backward value there)."""
        key = (j, v)
        if key not in self.indicators:
            self.indicators[key] = self.slices[j].point_gate(v, None, self._indicator_targets())
        return self.indicators[key]

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
        gt, ind = self.gate_targets, self._indicator_targets()
        rest = None                     # the point's indicator inputs but coordinate j's (made once)
        for variant, targets, small in ((0, self._unit_targets(), False), (1, ind, False), (2, gt, True)):
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
            if rest is None:
                rest = self._indicator_inputs(zi, skip=j)
            inputs = rest + [sgi[1]]
            for targets, small in ((gt, True), (ind, False)):
                try:
                    gate = self._and(inputs, targets, small, zi)
                except ConstructionError as e:
                    yield e
                    continue
                yield gate, sg, [gate.betas[-1], d_sg]

    def _and(self, inputs, targets, small_first, zi) -> Gate:
        """The AND gate of slice neurons: weights beta_k = +-2^(e - exponent of |on_k - L|) (one e for all;
        sign: an input at L lowers the sum), gamma such that the sum with every input on lands on a
        target (earliest preferred) and every other on/L pattern is dead; exact on all 2^k patterns.
        (Kept by the inputs' on values and gains, not their keys: a point's keys are its own, while
        points share on values.)"""
        ons = tuple([u for _, u, _ in inputs])
        gains = tuple([g for _, _, g in inputs])
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
        return Gate([k for k, _, _ in inputs], betas, gamma, pz, bmax)

    def _and_search(self, ons, tv, small_first):
        F, st, L = self.F, self.st, self.st.L
        k = len(ons)
        diff = ons - L
        if k == 0 or (diff == 0).any() or not len(tv):
            return None
        sg = np.sign(diff)
        ex = np.frexp(np.abs(diff))[1]
        shifts = [e for e in range(F.e_min - F.M - 2, F.e_max + 2)
                  if all(in_format(F, float(b)) for b in sg * np.ldexp(1.0, e - ex))]
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
            G = near_grid(F, tv[None, :64] - acc[:, -1:], 2).reshape(S, -1)
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
