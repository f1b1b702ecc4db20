"""Rounded activations: the fast tables are the correctly rounded values (docs/semantics.md)."""
from fractions import Fraction

import numpy as np
import pytest
import sympy

from condcheck.activations import BUILTIN_ACTIVATIONS, PAPER_ACTIVATIONS, get_activation, x
from condcheck.errors import CondcheckError, FormatOverflowError, NotInFormatError, UnknownNameError
from condcheck.formats import all_formats, get_format
from condcheck.intervals import compile_expression
from condcheck.rounded_activation import (IMPLEMENTATIONS, RoundedActivation, certain_value, certain_round,
                                          get_rounded)
from condcheck.rounding import round_array

SMALL = [f for f in all_formats() if f.bits <= 8]
WIDE16 = ["bfloat16", "float16"]
EVERY_FORMAT = [f.name for f in all_formats()] + ["b3_4", "b30_9", "b60_11"]


def _certain_table(expr, fmt, points):
    comp = compile_expression(expr)
    vals, over = [], []
    for p in points:
        r = certain_value(comp, Fraction(float(p)), fmt, "test")
        over.append(isinstance(r, float))
        vals.append(float(r))
    return np.array(vals), np.array(over)


def _assert_equal_tables(vals, over, ref_vals, ref_over):
    assert np.array_equal(over, ref_over)
    assert np.array_equal(vals[~over], ref_vals[~ref_over])
    assert np.array_equal(vals[over], ref_vals[ref_over])          # the sign of an overflow too


@pytest.mark.parametrize("name", BUILTIN_ACTIVATIONS)
@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_fast_table_equals_certain_path_on_every_value_of_small_formats(fmt, name):
    t = get_rounded(name, fmt).table()
    act = get_activation(name)
    _assert_equal_tables(t.sigma, t.sigma_overflow, *_certain_table(act.expr, fmt, t.points))
    _assert_equal_tables(t.dsigma, t.dsigma_overflow, *_certain_table(act.derivative, fmt, t.points))


def _narrow_points(expr, fmt, points):
    """Points whose enclosure came within 1/64 ulp of a rounding boundary (but was accepted)."""
    lo, hi = compile_expression(expr).enclose_array(points)
    r, over = round_array(lo, fmt)
    ok = np.isfinite(r)
    idx = np.clip(np.searchsorted(points, r), 1, points.size - 2)
    ulp = np.where(ok, points[idx + 1] - points[idx - 1], np.inf) / 2
    mid_lo = (points[idx - 1] + points[idx]) / 2
    mid_hi = (points[idx] + points[idx + 1]) / 2
    with np.errstate(invalid="ignore"):
        close = ok & ((lo - mid_lo < ulp / 64) | (mid_hi - hi < ulp / 64))
    return np.flatnonzero(close)


@pytest.mark.parametrize("name", PAPER_ACTIVATIONS)
@pytest.mark.parametrize("fmt", WIDE16)
def test_fast_table_equals_certain_path_at_narrow_and_random_points_of_16_bit_formats(fmt, name):
    fmt = get_format(fmt)
    t = get_rounded(name, fmt).table()
    act = get_activation(name)
    rng = np.random.default_rng(20260501)
    for expr, vals, over in ((act.expr, t.sigma, t.sigma_overflow),
                             (act.derivative, t.dsigma, t.dsigma_overflow)):
        narrow = _narrow_points(expr, fmt, t.points)[:1500]
        sample = np.unique(np.concatenate([narrow, rng.choice(t.points.size, 400, replace=False)]))
        _assert_equal_tables(vals[sample], over[sample], *_certain_table(expr, fmt, t.points[sample]))


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER_ACTIVATIONS)
@pytest.mark.parametrize("fmt", WIDE16)
def test_fast_table_equals_certain_path_on_every_value_of_16_bit_formats(fmt, name):
    fmt = get_format(fmt)
    t = get_rounded(name, fmt).table()
    act = get_activation(name)
    _assert_equal_tables(t.sigma, t.sigma_overflow, *_certain_table(act.expr, fmt, t.points))
    _assert_equal_tables(t.dsigma, t.dsigma_overflow, *_certain_table(act.derivative, fmt, t.points))


