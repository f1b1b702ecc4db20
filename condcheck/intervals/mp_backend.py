"""The mpmath interval backend: raw mpmath numbers at a precision ``prec``, one point.

+, -, *, / and sqrt use mpmath's directed rounding (floor for ``lo``, ceiling for ``hi``), which is
exact; elementary and special functions are widened by a relative ``2**-(prec - 8)`` (the one
assumption: mpmath's functions are that accurate).  A function at a point where its value is an exact
rational (exp(0) = 1, tanh(0) = 0, log(1) = 0, ...) returns that value exactly, so exact boundaries
such as sigmoid(0) = 1/2 come out as points.  A function outside its real domain raises
:class:`CondcheckError`.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import mpmath.libmp as L
import numpy as np

from condcheck.errors import CondcheckError

from .decide import PointConditions, decided_by_sign

__all__ = ["MpBackend", "mp_to_fraction", "mpf_is_special", "mpf_to_float_down", "mpf_to_float_up"]

_INF = np.inf
_MAXF = np.finfo(np.float64).max
_F0, _F1, _FINF, _FNINF = L.fzero, L.fone, L.finf, L.fninf


def mpf_to_float_down(v) -> float:
    """The largest float64 at most the raw mpf ``v`` (-inf stays -inf, +inf gives the largest float)."""
    if v == _FNINF:
        return -_INF
    if v == _FINF:
        return _MAXF
    f = L.to_float(v)
    if math.isfinite(f) and L.from_float(f) == v:
        return f                                    # exactly a float64
    return float(np.nextafter(f, -_INF)) if (math.isfinite(f) or f > 0) else f


def mpf_to_float_up(v) -> float:
    """The smallest float64 at least the raw mpf ``v`` (+inf stays +inf, -inf gives -largest float)."""
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


def mpf_is_special(v):
    """Is the raw mpf ``v`` an infinity or a NaN?"""
    return v[1] == 0 and v != _F0      # inf, -inf, nan


class MpBackend(PointConditions):
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
                if (u == _F0 and mpf_is_special(v)) or (v == _F0 and mpf_is_special(u)):
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
        if mpf_is_special(v):
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
            if mpf_is_special(v):
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
            if mpf_is_special(v) or v == _F0:
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
        if mpf_is_special(lo) or mpf_is_special(hi):
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

    def step_rational(self, a, vals):
        """A step function of ``a``: ``vals`` (Fractions) below 0, at 0, above 0, each enclosed."""
        mv = [self.rational(v.numerator, v.denominator) for v in vals]
        lo1, _ = _step_ends(a, [m[0] for m in mv])
        _, hi1 = _step_ends(a, [m[1] for m in mv])
        return lo1, hi1

    def intersect(self, a, b):
        return _mpf_max([a[0], b[0]]), _mpf_min([a[1], b[1]])

    # -- conditions and Piecewise --------------------------------------------------------------------
    def sign_decide(self, d, rel, X, exact):
        lo, hi = d
        c_lo, c_hi = L.mpf_cmp(lo, _F0), L.mpf_cmp(hi, _F0)
        yes, no = decided_by_sign(rel, c_lo, c_hi)
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
    if mpf_is_special(v):
        return _F0
    return L.mpf_div(_F1, v, prec, rnd)


def _pow_int(v, n, prec, rnd):
    if mpf_is_special(v):
        if v == _FINF:
            return _FINF
        return _FINF if n % 2 == 0 else _FNINF
    return L.mpf_pow_int(v, n, prec, rnd)


def _step_ends(a, vals):
    """The least and the greatest of ``vals`` (below 0, at 0, above 0) that ``a`` can reach."""
    lo, hi = a
    sel = []
    if L.mpf_lt(lo, _F0):
        sel.append(vals[0])
    if L.mpf_le(lo, _F0) and L.mpf_ge(hi, _F0):
        sel.append(vals[1])
    if L.mpf_gt(hi, _F0):
        sel.append(vals[2])
    return _mpf_min(sel), _mpf_max(sel)
