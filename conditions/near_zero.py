"""Tiny arguments of the exact implementation: sigma~ from the tangent at zero, certified by Taylor.

Where f(0) = 0 and f'(0) = c is +-2^k, Taylor's theorem gives f(x) = c*x + r with r = f''(xi) x^2 / 2 for
some xi between 0 and x.  One interval enclosure [L, U] of f'' over the real interval from 0 to the run's
farthest point (:func:`conditions._tail.enclose_interval`) bounds |r| and, when L > 0 or U < 0, gives its
sign.  y0 = c*x is a float64 number (a power-of-two scaling), and when the bound on |r| is below the
float64 spacing on both sides of y0, y0 + r lies strictly between y0's float64 neighbours.  The format's
midpoints are float64 numbers (:func:`_format_fits`), so no midpoint lies in that open interval except
perhaps y0 itself:

* y0 is not a midpoint: RN_F(y0 + r) = RN_F(y0), whatever the sign of r;
* y0 is the midpoint of u < v: RN_F(y0 + r) = v when r > 0 and u when r < 0; undecided when f'' is not
  known to keep one sign (those points are left to the caller's certified per-point path).

Why it exists: gelu(x), gelu_tanh(x) and swish(x) are x/2 plus a term of order x^2, and on float32's
subnormals x/2 is a midpoint for every odd significand.  No float64 enclosure can tell on which side of
the midpoint the value lies, so each such point used to go to the multiprecision evaluation (about 360
CPU s per chunk of 2^20 magnitudes for gelu_tanh).  Tests compare every point this rule decides with that
evaluation.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import mpmath.libmp as L
import numpy as np
import sympy

from condcheck.activations import x as X_SYMBOL
from condcheck.formats import Format
from condcheck.rounding import round_array

from ._tail import enclose_interval

#: the rule is tried on arguments of at most this magnitude.  It can only decide where x^2 |f''| / 2 is
#: below float64's spacing at c*x, i.e. |x| below about 2^-52 |c| / max|f''|; beyond, a midpoint of the
#: format is far from c*x on float64's scale and the caller's float64 enclosures decide
TINY = 2.0 ** -48
PRECISION = 96
_NOT_SMOOTH = (sympy.Piecewise, sympy.Abs, sympy.Max, sympy.Min, sympy.sign, sympy.Heaviside)


@lru_cache(maxsize=None)
def tangent_at_zero(expr):
    """(c, f'') when f(0) = 0 and f'(0) = c = +-2^k for a smooth expression (no piecewise parts); else None."""
    f = sympy.sympify(expr)
    if f.has(*_NOT_SMOOTH):
        return None
    d1 = sympy.diff(f, X_SYMBOL)
    c0, c1 = sympy.simplify(f.subs(X_SYMBOL, 0)), sympy.simplify(d1.subs(X_SYMBOL, 0))
    if c0 != 0 or not c1.is_Rational or c1 == 0:
        return None
    q = abs(Fraction(int(c1.p), int(c1.q)))
    if q.numerator & (q.numerator - 1) or q.denominator & (q.denominator - 1) or not 2 ** -64 <= q <= 2 ** 64:
        return None                         # c*x would not be exact (not a power of two, or far from 1)
    return float(Fraction(int(c1.p), int(c1.q))), sympy.diff(d1, X_SYMBOL)


def _format_fits(fmt: Format) -> bool:
    """The format's values and midpoints are float64 numbers, and x*x of any value x is an exact float64
    normal number (2p <= 53, smallest subnormal squared >= 2^-1022), so the bound on |r| is an upper
    bound; c*x (|c| in [2^-64, 2^64]) stays a float64 normal number too."""
    return 2 * fmt.p <= 53 and 2 * (fmt.e_min - fmt.M) >= -1022 + 64 and fmt.e_max + 64 <= 1000


def fill_tiny(expr, fmt: Format, x: np.ndarray, out: np.ndarray, done: np.ndarray) -> int:
    """RN_F(expr) at the points of ``x`` (one sign, no zero) with |x| <= TINY that are not ``done`` and
    that the rule decides: written to ``out``, marked in ``done``.  Returns how many it decided."""
    tangent = tangent_at_zero(expr)
    if tangent is None or not _format_fits(fmt):
        return 0
    sel = np.flatnonzero(~done & (np.abs(x) <= TINY) & (x != 0))
    if not sel.size:
        return 0
    c, f2 = tangent
    xs = x[sel]
    a, b = Fraction(float(xs.min())), Fraction(float(xs.max()))
    lo, hi = enclose_interval(f2, min(a, Fraction(0)), max(b, Fraction(0)), PRECISION)
    if L.fnan in (lo, hi) or L.finf in (lo, hi, L.mpf_neg(lo), L.mpf_neg(hi)):
        return 0
    bound = max(L.to_float(L.mpf_abs(lo), rnd="u"), L.to_float(L.mpf_abs(hi), rnd="u"))
    r_pos, r_neg = bool(L.mpf_gt(lo, L.fzero)), bool(L.mpf_lt(hi, L.fzero))

    y0 = xs * c                                          # exact: a power-of-two scaling in float64's normal range
    rb = np.nextafter((xs * xs) * (bound / 2), np.inf)   # >= x^2 |f''| / 2: x^2 is exact, one rounding
    fits = (rb < y0 - np.nextafter(y0, -np.inf)) & (rb < np.nextafter(y0, np.inf) - y0)
    v0, _ = round_array(y0, fmt)
    d = y0 - v0                                          # exact (Sterbenz, or v0 = 0)
    w = y0 + d                                           # the mirror of v0 about y0: exact
    wr, _ = round_array(w, fmt)
    midpoint = (d != 0) & (wr == w)                      # y0 halfway between v0 and w, both format values
    up, down = np.maximum(v0, w), np.minimum(v0, w)
    val = np.where(midpoint, up if r_pos else down, v0)
    decided = fits & (~midpoint | r_pos | r_neg)
    k = sel[decided]
    v = val[decided]
    out[k] = np.where(v == 0, 0.0, v)
    done[k] = True
    return int(k.size)
