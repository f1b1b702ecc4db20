"""Condition 1 from chunk summaries: the chunked exhaustive check (:mod:`conditions.chunked`).

Every quantity :func:`conditions.condition1.check_exhaustive` reads off the whole table is the first
point of F, in some total order, among the points with a property that a chunk can test on its own,
so a chunk keeps the first such point and two summaries merge by keeping the first of the two:
associative, commutative and exact.  Two of the properties depend on L = sigma~(-Omega), which only the
chunk holding -Omega knows; for those a chunk keeps the *two first points with distinct sigma~ values*
(``a``, then ``b`` the first with sigma~ != sigma~(a)): for any L, the first point with sigma~ != L is
``a`` when sigma~(a) != L, else ``b``.  Merging keeps the first two distinct of the four candidates,
which is the pair of the union (the first with sigma~ != sigma~(a) in the union is either a chunk's
``a``, if its value differs, or that chunk's ``b``).  Order: value order (x ascending).

* L and the point -Omega (clause (a) at its start): the first point.
* The end of the dead tail, the first point that is not dead (sigma~ = L and sigma~' = 0): the first
  point where sigma~' != 0 or either overflows (never dead), or the first point with sigma~' = 0 and
  sigma~ finite != L (the pair trick).  z_d is the value before it, dead_count its rank.
* (b) the live state, the first point above the tail with sigma~ finite != L: every point up to z_d
  has sigma~ = L, so it is the first point of all F with sigma~ finite != L (the pair trick).
* (c) the constant state: the first in the order (|floor log2 sigma~|, |b|, b) among sigma~ a positive
  power of two; (d) the zero state: the first in (|z|, z) among sigma~ = 0; (d)'s counterexample: the
  least |sigma~| among finite values.
* (e) the pass state: the first in (max(0, -log2|sigma~'| - 1), |sigma~|, z) among sigma~' = +-2^k.
  Points up to z_d are dead (sigma~' = 0), so every such point is above the tail: no threshold needed.

These are the orders of the whole-table checker (numpy's stable sorts break its ties by position, i.e.
by value), so the verdict, witness and counterexample are the same (tests compare them on every format
of at most 16 bits, for many chunkings).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from condcheck.formats import num_text

from .chunks import float_bits
from .condition1 import CLAUSES, Condition1Witness, recheck
from .verdict import Verdict, exact_value

def _pt(c, i):
    return (float(c.P[i]), float(c.S[i]), float(c.D[i]))


def _first(mask: np.ndarray) -> int:
    if not mask.size:
        return -1
    i = int(np.argmax(mask))
    return i if mask[i] else -1


def _lex_first(idx: np.ndarray, *keys) -> int:
    """The index in ``idx`` whose keys are least lexicographically (the first key first); ties: the first."""
    keep = np.arange(idx.size)
    for k in keys:
        kk = k[keep]
        keep = keep[kk == kk.min()]
        if keep.size == 1:
            break
    return int(idx[keep[0]])


def _first_two(c, mask: np.ndarray):
    """(a, b): the first point of the mask, and the first with a sigma~ value different from a's."""
    i = _first(mask)
    if i < 0:
        return (None, None)
    j = _first(mask & (c.S != c.S[i]))
    return (_pt(c, i), _pt(c, j) if j >= 0 else None)


def _merge_two(x, y):
    cands = sorted((p for p in (*x, *y) if p is not None), key=lambda p: p[0])
    if not cands:
        return (None, None)
    a = cands[0]
    b = next((p for p in cands[1:] if p[1] != a[1]), None)
    return (a, b)


def _min_point(x, y):
    return y if x is None else x if y is None else min(x, y, key=lambda p: p[0])


def _min_keyed(x, y):
    if x is None:
        return y
    if y is None:
        return x
    return min(x, y, key=lambda t: t[0])


