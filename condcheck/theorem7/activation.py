"""The rounded activation as the generic construction reads it (``ActivationTable``): its table
(sigma~, sigma~' on every value), Condition 1's dead tail, the pass derivative d and the pass states,
and the relay biases that put a pre-activation on one; never the activation's name.
"""
from __future__ import annotations

import numpy as np

from ..activations import get_activation
from ..constructors.errors import ConstructionError
from ..constructors.kit import is_pow2
from ..constructors.witnesses import require_conditions
from ..formats import Format
from ..paper import paper_constants
from ..rounded_activation import get_rounded
from .chains import rn_add


class ActivationTable:
    """The rounded activation as the generic construction uses it.

    From the table (every value z of the format: sigma~(z), sigma~'(z)) and Condition 1's witness (the
    dead tail: sigma~ = L and sigma~' = 0 for every z <= z_dead) only; never the activation's name.
    ``d`` is the *pass derivative*: the largest power of two in (0, 1] that sigma~' takes at a live state;
    ``pass_z`` the live states with sigma~' = d, smallest |sigma~| first.
    """

    def __init__(self, activation, F: Format, implementation: str):
        act = get_activation(activation)
        self.name, self.F, self.implementation = act.name, F, implementation
        self.witnesses = require_conditions(act, F, implementation, 7)
        self.L, self.z_dead = self.witnesses.L, self.witnesses.z_dead
        constants = paper_constants(act.name, F)
        H = constants["H_sigma"]
        Ms = constants["M_sigma"]
        if H is None or Ms is None:
            raise ConstructionError(f"the paper states no H_sigma / M_sigma for {act.name}; the Theorem 7 constructor "
                                    f"needs them (the six paper activations)")
        self.H, self.M_sigma = float(H), float(Ms)
        tab = get_rounded(act, F, implementation).table()
        ok = ~(tab.sigma_overflow | tab.dsigma_overflow) & np.isfinite(tab.sigma) & np.isfinite(tab.dsigma)
        self.z, self.t, self.dt = tab.points[ok], tab.sigma[ok], tab.dsigma[ok]
        self.T_table = dict(zip(self.z.tolist(), self.t.tolist()))
        self.dT_table = dict(zip(self.z.tolist(), self.dt.tolist()))
        live = self.z > self.z_dead
        cands = sorted({float(v) for v in self.dt[live] if 0 < v <= 1 and is_pow2(float(v))})
        if not cands:
            raise ConstructionError(f"{act.name} on {F.name}: no live state has sigma~' a power of two in (0, 1]")
        self.d = cands[-1]
        m = live & (self.dt == self.d)
        order = np.lexsort((self.z[m], np.abs(self.t[m])))
        self.pass_z = self.z[m][order]
        self.pass_set = set(self.pass_z.tolist())
        self.values = F.values()
        self._rb = {}

    def T(self, z: float) -> float:
        return self.T_table[float(z)]

    def dT(self, z: float) -> float:
        return self.dT_table[float(z)]

    def dead(self, z) -> bool:
        return float(z) <= self.z_dead

    def relay_bias(self, P_on: float, P_off=None):
        """(b, z_on, z_off): a bias putting the pre-activation RN(P_on + b) on a pass state (sigma~' = d).

        Preferred: the off pre-activation RN(P_off + b) dead (then the neuron blocks every backward value
        at the points where its input is the off value), then the smallest |sigma~(z_on)| (small forward
        values keep the next products finite and the chain's output absorbable), then the smallest
        |sigma~'(z_off)|, then the smallest |b|.
        """
        key = (float(P_on), None if P_off is None else float(P_off))
        if key in self._rb:
            return self._rb[key]
        F, B = self.F, self.values
        Zon = rn_add(np.full_like(B, P_on), B, F)
        ok = np.isin(Zon, self.pass_z)
        Zoff = rn_add(np.full_like(B, P_off), B, F) if P_off is not None else np.zeros_like(B)
        ok &= np.isfinite(Zoff) & np.isin(Zoff, self.z)
        if not ok.any():
            raise ConstructionError(f"no bias puts the pre-activation {P_on!r} on a pass state of {self.name}")
        idx = np.flatnonzero(ok)
        ton = np.array([abs(self.T_table[v]) for v in Zon[idx].tolist()])
        if P_off is not None:
            alive = np.array([0 if v <= self.z_dead else 1 for v in Zoff[idx].tolist()])
            doff = np.array([abs(self.dT_table[v]) for v in Zoff[idx].tolist()])
            ton = np.maximum(ton, np.array([abs(self.T_table[v]) for v in Zoff[idx].tolist()]))
        else:
            alive = doff = np.zeros(len(idx))
        k = idx[np.lexsort((np.abs(B[idx]), doff, ton, alive))[0]]
        r = (float(B[k]), float(Zon[k]), None if P_off is None else float(Zoff[k]))
        self._rb[key] = r
        return r
