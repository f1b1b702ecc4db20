"""The IEEE-through-Inf option of docs/semantics.md: a network may pass through +-Inf, never through NaN.

Two semantics, chosen per network (``Network.semantics``, ``"semantics"`` in the network file):

* ``"finite"`` (the default): Inf or NaN anywhere, forward or backward, is an error.
* ``"ieee"``: IEEE 754 arithmetic extended to +-Inf.  A rounded product or sum beyond Omega is +-Inf
  (for a format without Inf -- the ml_dtypes ``fn``/``fnuz`` formats -- IEEE encodings give NaN there,
  so the network fails, naming the format); ``Inf (x) w = +-Inf`` for w != 0, ``Inf (+) b = Inf``;
  ``Inf - Inf`` and ``Inf x 0`` are NaN (a zero weight counts: the network is its dense matrix).
  ``sigma~(+-Inf) = RN_F(lim_{x -> +-oo} sigma(x))`` where that limit is a finite real,
  ``+-Inf`` where it is ``+-oo``, NaN otherwise (no limit, or a callable activation: no expression
  to take the limit of); ``sigma~'(+-Inf) = 0`` where ``sigma'(x) -> 0``, NaN otherwise.  Limits are
  taken by ``sympy.limit`` (Gruntz's algorithm, symbolic) on the activation's expression; for a
  Piecewise the branch that holds on a whole neighbourhood of +-oo is chosen from its condition sets.
  A finite limit is rounded exactly (a rational by integer arithmetic, an irrational constant by the
  certified enclosure path of ``rounded_activation.certain_round``).  The same limits serve every
  implementation ("exact", "float32-upcast", "torch"): they are properties of sigma, not of a table.
  Any NaN fails verification with a message naming pass, layer, neuron and input; the final output and
  the gradient must be finite.  The interpreters compute by these rules: exactly
  (``interpreters.arithmetic``) and on arrays (:func:`rn_array`, :func:`activation_array`).

So where lim_{-oo} sigma is the dead value L (sigmoid, relu, gelu, swish -> 0; tanh, elu -> -1), a
neuron whose pre-activation is -Inf is dead: value L, derivative 0.

:func:`indistinguishable_pairs_ieee` is ``theorem5.indistinguishable_pairs`` with first-layer neurons
that may overflow.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
import sympy

from .errors import CondcheckError, FormatOverflowError
from .formats import Format, get_format
from .rounding import round_array, round_fraction

SEMANTICS_CHOICES = ("finite", "ieee")
SEMANTICS_TEXT = {
    "finite": "finite-only (Inf or NaN anywhere is an error, docs/semantics.md)",
    "ieee": ("IEEE 754 through Inf (overflow gives +-Inf, sigma~(+-Inf) = RN(lim sigma), sigma~'(+-Inf) = 0 "
             "where sigma' -> 0; NaN anywhere or a non-finite output or gradient is an error, docs/semantics.md)"),
}

NAN = float("nan")
INF = float("inf")


def get_semantics(name) -> str:
    if name is None:
        return "finite"
    if name not in SEMANTICS_CHOICES:
        raise CondcheckError(f"semantics must be one of {', '.join(repr(s) for s in SEMANTICS_CHOICES)}, "
                             f"not {name!r}")
    return name


def semantics_text(name) -> str:
    return SEMANTICS_TEXT[get_semantics(name)]


# ---- limits of sigma and sigma' at +-oo --------------------------------------------------------------
def _branch_at(expr, side: int):
    """For a Piecewise: the branch whose (effective) condition holds on a neighbourhood of side*oo."""
    taken = sympy.S.EmptySet
    for e, c in expr.args:
        S = sympy.S.Reals if c == sympy.true else c.as_set()
        S = sympy.Complement(S, taken) if taken != sympy.S.EmptySet else S
        C = sympy.Complement(sympy.S.Reals, S)
        if C == sympy.S.EmptySet:
            return e
        bound = C.sup if side > 0 else C.inf
        if bound.is_finite or (side > 0 and bound == -sympy.oo) or (side < 0 and bound == sympy.oo):
            return e
        taken = sympy.Union(taken, S)
    return None


def symbolic_limit(expr, side: int):
    """lim_{x -> side*oo} expr as a sympy object, or None when sympy gives no limit."""
    from .activations import x
    expr = sympy.piecewise_fold(sympy.sympify(expr))
    if isinstance(expr, sympy.Piecewise):
        try:
            e = _branch_at(expr, side)
        except Exception:                             # noqa: BLE001 -- a condition sympy cannot solve
            return None
        return None if e is None else symbolic_limit(e, side)
    try:
        r = sympy.limit(expr, x, side * sympy.oo)
    except Exception:                                 # noqa: BLE001 -- sympy gives up in many ways
        return None
    if r in (sympy.oo, -sympy.oo):
        return r
    if isinstance(r, sympy.AccumBounds) or r.has(sympy.zoo, sympy.nan) or not r.is_real or not r.is_finite \
            or r.free_symbols:
        return None
    return r


@lru_cache(maxsize=None)
def _limits_of(act) -> dict:
    """{(derivative, side): sympy limit or None} of an activation (cached: sympy limits can be slow)."""
    out = {}
    for derivative in (False, True):
        for side in (1, -1):
            if act.is_callable:
                out[(derivative, side)] = None
            else:
                out[(derivative, side)] = symbolic_limit(act.derivative if derivative else act.expr, side)
    return out


def _round_limit(r, fmt: Format):
    """RN_F of a finite real sympy number exactly; +-Inf on overflow (NaN for a format without Inf)."""
    if r.is_Rational:
        q = Fraction(int(r.p), int(r.q))
        try:
            return round_fraction(q, fmt)
        except FormatOverflowError:
            return (INF if q > 0 else -INF) if fmt.has_inf else NAN
    from .rounded_activation import certain_round
    try:
        return certain_round(r, 0, fmt)
    except FormatOverflowError:
        return (INF if r > 0 else -INF) if fmt.has_inf else NAN


@dataclass(frozen=True)
class InfValues:
    """sigma~(+-Inf) and sigma~'(+-Inf): a Fraction, or the float +-inf / nan."""

    sigma_pos: object
    sigma_neg: object
    dsigma_pos: object
    dsigma_neg: object
    limits: dict

    def value(self, z: float, derivative: bool):
        if derivative:
            return self.dsigma_pos if z > 0 else self.dsigma_neg
        return self.sigma_pos if z > 0 else self.sigma_neg

    def describe(self) -> str:
        def t(v):
            return repr(float(v)) if not isinstance(v, Fraction) else repr(float(v))
        return (f"sigma~(+Inf) = {t(self.sigma_pos)}, sigma~(-Inf) = {t(self.sigma_neg)}, "
                f"sigma~'(+Inf) = {t(self.dsigma_pos)}, sigma~'(-Inf) = {t(self.dsigma_neg)}")


