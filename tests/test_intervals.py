"""Enclosures: the interval contains the true value (checked against 200-bit mpmath)."""
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from condcheck.activations import BUILTIN_ACTIVATIONS, get_activation, x
from condcheck.errors import CondcheckError
from condcheck.intervals import compile_expression, enclose_array, enclose_mp, mp_to_fraction

EXTRA = [sympy.Heaviside(x), sympy.sign(x), sympy.Abs(x), sympy.Max(x, x ** 2), sympy.Min(x, 1 - x),
         sympy.atan(x), sympy.asinh(x), sympy.sinh(x), sympy.cosh(x), sympy.sqrt(1 + x ** 2),
         sympy.log(2 + x ** 2), sympy.erfc(x), x ** 3, 2 ** x, sympy.cos(3 * x), sympy.exp(-x ** 2 / 2),
         sympy.Piecewise((x ** 2, x < sympy.Rational(1, 3)), (sympy.sin(x), True)), (1 + x ** 2) ** sympy.Rational(1, 3)]
EXPRESSIONS = ([get_activation(n).expr for n in BUILTIN_ACTIVATIONS]
               + [get_activation(n).derivative for n in BUILTIN_ACTIVATIONS] + EXTRA)


def _reference(expr, q: Fraction):
    with mpmath.workprec(200):
        f = sympy.lambdify(x, expr, modules="mpmath")
        return f(mpmath.mpf(q.numerator) / q.denominator)


def _contains(lo, hi, ref):
    with mpmath.workprec(200):
        tol = abs(ref) * mpmath.mpf(2) ** -150 + mpmath.mpf(2) ** -190
        return mpmath.mpf(lo) - tol <= ref <= mpmath.mpf(hi) + tol


points = st.one_of(st.floats(-8, 8, allow_nan=False), st.floats(-1e-6, 1e-6, allow_nan=False))


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
@settings(max_examples=25, deadline=None)
@given(v=points)
def test_numpy_enclosure_contains_the_200_bit_mpmath_value(expr, v):
    lo, hi = enclose_array(expr, np.array([v]))
    assert lo[0] <= hi[0]
    assert _contains(lo[0], hi[0], _reference(expr, Fraction(v)))


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
@settings(max_examples=15, deadline=None)
@given(v=points)
def test_mpmath_enclosure_at_64_bits_contains_the_200_bit_mpmath_value(expr, v):
    lo, hi = enclose_mp(expr, Fraction(v), 64)
    assert _contains(lo, hi, _reference(expr, Fraction(v)))


def test_mpmath_enclosure_narrows_as_precision_rises():
    e = get_activation("gelu").derivative
    w = [float(hi - lo) for lo, hi in (enclose_mp(e, Fraction(3, 7), p) for p in (64, 128, 256))]
    assert w[0] > w[1] > w[2] > 0


def test_sigmoid_at_zero_is_exactly_one_half_in_the_mpmath_backend():
    lo, hi = enclose_mp(get_activation("sigmoid").expr, 0, 64)
    assert mp_to_fraction(lo) == mp_to_fraction(hi) == Fraction(1, 2)


def test_swish_derivative_at_zero_is_exactly_one_half_in_the_mpmath_backend():
    lo, hi = enclose_mp(get_activation("swish").derivative, 0, 64)
    assert mp_to_fraction(lo) == mp_to_fraction(hi) == Fraction(1, 2)


def test_exp_overflow_keeps_the_finite_side():
    lo, hi = enclose_array(sympy.exp(x), np.array([740.0]))
    big = np.finfo(np.float64).max
    assert big * (1 - 2.0 ** -50) <= lo[0] <= big and hi[0] == np.inf


def test_exp_underflow_widens_to_a_tiny_interval_around_zero():
    lo, hi = enclose_array(sympy.exp(x), np.array([-800.0]))
    assert lo[0] <= 0 < hi[0] < 1e-320


def test_division_by_an_interval_containing_zero_is_unbounded():
    lo, hi = enclose_array(1 / x, np.array([0.0, 2.0]))
    assert (lo[0], hi[0]) == (-np.inf, np.inf)
    assert lo[1] <= 0.5 <= hi[1]


