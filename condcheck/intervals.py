"""Rigorous enclosures of a sympy expression in ``x`` at exact points.

For every node of the expression tree we compute an interval ``[lo, hi]`` that contains the true real
value of that node at the point.  One compiled tree walk (:func:`compile_expression`) runs on three
backends:

* :class:`NumpyBackend`: float64 arrays, vectorized over all points at once.  After every operation
  ``lo`` is moved down and ``hi`` up with ``np.nextafter``: 1 ulp after the IEEE operations
  (+, -, *, /, sqrt are correctly rounded, so 1 ulp covers the rounding), 4 ulps after ``np.power``
  and every libm/scipy function, and ``8 + 4 * t**2`` ulps after ``scipy.special.erfc(t)`` (scipy's erfc
  loses about ``t**2`` ulps, measured up to 1.5 * (4 + t**2)).  A bound that overflowed to +-inf from
  finite inputs keeps its finite side (``exp(740) -> [max float, inf]``: ``nextafter(inf, -inf)`` is
  the largest float), and a result that underflowed to 0 widens to ``[-tiny, tiny]``.
* :class:`MpBackend`: mpmath raw numbers at a precision ``prec`` (one point).  +, -, *, / and sqrt
  use mpmath's directed rounding (floor for ``lo``, ceiling for ``hi``), which is exact; elementary
  and special functions are widened by a relative ``2**-(prec - 8)``.  A function at a point where its
  value is an exact rational (exp(0) = 1, tanh(0) = 0, log(1) = 0, ...) returns that value exactly, so
  exact boundaries such as sigmoid(0) = 1/2 come out as points.
* :class:`ArbBackend`: Arb balls (python-flint's ``arb``) at ``prec`` bits (one point).  Every
  operation and function of Arb returns a ball that provably contains the true value, so this backend
  needs no widening and no accuracy assumption.  Where a ball can not carry the answer (``exp(1e300)``
  is ``[+/- inf]`` for Arb; 1/ball of a ball that lost its sign) the backend works on the ends of the
  interval with the function's monotonicity and limits (a pair ``(lo, hi)`` with +-inf ends).  Exact
  arguments with exact dyadic values (exp(0) = 1, tanh(0) = 0, 1/(1 + 1) = 1/2, ...) give exact balls.
  The certain path of :mod:`condcheck.rounded_activation` uses it first; mpmath stays the fallback
  (python-flint missing, or a ball that stays unbounded).

ASSUMPTION (the only non-proved ingredient): libm/numpy/scipy functions are accurate within the ulp
margins above, and mpmath's functions within ``2**-(prec - 8)`` relative.  The Arb backend does not
rely on it (Arb's error bounds are rigorous); with python-flint installed a rounding is decided by Arb
and the mpmath assumption only enters where Arb leaves a point undecided.  tests/test_intervals.py
checks enclosures against 200-bit mpmath values.

Conditions of a ``Piecewise`` are decided exactly: the enclosure of ``lhs - rhs`` decides the sign where
it can, and the few undecided points are decided by sympy on the exact rational point.

Exact identities are used against cancellation and spurious overflow (they change no value, only the
width of enclosures): ``k*exp(u) - k = k*expm1(u)``, ``c + c*erf(u) = c*erfc(-u)``,
``c - c*erf(u) = c*erfc(u)``, ``c + c*tanh(u) = 2c/(1 + exp(-2u))``, ``c - c*tanh(u)**2 = c/cosh(u)**2``,
``log(1 + t) = log1p(t)``, ``log(1 + exp(u)) = u + log1p(exp(-u))`` (intersected with the former), and a product with a factor ``(a + exp(v))**n`` (n < 0) is also evaluated
as ``exp(n*v) * (a*exp(-v) + 1)**n`` with the exponentials merged; the two enclosures are intersected.

Division by an interval containing 0 gives ``(-inf, inf)``; so does a function outside its real domain
in the numpy backend (the mpmath backend raises :class:`CondcheckError` there).
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import mpmath.libmp as L
import numpy as np
import sympy

from .errors import CondcheckError

__all__ = ["compile_expression", "enclose_array", "enclose_mp", "enclose_arb", "NumpyBackend", "MpBackend",
           "ArbBackend", "HAVE_ARB", "mp_to_fraction"]

_INF = np.inf
_MAXF = np.finfo(np.float64).max


# ====================================================================================================
# numpy backend
# ====================================================================================================
_ORD_INF = np.int64(0x7FF0000000000000)        # the ordinal of +inf (bit pattern of +inf)
_MAG = np.int64(0x7FFFFFFFFFFFFFFF)


def _step(a, k: int):
    """``k`` applications of ``np.nextafter`` toward +inf (k > 0) or -inf (k < 0), bit for bit (the sign of
    a zero result included), in a few passes: float64 values in order are consecutive integers
    ("ordinals": the bit pattern for a >= 0, minus the magnitude's pattern for a < 0, both zeros 0), so
    away from 0, Inf and NaN the step is k on the bit pattern (-k for negatives); the few values within
    |k| ordinals of 0 or of Inf, and NaN, go through nextafter itself."""
    a = np.asarray(a, dtype=np.float64)
    if k == 0:
        return a
    if abs(k) == 1:                              # one pass either way: nextafter itself
        with np.errstate(over="ignore"):                # max float -> inf: a bound, as intended
            out = np.nextafter(a, _INF if k > 0 else -_INF)
        return out[()] if out.ndim == 0 else out
    b = a.view(np.int64)
    out = (b + np.where(b < 0, -k, k)).view(np.float64)
    mag = b & _MAG
    odd = (mag < abs(k)) | (mag > _ORD_INF - abs(k))
    if odd.any():
        i = np.flatnonzero(odd)
        v = a[i]
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(abs(k)):
                v = np.nextafter(v, _INF if k > 0 else -_INF)
        out[i] = v
    return out[()] if out.ndim == 0 else out


def _dn(a, k=1):
    return _step(a, -k)


def _up(a, k=1):
    return _step(a, k)


def _w(lo, hi, k):
    return _dn(lo, k), _up(hi, k)


class NumpyBackend:
    """Interval operations on pairs ``(lo, hi)`` of float64 arrays."""

    name = "numpy"
    ULP_BASIC = 1
    ULP_FUNC = 4

    def __init__(self):
        self._consts = {}

    # -- points and constants ------------------------------------------------------------------------
    def var(self, X):
        return X, X

    def size(self, X):
        return X.shape[0]

    def const(self, key, mp_fn, X):
        if key not in self._consts:
            lo, hi = mp_fn(MpBackend(256), None)
            self._consts[key] = (_mpf_to_float_down(lo), _mpf_to_float_up(hi))
        lo, hi = self._consts[key]
        n = X.shape[0]
        return np.full(n, lo), np.full(n, hi)

    def full(self, n):
        return np.full(n, -_INF), np.full(n, _INF)

    # -- arithmetic ----------------------------------------------------------------------------------
    def add(self, a, b):
        return _w(a[0] + b[0], a[1] + b[1], 1)

    def neg(self, a):
        return -a[1], -a[0]

    def mul(self, a, b):
        with np.errstate(invalid="ignore", over="ignore"):
            p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
        p = [np.where(np.isnan(t), 0.0, t) for t in p]        # 0 * inf: inf is a bound, not a value
        lo = np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3]))
        hi = np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3]))
        return _w(lo, hi, 1)

    def recip(self, a):
        lo, hi = a
        zero = (lo <= 0) & (hi >= 0)
        with np.errstate(divide="ignore"):
            rlo, rhi = _w(1.0 / hi, 1.0 / lo, 1)
        return np.where(zero, -_INF, rlo), np.where(zero, _INF, rhi)

    def powi(self, a, n):
        """a**n for an integer n >= 2."""
        lo, hi = a
        with np.errstate(over="ignore"):
            plo, phi = np.power(lo, float(n)), np.power(hi, float(n))
        if n % 2:
            return _w(plo, phi, self.ULP_FUNC)
        rlo = np.where(lo >= 0, plo, np.where(hi <= 0, phi, 0.0))
        rhi = np.where(lo >= 0, phi, np.where(hi <= 0, plo, np.maximum(plo, phi)))
        rlo, rhi = _w(rlo, rhi, self.ULP_FUNC)
        return np.maximum(rlo, 0.0), rhi

    def sqrt(self, a):
        lo, hi = a
        bad = hi < 0
        with np.errstate(invalid="ignore"):
            rlo, rhi = _w(np.sqrt(np.maximum(lo, 0.0)), np.sqrt(np.maximum(hi, 0.0)), 1)
        rlo = np.maximum(rlo, 0.0)
        return np.where(bad, -_INF, rlo), np.where(bad, _INF, rhi)

    # -- monotone functions --------------------------------------------------------------------------
    def _inc(self, f, a, k=None, lower=None, upper=None):
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            lo, hi = _w(f(a[0]), f(a[1]), self.ULP_FUNC if k is None else k)
        if lower is not None:
            lo = np.maximum(lo, lower)
            hi = np.maximum(hi, lower)
        if upper is not None:
            lo = np.minimum(lo, upper)
            hi = np.minimum(hi, upper)
        return lo, hi

    def exp(self, a):
        return self._inc(np.exp, a, lower=0.0)

    def expm1(self, a):
        return self._inc(np.expm1, a, lower=-1.0)

    def log(self, a):
        lo, hi = a
        bad = hi <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            rlo = np.where(lo > 0, _dn(np.log(np.where(lo > 0, lo, 1.0)), self.ULP_FUNC), -_INF)
            rhi = _up(np.log(np.where(hi > 0, hi, 1.0)), self.ULP_FUNC)
        return np.where(bad, -_INF, rlo), np.where(bad, _INF, rhi)

    def log1p(self, a):
        lo, hi = a
        bad = hi <= -1
        with np.errstate(divide="ignore", invalid="ignore"):
            rlo = np.where(lo > -1, _dn(np.log1p(np.where(lo > -1, lo, 0.0)), self.ULP_FUNC), -_INF)
            rhi = _up(np.log1p(np.where(hi > -1, hi, 0.0)), self.ULP_FUNC)
        return np.where(bad, -_INF, rlo), np.where(bad, _INF, rhi)

    def erf(self, a):
        import scipy.special as sps          # here, not at import: it costs 0.1-0.3 s and few runs need erf
        return self._inc(sps.erf, a, lower=-1.0, upper=1.0)

    def erfc(self, a):
        import scipy.special as sps
        lo, hi = a
        rlo, rhi = sps.erfc(hi), sps.erfc(lo)
        # scipy's erfc(t) is off by up to ~1.5 * (4 + t**2) ulps (exp(-t**2) of a rounded t**2)
        # (for t <= 0, erfc(t) = 2 - erfc(-t) is near 2 and keeps the small absolute error)
        t_lo = np.minimum(np.maximum(lo, 0.0), 1e8)
        t_hi = np.minimum(np.maximum(hi, 0.0), 1e8)
        with np.errstate(invalid="ignore", over="ignore"):
            rlo = np.where(np.isfinite(rlo), rlo - (8.0 + 4.0 * t_hi * t_hi) * np.abs(np.spacing(rlo)), rlo)
            rhi = np.where(np.isfinite(rhi), rhi + (8.0 + 4.0 * t_lo * t_lo) * np.abs(np.spacing(rhi)), rhi)
        rlo, rhi = _w(rlo, rhi, 1)
        return np.clip(rlo, 0.0, 2.0), np.clip(rhi, 0.0, 2.0)

    def tanh(self, a):
        return self._inc(np.tanh, a, lower=-1.0, upper=1.0)

    def sinh(self, a):
        return self._inc(np.sinh, a)

    def atan(self, a):
        return self._inc(np.arctan, a)

    def asinh(self, a):
        return self._inc(np.arcsinh, a)

    def cosh(self, a):
        lo, hi = a
        with np.errstate(over="ignore"):
            clo, chi = np.cosh(lo), np.cosh(hi)
        rlo = np.where(lo >= 0, clo, np.where(hi <= 0, chi, 1.0))
        rhi = np.where(lo >= 0, chi, np.where(hi <= 0, clo, np.maximum(clo, chi)))
        rlo, rhi = _w(rlo, rhi, self.ULP_FUNC)
        return np.maximum(rlo, 1.0), rhi

    def _trig(self, f, a, phase):
        """sin (phase = pi/2: maxima at pi/2 + 2k pi) or cos (phase = 0)."""
        lo, hi = a
        with np.errstate(invalid="ignore"):
            flo, fhi = f(lo), f(hi)
        rlo, rhi = _w(np.minimum(flo, fhi), np.maximum(flo, fhi), self.ULP_FUNC)
        point = lo == hi
        wide = ~point & (~np.isfinite(lo) | ~np.isfinite(hi) | (hi - lo >= 6.0) | (np.abs(lo) > 2.0 ** 40)
                         | (np.abs(hi) > 2.0 ** 40))
        rest = ~point & ~wide
        if rest.any():
            # critical points phase + k*pi (k even: max 1, k odd: min -1) inside [lo, hi] (with a margin)
            lo_r, hi_r = lo[rest], hi[rest]
            k0 = np.floor((lo_r - phase) / np.pi) - 1
            has_max = np.zeros(lo_r.shape, bool)
            has_min = np.zeros(lo_r.shape, bool)
            for j in range(5):
                k = k0 + j
                c = phase + k * np.pi
                m = 1e-6 + 1e-9 * np.abs(c)
                inside = (c >= lo_r - m) & (c <= hi_r + m)
                even = np.mod(k, 2) == 0
                has_max |= inside & even
                has_min |= inside & ~even
            sub_lo, sub_hi = rlo[rest], rhi[rest]
            rlo[rest] = np.where(has_min, -1.0, sub_lo)
            rhi[rest] = np.where(has_max, 1.0, sub_hi)
        rlo = np.where(wide, -1.0, rlo)
        rhi = np.where(wide, 1.0, rhi)
        return np.clip(rlo, -1.0, 1.0), np.clip(rhi, -1.0, 1.0)

    def sin(self, a):
        return self._trig(np.sin, a, np.pi / 2)

    def cos(self, a):
        return self._trig(np.cos, a, 0.0)

    # -- piecewise-linear and step functions (exact) -------------------------------------------------
    def abs(self, a):
        lo, hi = a
        rlo = np.where(lo >= 0, lo, np.where(hi <= 0, -hi, 0.0))
        rhi = np.maximum(np.abs(lo), np.abs(hi))
        return rlo, rhi

    def max(self, a, b):
        return np.maximum(a[0], b[0]), np.maximum(a[1], b[1])

    def min(self, a, b):
        return np.minimum(a[0], b[0]), np.minimum(a[1], b[1])

    def step(self, a, neg, zero, pos):
        """A function that is ``neg`` below 0, ``zero`` at 0 and ``pos`` above 0 (Heaviside, sign)."""
        lo, hi = a
        cands = [(lo < 0, neg), ((lo <= 0) & (hi >= 0), zero), (hi > 0, pos)]
        rlo = np.full(lo.shape, _INF)
        rhi = np.full(lo.shape, -_INF)
        for m, v in cands:
            rlo = np.where(m, np.minimum(rlo, v), rlo)
            rhi = np.where(m, np.maximum(rhi, v), rhi)
        return rlo, rhi

    def intersect(self, a, b):
        return np.maximum(a[0], b[0]), np.minimum(a[1], b[1])

    # -- conditions and Piecewise --------------------------------------------------------------------
    def sign_decide(self, d, rel, X, exact):
        """Boolean array: does ``rel(d, 0)`` hold at each point?  Undecided points go to ``exact``."""
        lo, hi = d
        yes, no = _rel_decided(rel, lo, hi)
        res = yes.copy()
        und = ~(yes | no)
        if und.any():
            idx = np.flatnonzero(und)
            res[idx] = [exact(Fraction(float(X[i]))) for i in idx]
        return res

    def logical(self, op, parts):
        if op == "and":
            return np.logical_and.reduce(parts)
        if op == "or":
            return np.logical_or.reduce(parts)
        return ~parts[0]

    def constant_bool(self, value, X):
        return np.full(X.shape[0], bool(value))

    def piecewise(self, branches, X):
        n = X.shape[0]
        lo, hi = np.full(n, -_INF), np.full(n, _INF)
        todo = np.arange(n)
        for val_fn, cond_fn in branches:
            if todo.size == 0:
                break
            c = cond_fn(self, X[todo])
            take = todo[c]
            if take.size:
                blo, bhi = val_fn(self, X[take])
                lo[take], hi[take] = blo, bhi
            todo = todo[~c]
        return lo, hi                      # points no branch covers: undefined, (-inf, inf)


def _rel_decided(rel, lo, hi):
    if rel == "<":
        return hi < 0, lo >= 0
    if rel == "<=":
        return hi <= 0, lo > 0
    if rel == ">":
        return lo > 0, hi <= 0
    if rel == ">=":
        return lo >= 0, hi < 0
    if rel == "==":
        return (lo == 0) & (hi == 0), (lo > 0) | (hi < 0)
    if rel == "!=":
        return (lo > 0) | (hi < 0), (lo == 0) & (hi == 0)
    raise AssertionError(rel)


# ====================================================================================================
# mpmath backend (raw mpf tuples, one point)
# ====================================================================================================
_F0, _F1, _FINF, _FNINF = L.fzero, L.fone, L.finf, L.fninf


def _mpf_to_float_down(v) -> float:
    if v == _FNINF:
        return -_INF
    if v == _FINF:
        return _MAXF
    f = L.to_float(v)
    if math.isfinite(f) and L.from_float(f) == v:
        return f                                    # exactly a float64
    return float(np.nextafter(f, -_INF)) if (math.isfinite(f) or f > 0) else f


def _mpf_to_float_up(v) -> float:
    if v == _FINF:
        return _INF
    if v == _FNINF:
        return -_MAXF
    f = L.to_float(v)
    if math.isfinite(f) and L.from_float(f) == v:
        return f
    return float(np.nextafter(f, _INF)) if (math.isfinite(f) or f < 0) else f


def mp_to_fraction(v) -> Fraction:
    """The exact value of a finite raw mpf tuple or mpmath.mpf."""
    if isinstance(v, mpmath.mpf):
        v = v._mpf_
    sign, man, exp, _ = v
    if not man:
        if v != _F0:
            raise ValueError(f"not finite: {v}")
        return Fraction(0)
    n = -int(man) if sign else int(man)
    return Fraction(n << exp) if exp >= 0 else Fraction(n, 1 << -exp)


def _madd(a, b, prec, rnd):
    """mpf_add with directed rounding, safe for operands of wildly different magnitude."""
    if a[1] and b[1]:
        ma, mb = a[2] + a[3], b[2] + b[3]
        if ma - mb > prec + 8:
            return L.mpf_perturb(a, b[0], prec, rnd)
        if mb - ma > prec + 8:
            return L.mpf_perturb(b, a[0], prec, rnd)
    return L.mpf_add(a, b, prec, rnd)


def _msub(a, b, prec, rnd):
    return _madd(a, L.mpf_neg(b), prec, rnd)


def _is_special(v):
    return v[1] == 0 and v != _F0      # inf, -inf, nan


class _PointConditions:
    """Conditions of a Piecewise at one point (the mpmath and Arb backends): each is a bool."""

    def logical(self, op, parts):
        if op == "and":
            return all(parts)
        if op == "or":
            return any(parts)
        return not parts[0]

    def constant_bool(self, value, X):
        return bool(value)

    def piecewise(self, branches, X):
        for val_fn, cond_fn in branches:
            if cond_fn(self, X):
                return val_fn(self, X)
        raise CondcheckError(f"Piecewise is undefined at x = {X[0]} (no condition holds)")


class MpBackend(_PointConditions):
    """Interval operations on pairs of raw mpmath numbers at ``prec`` bits."""

    name = "mpmath"

    def __init__(self, prec: int):
        self.prec = int(prec)
        self._rel = -(self.prec - 8)

    # -- widening ------------------------------------------------------------------------------------
    def _wdn(self, v):
        if v[1] == 0:
            return _FNINF if v != _FINF else v      # an unexpected exact zero (or -inf): no lower bound
        return L.mpf_sub(v, L.mpf_shift(L.mpf_abs(v), self._rel), self.prec, "f")

    def _wup(self, v):
        if v[1] == 0:
            return _FINF if v != _FNINF else v
        return L.mpf_add(v, L.mpf_shift(L.mpf_abs(v), self._rel), self.prec, "c")

    # -- points and constants ------------------------------------------------------------------------
    def var(self, X):
        return X[1]

    def point(self, q: Fraction):
        """The interval of an exact rational point."""
        lo = L.from_rational(q.numerator, q.denominator, self.prec, "f")
        hi = L.from_rational(q.numerator, q.denominator, self.prec, "c")
        return (q, (lo, hi))

    def size(self, X):
        return 1

    def const(self, key, mp_fn, X):
        return mp_fn(self, X)

    def full(self, n):
        return _FNINF, _FINF

    def rational(self, p, q):
        return L.from_rational(p, q, self.prec, "f"), L.from_rational(p, q, self.prec, "c")

    def pi(self):
        return self._wdn(L.mpf_pi(self.prec, "f")), self._wup(L.mpf_pi(self.prec, "c"))

    def e(self):
        return self._wdn(L.mpf_e(self.prec, "f")), self._wup(L.mpf_e(self.prec, "c"))

    def exact(self, v):
        return v, v

    # -- arithmetic ----------------------------------------------------------------------------------
    def add(self, a, b):
        return _madd(a[0], b[0], self.prec, "f"), _madd(a[1], b[1], self.prec, "c")

    def neg(self, a):
        return L.mpf_neg(a[1]), L.mpf_neg(a[0])

    def mul(self, a, b):
        p = self.prec
        los, his = [], []
        for u in a:
            for v in b:
                if (u == _F0 and _is_special(v)) or (v == _F0 and _is_special(u)):
                    los.append(_F0)
                    his.append(_F0)
                else:
                    los.append(L.mpf_mul(u, v, p, "f"))
                    his.append(L.mpf_mul(u, v, p, "c"))
        return _mpf_min(los), _mpf_max(his)

    def recip(self, a):
        lo, hi = a
        if L.mpf_le(lo, _F0) and L.mpf_ge(hi, _F0):
            return _FNINF, _FINF
        return _rdiv1(hi, self.prec, "f"), _rdiv1(lo, self.prec, "c")

    def powi(self, a, n):
        lo, hi = a
        plo = self._pw(lo, n)
        phi = self._pw(hi, n)
        if n % 2 or L.mpf_ge(lo, _F0):
            return plo[0], phi[1]
        if L.mpf_le(hi, _F0):
            return phi[0], plo[1]
        return _F0, _mpf_max([plo[1], phi[1]])

    def _pw(self, v, n):
        if v == _F0:
            return _F0, _F0
        if _is_special(v):
            r = _pow_int(v, n, self.prec, "f")
            return r, r
        return self._wdn(_pow_int(v, n, self.prec, "f")), self._wup(_pow_int(v, n, self.prec, "c"))

    def sqrt(self, a):
        lo, hi = a
        if L.mpf_lt(hi, _F0):
            raise CondcheckError("square root of a negative number")
        lo = lo if L.mpf_gt(lo, _F0) else _F0
        return L.mpf_sqrt(lo, self.prec, "f"), L.mpf_sqrt(hi, self.prec, "c")

    # -- functions -----------------------------------------------------------------------------------
    def _inc(self, f, a, at0=None, lower=None, upper=None):
        lo, hi = a
        if at0 is not None and lo == _F0:
            rlo = at0
        else:
            rlo = self._wdn(f(lo, self.prec, "f")) if lo != _FNINF else f(lo, self.prec, "f")
        if at0 is not None and hi == _F0:
            rhi = at0
        else:
            rhi = self._wup(f(hi, self.prec, "c")) if hi != _FINF else f(hi, self.prec, "c")
        if lower is not None:
            rlo = _mpf_max([rlo, lower])
        if upper is not None:
            rhi = _mpf_min([rhi, upper])
        return rlo, rhi

    def exp(self, a):
        return self._inc(L.mpf_exp, a, _F1, lower=_F0)

    def expm1(self, a):
        lo, hi = a
        if lo == _F0 and hi == _F0:
            return _F0, _F0
        # exp at a precision raised by the leading zeros of the argument, then subtract 1
        out = []
        for v, rnd in ((lo, "f"), (hi, "c")):
            if _is_special(v):
                out.append(L.from_int(-1) if v == _FNINF else _FINF)
                continue
            if v == _F0:
                out.append(_F0)
                continue
            mag = v[2] + v[3]
            if mag < -(self.prec + 16):         # expm1(v) in (v, v + v**2): v and v widened up
                out.append(v if rnd == "f" else self._wup(v))
                continue
            wp = self.prec + max(0, -mag) + 20
            sub = MpBackend(wp)
            e = L.mpf_exp(v, wp, rnd)
            e = sub._wdn(e) if rnd == "f" else sub._wup(e)
            out.append(_msub(e, _F1, self.prec, rnd))
        return _mpf_max([out[0], L.from_int(-1)]), out[1]

    def log(self, a):
        lo, hi = a
        if not L.mpf_gt(hi, _F0):
            raise CondcheckError("logarithm of a non-positive number")
        if lo == _F1 and hi == _F1:
            return _F0, _F0
        rlo = self._wdn(L.mpf_log(lo, self.prec, "f")) if L.mpf_gt(lo, _F0) else _FNINF
        return rlo, self._wup(L.mpf_log(hi, self.prec, "c"))

    def log1p(self, a):
        lo, hi = a
        if lo == _F0 and hi == _F0:
            return _F0, _F0
        m1 = L.from_int(-1)
        if not L.mpf_gt(hi, m1):
            raise CondcheckError("logarithm of a non-positive number")
        out = []
        for v, rnd in ((lo, "f"), (hi, "c")):
            if rnd == "f" and not L.mpf_gt(v, m1):
                out.append(_FNINF)
                continue
            if _is_special(v) or v == _F0:
                out.append(v)
                continue
            mag = v[2] + v[3]
            if mag < -(self.prec + 16):         # log1p(v) in (v - v**2, v): v widened down and v
                out.append(self._wdn(v) if rnd == "f" else v)
                continue
            wp = self.prec + max(0, -mag) + 20
            s = _madd(_F1, v, wp, rnd)            # 1 + v, rounded in the safe direction
            r = L.mpf_log(s, wp, rnd)
            sub = MpBackend(wp)
            r = sub._wdn(r) if rnd == "f" else sub._wup(r)
            out.append(L.mpf_pos(r, self.prec, rnd))
        return out[0], out[1]

    def erf(self, a):
        return self._inc(L.mpf_erf, a, _F0, lower=L.from_int(-1), upper=_F1)

    def erfc(self, a):
        lo, hi = a
        if lo == _F0 and hi == _F0:
            return _F1, _F1
        return (_mpf_max([self._wdn(L.mpf_erfc(hi, self.prec, "f")), _F0]),
                _mpf_min([self._wup(L.mpf_erfc(lo, self.prec, "c")), L.from_int(2)]))

    def tanh(self, a):
        return self._inc(L.mpf_tanh, a, _F0, lower=L.from_int(-1), upper=_F1)

    def sinh(self, a):
        return self._inc(L.mpf_sinh, a, _F0)

    def atan(self, a):
        return self._inc(L.mpf_atan, a, _F0)

    def asinh(self, a):
        return self._inc(L.mpf_asinh, a, _F0)

    def cosh(self, a):
        lo, hi = a
        if lo == _F0 and hi == _F0:
            return _F1, _F1
        clo = (self._wdn(L.mpf_cosh(lo, self.prec, "f")), self._wup(L.mpf_cosh(lo, self.prec, "c")))
        chi = (self._wdn(L.mpf_cosh(hi, self.prec, "f")), self._wup(L.mpf_cosh(hi, self.prec, "c")))
        if L.mpf_ge(lo, _F0):
            r = clo[0], chi[1]
        elif L.mpf_le(hi, _F0):
            r = chi[0], clo[1]
        else:
            r = _F1, _mpf_max([clo[1], chi[1]])
        return _mpf_max([r[0], _F1]), r[1]

    def _trig(self, f, a, sine):
        lo, hi = a
        if lo == _F0 and hi == _F0:
            return (_F0, _F0) if sine else (_F1, _F1)
        if _is_special(lo) or _is_special(hi):
            return L.from_int(-1), _F1
        flo, fhi = self._trig_at(f, lo, sine), self._trig_at(f, hi, sine)
        rlo, rhi = _mpf_min([flo[0], fhi[0]]), _mpf_max([flo[1], fhi[1]])
        if lo != hi:
            # critical points phase + k*pi, phase = pi/2 (sin) or 0 (cos); k even: max, odd: min
            mag = max(lo[2] + lo[3] if lo[1] else 0, hi[2] + hi[3] if hi[1] else 0, 0)
            wp = self.prec + mag + 20
            sub = MpBackend(wp)
            pi_lo, pi_hi = sub.pi()
            phase = (L.mpf_shift(pi_lo, -1), L.mpf_shift(pi_hi, -1)) if sine else (_F0, _F0)
            q = L.to_float(L.mpf_div(L.mpf_sub(lo, phase[0], wp), pi_lo, wp)) if mag < 1000 else None
            width = L.to_float(L.mpf_sub(hi, lo, 53))
            if q is None or not math.isfinite(q) or width > 6.0:
                return L.from_int(-1), _F1
            k0 = math.floor(q) - 2
            for k in range(k0, k0 + 7):
                ck = sub.add(phase, sub.mul((L.from_int(k), L.from_int(k)), (pi_lo, pi_hi)))
                if L.mpf_ge(ck[1], lo) and L.mpf_le(ck[0], hi):
                    if k % 2 == 0:
                        rhi = _F1
                    else:
                        rlo = L.from_int(-1)
        return _mpf_max([rlo, L.from_int(-1)]), _mpf_min([rhi, _F1])

    def _trig_at(self, f, v, sine):
        if v == _F0:
            return (_F0, _F0) if sine else (_F1, _F1)
        return self._wdn(f(v, self.prec, "f")), self._wup(f(v, self.prec, "c"))

    def sin(self, a):
        return self._trig(L.mpf_sin, a, True)

    def cos(self, a):
        return self._trig(L.mpf_cos, a, False)

    def abs(self, a):
        lo, hi = a
        if L.mpf_ge(lo, _F0):
            return lo, hi
        if L.mpf_le(hi, _F0):
            return L.mpf_neg(hi), L.mpf_neg(lo)
        return _F0, _mpf_max([L.mpf_neg(lo), hi])

    def max(self, a, b):
        return _mpf_max([a[0], b[0]]), _mpf_max([a[1], b[1]])

    def min(self, a, b):
        return _mpf_min([a[0], b[0]]), _mpf_min([a[1], b[1]])

    def step(self, a, neg, zero, pos):
        lo, hi = a
        vals = []
        if L.mpf_lt(lo, _F0):
            vals.append(neg)
        if L.mpf_le(lo, _F0) and L.mpf_ge(hi, _F0):
            vals.append(zero)
        if L.mpf_gt(hi, _F0):
            vals.append(pos)
        return min(vals), max(vals)

    def step_value(self, v):
        return v

    def intersect(self, a, b):
        return _mpf_max([a[0], b[0]]), _mpf_min([a[1], b[1]])

    # -- conditions and Piecewise --------------------------------------------------------------------
    def sign_decide(self, d, rel, X, exact):
        lo, hi = d
        c_lo, c_hi = L.mpf_cmp(lo, _F0), L.mpf_cmp(hi, _F0)
        yes, no = _rel_decided(rel, c_lo, c_hi)
        if yes:
            return True
        if no:
            return False
        return exact(X[0])



def _mpf_min(vs):
    m = vs[0]
    for v in vs[1:]:
        if L.mpf_lt(v, m):
            m = v
    return m


def _mpf_max(vs):
    m = vs[0]
    for v in vs[1:]:
        if L.mpf_gt(v, m):
            m = v
    return m


def _rdiv1(v, prec, rnd):
    if _is_special(v):
        return _F0
    return L.mpf_div(_F1, v, prec, rnd)


def _pow_int(v, n, prec, rnd):
    if _is_special(v):
        if v == _FINF:
            return _FINF
        return _FINF if n % 2 == 0 else _FNINF
    return L.mpf_pow_int(v, n, prec, rnd)


# ====================================================================================================
# Arb backend (python-flint balls, one point)
# ====================================================================================================
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


class ArbBackend(_PointConditions):
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
        if _is_special(v):
            return (_PINF, _PINF) if v == _FINF else ((_NINF, _NINF) if v == _FNINF else (_NINF, _PINF))
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
        yes, no = _rel_decided(rel, _sgn(lo), _sgn(hi))
        if yes:
            return True
        if no:
            return False
        return exact(Fraction(X[0]))



# ====================================================================================================
# the one tree walk: sympy expression -> closure f(backend, X) -> interval
# ====================================================================================================
class _Compiler:
    def __init__(self):
        self.counter = 0

    def key(self):
        self.counter += 1
        return self.counter

    # ---- entry -------------------------------------------------------------------------------------
    def compile(self, e, alternatives=True):
        if not e.free_symbols:
            return self.constant(e)
        if isinstance(e, sympy.Symbol):
            if e.name != "x":
                raise CondcheckError(f"expression has a free symbol {e} other than x")
            return lambda B, X: B.var(X)
        if isinstance(e, sympy.Add):
            return self.add(e)
        if isinstance(e, sympy.Mul):
            return self.mul(e, alternatives)
        if isinstance(e, sympy.Pow):
            return self.pow(e)
        if isinstance(e, sympy.Piecewise):
            return self.piecewise(e)
        return self.function(e)

    # ---- constants ---------------------------------------------------------------------------------
    def constant(self, e):
        mp_fn = self.mp_constant(e)
        key = self.key()
        return lambda B, X: B.const(key, mp_fn, X)

    def mp_constant(self, e):
        """A closure evaluating a constant in the mpmath backend (numbers, pi, E and operations)."""
        if isinstance(e, sympy.Rational):       # Integer and Rational
            p, q = int(e.p), int(e.q)
            return lambda B, X: B.rational(p, q)
        if isinstance(e, sympy.Float):
            v = e._mpf_                          # the Float's exact binary value
            return lambda B, X: B.exact(v)
        if e is sympy.pi:
            return lambda B, X: B.pi()
        if e is sympy.E:
            return lambda B, X: B.e()
        if isinstance(e, (sympy.Add, sympy.Mul, sympy.Pow, sympy.Function, sympy.Piecewise)):
            # the same walk, with the mpmath backend only (no x)
            sub = _Compiler()
            sub.constant = lambda c: sub.mp_constant(c)
            inner = sub._structure(e)
            return lambda B, X: inner(B, X)
        raise CondcheckError(f"unsupported constant {e} ({type(e).__name__}) in an activation expression")

    def _structure(self, e):
        if isinstance(e, sympy.Add):
            return self.add(e)
        if isinstance(e, sympy.Mul):
            return self.mul(e, False)
        if isinstance(e, sympy.Pow):
            return self.pow(e)
        if isinstance(e, sympy.Piecewise):
            return self.piecewise(e)
        return self.function(e)

    # ---- sums --------------------------------------------------------------------------------------
    def add(self, e):
        c, rest = e.as_coeff_Add()
        terms = list(sympy.Add.make_args(rest))
        fns = []
        if c != 0:
            special = self._cancellation(c, terms)
            if special is not None:
                fn, used = special
                fns.append(fn)
                terms = [t for i, t in enumerate(terms) if i != used]
            else:
                fns.append(self.compile(c))
        fns += [self.compile(t) for t in terms]
        if not fns:
            return self.compile(sympy.Integer(0))

        def f(B, X, fns=fns):
            acc = fns[0](B, X)
            for g in fns[1:]:
                acc = B.add(acc, g(B, X))
            return acc
        return f

    def _cancellation(self, c, terms):
        """c + k*g(u) with an exact identity that avoids cancellation: (closure, index of the term)."""
        for i, t in enumerate(terms):
            k, g = t.as_coeff_Mul()
            if isinstance(g, sympy.exp) and k == -c:                     # k*(exp(u) - 1)
                u = self.compile(g.args[0])
                kk = self.compile(k)
                return (lambda B, X: B.mul(kk(B, X), B.expm1(u(B, X)))), i
            if isinstance(g, sympy.erf) and k in (c, -c):
                arg = -g.args[0] if k == c else g.args[0]                # c*erfc(-u) or c*erfc(u)
                u = self.compile(arg)
                cc = self.compile(c)
                return (lambda B, X: B.mul(cc(B, X), B.erfc(u(B, X)))), i
            if isinstance(g, sympy.tanh) and k in (c, -c):
                v = -2 * g.args[0] if k == c else 2 * g.args[0]
                return self.compile(2 * c / (1 + sympy.exp(v))), i
            if (isinstance(g, sympy.Pow) and isinstance(g.base, sympy.tanh) and g.exp == 2 and k == -c):
                return self.compile(c / sympy.cosh(g.base.args[0]) ** 2), i
        return None

    # ---- products ----------------------------------------------------------------------------------
    def mul(self, e, alternatives=True):
        factors = list(e.args)
        fns = [self.compile(t) for t in factors]

        def f(B, X, fns=fns):
            acc = fns[0](B, X)
            for g in fns[1:]:
                acc = B.mul(acc, g(B, X))
            return acc
        if not alternatives:
            return f
        alt = self._exp_alternative(e)
        if alt is None:
            return f
        g = self.compile(alt, alternatives=False)
        return lambda B, X: B.intersect(f(B, X), g(B, X))

    def _exp_alternative(self, e):
        """(a + exp(v))**n * rest = exp(n*v) * (a*exp(-v) + 1)**n * rest, exponentials merged."""
        for i, t in enumerate(e.args):
            if isinstance(t, sympy.Pow) and t.exp.is_Integer and t.exp < 0 and isinstance(t.base, sympy.Add):
                exps = [s for s in t.base.args if isinstance(s, sympy.exp)]
                if not exps:
                    continue
                v = exps[0].args[0]
                n = t.exp
                new_base = sympy.Add(*[sympy.powsimp(sympy.expand(s * sympy.exp(-v)), combine="exp")
                                       for s in t.base.args])
                rest = [s for j, s in enumerate(e.args) if j != i]
                alt = sympy.powsimp(sympy.Mul(*rest) * sympy.exp(n * v), combine="exp") * new_base ** n
                if alt == e:
                    return None
                return alt
        return None

    # ---- powers ------------------------------------------------------------------------------------
    def pow(self, e):
        b, n = e.base, e.exp
        if n.is_Integer:
            n = int(n)
            bf = self.compile(b)
            if n == 0:
                return self.compile(sympy.Integer(1))
            if n == 1:
                return bf
            if n == -1:
                return lambda B, X: B.recip(bf(B, X))
            if n > 0:
                return lambda B, X: B.powi(bf(B, X), n)
            return lambda B, X: B.recip(B.powi(bf(B, X), -n)) if -n > 1 else B.recip(bf(B, X))
        if n == sympy.S.Half:
            bf = self.compile(b)
            return lambda B, X: B.sqrt(bf(B, X))
        if n == -sympy.S.Half:
            bf = self.compile(b)
            return lambda B, X: B.recip(B.sqrt(bf(B, X)))
        # general power of a positive base: exp(n * log(b))
        return self.compile_log_form(b, n)

    def compile_log_form(self, b, n):
        bf = self.compile(b)
        nf = self.compile(n)
        return lambda B, X: B.exp(B.mul(nf(B, X), B.log(bf(B, X))))

    # ---- Piecewise ---------------------------------------------------------------------------------
    def piecewise(self, e):
        branches = [(self.compile(val), self.condition(cond)) for val, cond in e.args]
        return lambda B, X: B.piecewise(branches, X)

    def condition(self, c):
        if c is sympy.true or c == True:  # noqa: E712
            return lambda B, X: B.constant_bool(True, X)
        if c is sympy.false or c == False:  # noqa: E712
            return lambda B, X: B.constant_bool(False, X)
        rels = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
                sympy.GreaterThan: ">=", sympy.Equality: "==", sympy.Unequality: "!="}
        for cls, rel in rels.items():
            if isinstance(c, cls):
                d = c.lhs - c.rhs
                dfn = self.compile(d)
                x_sym = next(iter(d.free_symbols), None)

                def exact(q, d=d, rel=rel, x_sym=x_sym):
                    val = d.subs(x_sym, sympy.Rational(q.numerator, q.denominator)) if x_sym else d
                    try:
                        return bool({"<": val < 0, "<=": val <= 0, ">": val > 0, ">=": val >= 0,
                                     "==": sympy.Eq(val, 0), "!=": sympy.Ne(val, 0)}[rel])
                    except TypeError:
                        raise CondcheckError(f"can not decide the condition {c} at x = {q}") from None
                return lambda B, X, dfn=dfn, rel=rel, exact=exact: B.sign_decide(dfn(B, X), rel, X, exact)
        if isinstance(c, (sympy.And, sympy.Or, sympy.Not)):
            op = {sympy.And: "and", sympy.Or: "or", sympy.Not: "not"}[type(c)]
            parts = [self.condition(a) for a in c.args]
            return lambda B, X: B.logical(op, [p(B, X) for p in parts])
        raise CondcheckError(f"unsupported Piecewise condition {c} ({type(c).__name__}); conditions must "
                             f"compare expressions in x (<, <=, >, >=, ==, !=, And, Or, Not)")

    # ---- functions ---------------------------------------------------------------------------------
    _UNARY = {sympy.exp: "exp", sympy.erf: "erf", sympy.erfc: "erfc", sympy.tanh: "tanh",
              sympy.sinh: "sinh", sympy.cosh: "cosh", sympy.atan: "atan", sympy.asinh: "asinh",
              sympy.sin: "sin", sympy.cos: "cos", sympy.Abs: "abs"}

    def function(self, e):
        t = type(e)
        for cls, op in self._UNARY.items():
            if t is cls:
                a = self.compile(e.args[0])
                return lambda B, X, op=op: getattr(B, op)(a(B, X))
        if t is sympy.log:
            if len(e.args) != 1:
                return self.compile(sympy.log(e.args[0]) / sympy.log(e.args[1]))
            arg = e.args[0]
            if isinstance(arg, sympy.Add):
                c, rest = arg.as_coeff_Add()
                if c == 1:
                    a = self.compile(rest)
                    if isinstance(rest, sympy.exp):
                        # log(1 + exp(u)) = u + log1p(exp(-u)): no overflow for large u; intersect
                        u = rest.args[0]
                        alt = self.compile(u)
                        b = self.compile(sympy.exp(-u))
                        return lambda B, X: B.intersect(B.log1p(a(B, X)), B.add(alt(B, X), B.log1p(b(B, X))))
                    return lambda B, X: B.log1p(a(B, X))
            a = self.compile(arg)
            return lambda B, X: B.log(a(B, X))
        if t in (sympy.Max, sympy.Min):
            fns = [self.compile(a) for a in e.args]
            op = "max" if t is sympy.Max else "min"

            def f(B, X, fns=fns, op=op):
                acc = fns[0](B, X)
                for g in fns[1:]:
                    acc = getattr(B, op)(acc, g(B, X))
                return acc
            return f
        if t is sympy.Heaviside:
            h0 = e.args[1] if len(e.args) > 1 else sympy.S.Half
            if not h0.is_Rational:
                raise CondcheckError(f"unsupported Heaviside value at 0 in {e}: {h0}")
            a = self.compile(e.args[0])
            return self._step(a, 0, Fraction(int(h0.p), int(h0.q)), 1)
        if t is sympy.sign:
            a = self.compile(e.args[0])
            return self._step(a, -1, 0, 1)
        raise CondcheckError(f"unsupported node {type(e).__name__} ({e}) in an activation expression; "
                             f"supported: +, *, powers, exp, log, erf, erfc, tanh, sinh, cosh, atan, asinh, "
                             f"sqrt, sin, cos, Abs, Max, Min, Heaviside, sign, Piecewise")

    def _step(self, a, neg, zero, pos):
        vals = [Fraction(neg), Fraction(zero), Fraction(pos)]

        def f(B, X):
            if isinstance(B, NumpyBackend):
                # step values are small dyadics or 1/2-like rationals; enclose them in float64
                fl = [(_dn(np.float64(float(v))), _up(np.float64(float(v)))) if Fraction(float(v)) != v
                      else (float(v), float(v)) for v in vals]
                lo1, _ = B.step(a(B, X), fl[0][0], fl[1][0], fl[2][0])
                _, hi1 = B.step(a(B, X), fl[0][1], fl[1][1], fl[2][1])
                return lo1, hi1
            if isinstance(B, ArbBackend):
                return B.step_rational(a(B, X), vals)
            mv = [B.rational(v.numerator, v.denominator) for v in vals]
            ai = a(B, X)
            lo1, _ = _mp_step(B, ai, [m[0] for m in mv])
            _, hi1 = _mp_step(B, ai, [m[1] for m in mv])
            return lo1, hi1
        return f


def _mp_step(B, a, vals):
    lo, hi = a
    sel = []
    if L.mpf_lt(lo, _F0):
        sel.append(vals[0])
    if L.mpf_le(lo, _F0) and L.mpf_ge(hi, _F0):
        sel.append(vals[1])
    if L.mpf_gt(hi, _F0):
        sel.append(vals[2])
    return _mpf_min(sel), _mpf_max(sel)


class Compiled:
    """A compiled expression: ``enclose_array(points)`` and ``enclose_mp(point, prec)``."""

    def __init__(self, expr):
        self.expr = expr
        self.fn = _Compiler().compile(expr)
        self._np = NumpyBackend()
        self._arb = {}

    def enclose_array(self, points):
        X = np.ascontiguousarray(np.asarray(points, dtype=np.float64).ravel())
        if not np.all(np.isfinite(X)):
            raise CondcheckError("enclosures are computed at finite points only")
        if X.size == 0:
            return np.empty(0), np.empty(0)
        with np.errstate(all="ignore"):
            lo, hi = self.fn(self._np, X)
        lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), X.shape).copy()
        hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), X.shape).copy()
        lo[np.isnan(lo)] = -_INF
        hi[np.isnan(hi)] = _INF
        return lo, hi

    def enclose_mp_raw(self, q: Fraction, prec: int):
        B = MpBackend(prec)
        return self.fn(B, B.point(Fraction(q)))

    def arb_backend(self, prec: int) -> "ArbBackend":
        """The Arb backend at ``prec`` bits for this expression (kept: it caches the constants)."""
        B = self._arb.get(prec)
        if B is None:
            B = self._arb[prec] = ArbBackend(prec)
        return B

    def enclose_arb_ends(self, q, prec: int):
        """(lo, hi) enclosing the expression at the exact rational ``q`` (a Fraction, or a float taken
        exactly), from Arb balls at ``prec`` bits: exact arbs, or the floats -inf/+inf for an unbounded
        side.  Needs python-flint."""
        if not HAVE_ARB:
            raise CondcheckError("the Arb backend needs python-flint (pip install python-flint)")
        ctx = _flint.ctx
        old = ctx.prec
        ctx.prec = prec
        try:
            B = self.arb_backend(prec)
            return _pair(self.fn(B, B.point(q if type(q) is float else Fraction(q))))
        finally:
            ctx.prec = old

    def enclose_mp(self, q, prec: int):
        lo, hi = self.enclose_mp_raw(Fraction(q), prec)
        return mpmath.mp.make_mpf(lo), mpmath.mp.make_mpf(hi)      # exact, not rounded to mp.prec


@lru_cache(maxsize=None)
def compile_expression(expr) -> Compiled:
    """Compile a sympy expression in ``x`` once (cached)."""
    return Compiled(sympy.sympify(expr))


def enclose_array(expr, points):
    """(lo, hi) float64 arrays enclosing ``expr`` at every (exact float64) point."""
    return compile_expression(expr).enclose_array(points)


def enclose_mp(expr, point, prec: int = 64):
    """(lo, hi) mpmath numbers (exact, whatever mpmath.mp.prec is) enclosing ``expr`` at the exact rational ``point``, at ``prec`` bits."""
    from .formats import to_fraction
    return compile_expression(expr).enclose_mp(to_fraction(point), prec)


def enclose_arb(expr, point, prec: int = 64):
    """(lo, hi) enclosing ``expr`` at the exact rational ``point`` from Arb balls at ``prec`` bits: exact
    ``flint.arb`` numbers, or the floats -inf/+inf for an unbounded side."""
    from .formats import to_fraction
    return compile_expression(expr).enclose_arb_ends(to_fraction(point), prec)
