"""Activations in floating point: sigma~ = RN_F(sigma) and sigma~' = RN_F(sigma') (docs/semantics.md).

Implementations are named (:data:`IMPLEMENTATIONS`):

* ``"exact"``: correctly rounded.  Certain path (:func:`certain_round`): Ziv's strategy, an mpmath
  enclosure (condcheck.intervals) at 64, 128, 256, ... bits until both ends round to the same value of
  the format (or both overflow on the same side).  At 1024 bits still undecided, the expression is
  evaluated exactly by sympy at the rational point; a rational result (sigmoid(0) = 1/2, a tie of
  leaky_relu, ...) is rounded exactly.  Otherwise the precision keeps doubling up to
  :data:`MAX_PRECISION` bits, then a :class:`CondcheckError` says so.  Fast path: the float64
  enclosure of all points at once, accepted where both ends round (``round_array``, exact) to the same
  value; every other point goes through the certain path.  The two paths are the same function: the
  fast path only accepts points where the certain answer is forced.
  With python-flint installed (``intervals.HAVE_ARB``), the certain path first runs the same strategy on Arb
  balls (``intervals.ArbBackend``: rigorous, no widening assumption; p + 8 bits rounded up to whole
  limbs, doubling; sympy's exact check at :data:`ARB_EXACT_AT_PRECISION` bits), 10-20 times faster
  than mpmath; a point it leaves undecided (a ball that stays unbounded) goes to the mpmath loop.  On
  formats inside float64 the certified results are kept in a bounded memo (:data:`MEMO_LIMIT` values).
* ``"float32-upcast"``: what NumPy/ml_dtypes compute for low-precision inputs: the input cast to
  float32, sigma (and its sympy derivative) evaluated with numpy/scipy in float32 arithmetic
  (``sympy.lambdify`` of the expression with its constants as Python floats, so that numpy keeps
  float32), then rounded once to the format.  For formats that float32 does not contain (more than 24
  significand bits or a wider exponent range, e.g. float64 or ``b30_9``) the evaluation is in float64
  instead.  A NaN from float32 arithmetic (e.g. inf/inf) counts as overflow.
* ``"torch"``: an observed table from PyTorch CPU (formats of at most 16 bits):
  sigma~ from the forward op and sigma~' from torch.autograd at every value of the format, in the
  format's torch dtype where torch computes the op (float16, bfloat16), through float32 otherwise
  (then rounded to the format exactly).  Beyond 16 bits (float32) no table: torch's float32 op and
  autograd at the points asked for.  See :mod:`condcheck.torch_impl`.
* a registered plug-in's name: the values of a user's array functions, observed (:mod:`condcheck.implementations`).

Callable activations (``register_activation(name, function=f, derivative=df)``): sympy enclosures are
not available, so "exact" rounds a *trusted* value instead of a certified one (:func:`callable_round`):
the callable is evaluated with mpmath at :func:`callable_precisions` (2p+16 and 4p+32 bits for a format
of p significand bits, then doubling), each value v is taken to be within
``|v| 2^-(prec-8) + 2^(e_min-M-prec)`` of sigma, and a rounding is accepted when that interval rounds
to one value at two consecutive precisions and both agree.  A callable that returns a ``Fraction`` (or
an int) is taken as exact.  A value that stays on a rounding boundary (a tie) at every precision is an
error naming the point: a callable cannot settle ties; a sympy expression can.  "float32-upcast" of
a callable is RN_F(RN_float32(sigma)) with the float32 value from the same trusted path (a float32
library that rounds correctly; the callable gives no float32 formula to emulate).

Overflow: a real value whose rounding exceeds Omega is an overflow: ``value`` raises
:class:`FormatOverflowError`, arrays report it in an overflow mask and hold +-inf.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import mpmath
import mpmath.libmp as L
import numpy as np
import sympy

from .activations import Activation, get_activation, x as X_SYMBOL
from .errors import CondcheckError, FormatOverflowError, NotInFormatError, UnknownNameError
from .formats import Format, get_format, num_text, to_fraction
from .implementations import get_implementation as plugin_implementation, plugin_points
from .intervals import HAVE_ARB, compile_expression, mp_to_fraction
from .rounding import round_array, round_fraction

IMPLEMENTATIONS = ("exact", "float32-upcast", "torch")
START_PRECISION = 64
EXACT_AT_PRECISION = 1024
MAX_PRECISION = 20000
TABLE_BITS = 16          # value_array uses a full table for formats of at most this many bits

_POS_OVER, _NEG_OVER = float("inf"), float("-inf")


# ---- the certain path ------------------------------------------------------------------------------
def round_end(v, fmt: Format):
    """RN_F of an mpmath raw endpoint: a Fraction, or +-inf for an overflow."""
    sign, man, exp, bc = v
    if not man:
        if v == L.fzero:
            return Fraction(0)
        if v == L.finf:
            return _POS_OVER
        if v == L.fninf:
            return _NEG_OVER
        raise CondcheckError("NaN in an enclosure")
    mag = exp + bc                                    # 2**(mag-1) <= |v| < 2**mag
    if mag - 1 >= fmt.e_max + 1:                       # |v| >= 2**(e_max+1) > Omega + half an ulp
        return _NEG_OVER if sign else _POS_OVER
    if mag <= fmt.e_min - fmt.M - 2:                   # |v| < omega / 2: rounds to 0
        return Fraction(0)
    try:
        return round_fraction(mp_to_fraction(v), fmt)
    except FormatOverflowError:
        return _NEG_OVER if sign else _POS_OVER




def _finish(r, fmt: Format, what: str):
    if isinstance(r, float):
        raise FormatOverflowError(f"{what} overflows {fmt.name} (beyond its largest finite value "
                                  f"{num_text(fmt.max)})")
    return r


# ---- the Arb path ----------------------------------------------------------------------------------
#: what the Arb path returns for a point it leaves to the mpmath path
UNDECIDED = object()


#: Arb's balls are cheap at a few thousand bits (sympy's exact evaluation costs milliseconds), so the
#: exact rational check waits longer than in the mpmath loop: a value within 2^-1100 (relative) of a
#: rounding boundary, e.g. swish or gelu at a subnormal x (x/2 plus a correction of order x^2), is
#: decided by the balls at 2048 bits.
ARB_EXACT_AT_PRECISION = 4096


def arb_start_precision(fmt: Format) -> int:
    """The first Arb precision for fmt: p + 8 bits rounded up to whole 64-bit limbs (64 for float64: a
    ball of a few units in its last place decides most roundings; the rest doubles to 128 bits)."""
    return 64 * -(-(fmt.p + 8) // 64)


@lru_cache(maxsize=None)
def _max_significand(fmt: Format) -> int:
    """Omega / 2**(e_max - M): an integer of at most M + 1 bits."""
    m = fmt.max * Fraction(2) ** (fmt.M - fmt.e_max)
    assert m.denominator == 1
    return int(m)


def _rn_key(v, fmt: Format):
    """RN_F of an end of an Arb enclosure (an exact arb, or the float +-inf): +-inf for an overflow, else
    ``(n, s)`` with RN_F = n * 2**s in a canonical form (|n| < 2**(M+1); (0, 0) for zero).  Integer
    arithmetic on the end's mantissa and exponent, the rule of ``rounding.round_fraction``."""
    if type(v) is float:
        return v
    man, exp = v.man_exp()
    man, exp = int(man), int(exp)
    if man == 0:
        return (0, 0)
    neg = man < 0
    m = -man if neg else man
    mag = exp + m.bit_length()                           # 2**(mag-1) <= |v| < 2**mag
    M = fmt.M
    if mag - 1 > fmt.e_max:                              # |v| >= 2**(e_max+1) > Omega + half an ulp
        return _NEG_OVER if neg else _POS_OVER
    if mag <= fmt.e_min - M - 1:                         # |v| < omega/2: rounds to 0
        return (0, 0)
    s = max(mag - 1, fmt.e_min) - M                      # the quantum 2**s at |v|
    shift = s - exp
    if shift <= 0:
        n = m << -shift
    else:
        n = m >> shift
        r = m & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if r > half or (r == half and n & 1):
            n += 1
    if n == 0:
        return (0, 0)
    if n >> (M + 1):                                     # rounded up to 2**(M+1) * 2**s
        n >>= 1
        s += 1
    if s + n.bit_length() - 1 > fmt.e_max or (s == fmt.e_max - M and n > _max_significand(fmt)):
        return _NEG_OVER if neg else _POS_OVER
    return (-n if neg else n, s)