# ---- exact boundaries ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", EVERY_FORMAT)
def test_sigmoid_at_zero_rounds_to_one_half_in_every_format(fmt):
    assert get_rounded("sigmoid", fmt).value(0) == Fraction(1, 2)


@pytest.mark.parametrize("fmt", EVERY_FORMAT)
def test_relu_derivative_at_zero_is_zero_in_every_format(fmt):
    assert get_rounded("relu", fmt).derivative(0) == 0


@pytest.mark.parametrize("fmt", EVERY_FORMAT)
def test_swish_derivative_at_zero_is_one_half_in_every_format(fmt):
    assert get_rounded("swish", fmt).derivative(0) == Fraction(1, 2)


def test_a_tie_found_only_by_exact_evaluation_rounds_to_even():
    # 27/3 = 9 lies halfway between 8 and 10 in b2_5 (3 significant bits); ties go to the even 8
    assert certain_round(x / 3, 27, "b2_5") == 8
    assert certain_round(x / 3, 33, "b2_5") == 12     # 11 is halfway between 10 and 12: even is 12


def test_an_undecidable_boundary_is_a_clear_error():
    with pytest.raises(CondcheckError, match="undecided"):
        certain_round((sympy.sin(x) ** 2 + sympy.cos(x) ** 2) * 9, 1, "b2_5")


@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float8_e4m3", "float32"])
def test_selu_at_omega_overflows(fmt):
    fmt = get_format(fmt)
    ra = get_rounded("selu", fmt)
    with pytest.raises(FormatOverflowError):
        ra.value(fmt.max)
    vals, over = ra.value_array(np.array([float(fmt.max), 1.0]))
    assert list(over) == [True, False] and vals[0] == np.inf


def test_certain_round_raises_format_overflow_error():
    with pytest.raises(FormatOverflowError):
        certain_round(sympy.exp(x), 100, "float16")


def test_table_marks_overflow_with_signed_infinity():
    t = get_rounded("selu", "float8_e4m3").table()
    assert t.sigma_overflow[-1] and t.sigma[-1] == np.inf
    assert not t.sigma_overflow[0]


# ---- float32-upcast -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float8_e4m3"])
def test_float32_upcast_tanh_is_numpy_float32_rounded_once(fmt):
    fmt = get_format(fmt)
    t = get_rounded("tanh", fmt, "float32-upcast").table()
    z = t.points.astype(np.float32)
    v, o = round_array(np.tanh(z).astype(np.float64), fmt)
    d, do = round_array((np.float32(1) - np.tanh(z) ** 2).astype(np.float64), fmt)
    _assert_equal_tables(t.sigma, t.sigma_overflow, v, o)
    _assert_equal_tables(t.dsigma, t.dsigma_overflow, d, do)


@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float8_e4m3"])
def test_float32_upcast_sigmoid_is_numpy_float32_rounded_once(fmt):
    fmt = get_format(fmt)
    t = get_rounded("sigmoid", fmt, "float32-upcast").table()
    z = t.points.astype(np.float32)
    with np.errstate(all="ignore"):
        s = np.float32(1) / (np.float32(1) + np.exp(-z))
        ds = np.exp(-z) / (np.float32(1) + np.exp(-z)) ** 2
    assert s.dtype == ds.dtype == np.float32
    _assert_equal_tables(t.sigma, t.sigma_overflow, *round_array(s.astype(np.float64), fmt))
    _assert_equal_tables(t.dsigma, t.dsigma_overflow, *round_array(ds.astype(np.float64), fmt))


def test_float32_upcast_differs_from_correct_rounding_somewhere_in_bfloat16():
    a = get_rounded("gelu", "bfloat16", "float32-upcast").table()
    b = get_rounded("gelu", "bfloat16").table()
    assert not np.array_equal(a.sigma, b.sigma)
    assert a.fallback_count == 0


def test_float32_upcast_for_float64_evaluates_in_float64():
    ra = get_rounded("tanh", "float64", "float32-upcast")
    assert ra.value(0.5) == Fraction(float(np.tanh(np.float64(0.5))))


# ---- the API ----------------------------------------------------------------------------------------------
def test_implementations_are_named():
    assert IMPLEMENTATIONS == ("exact", "float32-upcast", "torch")


def test_unknown_implementation_message_lists_close_names():
    with pytest.raises(UnknownNameError, match="'exact'"):
        get_rounded("tanh", "bfloat16", "exakt")


