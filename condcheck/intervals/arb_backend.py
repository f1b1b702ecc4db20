"""The Arb interval backend: python-flint ``arb`` balls at ``prec`` bits, one point.

Every operation and function of Arb returns a ball that provably contains the true value, so this
backend needs no widening and no accuracy assumption.  Where a ball can not carry the answer
(``exp(1e300)`` is ``[+/- inf]`` for Arb; 1/ball of a ball that lost its sign) it works on the ends of
the interval with the function's monotonicity and limits.  Exact arguments with exact dyadic values
(exp(0) = 1, tanh(0) = 0, 1/(1 + 1) = 1/2, ...) give exact balls.  The certain path of
:mod:`condcheck.rounded_activation` uses it first; the mpmath backend stays the fallback.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import mpmath.libmp as L

from condcheck.errors import CondcheckError

from .decide import PointConditions, decided_by_sign
from .mp_backend import mpf_is_special

__all__ = ["ArbBackend", "HAVE_ARB"]

try:                                                    # python-flint is a dependency; mpmath stays the
    import flint as _flint                              # fallback when it is missing
    _arb = _flint.arb
    HAVE_ARB = True
except ImportError:                                     # pragma: no cover - exercised without flint only
    _flint = _arb = None
    HAVE_ARB = False

_PINF, _NINF = math.inf, -math.inf
_ARB_CLAMP = 2 ** 40        # exp/sinh/cosh beyond |t| = 2^40: bounded by their value at 2^40 (monotone)


def _is_ball(v):
    return type(v) is _arb


def _lo_of(b):
    """Lower end of a ball: an exact arb, or -inf when the ball is not finite (no information)."""
    return b.lower() if b.is_finite() else _NINF


def _hi_of(b):
    return b.upper() if b.is_finite() else _PINF


def _pair(a):
    """(lo, hi) of a ball or a pair; ends are exact arbs or the floats -inf, +inf."""
    if type(a) is tuple:
        return a
    if a.is_finite():
        return a.lower(), a.upper()
    return _NINF, _PINF


def _mk(lo, hi):
    """A ball when both ends are finite (their union), else the pair.  The pair is also kept when the
    ball would lose the sign of the interval (ends of very different magnitudes, e.g. cosh of a wide
    ball): the ball is valid but 1/ball would be unbounded."""
    if type(lo) is _arb and type(hi) is _arb:
        if lo is hi:
            return lo
        u = lo.union(hi)
        if (lo > 0 and not u > 0) or (hi < 0 and not u < 0):
            return lo, hi
        return u
    return lo, hi


def _sgn(v):
    """-1, 0 or 1: the sign of an exact arb or of +-inf."""
    if type(v) is float:
        return 1 if v > 0 else -1
    return 1 if v > 0 else (-1 if v < 0 else 0)


def _amin(vs):
    m = vs[0]
    for v in vs[1:]:
        if type(m) is float:
            if m == _NINF:
                return m
            m = v                                       # m = +inf: anything is at most it
        elif type(v) is float:
            if v == _NINF:
                return v
        elif v < m:
            m = v
    return m


def _amax(vs):
    return _neg_end(_amin([_neg_end(v) for v in vs]))


def _neg_end(v):
    return -v


class ArbBackend(PointConditions):
    """Interval operations on Arb balls (python-flint) at ``prec`` bits (one point).

    A value is an ``arb`` ball, or, where a ball can not say it (a half-infinite interval such as
    ``exp(t)`` for ``t = 1e300``, or no information at all), a pair ``(lo, hi)`` whose ends are exact
    arbs or the floats ``-inf``/``+inf``.  Arb's operations and functions return balls that contain the
    true value (rigorous error bounds, no widening assumption); a function whose ball is not finite is
    redone on the ends of its argument with the known limits and monotonicity of the function.  An exact
    argument whose value is an exact dyadic (exp(0) = 1, tanh(0) = 0, erfc(0) = 1, log(1) = 0, 1/2, ...)
    gives an exact ball (radius 0)."""

    name = "arb"

    def __init__(self, prec: int):
        self.prec = int(prec)
        self._consts = {}
        self._clamp = {}

    # -- points and constants ------------------------------------------------------------------------
    def var(self, X):
        return X[1]

    def point(self, q):
        """The ball of an exact point: a Fraction, or a float (exact; the fast path of float formats)."""
        if type(q) is float:
            return (q, _arb(q))
        d = q.denominator
        if d & (d - 1) == 0:                            # dyadic: exact
            v = _arb(mpmath.mp.make_mpf(L.from_man_exp(q.numerator, -(d.bit_length() - 1))))
        else:
            v = _arb(_flint.fmpq(q.numerator, d))
        return (q, v)

    def size(self, X):
        return 1

    def const(self, key, mp_fn, X):
        v = self._consts.get(key)
        if v is None:
            v = self._consts[key] = mp_fn(self, X)
        return v

    def full(self, n):
        return _NINF, _PINF

    def rational(self, p, q):
        if q == 1:
            return _arb(_flint.fmpz(p))
        return _arb(_flint.fmpq(p, q))

    def pi(self):
        return _arb.pi()

    def e(self):
        return _arb.const_e()

    def exact(self, v):
        if mpf_is_special(v):
            return (_PINF, _PINF) if v == L.finf else ((_NINF, _NINF) if v == L.fninf else (_NINF, _PINF))
        return _arb(mpmath.mp.make_mpf(v))

    # -- arithmetic ----------------------------------------------------------------------------------
    def add(self, a, b):
        if type(a) is _arb and type(b) is _arb:
            return a + b
        (al, ah), (bl, bh) = _pair(a), _pair(b)
        lo = _NINF if (type(al) is float or type(bl) is float) else (al + bl).lower()
        hi = _PINF if (type(ah) is float or type(bh) is float) else (ah + bh).upper()
        return _mk(lo, hi)

    def neg(self, a):
        if type(a) is _arb:
            return -a
        return -a[1], -a[0]

    def mul(self, a, b):
        if type(a) is _arb and type(b) is _arb:
            return a * b
        a, b = _pair(a), _pair(b)
        los, his = [], []
        for u in a:
            for v in b:
                fu, fv = type(u) is float, type(v) is float
                if fu or fv:
                    if (not fu and u == 0) or (not fv and v == 0):
                        los.append(_arb(0))             # 0 * inf: inf is a bound, not a value
                        his.append(_arb(0))
                    else:
                        s = _sgn(u) * _sgn(v)
                        los.append(_PINF if s > 0 else _NINF)
                        his.append(_PINF if s > 0 else _NINF)
                else:
                    p = u * v
                    los.append(p.lower())
                    his.append(p.upper())
        return _mk(_amin(los), _amax(his))

    def recip(self, a):
        if type(a) is _arb:
            if a > 0 or a < 0:
                return 1 / a
            return _NINF, _PINF
        lo, hi = a
        if _sgn(lo) <= 0 <= _sgn(hi):
            return _NINF, _PINF
        rlo = _arb(0) if type(hi) is float else (1 / hi).lower()
        rhi = _arb(0) if type(lo) is float else (1 / lo).upper()
        return _mk(rlo, rhi)

    def powi(self, a, n):
        if type(a) is _arb:
            r = a ** n
            if r.is_finite():
                return r
        lo, hi = _pair(a)

        def pw(v, up):
            if type(v) is float:
                return _PINF if (n % 2 == 0 or v > 0) else _NINF
            r = v ** n
            return (r.upper() if up else r.lower()) if r.is_finite() else (_PINF if up else _NINF)
        if n % 2 or _sgn(lo) >= 0:
            return _mk(pw(lo, False), pw(hi, True))
        if _sgn(hi) <= 0:
            return _mk(pw(hi, False), pw(lo, True))
        return _mk(_arb(0), _amax([pw(lo, True), pw(hi, True)]))

    def sqrt(self, a):
        if type(a) is _arb and a >= 0:
            r = a.sqrt()
            if r.is_finite():
                return r
        lo, hi = _pair(a)
        if _sgn(hi) < 0:
            raise CondcheckError("square root of a negative number")
        rlo = _arb(0) if _sgn(lo) <= 0 else lo.sqrt().lower()
        rhi = _PINF if type(hi) is float else hi.sqrt().upper()
        return _mk(rlo, rhi)

    # -- functions -----------------------------------------------------------------------------------
    def _clamped(self, name, t):
        """f(t) for t = +-2^40, cached (f is exp, sinh or cosh)."""
        k = (name, t)
        v = self._clamp.get(k)
        if v is None:
            v = self._clamp[k] = getattr(_arb(t), name)()
        return v

    def _mono(self, name, a, inc, lim_lo, lim_hi, clamp=False, floor=None):
        """A monotone function on the ends of a pair; ``lim_lo``/``lim_hi``: the infimum and supremum of
        its values (an exact arb or +-inf), taken at an infinite end.  ``clamp``: a non-finite value at
        an end beyond 2^40 is bounded by the function's value at +-2^40.  ``floor``: a lower bound of
        the function (an exact arb) that the lower end is raised to."""
        lo, hi = _pair(a)
        if not inc:
            lo, hi = hi, lo

        def end(v, up):
            if type(v) is float:                           # -inf or +inf
                return lim_hi if (v > 0) == inc else lim_lo
            r = getattr(v, name)()
            if r.is_finite():
                return r.upper() if up else r.lower()
            if clamp and abs(v) >= _ARB_CLAMP:
                t = _ARB_CLAMP if v > 0 else -_ARB_CLAMP
                if (v > 0) == (inc != up):                 # f(v) beyond f(t) on the side asked for
                    c = self._clamped(name, t)
                    return c.upper() if up else c.lower()
            return _PINF if up else _NINF
        rlo = end(lo, False)
        if floor is not None and (type(rlo) is float or rlo < floor):
            rlo = floor
        return _mk(rlo, end(hi, True))

    def _fn(self, name, a, inc, lim_lo, lim_hi, clamp=False):
        if type(a) is _arb:
            r = getattr(a, name)()
            if r.is_finite():
                return r
        return self._mono(name, a, inc, lim_lo, lim_hi, clamp)

    def exp(self, a):
        if type(a) is _arb:
            r = a.exp()
            if r > 0:                                   # else a wide ball lost the sign: use the ends
                return r
        return self._mono("exp", a, True, _arb(0), _PINF, True, floor=_arb(0))

    def expm1(self, a):
        return self._fn("expm1", a, True, _arb(-1), _PINF, True)

    def log(self, a):
        if type(a) is _arb and a > 0:
            return a.log()
        lo, hi = _pair(a)
        if _sgn(hi) <= 0:
            raise CondcheckError("logarithm of a non-positive number")
        rlo = _NINF if _sgn(lo) <= 0 else lo.log().lower()
        rhi = _PINF if type(hi) is float else hi.log().upper()
        return _mk(rlo, rhi)

    def log1p(self, a):
        if type(a) is _arb and a > -1:
            return a.log1p()
        lo, hi = _pair(a)
        m1 = _arb(-1)
        if not (type(hi) is float or hi > m1):
            raise CondcheckError("logarithm of a non-positive number")
        rlo = _NINF if (type(lo) is float or not lo > m1) else lo.log1p().lower()
        rhi = _PINF if type(hi) is float else hi.log1p().upper()
        return _mk(rlo, rhi)

    def erf(self, a):
        return self._fn("erf", a, True, _arb(-1), _arb(1))

    def erfc(self, a):
        r = self._fn("erfc", a, False, _arb(0), _arb(2))
        return r

    def tanh(self, a):
        return self._fn("tanh", a, True, _arb(-1), _arb(1))

    def sinh(self, a):
        return self._fn("sinh", a, True, _NINF, _PINF, True)

    def atan(self, a):
        return self._fn("atan", a, True, _arb(-2), _arb(2))

    def asinh(self, a):
        return self._fn("asinh", a, True, _NINF, _PINF)

    def cosh(self, a):
        if type(a) is _arb:
            r = a.cosh()
            if r > 0:                                   # else not finite, or a wide ball lost the sign
                return r
        lo, hi = _pair(a)
        if _sgn(lo) >= 0:
            return self._mono("cosh", (lo, hi), True, _PINF, _PINF, True, floor=_arb(1))
        if _sgn(hi) <= 0:
            return self._mono("cosh", (lo, hi), False, _PINF, _PINF, True, floor=_arb(1))
        up = _amax([_pair(self._mono("cosh", (lo, lo), False, _PINF, _PINF, True))[1],
                    _pair(self._mono("cosh", (hi, hi), True, _PINF, _PINF, True))[1]])
        return _mk(_arb(1), up)

    def _trig(self, name, a):
        if type(a) is _arb:
            r = getattr(a, name)()
            if r.is_finite():
                return r
        return _mk(_arb(-1), _arb(1))

    def sin(self, a):
        return self._trig("sin", a)

    def cos(self, a):
        return self._trig("cos", a)

    def abs(self, a):
        if type(a) is _arb:
            return abs(a)
        lo, hi = a
        if _sgn(lo) >= 0:
            return lo, hi
        if _sgn(hi) <= 0:
            return -hi, -lo
        return _mk(_arb(0), _amax([-lo, hi]))

    def max(self, a, b):
        if type(a) is _arb and type(b) is _arb:
            return a.max(b)
        (al, ah), (bl, bh) = _pair(a), _pair(b)
        return _mk(_amax([al, bl]), _amax([ah, bh]))

    def min(self, a, b):
        if type(a) is _arb and type(b) is _arb:
            return a.min(b)
        (al, ah), (bl, bh) = _pair(a), _pair(b)
        return _mk(_amin([al, bl]), _amin([ah, bh]))

    def step_rational(self, a, vals):
        """A step function of ``a``: ``vals`` (Fractions) below 0, at 0, above 0."""
        lo, hi = _pair(a)
        sel = []
        if _sgn(lo) < 0:
            sel.append(vals[0])
        if _sgn(lo) <= 0 <= _sgn(hi):
            sel.append(vals[1])
        if _sgn(hi) > 0:
            sel.append(vals[2])
        lo_v, hi_v = min(sel), max(sel)
        return _mk(_pair(self.rational(lo_v.numerator, lo_v.denominator))[0],
                   _pair(self.rational(hi_v.numerator, hi_v.denominator))[1])

    def intersect(self, a, b):
        if type(a) is _arb and type(b) is _arb:
            if not b.is_finite():
                return a
            if not a.is_finite():
                return b
            try:
                return a.intersection(b)
            except ValueError:
                raise CondcheckError("internal error: two enclosures of one value do not overlap") from None
        (al, ah), (bl, bh) = _pair(a), _pair(b)
        return _mk(_amax([al, bl]), _amin([ah, bh]))

    # -- conditions and Piecewise --------------------------------------------------------------------
    def sign_decide(self, d, rel, X, exact):
        lo, hi = _pair(d)
        yes, no = decided_by_sign(rel, _sgn(lo), _sgn(hi))
        if yes:
            return True
        if no:
            return False
        return exact(Fraction(X[0]))

    def ends_at(self, fn, q):
        """(lo, hi) of a compiled expression ``fn`` at the exact point ``q`` (a Fraction, or a float taken
        exactly), computed at ``prec`` bits: exact arbs, or the floats -inf/+inf for an unbounded side."""
        ctx = _flint.ctx
        old = ctx.prec
        ctx.prec = self.prec
        try:
            return _pair(fn(self, self.point(q if type(q) is float else Fraction(q))))
        finally:
            ctx.prec = old