def _key_value(k):
    if isinstance(k, float):
        return k
    n, s = k
    return Fraction(n << s) if s >= 0 else Fraction(n, 1 << -s)


def certain_arb(comp, q, fmt: Format):
    """RN_F at q from Arb enclosures, a Fraction or +-inf (overflow), or UNDECIDED."""
    k = _arb_key(comp, q, fmt)
    return k if (k is UNDECIDED or isinstance(k, (float, Fraction))) else _key_value(k)


def _arb_key(comp, q, fmt: Format):
    """RN_F at q (a Fraction, or a float taken exactly) from Arb enclosures (Ziv: the precision doubles
    until both ends round to one value): a key of :func:`_rn_key`, +-inf for an overflow, a Fraction
    (sympy's exact value), or UNDECIDED.  The same rule as the mpmath loop of :func:`certain_value`, on
    rigorous balls: at ARB_EXACT_AT_PRECISION bits still undecided (the ball holds a rounding boundary),
    sympy's exact value is used if it is rational; an end still unbounded at EXACT_AT_PRECISION bits
    (no ball can say it) or an error gives up (UNDECIDED): the mpmath path decides then."""
    prec = arb_start_precision(fmt)
    tried_exact = False
    while prec <= MAX_PRECISION:
        try:
            lo, hi = comp.enclose_arb_ends(q, prec)
        except CondcheckError:
            return UNDECIDED
        kl, kh = _rn_key(lo, fmt), _rn_key(hi, fmt)
        if kl == kh:
            return kl
        if (type(lo) is float or type(hi) is float) and prec >= EXACT_AT_PRECISION:
            return UNDECIDED                           # still unbounded: Arb can not say it
        if prec >= ARB_EXACT_AT_PRECISION and not tried_exact:
            tried_exact = True
            r = _sympy_rational(comp, Fraction(q), fmt)
            if r is not None:
                return r
        prec *= 2
    return UNDECIDED