def _unevaluated(f, shift):
    return f(sympy.Add(x, shift, evaluate=False), evaluate=False)


def test_cos_enclosure_reaches_its_minimum_at_a_critical_point_inside():
    e = _unevaluated(sympy.cos, -sympy.pi)
    lo, hi = enclose_array(e, np.array([0.0]))
    assert lo[0] == -1.0 and hi[0] > -1.0
    mlo, mhi = enclose_mp(e, 0, 64)
    assert mlo == -1 and mhi > -1


def test_sin_enclosure_reaches_its_maximum_at_a_critical_point_inside():
    e = _unevaluated(sympy.sin, sympy.pi / 2)
    lo, hi = enclose_array(e, np.array([0.0]))
    assert hi[0] == 1.0 and lo[0] < 1.0
    mlo, mhi = enclose_mp(e, 0, 64)
    assert mhi == 1 and mlo < 1


def test_piecewise_conditions_are_decided_exactly_next_to_an_irrational_threshold():
    e = sympy.Piecewise((0, x < sympy.pi), (1, True))
    below = float(np.pi)                         # the float64 nearest pi is below pi
    above = float(np.nextafter(np.pi, 4))
    assert Fraction(below) < sympy.pi < Fraction(above)
    lo, hi = enclose_array(e, np.array([below, above]))
    assert list(lo) == list(hi) == [0.0, 1.0]
    assert enclose_mp(e, Fraction(below), 64)[0] == 0
    assert enclose_mp(e, Fraction(above), 64)[0] == 1


def test_piecewise_condition_holds_at_equality_for_less_or_equal():
    e = sympy.Piecewise((0, x <= sympy.Rational(1, 2)), (1, True))
    lo, hi = enclose_array(e, np.array([0.5]))
    assert lo[0] == hi[0] == 0.0


def test_enclosures_are_vectorized_over_all_points():
    pts = np.linspace(-5, 5, 1001)
    lo, hi = enclose_array(sympy.tanh(x), pts)
    assert lo.shape == hi.shape == (1001,)
    assert np.all(lo <= np.tanh(pts)) and np.all(np.tanh(pts) <= hi)


def test_unsupported_node_raises_a_condcheck_error_naming_it():
    with pytest.raises(CondcheckError, match="gamma"):
        compile_expression(sympy.gamma(x))


def test_a_free_symbol_other_than_x_is_refused():
    with pytest.raises(CondcheckError, match="free symbol"):
        compile_expression(sympy.Symbol("y") * x)


def test_log_of_a_negative_number_raises_in_the_mpmath_backend():
    with pytest.raises(CondcheckError, match="logarithm"):
        enclose_mp(sympy.log(x), -1, 64)


def test_log_of_a_negative_number_is_unbounded_in_the_numpy_backend():
    lo, hi = enclose_array(sympy.log(x), np.array([-1.0]))
    assert (lo[0], hi[0]) == (-np.inf, np.inf)


# ---- the Arb backend (python-flint balls) ---------------------------------------------------------------
from condcheck.intervals import HAVE_ARB, enclose_arb  # noqa: E402

needs_arb = pytest.mark.skipif(not HAVE_ARB, reason="python-flint is not installed")


def _arb_end(v):
    """An end of an Arb enclosure as an exact mpmath number (+-inf stays)."""
    if isinstance(v, float):
        return mpmath.mpf(v)
    man, exp = v.man_exp()
    return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))      # exact, not rounded


@needs_arb
@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
@settings(max_examples=15, deadline=None)
@given(v=points)
def test_arb_enclosure_at_64_bits_contains_the_200_bit_mpmath_value(expr, v):
    lo, hi = enclose_arb(expr, Fraction(v), 64)
    assert _contains(_arb_end(lo), _arb_end(hi), _reference(expr, Fraction(v)))


