"""Layer 2 of the construction: the steps (a separator of ``condcheck.separators`` turned into a step
row) and the quantizer chains (c_k = succ(2^k)) that snap a step's on side far from the dead tail.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..constructors.kit import enumerated, in_format, Kit
from ..errors import CondcheckError
from ..formats import Format
from ..op_tables import op_tables
from ..ops import add_array
from . import tuning
from .errors import ConstructionError
from .states import States


@dataclass
class Step:
    coord: int
    gap: int                 # index of the upper value of the gap in the coordinate's sorted values
    up: bool                 # True: on iff x_j >= upper value; False: on iff x_j <= lower value
    w: float
    b: float
    s: float                 # sign applied to the separator
    kappa: float
    k0: int
    K: int
    on_min: float = 0.0      # min |T - L| of the boosted step over the on side
    on_max: float = 0.0
    on_sign: float = 0.0
    boost_a: float = 1.0     # the boost T(boost_a U + boost_c) of the step U (layer 3)
    boost_c: float = 0.0
    on_lo: float = 0.0       # smallest and largest boosted on value (the gates' bound over other points)
    on_hi: float = 0.0
    sharpen: tuple = ()      # (w, b) of layers T(w n + b) between the separator and the step row
    reboost: tuple = ()      # (a, c) of boosts after the boost (pad the step to the network's step depth)
    lift: tuple = ()         # ((a, c),) of the boost after a lift; boost_a, boost_c are then the lift


def quantize(kit: Kit, st: States, v, on, why: str):
    """((pre, k0, K), why): the longest quantizer chain c_k0 .. c_K that fits and leaves the on side
    (v >= g > 0) live, on one side of L, and the dead side (v <= 0) dead; pre = chain(v) (+) z_d.
    (None, reason) when no chain does."""
    F, L = kit.fmt, st.L
    k0 = max(math.frexp(float(v[on].min()))[1] - 1 + F.M, F.e_min)
    chains = quantizer_chains(kit, v, k0)
    # (K = e_max last: c_K = succ(2^e_max) exists in most formats but leaves little room below Omega)
    for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1, F.e_max]:
        if K not in chains:
            continue
        try:
            pre = kit.add(chains[K], st.z_dead)        # K = k0 - 1: no chain at all
            sign = np.sign(kit.T(pre[on]) - L)
        except ConstructionError:
            continue
        if not (st.dead(pre[~on]).all() and not st.dead(pre[on]).any()):
            why = "quantized pre-activations do not split into dead and live states"
        elif (sign == 0).any() or (sign != sign[0]).any():
            why = f"on-side values are not all on one side of the dead value {L!r}"
        else:
            return (pre, k0, K), why
    return None, why


def quantizer_chains(kit: Kit, v, k0: int) -> dict:
    """{K: v (+) c_k0 (+) (-c_k0) (+) ... (+) c_K (+) (-c_K)} (c_k = succ(2^k), rounded sums left to right)
    for K = k0 - 1 (no chain) up to the first K whose c_K is not a value of the format or whose sums
    overflow (that K and every longer chain are absent).  Each chain extends the one before by one step
    (the same sums in the same order), so all of them cost one pass.  On float64 (about 2,000 exponents)
    the steps run in numpy directly: IEEE float64 addition is RN_float64."""
    F = kit.fmt
    native = F.name == "float64" and np.ndim(v) == 1
    tb = None if native or np.ndim(v) != 1 else op_tables(F)
    if tb is None and np.ndim(v) == 1 and enumerated(F) and (len(v) >= tuning.CHAIN_MAP_MIN
                                                             or getattr(kit, "chain_maps", False)):
        steps = _ChainMaps.of(F)
        iv = steps.index(v)
        if iv is not None:
            return steps.chains(v, iv, k0)
    if tb is not None:
        try:
            iv = tb.index(v)
        except CondcheckError:                     # v holds a number outside the format: round it
            tb = None
    out = {k0 - 1: v}
    if tb is not None:
        # on the index tables (8-bit formats): the same sums, looked up; an overflow index propagates
        # through the table, so the chain stops where the rounded sums would overflow.  Every sum adds
        # a nonzero c, so a zero result is +0, the table's zero (tests/test_op_tables.py).  The steps
        # k0 .. K composed into one index map per K (once per format and k0), so a row costs one gather:
        # the map of an index is the chain of that index, step by step as on the row itself
        ks, maps = chain_index_maps(tb, F, k0)
        rows = maps[:, iv]
        bad = (rows == tb.over).any(axis=1)
        n = int(np.argmax(bad)) if bad.any() else len(ks)
        vals = tb.value(rows[:n])
        for j in range(n):
            out[ks[j]] = vals[j]
        return out
    for k in range(k0, F.e_max + 1):
        c = math.ldexp(1 + 2.0 ** -F.M, k)
        if not in_format(F, c):
            break
        if native:
            with np.errstate(over="ignore", invalid="ignore"):
                w = v + c
                w = w - c if np.isfinite(w).all() else w
            if not np.isfinite(w).all():
                break
            v = w
        else:
            try:
                v = kit.add(kit.add(v, c), -c)
            except ConstructionError:
                break
        out[k] = v
    return out


def distinct_indices(idx, n: int) -> np.ndarray:
    """np.unique(idx)'s values (as intp) for indices in [0, n): by a mask over the n indices instead of a
    sort (the last layer's sets S repeat values; tests/test_op_tables.py compares the two)."""
    seen = np.zeros(n, bool)
    seen[idx] = True
    return np.flatnonzero(seen)


def chain_index_maps(tb, F: Format, k0: int):
    """(ks, maps): maps[j][i] = the index of the chain i (+) c_k0 (+) (-c_k0) ... (+) c_K (+) (-c_K) for
    K = ks[j], the steps of ``quantizer_chains`` on the index tables up to the first c_K that is not a value of F
    (the overflow index maps to itself), kept per (tables, k0)."""
    cache = tb.__dict__.setdefault("_chain_maps", {})
    hit = cache.get(k0)
    if hit is None:
        m = np.arange(tb.over + 1, dtype=np.int16)
        ks, rows = [], []
        for k in range(k0, F.e_max + 1):
            c = math.ldexp(1 + 2.0 ** -F.M, k)
            if not in_format(F, c):
                break
            ic = tb.index_of(c)
            m = tb.add_table[tb.add_table[m, ic], int(tb.neg_table[ic])]
            ks.append(k)
            rows.append(m)
        hit = cache[k0] = (ks, np.array(rows, dtype=np.int16).reshape(len(rows), tb.over + 1))
    return hit


class _ChainMaps:
    """One chain step v -> RN(RN(v + c_k) - c_k) (c_k = succ(2^k)) as an index map over every value of a
    16-bit format (no ``op_tables``: 65,279 x 65,279 sums would not fit), built once per k by the same
    two ``add_array`` passes over all values that ``quantizer_chains`` makes on each row, then a gather per row.

    Why it is the same chain: each step is a function of the value alone, so looking up its result is
    the rounded sums themselves; an overflow in either sum maps to ``over``, and a row that reaches it
    stops the chain there, as the ConstructionError of ``Kit.add`` does.  Every sum adds c_k != 0, so a
    zero result is +0 (RN(x + y) is -0 only for x = y = -0), the zero ``fmt.values()`` holds.  Only the
    unchained row k0 - 1 keeps the caller's array (its zeros may be -0).  On bfloat16 a chain runs over
    about 250 exponents, and a 4,096-point sample has 8,190 steps over 4,096 values: 4 x 10^9 rounded
    sums as arrays, or 8,190 x 250 gathers."""

    _of: dict = {}

    def __init__(self, F: Format):
        self.F, self.V = F, F.values()
        self.over = len(self.V)
        self.maps = {}          # k -> uint16 index map (over -> over), or None when c_k is not a value

    @classmethod
    def of(cls, F: Format) -> "_ChainMaps":
        hit = cls._of.get(F.name)
        if hit is None or hit.F is not F:
            hit = cls._of[F.name] = cls(F)
        return hit

    def index(self, v):
        """Indices of v's elements in the values, or None when one is not a value (NaN, out of format)."""
        k = np.minimum(np.searchsorted(self.V, v), self.over - 1)
        return k if (self.V[k] == v).all() else None

    def step(self, k: int):
        if k not in self.maps:
            F = self.F
            c = math.ldexp(1 + 2.0 ** -F.M, k)
            if not in_format(F, c):
                self.maps[k] = None
            else:
                V = self.V
                s1, o1 = add_array(V, np.full_like(V, c), F)
                s2, o2 = add_array(np.where(o1, 0.0, s1), np.full_like(V, -c), F)
                bad = o1 | o2
                m = np.full(self.over + 1, self.over, np.uint16)
                m[:-1][~bad] = np.searchsorted(V, s2[~bad])
                self.maps[k] = m
        return self.maps[k]

    def chains(self, v, iv, k0: int) -> dict:
        """``quantizer_chains(kit, v, k0)`` by the maps (iv: v's indices)."""
        out = {k0 - 1: v}
        for k in range(k0, self.F.e_max + 1):
            m = self.step(k)
            if m is None:
                break
            iv = m[iv]
            if (iv == self.over).any():
                break
            out[k] = self.V[iv]
        return out