def _sympy_rational(comp, q: Fraction, fmt: Format):
    """RN_F of sympy's exact value at q when it is rational (else None)."""
    val = sympy.sympify(comp.expr).subs(X_SYMBOL, sympy.Rational(q.numerator, q.denominator))
    if isinstance(val, sympy.Rational):
        try:
            return round_fraction(Fraction(int(val.p), int(val.q)), fmt)
        except FormatOverflowError:
            return _POS_OVER if val > 0 else _NEG_OVER
    return None


def certain_value(comp, q: Fraction, fmt: Format, what, use_arb=None):
    """RN_F of the compiled expression at q; returns a Fraction or +-inf (overflow).  ``what`` names the
    evaluation in the error: a string, or a function giving it (printing a sympy expression costs as
    much as a certified evaluation, so the many-point callers format it only on failure).  Arb first
    (``use_arb``, default: when python-flint is installed), then mpmath for what Arb leaves undecided."""
    if HAVE_ARB if use_arb is None else use_arb:
        r = certain_arb(comp, q, fmt)
        if r is not UNDECIDED:
            return r
    prec = START_PRECISION
    tried_exact = False
    while prec <= MAX_PRECISION:
        lo, hi = comp.enclose_mp_raw(q, prec)
        rl, rh = round_end(lo, fmt), round_end(hi, fmt)
        if rl == rh:
            return rl
        if prec >= EXACT_AT_PRECISION and not tried_exact:
            tried_exact = True
            r = _sympy_rational(comp, q, fmt)
            if r is not None:
                return r
        prec *= 2
    what = what() if callable(what) else what
    raise CondcheckError(f"could not decide the rounding of {what} to {fmt.name} at x = {q} "
                         f"(still undecided at {MAX_PRECISION} bits, and sympy gives no rational value)")


def certain_round(expr, point, fmt) -> Fraction:
    """RN_F(expr(point)) for a sympy expression in x and an exact point; FormatOverflowError on overflow."""
    fmt = get_format(fmt)
    q = to_fraction(point)
    what = f"{expr} at x = {q}"
    return _finish(certain_value(compile_expression(sympy.sympify(expr)), q, fmt, what), fmt, what)


# ---- callables: trusted, not certified --------------------------------------------------------------
CALLABLE_GUARD_BITS = 8
CALLABLE_MAX_DOUBLINGS = 5


def callable_precisions(fmt: Format) -> list[int]:
    """The mpmath precisions at which a callable is evaluated for fmt: 2p+16, 4p+32, then doubling."""
    first = 2 * fmt.p + 16
    return [first] + [(4 * fmt.p + 32) << k for k in range(CALLABLE_MAX_DOUBLINGS + 1)]


