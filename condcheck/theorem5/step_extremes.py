"""Steps built on four values instead of a row over the whole domain (d = 1 boxes of 16-bit formats).

A step's first build (``step_rounds._first_build``) maps the separator row n (one value per coordinate
value) through the step row v = s n (+) kappa, the quantizer chain, T, the boost and T again, and every
decision it takes reads that row through a minimum, a maximum, an "all" or an "any" of a monotone test
(dead: z <= z_d; an overflow: |value| beyond Omega), or through the set of T's values on the on side.  Each
map before T is monotone in its input (a rounded sum or product with a constant: RN is monotone), so the
smallest and largest value of a side stay the smallest and largest through them; where T is monotone on
the live values of a side (``MonotoneRuns``: T over every value of the format, once), the same holds
through T, and then every decision reads the same numbers from the four values (each side's smallest and
largest separator value) as from the whole row, and T's set of on values has the same extremes.

``Certifying`` is the kit those four values are run with: its T and its activation's ``value_array``
raise ``NotCertified`` where T is not monotone on the live values they are given (or where a T value of
an on side is a zero, whose sign an extreme of the row need not share), and its boosts are remembered
apart from those of whole rows (``boosts._boost`` keys them by the set of on values).  Any NotCertified
sends the step back to the whole row (``step_rounds``), as does any ConstructionError (whose message may
list the row's values).  tests/test_theorem5_step_extremes.py builds every step of float16 samples both
ways and compares them field by field.

Why: on the 57,345-point float16 box a step row costs about 20 rounded passes over 57,345 values (18 ms),
and a box has 114,688 steps; the four values cost about 1 ms per step, and a separator row (a few hundred
distinct (w, b) over a box; sigmoid's are targeted per gap: 761 for one chunk's 1,016 steps) is
evaluated once while its steps are built.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..errors import CondcheckError


class NotCertified(CondcheckError):
    """The four-value build does not decide this step: build it on the whole row."""


class MonotoneRuns:
    """Where T (the rounded activation, overflow breaking a run) is monotone, over the sorted values of a
    format of at most 16 bits: ``monotone(lo, hi)`` in O(1)."""

    def __init__(self, kit):
        V = kit.fmt.values()
        t, o = kit.R.value_array(V)
        t = np.where(o, np.nan, t)
        self.V = V
        with np.errstate(invalid="ignore"):
            up = t[1:] >= t[:-1]                    # (NaN: False, so a run stops at an overflow)
            down = t[1:] <= t[:-1]
        self.finite = np.isfinite(t)
        self.up_end, self.down_end = _run_ends(up), _run_ends(down)

    @classmethod
    def of(cls, kit) -> "MonotoneRuns":
        hit = kit.__dict__.get("_monotone_runs")
        if hit is None:
            hit = kit._monotone_runs = cls(kit)
        return hit

    def monotone(self, lo: float, hi: float) -> bool:
        """Whether T is finite and nondecreasing, or finite and nonincreasing, on every value in [lo, hi]."""
        V = self.V
        i, j = int(V.searchsorted(lo)), int(V.searchsorted(hi))
        if i >= len(V) or j >= len(V) or V[i] != lo or V[j] != hi or not self.finite[i]:
            return False
        return self.up_end[i] >= j or self.down_end[i] >= j


def _run_ends(step_ok):
    """end[i] = the largest j >= i with step_ok[i .. j - 1] all True (step_ok[k]: from value k to k + 1)."""
    n = len(step_ok) + 1
    breaks = np.append(np.flatnonzero(~step_ok), n - 1)
    return breaks[np.searchsorted(breaks, np.arange(n))]


class _CertifyingR:
    """The rounded activation's ``value_array``, certified (``Certifying.certify``)."""

    def __init__(self, owner):
        self._owner = owner

    def value_array(self, z):
        r = self._owner.kit.R.value_array(z)
        self._owner.certify(z, r[0])
        return r

    def __getattr__(self, name):
        return getattr(self._owner.kit.R, name)