def test_unknown_activation_message_lists_close_names_in_get_rounded():
    with pytest.raises(UnknownNameError, match="'gelu'"):
        get_rounded("gelux", "bfloat16")


def test_get_rounded_is_cached_and_accepts_objects():
    a = get_rounded("tanh", "bfloat16")
    assert isinstance(a, RoundedActivation)
    assert get_rounded(get_activation("tanh"), get_format("bfloat16"), "exact") is a
    assert a.table() is a.table()


def test_value_of_a_non_value_of_the_format_raises():
    with pytest.raises(NotInFormatError):
        get_rounded("tanh", "bfloat16").value(0.1)
    with pytest.raises(NotInFormatError):
        get_rounded("tanh", "bfloat16").value_array(np.array([1.0, 0.1]))
    with pytest.raises(NotInFormatError):
        get_rounded("tanh", "float32").value_array(np.array([0.1]))


def test_value_array_keeps_the_shape_and_equals_scalar_values():
    ra = get_rounded("gelu", "float16")
    z = np.array([[-2.0, 0.0, 0.5], [1.0, 65504.0, -65504.0]])
    vals, over = ra.value_array(z)
    assert vals.shape == over.shape == z.shape
    assert all(Fraction(float(v)) == ra.value(float(q)) for v, q in zip(vals.ravel(), z.ravel()))
    dvals, _ = ra.derivative_array(z)
    assert all(Fraction(float(v)) == ra.derivative(float(q)) for v, q in zip(dvals.ravel(), z.ravel()))


@pytest.mark.parametrize("name", PAPER_ACTIVATIONS)
def test_float32_value_array_equals_the_certain_path_on_random_float32_values(name):
    fmt = get_format("float32")
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 300, dtype=np.uint64).astype(np.uint32)
    z = bits.view(np.float32).astype(np.float64)
    z = np.concatenate([z[np.isfinite(z)], [0.0, 1.0, -1.0, 2.0 ** -149]])
    ra = get_rounded(name, fmt)
    act = get_activation(name)
    for expr, (vals, over) in ((act.expr, ra.value_array(z)), (act.derivative, ra.derivative_array(z))):
        _assert_equal_tables(vals, over, *_certain_table(expr, fmt, z))


def test_float64_values_are_correctly_rounded():
    ra = get_rounded("tanh", "float64")
    assert ra.value(0.5) == certain_round(sympy.tanh(x), 0.5, "float64")
    vals, over = ra.value_array(np.array([0.5, -3.0]))
    assert Fraction(vals[1]) == certain_round(sympy.tanh(x), -3, "float64") and not over.any()


def test_a_format_wider_than_float64_gives_exact_fractions():
    ra = get_rounded("sigmoid", "b60_11")
    v = ra.value(1)
    assert v.denominator & (v.denominator - 1) == 0          # a dyadic with up to 61 bits
    assert v == certain_round(1 / (1 + sympy.exp(-x)), 1, "b60_11")


def test_table_fields_are_float64_arrays_over_the_ascending_values():
    t = get_rounded("elu", "float8_e5m2").table()
    assert t.points.dtype == t.sigma.dtype == t.dsigma.dtype == np.float64
    assert t.sigma_overflow.dtype == t.dsigma_overflow.dtype == bool
    assert np.all(np.diff(t.points) > 0)
    assert np.array_equal(t.points, get_format("float8_e5m2").values())


# ---- the Arb path against the mpmath path ------------------------------------------------------------------
from condcheck import rounded_activation as _ra  # noqa: E402
from condcheck.intervals import HAVE_ARB  # noqa: E402

needs_arb = pytest.mark.skipif(not HAVE_ARB, reason="python-flint is not installed")


def _hard_points(fmt):
    """Zeros, subnormals, the normal range's ends, overflow thresholds of exp, tails, huge values."""
    om, mn, mf = float(fmt.smallest_subnormal), float(2.0 ** fmt.e_min), float(fmt.max_float)
    base = [0.0, om, 2 * om, 3 * om, mn - om, mn, mn + 2 * om, 2.0 ** -30, 2.0 ** -12, 1 / 3, 0.5, 1.0, 3.0, 5.5,
            11.09, 16.63, 19.06, 37.5, 88.72, 103.97, 700.0, 709.78, 710.0, 745.0, 1e10, 2.0 ** 40, 2.0 ** 41,
            1e300, 1e-300, mf]
    rng = np.random.default_rng(11)
    rand = np.concatenate([rng.normal(0, 4, 30), rng.integers(0, 2 ** 63, 30, dtype=np.uint64).view(np.float64)])
    pts = np.concatenate([base, [-b for b in base], rand])
    pts, _ = round_array(pts[np.isfinite(pts)], fmt)
    return np.unique(pts[np.isfinite(pts)])