def _callable_value(fn, q: Fraction, prec: int, fmt: Format, what: str):
    """("exact", Fraction) | ("over", +-inf) | ("encl", rounded lo, rounded hi, mpf value)."""
    with mpmath.workprec(max(prec, fmt.p + 2)):
        t = mpmath.mpf(q.numerator) / q.denominator          # exact: q has at most p significand bits
        try:
            v = fn(t)
        except Exception as e:                                # noqa: BLE001 -- user code
            raise CondcheckError(f"{what}: the callable raised {type(e).__name__}: {e}") from None
    if isinstance(v, (Fraction, int)) and not isinstance(v, bool):
        return ("exact", Fraction(v))
    if isinstance(v, float):
        v = mpmath.mpf(v)
    if not isinstance(v, mpmath.mpf):
        raise CondcheckError(f"{what}: the callable returned {v!r} ({type(v).__name__}), not a real mpmath number")
    raw = v._mpf_
    if raw == L.fnan:
        raise CondcheckError(f"{what}: the callable returned NaN")
    if raw in (L.finf, L.fninf):
        return ("over", _POS_OVER if raw == L.finf else _NEG_OVER)
    rel = L.mpf_shift(L.mpf_abs(raw), -(prec - CALLABLE_GUARD_BITS))
    err = L.mpf_add(rel, L.from_man_exp(1, fmt.e_min - fmt.M - prec), 64, L.round_ceiling)
    lo = L.mpf_sub(raw, err, prec + 64, L.round_floor)
    hi = L.mpf_add(raw, err, prec + 64, L.round_ceiling)
    return ("encl", round_end(lo, fmt), round_end(hi, fmt), v)


def callable_round(fn, q: Fraction, fmt: Format, what: str):
    """RN_F of a trusted callable at q: a Fraction or +-inf (overflow); see the module docstring."""
    prev = None
    last = None
    for prec in callable_precisions(fmt):
        r = _callable_value(fn, q, prec, fmt, what)
        if r[0] == "exact":
            return _round_exact(r[1], fmt)
        if r[0] == "over":
            got = r[1]
        else:
            last = r[3]
            got = r[1] if r[1] == r[2] else None
        if got is not None and prev is not None and got == prev:
            return got
        prev = got
    raise CondcheckError(
        f"could not decide the rounding of {what}: the callable's value "
        f"{mpmath.nstr(last, 20) if last is not None else '?'} stays within its trusted error of a rounding boundary "
        f"of {fmt.name} (or its precisions disagree) up to {callable_precisions(fmt)[-1]} bits.  A callable cannot "
        f"settle an exact tie: register the activation as a sympy expression (certified), or let the callable "
        f"return a fractions.Fraction where its value is exact")


def _round_exact(v: Fraction, fmt: Format):
    try:
        return round_fraction(v, fmt)
    except FormatOverflowError:
        return _POS_OVER if v > 0 else _NEG_OVER


def _callable_of(act: Activation, derivative: bool):
    return act.dfunction if derivative else act.function


def _label(act: Activation, derivative: bool) -> str:
    return f"{act.name}{chr(39) if derivative else ''}"


def exact_point(act: Activation, derivative: bool, q: Fraction, fmt: Format):
    """RN_F(sigma(q)) or RN_F(sigma'(q)) under "exact": a Fraction or +-inf (overflow).  Certified for
    expressions; trusted for callables."""
    what = f"{_label(act, derivative)}({num_text(q)}) to {fmt.name}"
    if act.is_callable:
        return callable_round(_callable_of(act, derivative), q, fmt, what)
    expr = act.derivative if derivative else act.expr
    return certain_value(compile_expression(expr), q, fmt, what)