@lru_cache(maxsize=None)
def _inf_values(act, fmt: Format) -> InfValues:
    lim = _limits_of(act)
    vals = {}
    for side in (1, -1):
        r = lim[(False, side)]
        if r is None:
            v = NAN
        elif r == sympy.oo:
            v = INF if fmt.has_inf else NAN
        elif r == -sympy.oo:
            v = -INF if fmt.has_inf else NAN
        else:
            v = _round_limit(r, fmt)
        vals[("s", side)] = v
        d = lim[(True, side)]
        vals[("d", side)] = Fraction(0) if (d is not None and d == 0) else NAN
    return InfValues(vals[("s", 1)], vals[("s", -1)], vals[("d", 1)], vals[("d", -1)],
                     {k: (None if v is None else str(v)) for k, v in lim.items()})


def inf_values(activation, fmt) -> InfValues:
    """sigma~(+-Inf), sigma~'(+-Inf) of an activation in a format under the IEEE option."""
    from .activations import get_activation
    return _inf_values(get_activation(activation), get_format(fmt))


# ---- fast path helpers ---------------------------------------------------------------------------------
def rn_array(x: np.ndarray, fmt: Format) -> np.ndarray:
    """round_array under IEEE: overflow -> +-Inf (NaN without Inf), NaN stays NaN."""
    r, over = round_array(x, fmt)
    if over.any():
        nan = np.isnan(x) if fmt.has_inf else over
        if nan.any():
            r = np.where(nan, np.nan, r).astype(r.dtype)
    return r


