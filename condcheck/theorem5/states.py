"""The activation's states: the dead tail, live states with T' != 0, constants and zeros (``find_states``,
from Condition 1's witness).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..constructors.kit import enumerated, is_pow2, Kit, near_values
from ..formats import Format
from ..rounding import round_array

if TYPE_CHECKING:
    from ..constructors.witnesses import Witnesses


@dataclass
class States:
    """Pre-activation states of T that the construction uses (all values of an enumerable format)."""

    z: np.ndarray            # candidate pre-activations, ascending
    t: np.ndarray            # T(z)
    dt: np.ndarray           # T'(z)
    L: float                 # the dead-tail value
    z_dead: float            # every candidate <= z_dead is dead: T = L and T' = 0
    dead_count: int

    def dead(self, z) -> np.ndarray:
        return np.asarray(z) <= self.z_dead

    def dead_by_index(self, tb) -> np.ndarray:
        """``dead`` at every table index of ``tb`` (``op_tables``), the overflow index last (not dead);
        kept per tables."""
        hit = self.__dict__.get("_dead_by_index")
        if hit is None or hit[0] is not tb:
            hit = self._dead_by_index = (tb, np.append(self.dead(tb.values), False))
        return hit[1]

    @property
    def passes(self):
        """States with T' a nonzero power of two (exact gradient scaling)."""
        m = np.array([is_pow2(v) for v in self.dt])
        return self.z[m], self.t[m], self.dt[m]

    @property
    def constants(self):
        """States whose value is a positive power of two (constant neurons)."""
        m = np.array([is_pow2(v) and v > 0 for v in self.t])
        return self.z[m], self.t[m]


def _state_candidates(F: Format, z_dead: float) -> np.ndarray:
    """Pre-activations whose states stand for the activation on formats too large to enumerate.

    The values +-m 2^e with a short significand m (1, 1.25, 1.5, 1.75; 1 and 1.5 for float64-sized
    formats, whose certified evaluations are slow), every exponent for formats up to float32's size and
    |e| <= 96 beyond (with the powers of two of every exponent), above the dead tail, plus 0, z_d and the
    values next to z_d.  Every search of the construction keeps
    only what its exact test accepts, so a coarse set can make a search fail but never make it wrong.
    """
    wide = F.e_max > 255
    mants = np.array([1.0, 1.5] if wide else [1.0, 1.25, 1.5, 1.75])
    lo, hi = (max(F.e_min - F.M, -96), min(F.e_max, 96)) if wide else (F.e_min - F.M, F.e_max)
    e = np.arange(lo, hi + 1)
    m = np.ldexp(mants[None, :], e[:, None]).ravel()
    if wide:       # powers of two of every exponent: sources and passes must meet huge and tiny inputs
        m = np.concatenate([m, np.ldexp(1.0, np.arange(F.e_min - F.M, F.e_max + 1))])
    z = np.concatenate([m, -m, [0.0]])
    z = z[z > z_dead]       # the tail below z_d is dead by Condition 1: only st.dead() asks about it
    z = np.concatenate([z, near_values(F, np.array([z_dead]), 2), [z_dead]])
    r, over = round_array(z, F)
    return np.unique(r[~over])


def find_states(kit: Kit, witnesses: Witnesses) -> States:
    """The states of T on every value of the format (at most 16 bits), else on ``_state_candidates``;
    the dead tail is Condition 1's (``witnesses``: ``constructors.witnesses.require_conditions``)."""
    z_dead, L = witnesses.z_dead, witnesses.L
    if enumerated(kit.fmt):
        tab = kit.R.table()
        z, t, dt, o1, o2 = tab.points, tab.sigma, tab.dsigma, tab.sigma_overflow, tab.dsigma_overflow
    else:
        z = _state_candidates(kit.fmt, z_dead)
        t, o1 = kit.R.value_array(z)
        extra = np.setdiff1d(_pow2_preimages(kit, z[~o1], t[~o1]), z)
        te, oe = kit.R.value_array(extra)
        order = np.argsort(np.concatenate([z, extra]), kind="stable")
        z, t, o1 = (np.concatenate(p)[order] for p in ((z, extra), (t, te), (o1, oe)))
        dt, o2 = kit.R.derivative_array(z)
    ok = ~(o1 | o2)
    z, t, dt = z[ok], t[ok], dt[ok]
    return States(z, t, dt, L, z_dead, int(np.count_nonzero(z <= z_dead)))


def _ordinal(x: np.ndarray) -> np.ndarray:
    """float64 -> int64, strictly increasing with the value (-0 and +0 both map to 0)."""
    b = np.asarray(x, np.float64).view(np.int64)
    return np.where(b < 0, -(b & np.int64(0x7FFFFFFFFFFFFFFF)), b)


def _from_ordinal(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, np.int64)
    return np.where(k < 0, -(-k).view(np.float64), k.view(np.float64))


def _pow2_preimages(kit: Kit, z: np.ndarray, t: np.ndarray, span: int = 64) -> np.ndarray:
    """Values q of the format with T(q) a positive power of two 2^k (|k| <= span) that the sampled
    states miss (tanh~(q) = 1/2 at q = 0.549...): wherever T crosses 2^k between consecutive samples,
    bisect on the values between them (float64 order, rounded to the format) and keep the neighbours q
    with T(q) = 2^k exactly.  Constants and value outputs need such states (a power of two P makes f*/P
    exact); a bounded activation has few of them among short significands."""
    F = kit.fmt
    lo_k, hi_k = max(F.e_min - F.M, -span), min(F.e_max, span)
    P = np.ldexp(1.0, np.arange(lo_k, hi_k + 1))
    P = P[~np.isin(P, t)]                       # powers of two some sampled state already gives
    side = np.sign(t[:, None] - P[None, :])
    i, j = np.nonzero(side[:-1] * side[1:] < 0)
    if len(i) == 0:
        return np.zeros(0)
    target, rising = P[j], t[i + 1] > t[i]
    lo, hi = _ordinal(z[i]), _ordinal(z[i + 1])
    for _ in range(64):
        open_ = hi - lo > 1
        if not open_.any():
            break
        mid = lo + (hi - lo) // 2
        zm, over = round_array(_from_ordinal(mid), F)
        tm, ot = kit.R.value_array(np.where(over, 0.0, zm))
        below = np.where(rising, tm < target, tm > target) & ~over & ~ot
        lo = np.where(open_ & below, mid, lo)
        hi = np.where(open_ & ~below, mid, hi)
    cand = near_values(F, _from_ordinal(np.concatenate([lo, hi])), 2)
    tc, oc = kit.R.value_array(cand)
    return cand[~oc & (tc > 0) & (np.abs(np.frexp(tc)[0]) == 0.5)]