def _callable_array(act: Activation, derivative: bool, pts: np.ndarray, fmt: Format):
    """callable_round at every point, batched: each precision is evaluated for every point still
    undecided, enclosure ends go to float64 with outward rounding and are rounded by round_array (exact);
    the same acceptance rule as callable_round (two consecutive precisions, both decided, equal)."""
    if not _grid_in_float64(fmt):
        vals = np.empty(pts.shape)
        over = np.zeros(pts.shape, bool)
        for i, v in enumerate(pts.tolist()):
            r = callable_round(_callable_of(act, derivative), Fraction(v), fmt,
                               f"{_label(act, derivative)}({v!r}) to {fmt.name}")
            vals[i], over[i] = (r, True) if isinstance(r, float) else (float(r), False)
        return vals, over, 0
    fn = _callable_of(act, derivative)
    n = pts.size
    final = np.full(n, np.nan)
    prev = np.full(n, np.nan)
    todo = np.arange(n)
    floor_exp = fmt.e_min - fmt.M
    for prec in callable_precisions(fmt):
        lo = np.empty(todo.size)
        hi = np.empty(todo.size)
        exact = np.full(todo.size, np.nan)
        raws = [None] * todo.size
        old = mpmath.mp.prec
        try:
            mpmath.mp.prec = max(prec, fmt.p + 2)
            for j, i in enumerate(todo.tolist()):
                z = float(pts[i])
                what = f"{_label(act, derivative)}({z!r}) to {fmt.name}"
                try:
                    v = fn(mpmath.mpf(z))
                except Exception as e:                        # noqa: BLE001 -- user code
                    raise CondcheckError(f"{what}: the callable raised {type(e).__name__}: {e}") from None
                if isinstance(v, (Fraction, int)) and not isinstance(v, bool):
                    r = _round_exact(Fraction(v), fmt)
                    exact[j] = float(r)
                    lo[j] = hi[j] = 0.0
                    continue
                if isinstance(v, float):
                    v = mpmath.mpf(v)
                if not isinstance(v, mpmath.mpf):
                    raise CondcheckError(f"{what}: the callable returned {v!r} ({type(v).__name__}), not a real "
                                         f"mpmath number")
                raw = v._mpf_
                if raw == L.fnan:
                    raise CondcheckError(f"{what}: the callable returned NaN")
                rel = L.mpf_shift(L.mpf_abs(raw), -(prec - CALLABLE_GUARD_BITS))
                err = L.mpf_add(rel, L.from_man_exp(1, floor_exp - prec), 64, L.round_ceiling)
                raws[j] = (L.mpf_sub(raw, err, prec + 64, L.round_floor), L.mpf_add(raw, err, prec + 64, L.round_ceiling))
                lo[j] = L.to_float(raws[j][0], rnd=L.round_floor)
                hi[j] = L.to_float(raws[j][1], rnd=L.round_ceiling)
        finally:
            mpmath.mp.prec = old
        with np.errstate(invalid="ignore"):
            rl, _ = round_array(lo, fmt)
            rh, _ = round_array(hi, fmt)
        for j in np.flatnonzero(rl != rh).tolist():       # float64 ends too coarse: round the exact ends
            if raws[j] is not None:
                a, b = round_end(raws[j][0], fmt), round_end(raws[j][1], fmt)
                rl[j], rh[j] = float(a), float(b)
        got = np.where(rl == rh, rl, np.nan)
        got = np.where(np.isnan(exact), got, exact)
        p = prev[todo]
        done = (~np.isnan(got) & (got == p)) | ~np.isnan(exact)
        final[todo[done]] = got[done]
        prev[todo] = got
        todo = todo[~done]
        if todo.size == 0:
            break
    if todo.size:
        i = int(todo[0])
        callable_round(fn, Fraction(float(pts[i])), fmt,
                       f"{_label(act, derivative)}({float(pts[i])!r}) to {fmt.name}")    # raises the message
        raise AssertionError("unreachable: callable_round decided a point the batch could not")
    over = np.isinf(final)
    return np.where(final == 0, 0.0, final), over, 0


# ---- the fast path ---------------------------------------------------------------------------------
def _grid_in_float64(fmt: Format) -> bool:
    """Every value of fmt is a float64 and round_array rounds float64 to fmt exactly."""
    return fmt.name == "float64" or (fmt.M < 52 and fmt.e_min - fmt.M >= -1074 and fmt.e_max <= 1023)


#: Memo of certain-path results on formats inside float64: {(expression, format): {x: RN_F(expr(x))}}
#: (floats; +-inf for an overflow).  At most MEMO_LIMIT entries in all; the oldest half of a full memo
#: is dropped.  The values are the certified ones (a memo only saves recomputing them).
MEMO_LIMIT = 1 << 20
_memo: dict = {}
_memo_size = [0]


def clear_memo():
    """Empty the memo of certified evaluations."""
    for d in _memo.values():
        d.clear()
    _memo.clear()
    _memo_size[0] = 0


def memo_size() -> int:
    """How many certified evaluations the memo holds now (at most :data:`MEMO_LIMIT`)."""
    return sum(len(d) for d in _memo.values())


