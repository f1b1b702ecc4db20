"""The numpy interval backend: float64 arrays ``(lo, hi)``, vectorized over all points at once.

After every operation ``lo`` is moved down and ``hi`` up with ``np.nextafter``: 1 ulp after the IEEE
operations (+, -, *, /, sqrt are correctly rounded, so 1 ulp covers the rounding), 4 ulps after
``np.power`` and every libm/scipy function, and ``8 + 4 * t**2`` ulps after ``scipy.special.erfc(t)``
(scipy's erfc loses about ``t**2`` ulps, measured up to 1.5 * (4 + t**2)); that libm and scipy are
this accurate is the assumption of this backend.  A bound that overflowed to +-inf from finite inputs
keeps its finite side (``exp(740) -> [max float, inf]``), a result that underflowed to 0 widens to
``[-tiny, tiny]``, and a function outside its real domain gives ``(-inf, inf)``.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .decide import decided_by_sign
from .mp_backend import MpBackend, mpf_to_float_down, mpf_to_float_up

__all__ = ["NumpyBackend"]

_INF = np.inf


_ORD_INF = np.int64(0x7FF0000000000000)        # the ordinal of +inf (bit pattern of +inf)
_MAG = np.int64(0x7FFFFFFFFFFFFFFF)


def nextafter_k(a, k: int):
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
    return nextafter_k(a, -k)


def _up(a, k=1):
    return nextafter_k(a, k)


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
            self._consts[key] = (mpf_to_float_down(lo), mpf_to_float_up(hi))
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

    def step_rational(self, a, vals):
        """A step function of ``a``: ``vals`` (Fractions) below 0, at 0, above 0, each enclosed in float64
        (they are small dyadics or 1/2-like rationals)."""
        fl = [(_dn(np.float64(float(v))), _up(np.float64(float(v)))) if Fraction(float(v)) != v
              else (float(v), float(v)) for v in vals]
        lo1, _ = self.step(a, fl[0][0], fl[1][0], fl[2][0])
        _, hi1 = self.step(a, fl[0][1], fl[1][1], fl[2][1])
        return lo1, hi1

    def intersect(self, a, b):
        return np.maximum(a[0], b[0]), np.minimum(a[1], b[1])

    # -- conditions and Piecewise --------------------------------------------------------------------
    def sign_decide(self, d, rel, X, exact):
        """Boolean array: does ``rel(d, 0)`` hold at each point?  Undecided points go to ``exact``."""
        lo, hi = d
        yes, no = decided_by_sign(rel, lo, hi)
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