def activation_array(rounded, z: np.ndarray, derivative: bool, base) -> np.ndarray:
    """sigma~ or sigma~' of an array that may hold +-inf and nan; ``base(finite z)`` gives the finite part
    (+-inf where it overflows)."""
    fin = np.isfinite(z)
    if fin.all():
        out = np.asarray(base(z), dtype=np.float64)
    else:
        out = np.asarray(base(np.where(fin, z, 0).astype(z.dtype)), dtype=np.float64).copy()
        lim = inf_values(rounded.activation, rounded.format)
        out[z == np.inf] = float(lim.value(1, derivative))
        out[z == -np.inf] = float(lim.value(-1, derivative))
        out[np.isnan(z)] = np.nan
    if not rounded.format.has_inf:
        out = np.where(np.isinf(out), np.nan, out)
    return out


# ---- distinguishability with overflowing first-layer neurons ------------------------------------------
def indistinguishable_pairs_ieee(activation, fmt, points, implementation="exact"):
    """Consecutive coordinate values that every first-layer neuron ``T(RN(RN(w x) + b))`` maps to the
    same output under IEEE semantics (d = 1 domains), for every (w, b) in F x F.

    Unlike ``theorem5.indistinguishable_pairs`` (finite semantics: a neuron that overflows anywhere on the
    domain is excluded) ``w x`` may overflow to +-Inf, ``+-Inf + b = +-Inf`` and ``T(+-Inf)`` is the
    rounded limit (:func:`inf_values`).  A neuron that produces NaN anywhere on the domain (``T(+-Inf)``
    without a limit, overflow in a format without Inf, or ``sigma~'`` NaN at an Inf pre-activation) is
    excluded: a network using it fails.  Returns [(a, a'), ...].
    """
    from .rounded_activation import get_rounded
    F = get_format(fmt)
    if not F.fits_float64:
        raise CondcheckError(f"indistinguishable_pairs_ieee needs a format whose products and sums round "
                             f"correctly through float64; {F.name} is not one")
    R = get_rounded(activation, F, implementation)
    vals = np.unique(np.asarray(points, float).ravel())
    V = F.values()
    differs = np.zeros(len(vals) - 1, dtype=bool)

    def finite_value(z):
        v, over = R.value_array(z)
        return np.where(over, np.copysign(np.inf, v), v)

    def finite_deriv(z):
        v, over = R.derivative_array(z)
        return np.where(over, np.copysign(np.inf, v), v)

    for w in V:
        wx = rn_array(np.full_like(vals, w) * vals, F)          # exact float64 product, rounded once
        with np.errstate(invalid="ignore"):
            pre = rn_array(wx[None, :] + V[:, None], F)         # (|F|, |domain|); Inf + b = Inf
        t = activation_array(R, pre.ravel(), False, finite_value).reshape(pre.shape)
        d = activation_array(R, pre.ravel(), True, finite_deriv).reshape(pre.shape)
        ok = ~(np.isnan(t).any(axis=1) | np.isnan(d).any(axis=1))
        t = t[ok]
        differs |= (t[:, 1:] != t[:, :-1]).any(axis=0)
    return [(float(vals[i]), float(vals[i + 1])) for i in np.nonzero(~differs)[0]]
