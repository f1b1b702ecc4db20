"""Gating for the generic construction on several points: layers 1-3 (separators, steps, boosts) built
with condcheck.theorem5's machinery through its public names, a point's gating steps, relayed boosts,
and the pass plans that carry a gate's backward value to the input exactly.
"""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np

from ..constructors.errors import ConstructionError
from ..constructors.kit import Kit
from ..formats import get_format
from ..separators import separator_chooser
from ..theorem5 import Step, find_states
from ..theorem5.constants import Constants
from ..theorem5.boosts import boost
from ..theorem5.context import Context
from ..theorem5.steps import quantizer_chains
from .activation import ActivationTable
from .chains import positive_values, rn_mul


@lru_cache(maxsize=None)
def _pass_plans_cached(name: str, implementation: str, fmt_name: str):
    act = ActivationTable(name, get_format(fmt_name), implementation)
    return _pass_plans_uncached(act)


def pass_plans(act: "ActivationTable"):
    return _pass_plans_cached(act.name, act.implementation, act.F.name)


def _pass_plans_uncached(act: "ActivationTable"):
    """Candidate pass paths (lam, a_g, a3, a2, w_s, n_src, sign), preferred first, and for each the positive
    values g of the format it carries exactly: a gate sum sign lam g (a value of the format) goes through
    sigma~'(G) = d, a_g, d, a3, d, a2, d, w_s and arrives as g / n_src at each of n_src sources.  Negative
    a2, a3 first: sigma~ is bounded below, so a negative weight keeps the pass neurons' forward values
    small at every other point of the domain (their products must stay finite there too)."""
    F, d = act.F, act.d
    pos = positive_values(F)
    Om = float(F.Omega)
    pw = [2.0 ** k for k in range(0, 5)]
    spw = [-w for w in pw] + pw
    ws_ok = [2.0 ** k for k in range(-2, 5) if 2.0 ** k * act.M_sigma <= Om and F.contains(2.0 ** k)]
    lams = sorted((2.0 ** k for k in range(-4, 5)), key=lambda v: abs(math.log2(v)))
    # every stage of the chain at once, broadcast over (lam, a_g, a3, a2, w_s, g)
    lg = rn_mul(np.array(lams)[:, None] * 0 + pos[None, :], np.array(lams)[:, None], F)        # (lam, g)
    exact_lg = np.isfinite(lg) & (lg == pos[None, :] * np.array(lams)[:, None])
    u = rn_mul(lg, d, F)[:, None, :] if d != 1.0 else lg[:, None, :]
    u = rn_mul(u, np.array(pw)[None, :, None], F)                                               # (lam, a_g, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, None, :], np.array(spw)[None, None, :, None], F)                         # (.., a3, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, :, None, :], np.array(spw)[None, None, None, :, None], F)                # (.., a2, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, :, :, None, :], np.array(ws_ok)[None, None, None, None, :, None], F)    # (.., w_s, g)
    plans, cover = [], []
    for n_src in (1, 2, 4):
        for il, lam in enumerate(lams):
            for ig, a_g in enumerate(pw):
                for i3, a3 in enumerate(spw):
                    for i2, a2 in enumerate(spw):
                        sign = math.copysign(1.0, a3 * a2)
                        want = sign * pos / n_src
                        for iw, w_s in enumerate(ws_ok):
                            ok = exact_lg[il] & (u[il, ig, i3, i2, iw] == want)
                            if ok.any():
                                plans.append((lam, a_g, a3, a2, w_s, n_src, sign))
                                cover.append(ok)
    return plans, np.array(cover), pos