@needs_arb
@pytest.mark.parametrize("name, derivative, point, value", [
    ("sigmoid", False, 0, Fraction(1, 2)), ("sigmoid", True, 0, Fraction(1, 4)),
    ("swish", True, 0, Fraction(1, 2)), ("gelu", True, 0, Fraction(1, 2)), ("tanh", False, 0, 0),
    ("tanh", True, 0, 1), ("elu", False, 0, 0), ("elu", True, 0, 1), ("softplus", True, 0, Fraction(1, 2)),
    ("relu", False, 3, 3), ("leaky_relu", False, 0, 0)])
def test_exact_dyadic_values_are_exact_points_in_the_arb_backend(name, derivative, point, value):
    a = get_activation(name)
    lo, hi = enclose_arb(a.derivative if derivative else a.expr, point, 64)
    assert lo.is_exact() and hi.is_exact()
    assert mp_to_fraction(_arb_end(lo)) == mp_to_fraction(_arb_end(hi)) == value


@needs_arb
def test_arb_exp_of_a_huge_argument_is_a_half_infinite_interval():
    lo, hi = enclose_arb(sympy.exp(x), 1e300, 128)
    assert hi == np.inf and _arb_end(lo) > mpmath.mpf(2) ** 10000
    lo, hi = enclose_arb(sympy.exp(x), -1e300, 128)
    assert _arb_end(hi) < mpmath.mpf(2) ** -10000


@needs_arb
@pytest.mark.parametrize("v", [1e300, -1e300, 2.0 ** 41, 9.395701861794009e+55])
def test_arb_keeps_tiny_bounds_where_balls_overflow(v):
    # 1/cosh(u)**2 at a huge u: arb's cosh of the ball is not finite; the ends bound it
    exprs = [1 / sympy.cosh(x) ** 2, get_activation("tanh").derivative]
    if v > 0:                                   # softplus(v) ~ v: a wide ball whose cosh loses its sign
        exprs.append(1 / sympy.cosh(sympy.log(sympy.exp(x) + 1)) ** 2)
    for e in exprs:
        lo, hi = enclose_arb(e, v, 128)
        assert not isinstance(hi, float) and _arb_end(hi) < mpmath.mpf(2) ** -2000
        assert _arb_end(lo) <= 0 or _arb_end(lo) < _arb_end(hi)


@needs_arb
def test_arb_piecewise_conditions_are_decided_exactly_next_to_an_irrational_threshold():
    e = sympy.Piecewise((0, x < sympy.pi), (1, True))
    below = float(np.pi)
    above = float(np.nextafter(np.pi, 4))
    assert enclose_arb(e, below, 64)[0] == 0
    assert enclose_arb(e, above, 64)[0] == 1
    e2 = sympy.Piecewise((0, x <= sympy.Rational(1, 2)), (1, True))
    assert enclose_arb(e2, 0.5, 64)[0] == 0


@needs_arb
def test_log_of_a_negative_number_raises_in_the_arb_backend():
    with pytest.raises(CondcheckError, match="logarithm"):
        enclose_arb(sympy.log(x), -1, 64)


def test_widening_by_k_ulps_equals_k_calls_of_nextafter_bit_for_bit():
    from condcheck.intervals.numpy_backend import nextafter_k
    tiny, big = 5e-324, np.finfo(np.float64).max
    special = np.array([0.0, -0.0, tiny, -tiny, 2 * tiny, -2 * tiny, big, -big, np.inf, -np.inf, np.nan, 1.0, -1.0,
                        2.2250738585072014e-308, -2.2250738585072014e-308])
    rnd = np.random.default_rng(0).integers(-2 ** 63, 2 ** 63 - 1, 100_000, dtype=np.int64).view(np.float64)
    for arr in (special, rnd):
        for k in range(9):
            down, up = arr.copy(), arr.copy()
            with np.errstate(all="ignore"):
                for _ in range(k):
                    down, up = np.nextafter(down, -np.inf), np.nextafter(up, np.inf)
            for ref, got in ((down, nextafter_k(arr, -k)), (up, nextafter_k(arr, k))):
                assert np.array_equal(np.isnan(ref), np.isnan(got))
                assert np.array_equal(ref[~np.isnan(ref)].view(np.int64), got[~np.isnan(ref)].view(np.int64))
