"""The tangent rule for tiny arguments (conditions/near_zero.py): every point it decides is rounded as the
certified per-point path rounds it, it decides the midpoints that path needed multiprecision for, and it
leaves alone what it cannot prove."""
import numpy as np
import pytest
import sympy

from condcheck.activations import get_activation
from condcheck.activations import x as X
from condcheck.formats import get_format
from condcheck.rounded_activation import evaluate_array
from condcheck.rounding import round_array
from conditions.chunks import Magnitudes
from conditions.near_zero import TINY, fill_tiny, tangent_at_zero


def _tiny_points(fmt, per_range=1 << 10):
    """Positive points: the first subnormals, the first normals, and the magnitudes around TINY."""
    mags = Magnitudes(fmt)
    first_normal = 1 << fmt.M
    at_tiny = int(mags.index(np.array([TINY]))[0])
    parts = [mags.values(1, 1 + per_range), mags.values(first_normal - 8, first_normal + per_range),
             mags.values(at_tiny - per_range // 2, at_tiny + per_range // 2)]
    return np.unique(np.concatenate(parts))


def _fill(expr, fmt, x):
    out, done = np.zeros(x.size), np.zeros(x.size, dtype=bool)
    fill_tiny(expr, fmt, x, out, done)
    return out, done


@pytest.mark.parametrize("fmt", ["float32", "bfloat16"])
@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "swish", "tanh", "sin"])
@pytest.mark.parametrize("sign", [1, -1])
def test_every_tiny_point_the_rule_decides_rounds_as_the_certified_path_does(act, fmt, sign):
    fmt, a = get_format(fmt), get_activation(act)
    x = sign * _tiny_points(fmt)
    if sign < 0:
        x = x[::-1].copy()
    out, done = _fill(a.expr, fmt, x)
    ref, over, _ = evaluate_array(a, fmt, "exact", False, x[done])
    assert not over.any()
    assert np.array_equal(out[done], ref)
    assert np.array_equal(np.signbit(out[done]), np.signbit(ref))
    assert done[np.abs(x) < 2.0 ** fmt.e_min].all()            # every subnormal is decided


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "swish"])
def test_the_odd_subnormals_of_x_over_2_activations_are_midpoints_the_rule_decides(act):
    fmt, a = get_format("float32"), get_activation(act)
    x = Magnitudes(fmt).values(1, 64)
    y0 = x / 2
    rounded, _ = round_array(y0, fmt)
    assert (rounded != y0).sum() == 32                         # x/2 is not a float32 value: a midpoint
    out, done = _fill(a.expr, fmt, x)
    assert done.all()
    assert np.array_equal(out, evaluate_array(a, fmt, "exact", False, x)[0])


def test_a_midpoint_is_left_undecided_when_the_second_derivative_may_be_zero():
    fmt = get_format("float32")
    expr = X / 2 + X ** 3                                      # f'' = 6x: its enclosure on [0, t] holds 0
    x = Magnitudes(fmt).values(1, 64)
    out, done = _fill(expr, fmt, x)
    midpoint = (np.arange(1, 64) % 2) == 1
    assert not done[midpoint].any()
    assert done[~midpoint].all()
    assert np.array_equal(out[~midpoint], x[~midpoint] / 2)


def test_points_beyond_tiny_are_left_to_the_caller():
    fmt = get_format("float32")
    x = np.array([2.0 ** -60, np.nextafter(np.float32(TINY), np.float32(1)).astype(np.float64), 0.5])
    _, done = _fill(get_activation("gelu").expr, fmt, x)
    assert done.tolist() == [True, False, False]


@pytest.mark.parametrize("expr,slope", [("gelu", 0.5), ("tanh", 1.0), ("mish", None), ("relu", None),
                                        ("elu", None), ("sigmoid", None), (-4 * X + sympy.sin(X) ** 2, -4.0),
                                        (3 * X, None)])
def test_the_tangent_is_used_only_through_zero_with_a_power_of_two_slope_and_no_pieces(expr, slope):
    e = get_activation(expr).expr if isinstance(expr, str) else expr
    t = tangent_at_zero(e)
    assert (None if t is None else t[0]) == slope


@pytest.mark.parametrize("act", ["gelu_tanh", "gelu"])
def test_a_chunk_of_subnormals_needs_no_multiprecision_evaluation_and_keeps_its_values(act):
    from condcheck.rounded_activation import evaluate_points
    from conditions.chunks import exact_by_ranges
    fmt, a = get_format("float32"), get_activation(act)
    P = Magnitudes(fmt).points(0, 1 << 10)
    fast = exact_by_ranges(a, fmt, P)
    ref = evaluate_points(a, fmt, "exact", P)
    assert ref[4] > 0 and fast[4] == 0
    for got, want in zip(fast[:4], ref[:4]):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("fmt,fits", [("float32", True), ("bfloat16", True), ("float16", True), ("float64", False)])
def test_the_rule_is_used_only_where_x_squared_and_the_midpoints_are_exact_float64_numbers(fmt, fits):
    from conditions.near_zero import _format_fits
    assert _format_fits(get_format(fmt)) == fits