@needs_arb
@pytest.mark.parametrize("derivative", [False, True], ids=["sigma", "dsigma"])
@pytest.mark.parametrize("name", BUILTIN_ACTIVATIONS)
@pytest.mark.parametrize("fmt", ["float64", "float32", "float16"])
def test_arb_path_rounds_like_the_mpmath_path(fmt, name, derivative):
    fmt = get_format(fmt)
    a = get_activation(name)
    comp = compile_expression(a.derivative if derivative else a.expr)
    undecided = 0
    for v in _hard_points(fmt).tolist():
        q = Fraction(v)
        got = _ra.certain_arb(comp, q, fmt)
        if got is _ra.UNDECIDED:
            undecided += 1
            continue
        assert got == certain_value(comp, q, fmt, "test", use_arb=False), (name, derivative, v)
        assert _ra.certain_float(comp, v, fmt, "test") == float(got)
    if name in PAPER_ACTIVATIONS:
        assert undecided == 0                     # Arb decides every hard point of the paper's activations


@needs_arb
@pytest.mark.parametrize("name, derivative, v, expected", [
    ("gelu", False, 5e-324, 5e-324),             # omega/2 (1 + erf(omega/sqrt 2)): just above the tie omega/2
    ("gelu", False, -5e-324, 0.0),               # -omega/2 (1 - erf(...)): just below it in magnitude
    ("swish", False, 5e-324, 5e-324), ("swish", False, -5e-324, 0.0),
    ("gelu", False, 3 * 5e-324, 2 * 5e-324)])    # 3 omega/2 (1 + ...) is above the tie 1.5 omega
def test_arb_decides_values_next_to_a_subnormal_tie(name, derivative, v, expected):
    a = get_activation(name)
    comp = compile_expression(a.derivative if derivative else a.expr)
    F = get_format("float64")
    got = _ra.certain_arb(comp, Fraction(v), F)
    assert got is not _ra.UNDECIDED and float(got) == expected
    assert got == certain_value(comp, Fraction(v), F, "test", use_arb=False)


@needs_arb
def test_a_tie_found_only_by_exact_evaluation_rounds_to_even_on_the_arb_path():
    fmt = get_format("b2_5")
    assert _ra.certain_arb(compile_expression(x / 3), Fraction(27), fmt) == 8
    assert _ra.certain_arb(compile_expression(x / 3), Fraction(33), fmt) == 12


@pytest.mark.parametrize("name", ["tanh", "gelu"])
def test_float64_values_equal_the_mpmath_paths_values_point_by_point(name):
    """The table path (float64 enclosures, then Arb where python-flint is installed) against the mpmath
    loop alone at every point."""
    F = get_format("float64")
    pts = np.array([-3.5, -1e-300, 0.0, 0.75, 2.0 ** 41, -1e300, 5e-324])
    _ra.clear_memo()
    values, over = get_rounded(name, F).value_array(pts)
    _ra.clear_memo()
    comp = compile_expression(get_activation(name).expr)
    want = [certain_value(comp, Fraction(float(p)), F, "test", use_arb=False) for p in pts]
    want_over = np.array([isinstance(w, float) for w in want])
    _assert_equal_tables(values, over, np.array([float(w) for w in want]), want_over)


def test_the_memo_of_certified_values_is_bounded(monkeypatch):
    monkeypatch.setattr(_ra, "MEMO_LIMIT", 50)
    _ra.clear_memo()
    R = get_rounded("tanh", "float64")
    pts = np.linspace(-3, 3, 40)
    first = R.value_array(pts)
    assert 0 < _ra.memo_size() <= 50
    R.value_array(np.linspace(3.5, 9, 40))
    assert 0 < _ra.memo_size() <= 50
    again = R.value_array(pts)
    _assert_equal_tables(first[0], first[1], again[0], again[1])
    _ra.clear_memo()