def _memo_room(n_new: int):
    if _memo_size[0] + n_new <= MEMO_LIMIT:
        return
    for d in list(_memo.values()):                       # drop the oldest half of every table
        for k in list(d)[: len(d) // 2 + 1]:
            del d[k]
    _memo_size[0] = sum(len(d) for d in _memo.values())
    if _memo_size[0] + n_new > MEMO_LIMIT:
        clear_memo()


def certain_float(comp, v: float, fmt: Format, what):
    """RN_F at the float v for a format inside float64: a float (+-inf for an overflow)."""
    if HAVE_ARB:
        k = _arb_key(comp, v, fmt)
        if type(k) is tuple:
            return math.ldexp(k[0], k[1])               # exact: a value of fmt is a float64
        if k is not UNDECIDED:
            return float(k)
    r = certain_value(comp, Fraction(v), fmt, what, use_arb=False)
    return r if isinstance(r, float) else float(r)


def _exact_fast(expr, pts: np.ndarray, fmt: Format):
    """(values, overflow mask, fallback count) of RN_F(expr) at float64 points of fmt."""
    comp = compile_expression(expr)
    lo, hi = comp.enclose_array(pts)
    rl, ol = round_array(lo, fmt)
    rh, oh = round_array(hi, fmt)
    ok = (rl == rh) & (ol == oh)
    vals = np.where(rl == 0, 0.0, rl)
    over = ol.copy()
    bad = np.flatnonzero(~ok)
    if bad.size:
        memo = _memo.setdefault((expr, fmt), {})
        xs = pts[bad].tolist()
        got = [memo.get(v) for v in xs]
        new = [j for j, g in enumerate(got) if g is None]
        _memo_room(len(new))
        memo = _memo.setdefault((expr, fmt), memo)
        size = _memo_size[0]
        for j in new:
            v = xs[j]
            r = got[j] = certain_float(comp, v, fmt, lambda v=v: f"{expr} at x = {v!r}")
            if size < MEMO_LIMIT:
                memo[v] = r
                size += 1
        _memo_size[0] = size
        g = np.array(got, dtype=np.float64)
        vals[bad] = g
        over[bad] = np.isinf(g)
    return vals, over, int(bad.size)


# ---- float32-upcast --------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _lambdified(expr):
    import scipy.special                     # here, not at import (0.1-0.3 s): only erf needs it
    modules = [{"erf": scipy.special.erf, "erfc": scipy.special.erfc}, "numpy"]
    return sympy.lambdify(X_SYMBOL, sympy.sympify(expr).evalf(), modules=modules)


def _upcast_dtype(fmt: Format):
    fits32 = fmt.p <= 24 and fmt.e_max <= 127 and fmt.e_min - fmt.M >= -149
    return np.float32 if fits32 else np.float64


def _upcast(act: Activation, derivative: bool, pts: np.ndarray, fmt: Format):
    if not _grid_in_float64(fmt):
        raise CondcheckError(f"the float32-upcast implementation needs a format inside float64; "
                             f"{fmt.name} is not")
    dt = _upcast_dtype(fmt)
    if act.is_callable:                     # RN_F(RN_float32(sigma)) from the trusted callable path
        mid, mid_over, _ = _callable_array(act, derivative, pts, get_format("float32" if dt == np.float32 else "float64"))
        vals, over = round_array(mid, fmt)
        return vals, over | mid_over, 0
    expr = act.derivative if derivative else act.expr
    z = pts.astype(dt)
    with np.errstate(all="ignore"):
        y = np.asarray(_lambdified(expr)(z))
    y = np.broadcast_to(y, z.shape).astype(np.float64)
    vals, over = round_array(y, fmt)
    return vals, over, 0


# ---- tables and the public class ---------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """sigma~ and sigma~' on every value of an enumerable format (ascending float64 points).

    ``sigma``/``dsigma`` hold +-inf where the rounded value overflows (``sigma_overflow``,
    ``dsigma_overflow``).  ``fallback_count`` is the number of certain-path evaluations the table
    needed (value and derivative together; 0 for float32-upcast).
    """

    points: np.ndarray
    sigma: np.ndarray
    dsigma: np.ndarray
    sigma_overflow: np.ndarray
    dsigma_overflow: np.ndarray
    fallback_count: int
    sigma_fallbacks: int = 0
    dsigma_fallbacks: int = 0


def _evaluate(act: Activation, fmt: Format, impl: str, derivative: bool, pts):
    if impl not in IMPLEMENTATIONS:
        s, so, d, do = plugin_points(impl, act, fmt, pts)
        return (d, do, 0) if derivative else (s, so, 0)
    if impl == "torch":
        from .torch_impl import torch_points
        s, so, d, do = torch_points(act, fmt, pts)
        return (d, do, 0) if derivative else (s, so, 0)
    if impl == "exact":
        if act.is_callable:
            return _callable_array(act, derivative, pts, fmt)
        return _exact_fast(act.derivative if derivative else act.expr, pts, fmt)
    return _upcast(act, derivative, pts, fmt)


def evaluate_points(act: Activation, fmt: Format, impl: str, pts: np.ndarray):
    """(sigma~, its overflow mask, sigma~', its overflow mask, certain-path evaluations) at float64 points
    of a format inside float64, as the implementation computes them, vectorized: "exact" by the float64
    interval enclosures rounded at both ends with the certain path where they disagree (or the trusted
    callable path), "float32-upcast" in float32 arithmetic, "torch" by PyTorch's CPU op and autograd
    (:func:`condcheck.torch_impl.torch_points`, formats of more than 16 bits).  Overflowed values are
    +-inf.  The chunked exhaustive checks (:mod:`conditions.chunks`) evaluate their chunks with it."""
    if impl == "torch":
        from .torch_impl import torch_points
        s, so, d, do = torch_points(act, fmt, pts)
        return s, so, d, do, 0
    if impl not in IMPLEMENTATIONS:
        return (*plugin_points(impl, act, fmt, pts), 0)
    s, so, sf = evaluate_array(act, fmt, impl, False, pts)
    d, do, df = evaluate_array(act, fmt, impl, True, pts)
    return s, so, d, do, sf + df


def evaluate_array(act: Activation, fmt: Format, impl: str, derivative: bool, pts: np.ndarray):
    """(values, overflow mask, certain-path evaluations) of sigma~ or sigma~' alone (see
    :func:`evaluate_points`)."""
    return _evaluate(act, fmt, impl, derivative, pts)


@lru_cache(maxsize=None)
def _table(act: Activation, fmt: Format, impl: str, plugin=None) -> Table:
    # ``plugin`` (the registered Implementation of a plug-in name, else None) is part of the cache key
    # only: a name registered again in a scoped registry (tests) never meets another's table
    if not fmt.enumerable:
        raise CondcheckError(f"{fmt.name} has {fmt.bits} bits; tables are made for formats of at most "
                             f"24 bits")
    pts = fmt.values()
    if impl == "torch":
        from .torch_impl import torch_table_arrays
        s, so, d, do = torch_table_arrays(act, fmt)
        sf = df = 0
    else:
        s, so, sf = _evaluate(act, fmt, impl, False, pts)
        d, do, df = _evaluate(act, fmt, impl, True, pts)
    for a in (s, so, d, do):
        a.setflags(write=False)
    return Table(points=pts, sigma=s, dsigma=d, sigma_overflow=so, dsigma_overflow=do,
                 fallback_count=sf + df, sigma_fallbacks=sf, dsigma_fallbacks=df)


def clear_tables():
    """Forget the tables of sigma~ and sigma~' made so far (a benchmark times one from scratch)."""
    _table.cache_clear()


class RoundedActivation:
    """sigma~ and sigma~' of one activation in one format under one implementation (cached by
    :func:`get_rounded`)."""

    def __init__(self, activation: Activation, fmt: Format, implementation: str, plugin=None):
        self.activation = activation
        self.format = fmt
        self.implementation = implementation
        self._plugin = plugin           # the plug-in's Implementation (for the table cache's key), or None

    def __repr__(self):
        return (f"RoundedActivation({self.activation.name!r}, {self.format.name!r}, "
                f"{self.implementation!r})")

    @property
    def _use_table(self) -> bool:
        return self.format.bits <= TABLE_BITS and _grid_in_float64(self.format)

    def table(self) -> Table:
        return _table(self.activation, self.format, self.implementation, self._plugin)

    # -- scalars -------------------------------------------------------------------------------------
    def _scalar(self, z, derivative: bool) -> Fraction:
        fmt = self.format
        q = fmt.check(z, "activation input")
        name = f"{self.activation.name}{chr(39) if derivative else ''}({num_text(q)}) in {fmt.name}"
        if self.implementation == "exact" and not self._use_table:
            return _finish(exact_point(self.activation, derivative, q, fmt), fmt, name)
        vals, over = self._array(np.array([float(q)]), derivative)
        if over[0]:
            raise FormatOverflowError(f"{name} overflows {fmt.name} (beyond its largest finite value "
                                      f"{num_text(fmt.max)})")
        return Fraction(float(vals[0]))

    def value(self, z) -> Fraction:
        """sigma~(z) as an exact Fraction; FormatOverflowError on overflow, NotInFormatError if z is
        not a value of the format."""
        return self._scalar(z, False)

    def derivative(self, z) -> Fraction:
        """sigma~'(z) as an exact Fraction."""
        return self._scalar(z, True)

    # -- arrays --------------------------------------------------------------------------------------
    def _array(self, z, derivative: bool):
        """Values or derivatives at an array of format values: table lookup up to 16 bits."""
        fmt = self.format
        z = np.asarray(z, dtype=np.float64)
        shape = z.shape
        flat = z.ravel()
        if not np.all(np.isfinite(flat)):
            raise NotInFormatError(f"activation inputs must be finite values of {fmt.name}")
        if self._use_table:
            t = self.table()
            idx = table_index(fmt, t.points, flat)
            found = t.points[idx] == flat
            if not found.all():
                bad = flat[~found][0]
                fmt.check(float(bad), "activation input")       # raises with the nearest values
            vals = (t.dsigma if derivative else t.sigma)[idx]
            over = (t.dsigma_overflow if derivative else t.sigma_overflow)[idx]
            return vals.reshape(shape), over.reshape(shape)
        uniq, inv = np.unique(flat, return_inverse=True)
        if _grid_in_float64(fmt):
            r, _ = round_array(uniq, fmt)
            if not np.array_equal(r, uniq):
                fmt.check(float(uniq[r != uniq][0]), "activation input")
        else:
            for v in uniq:
                fmt.check(float(v), "activation input")
        if _grid_in_float64(fmt):
            vals, over, _ = _evaluate(self.activation, fmt, self.implementation, derivative, uniq)
        else:
            if self.implementation != "exact":
                raise CondcheckError(f"the {self.implementation} implementation needs a format inside "
                                     f"float64; {fmt.name} is not")
            vals, over = np.empty(uniq.shape), np.zeros(uniq.shape, bool)
            for i, v in enumerate(uniq):
                r = exact_point(self.activation, derivative, Fraction(float(v)), fmt)
                if isinstance(r, float):
                    vals[i], over[i] = r, True
                else:
                    f = float(r)
                    if Fraction(f) != r:
                        raise CondcheckError(f"{self.activation.name} at {float(v)!r} in {fmt.name} is "
                                             f"not a float64 (its exact value is a rational beyond float64)")
                    vals[i] = f
        return vals[inv].reshape(shape), over[inv].reshape(shape)

    def value_array(self, z):
        """(sigma~(z) as float64, overflow mask) for an array of values of the format (any shape)."""
        return self._array(z, False)

    @property
    def source_note(self) -> str:
        """"" when sigma~ and sigma~' are certified; otherwise how they were obtained (a callable, trusted;
        torch): the check's ``sigma_source``, which ``condcheck recheck`` asks for in the same words."""
        if self.implementation == "torch":
            from .torch_impl import evidence_note
            return evidence_note(self.activation, self.format)
        if self.implementation not in IMPLEMENTATIONS:
            return plugin_implementation(self.implementation).source_note
        if self.activation.is_callable:
            how = ("RN_F" if self.implementation == "exact" else "RN_F(RN_float32(.))")
            return (f"callable, trusted: {how} of the user's mpmath callables, accepted when two precisions "
                    f"agree away from rounding boundaries (not certified like a sympy expression)")
        return ""

    def derivative_array(self, z):
        """(sigma~'(z) as float64, overflow mask)."""
        return self._array(z, True)


def get_implementation(name: str) -> str:
    """A built-in implementation's name, or a registered plug-in's (:mod:`condcheck.implementations`)."""
    if name not in IMPLEMENTATIONS:
        if not isinstance(name, str):
            raise UnknownNameError("implementation", repr(name), IMPLEMENTATIONS)
        return plugin_implementation(name).name
    return name


@lru_cache(maxsize=None)
def _rounded(act: Activation, fmt: Format, impl: str, plugin) -> RoundedActivation:
    return RoundedActivation(act, fmt, impl, plugin)


def get_rounded(activation, fmt, implementation: str = "exact") -> RoundedActivation:
    """The rounded activation (cached per activation, format and implementation; a plug-in implementation
    only for its activation and formats)."""
    act, F, impl = get_activation(activation), get_format(fmt), get_implementation(implementation)
    plugin = None
    if impl not in IMPLEMENTATIONS:
        plugin = plugin_implementation(impl)
        plugin.serves(act, F)
    return _rounded(act, F, impl, plugin)


@lru_cache(maxsize=None)
def _pattern_to_index(fmt: Format, n_points: int):
    """For a format with a numpy dtype: bit pattern -> index into the ascending value table."""
    pts = fmt.values()
    dt = fmt.dtype
    utype = {1: np.uint8, 2: np.uint16}[dt.itemsize]
    lut = np.zeros(1 << (8 * dt.itemsize), dtype=np.int64)
    lut[pts.astype(dt).view(utype)] = np.arange(n_points)
    lut[np.array([-0.0]).astype(dt).view(utype)] = int(np.searchsorted(pts, 0.0))
    return lut, utype


def table_index(fmt: Format, points: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Index of each value of ``flat`` in ``points`` (a wrong index where a value is not in the
    format: callers check ``points[idx] == flat``).  Large arrays of a format with a numpy dtype of at
    most 2 bytes go through a table indexed by bit pattern; small ones (a scalar, a format's few hundred
    values) by binary search, which does not need the dtype (nor the import of ml_dtypes)."""
    if flat.size >= 4096 and fmt.dtype_name is not None and fmt.bits <= 16:
        lut, utype = _pattern_to_index(fmt, points.size)
        with np.errstate(all="ignore"):
            return lut[flat.astype(fmt.dtype).view(utype)]
    idx = np.searchsorted(points, flat)
    return np.minimum(idx, points.size - 1)