class Gating:
    """Layers 1-3 (separators, steps, boosts) built with condcheck.theorem5's machinery, and gates.

    d >= 1 coordinates: two steps per gap between consecutive values of each coordinate (as theorem5
    does); the gating steps of a point are the down-step below and the up-step above it on every
    coordinate: all dead at the point, and at every other point (it differs in some coordinate) one on.
    ``wide_boosts``: the boosts (and the relays after them) try every weight of the format, not only the
    powers of two (theorem5's ``Kit.wide_boosts``)."""

    def __init__(self, act: "ActivationTable", X, implementation, wide_boosts: bool = False):
        F = act.F
        self.F, self.act = F, act
        kit = Kit(act.name, F, implementation)
        kit.wide_boosts = wide_boosts
        st = find_states(kit, act.witnesses)
        self.kit, self.st = kit, st
        d = X.shape[1]
        self.coord_vals = [np.unique(X[:, j]) for j in range(d)]
        self.coord_idx = [np.searchsorted(self.coord_vals[j], X[:, j]) for j in range(d)]
        steps, step_pre, step_of = [], [], {}
        for j in range(d):
            vals = self.coord_vals[j]
            choose = separator_chooser(kit, vals) if len(vals) > 1 else None
            for gap in range(1, len(vals)):
                for up in (True, False):
                    step, pre = self._step(kit, st, vals, j, gap, up, choose)
                    step_of[(j, gap, up)] = len(steps)
                    steps.append(step)
                    step_pre.append(pre)
        self.steps = steps
        self.U_X = [kit.T(p)[self.coord_idx[s.coord]] for s, p in zip(steps, step_pre)]
        cv, ci = self.coord_vals, self.coord_idx

        def gating(zi):
            out = []
            for j in range(d):
                m = ci[j][zi]
                if m > 0:
                    out.append(step_of[(j, m, False)])
                if m < len(cv[j]) - 1:
                    out.append(step_of[(j, m + 1, True)])
            return out

        self.gating = gating
        self.ctx = Context(kit, st, F, X, steps, self.U_X, gating)
        cz, ct = st.constants
        self.const = Constants(F, cz, ct)
        self.X = X

    @staticmethod
    def _step(kit, st, vals, j: int, gap: int, up: bool, choose):
        """(Step, boosted pre-activations on vals): the separator of the gap (theorem5's chooser), snapped
        by the rounded-sum chain into the dead tail on one side and far from it on the other, boosted."""
        F = kit.fmt
        chs = choose(gap, up)
        if chs is None:
            raise ConstructionError(f"distinguishability fails: no neuron sigma~(w x_{j + 1} + b) separates the "
                                    f"values <= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
        w, b, sg, kappa = chs
        v = kit.add(kit.mul(sg, kit.T(kit.row([(w, vals)], b))), kappa)
        on = v > 0
        k0 = max(math.frexp(float(v[on].min()))[1] - 1 + F.M, F.e_min)
        # the largest K below e_max whose chain works (theorem5's chains, computed in one pass)
        chains = quantizer_chains(kit, v, k0)
        pre = None
        for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1]:
            if K not in chains:
                continue
            try:
                pre = kit.add(chains[K], st.z_dead)
                break
            except Exception:
                continue
        if pre is None or not (st.dead(pre[~on]).all() and not st.dead(pre[on]).any()):
            raise ConstructionError(f"the step at coordinate {j + 1}, gap {gap} does not split into dead and "
                                    f"live states")
        tv = kit.T(pre[on]) - st.L
        if (np.sign(tv) == 0).any() or (np.sign(tv) != np.sign(tv[0])).any():
            raise ConstructionError(f"the step at coordinate {j + 1}, gap {gap}: on values on both sides of "
                                    f"{st.L!r}")
        ba, bc = boost(kit, st, kit.T(pre[on]))
        pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
        tv = kit.T(pre[on]) - st.L
        return Step(j, gap, up, w, b, sg, kappa, k0, K, float(np.abs(tv).min()), float(np.abs(tv).max()),
                    float(np.sign(tv[0])), ba, bc), pre

    def relayed(self, n: int):
        """n relay layers after the boosts: each keeps L dead and the on values live, on one side of L
        (theorem5's boost map).  Returns the (a, c) of every relay and a context over the last values.
        Every step of a layer at once (one row per step): the relays of the box are thousands."""
        kit, st, F = self.kit, self.st, self.F
        U = np.array(self.U_X, float).reshape(len(self.U_X), -1)
        steps = list(self.steps)
        maps = []
        for _ in range(n):
            layer = [boost(kit, st, u[u != st.L]) for u in U]
            a = np.array([m[0] for m in layer], float)[:, None]
            c = np.array([m[1] for m in layer], float)[:, None]
            new = kit.T(kit.add(kit.mul(a, U), np.broadcast_to(c, U.shape)))
            if ((new != st.L) != (U != st.L)).any():
                raise ConstructionError("internal: a relay of a step changed its dead points")
            U = new
            maps.append(layer)
        if n:
            for i, u in enumerate(U):
                on = u[u != st.L] - st.L
                steps[i] = dataclasses.replace(steps[i], on_min=float(np.abs(on).min()),
                                               on_max=float(np.abs(on).max()), on_sign=float(np.sign(on[0])))
        return maps, Context(kit, st, F, self.X, steps, list(U), self.gating)