class Certifying:
    """A kit for the four values of a step (see the module docstring): the kit's arithmetic, its T and
    its activation's values certified, and its own memo of boosts.  ``chain_maps``: quantizer chains by
    the format's index maps whatever the length of the row (``steps._chains``: the same sums)."""

    chain_maps = True

    def __init__(self, kit, st):
        self.kit, self.st = kit, st
        self.runs = MonotoneRuns.of(kit)
        self.boosts = kit.__dict__.setdefault("_boosts_of_extremes", {})
        self.R = _CertifyingR(self)

    def __getattr__(self, name):
        return getattr(self.kit, name)

    def certify(self, z, t):
        """NotCertified unless the T values t of the four-value row z stand for those of the whole row.

        The live values of z (those above the dead tail, where T = L) are the extremes of the row's live
        values.  Where their T values reach L or lie on both sides of it, so do the whole row's (the four
        are values of the row), and every reader of a side's T values rejects such a side (a step's on
        values, a boost's: all on one side of L, none equal to it).  Elsewhere T must be monotone between
        them (then its extremes on the row are theirs), and none of them zero (a minimum or maximum of
        the row that is zero need not have their sign of zero).  Where one of them overflows, so does the
        whole row, and its readers reject it (``Kit.T`` raises, ``value_array``'s callers skip it)."""
        z = np.asarray(z, float).ravel()
        t = np.asarray(t, float).ravel()
        live = z > self.st.z_dead
        if not live.any():
            return
        zl, tl = z[live], t[live]
        L = self.st.L
        if not np.isfinite(tl).all() or tl.min() <= L <= tl.max():
            return              # (an overflow at one of the four: the whole row overflows there too)
        if not self.runs.monotone(float(zl.min()), float(zl.max())):
            raise NotCertified("T is not monotone on the values of a side")
        if (tl == 0).any():
            raise NotCertified("a T value at an extreme of a side is zero")

    def T(self, z, what="an activation value"):
        t = self.kit.T(z, what)
        self.certify(z, t)
        return t


class SeparatorRows:
    """The separator rows n = T(w x + b) of one coordinate's values, with each side's smallest and largest
    value for every gap (prefix and suffix extremes); None for a row holding -0 (an extreme of a side
    need not then carry the sign of zero that each of its values has).

    The last ``KEPT`` rows are kept (least recently used out): a step's two directions at a gap, and the
    gaps of one separator, read them one after the other.  Keeping every row cost memory, not time: the
    float16 sigmoid box's separators are targeted per gap (761 distinct (w, b) among one chunk's 1,016
    steps, each read only at its own gap), and their four arrays of 59,393 values held 1.4 GB."""

    #: the rows kept (each four float64 arrays of the coordinate's values: 1.9 MB on a 16-bit box)
    KEPT = 64

    def __init__(self, kit, vals):
        self.kit, self.vals, self.rows = kit, vals, OrderedDict()

    def representatives(self, w, b, gap: int, up: bool):
        """([dead min, dead max, on min, on max] of the separator row at (gap, up), the on mask of those
        four), or None where the row holds -0."""
        key = (w, b)
        ext = self.rows.get(key)
        if ext is None:
            n = self.kit.T_row([(w, self.vals)], b)
            if (np.signbit(n) & (n == 0)).any():
                ext = False
            else:
                ext = (np.minimum.accumulate(n), np.maximum.accumulate(n),
                       np.minimum.accumulate(n[::-1])[::-1], np.maximum.accumulate(n[::-1])[::-1])
            self.rows[key] = ext
            if len(self.rows) > self.KEPT:
                self.rows.popitem(last=False)
        else:
            self.rows.move_to_end(key)
        if ext is False:
            return None
        pmin, pmax, smin, smax = ext
        below = (pmin[gap - 1], pmax[gap - 1])            # vals[:gap]
        above = (smin[gap], smax[gap])                    # vals[gap:]
        dead, on = (below, above) if up else (above, below)
        return np.array([dead[0], dead[1], on[0], on[1]], float), np.array([False, False, True, True])