@dataclass
class Summary1:
    """What Condition 1 needs from a set of points (see the module docstring); ``None`` = no such point."""

    first: tuple
    not_dead: tuple
    flat: tuple                      # (a, b) over sigma~' = 0, sigma~ finite
    finite: tuple                    # (a, b) over sigma~ finite
    const: tuple                     # (key, point)
    zero: tuple
    pas: tuple
    min_abs_sigma: float
    counts: tuple                    # points, constant states, zero states, pass states

    @classmethod
    def of_chunk(cls, c) -> "Summary1":
        S, D, P = c.S, c.D, c.P
        fin = np.isfinite(S)
        flat = fin & (D == 0)
        es, p2s = float_bits(S)
        ed, p2d = float_bits(D)
        pow2_s = fin & (S > 0) & p2s
        pow2_d = np.isfinite(D) & (D != 0) & p2d
        const = zero = pas = None
        if pow2_s.any():
            i = np.flatnonzero(pow2_s)
            o = _lex_first(i, np.abs(es[i]), np.abs(P[i]), P[i])
            const = ((int(abs(es[o])), abs(float(P[o])), float(P[o])), _pt(c, o))
        zmask = S == 0
        if zmask.any():
            i = np.flatnonzero(zmask)
            o = _lex_first(i, np.abs(P[i]), P[i])
            zero = ((abs(float(P[o])), float(P[o])), _pt(c, o))
        if pow2_d.any():
            i = np.flatnonzero(pow2_d)
            pen = np.maximum(0, -1 - ed[i])                        # max(0, -log2|D| - 1), |D| = 2^ed
            absS = np.where(np.isnan(S[i]), np.inf, np.abs(S[i]))
            o = _lex_first(i, pen, absS, P[i])
            pas = ((int(max(0, -1 - int(ed[o]))), float(np.inf if np.isnan(S[o]) else abs(S[o])), float(P[o])),
                   _pt(c, o))
        return cls(first=_pt(c, 0), not_dead=_pt(c, x) if (x := _first(~flat)) >= 0 else None,
                   flat=_first_two(c, flat), finite=_first_two(c, fin), const=const, zero=zero, pas=pas,
                   min_abs_sigma=float(np.min(np.abs(S[fin]))) if fin.any() else np.inf,
                   counts=(int(P.size), int(pow2_s.sum()), int(zmask.sum()), int(pow2_d.sum())))

    def merge(self, o: "Summary1") -> "Summary1":
        return Summary1(first=min(self.first, o.first, key=lambda p: p[0]),
                        not_dead=_min_point(self.not_dead, o.not_dead),
                        flat=_merge_two(self.flat, o.flat), finite=_merge_two(self.finite, o.finite),
                        const=_min_keyed(self.const, o.const), zero=_min_keyed(self.zero, o.zero),
                        pas=_min_keyed(self.pas, o.pas), min_abs_sigma=min(self.min_abs_sigma, o.min_abs_sigma),
                        counts=tuple(a + b for a, b in zip(self.counts, o.counts)))

    def points(self):
        """Every point (x, sigma~, sigma~') this summary holds, for the witness re-check."""
        out = [self.first, self.not_dead, *self.flat, *self.finite]
        out += [t[1] for t in (self.const, self.zero, self.pas) if t is not None]
        return [p for p in out if p is not None]


def _val(v, fmt):
    return None if np.isnan(v) else exact_value(Fraction(v), fmt)


def decide(sm: Summary1, ctx) -> Verdict:
    """The exhaustive Condition 1 verdict from the merged summary (``ctx``: see conditions.chunked.Context)."""
    fmt, mags, names = ctx.fmt, ctx.mags, ctx.names(1)

    def fail(clause, counter):
        return Verdict(method="exhaustive", holds=False, failing_clause=f"{clause} {CLAUSES[clause]}",
                       counterexample=counter, evidence=ctx.head, seconds=ctx.seconds(), **names)

    x0, L, d0 = sm.first
    if np.isnan(L) or d0 != 0:
        return fail("(a)", {"z": exact_value(Fraction(x0), fmt), "sigma(z)": _val(L, fmt), "dsigma(z)": _val(d0, fmt),
                            "why": "the most negative value is not dead (sigma~' != 0 or overflow there)"})
    fa, fb = sm.flat
    cands = [sm.not_dead, fa if (fa is not None and fa[1] != L) else fb]
    cands = [p for p in cands if p is not None]
    first_live = min(cands, key=lambda p: p[0]) if cands else None
    if first_live is not None and first_live[0] <= -float(fmt.max) / 2:
        x, s, d = first_live
        return fail("(a)", {"z": exact_value(Fraction(x), fmt), "sigma(z)": _val(s, fmt), "dsigma(z)": _val(d, fmt),
                            "L": exact_value(Fraction(L), fmt), "why": "the tail ends below -Omega/2: this value is not dead"})
    n = mags.rank(first_live[0]) if first_live is not None else mags.total
    a, b = sm.finite
    live = a if (a is not None and a[1] != L) else b
    if live is None:
        above = "none" if n == mags.total else num_text(Fraction(mags.at_rank(n - 1)))
        return fail("(b)", {"L": exact_value(Fraction(L), fmt),
                            "why": f"sigma~ equals L at every finite value above z_d ({above})"})
    if sm.const is None:
        return fail("(c)", {"why": "sigma~ takes no positive power-of-two value"})
    if sm.zero is None:
        return fail("(d)", {"smallest_|sigma|": exact_value(Fraction(sm.min_abs_sigma), fmt),
                            "why": "sigma~ never rounds to 0"})
    if sm.pas is None:
        return fail("(e)", {"why": "sigma~' is never a nonzero power of two above the dead tail"})
    z_d = mags.at_rank(n - 1)
    ctx.record(sm.points())
    ctx.fetch([z_d])
    c, z, p = sm.const[1], sm.zero[1], sm.pas[1]
    q = Fraction
    w = Condition1Witness(q(z_d), q(L), n, q(live[0]), q(live[1]), q(c[0]), q(c[1]), q(z[0]), q(p[0]), q(p[2]), fmt)
    problems = recheck(ctx.recorded, w)
    if problems:
        raise AssertionError(f"internal: chunked Condition 1 witness fails its re-check: {problems}")
    _, n_const, n_zero, n_pass = sm.counts
    return Verdict(method="exhaustive", holds=True, witness=w, seconds=ctx.seconds(),
                   evidence=f"{ctx.head}; {n} values from -Omega to z_d are dead (sigma~ = L, sigma~' = 0); the first "
                            f"live value {num_text(q(live[0]))}; {n_const} constant states, {n_zero} zero states, "
                            f"{n_pass} pass states (all above the tail)", **names)
