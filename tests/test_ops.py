"""Rounded +, -, x (docs/semantics.md): the fast array path equals the exact path.

The expected results come from tests/fp_reference.round_scaled_ints: the exact sum or product as an
integer times a power of two (Python ints, no float in between), rounded to nearest-even with integer
shifts, with the format's parameters read from ml_dtypes/numpy finfo and the decoded bit patterns (or
the IEEE formulas for custom formats).  The exact path (ops.add/sub/mul on Fractions) is checked
against the same reference.

Every pair of values is checked for every format of at most 8 bits, in float64 and in float32 arrays
(ops computes 8-bit formats and float16 in float32 when given float32 arrays).  For float16 and
bfloat16: edge cases against every value, midpoint sums of every value, and 100,000 random pairs
(1,000,000 with ``-m slow``).
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest

from _crosses import cross
from condcheck import ops
from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import all_formats, get_format

from fp_reference import (CUSTOM_TWINS, decode_custom, decode_dtype, exact_product, exact_sum, parse_custom,
                          round_scaled_ints, split_exact)

F = Fraction
TINY_BUILTIN = [f.name for f in all_formats() if f.bits <= 8]
TINY = TINY_BUILTIN + ["b3_4", "b2_5", "b4_3", "b1_2", "b2_3"]
OPS = {
    "add": (ops.add_array, ops.add, exact_sum, lambda x, y: x + y),
    "sub": (ops.sub_array, ops.sub, lambda n1, t1, n2, t2: exact_sum(n1, t1, -n2, t2), lambda x, y: x - y),
    "mul": (ops.mul_array, ops.mul, exact_product, lambda x, y: x * y),
}


@lru_cache(maxsize=None)
def params(name):
    """(M, e_min, Omega, sorted finite values as float64) from finfo and decoded patterns / IEEE formulas."""
    if name in CUSTOM_TWINS:
        M, E = parse_custom(name)
        bias = 2 ** (E - 1) - 1
        d = decode_custom(M, E)
        return M, 1 - bias, (2 - F(2) ** -M) * F(2) ** bias, np.array([float(v) for v in d.sorted_values()])
    dt = get_format(name).dtype
    fi = np.finfo(dt) if dt in (np.float16, np.float32, np.float64) else ml_dtypes.finfo(dt)
    e_min = F(float(fi.smallest_normal)).numerator.bit_length() - 1 if fi.smallest_normal >= 1 else \
        -(F(float(fi.smallest_normal)).denominator.bit_length() - 1)
    vals = np.array([float(v) for v in decode_dtype(dt).sorted_values()])
    return int(fi.nmant), e_min, F(float(vals[-1])), vals


def reference(op, a: np.ndarray, b: np.ndarray, name):
    M, e_min, omega_max, _ = params(name)
    n1, t1 = split_exact(a)
    n2, t2 = split_exact(b)
    n, t = OPS[op][2](n1, t1, n2, t2)
    return round_scaled_ints(n, t, M, e_min, omega_max)


def assert_fast_equals_reference(op, a, b, name, dtype=np.float64):
    fmt = get_format(name)
    got, over = OPS[op][0](a.astype(dtype), b.astype(dtype), fmt)
    expected, exp_over = reference(op, a, b, name)
    bad = np.flatnonzero((over != exp_over) | (~exp_over & (got != expected)))
    assert bad.size == 0, (f"{op} in {name} ({np.dtype(dtype)}) differs on {bad.size} pairs, e.g. "
                           f"{a[bad[:3]]} {op} {b[bad[:3]]}: got {got[bad[:3]]}, expected {expected[bad[:3]]}")
    assert np.array_equal(np.sign(got[over]), np.sign(expected[over]))
    assert np.isinf(got[over]).all()


def all_pairs(name):
    v = params(name)[3]
    return np.repeat(v, len(v)), np.tile(v, len(v))


# ---- the reference itself, on hand cases ----------------------------------------------------------------

def test_the_integer_reference_rounds_hand_cases_of_float8_e4m3():
    a = np.array([240.0, 240.0, 1.0, 1.0, 2.0 ** -9, 2.0 ** -9, 232.0])
    b = np.array([8.0, 7.0, 1 / 16, 3 / 16, 2.0 ** -9, -2.0 ** -9, 16.0])
    r, over = reference("add", a, b, "float8_e4m3")
    # 248: tie 240|256 -> 256 overflows; 247 -> 240; 1+1/16: tie 1|1.125 -> 1; 1+3/16: tie 1.125|1.25 -> 1.25
    assert over.tolist() == [True, False, False, False, False, False, True]
    assert r[1:6].tolist() == [240.0, 1.0, 1.25, 2.0 ** -8, 0.0]


# ---- every pair of every format of at most 8 bits --------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", TINY)
def test_fast_path_equals_the_exact_reference_on_every_pair_of_float64_values(name, op):
    a, b = all_pairs(name)
    assert_fast_equals_reference(op, a, b, name, np.float64)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", TINY)
def test_fast_path_equals_the_exact_reference_on_every_pair_of_float32_values(name, op):
    a, b = all_pairs(name)
    assert_fast_equals_reference(op, a, b, name, np.float32)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", TINY_BUILTIN)
def test_exact_path_equals_the_reference_on_every_pair(name, op):
    fmt = get_format(name)
    a, b = all_pairs(name)
    expected, exp_over = reference(op, a, b, name)
    exact_op, combine = OPS[op][1], OPS[op][3]
    seen = {}
    for x, y, e, o in zip(a.tolist(), b.tolist(), expected.tolist(), exp_over.tolist()):
        # the float64 combination is only a cache key: results of two <= 5-bit values are float64s
        key = combine(x, y)
        if key not in seen:
            try:
                seen[key] = exact_op(F(x), F(y), fmt)
            except FormatOverflowError:
                seen[key] = None
        assert seen[key] == (None if o else F(e)), (x, y)


# ---- float16 and bfloat16 --------------------------------------------------------------------------------

SIXTEEN = ["float16", "bfloat16"]


def _edge_values(name):
    M, e_min, omega_max, vals = params(name)
    omega = float(F(2) ** (e_min - M))
    normal = 2.0 ** e_min
    om = float(omega_max)
    base = [0.0, omega, normal - omega, normal, om, float(F(om) - F(2) ** (int(np.log2(om)) - M)),
            1 + 2.0 ** -M]
    return np.array(sorted(set(base + [-x for x in base])))


def _working_dtypes(name):
    return [np.float64, np.float32] if name == "float16" else [np.float64]


def assert_fast_equals_given_reference(op, a, b, expected, exp_over, name, dtype):
    fmt = get_format(name)
    got, over = OPS[op][0](a.astype(dtype), b.astype(dtype), fmt)
    bad = np.flatnonzero((over != exp_over) | (~exp_over & (got != expected)))
    assert bad.size == 0, (f"{op} in {name} ({np.dtype(dtype)}) differs on {bad.size} pairs, e.g. "
                           f"{a[bad[:3]]} {op} {b[bad[:3]]}: got {got[bad[:3]]}, expected {expected[bad[:3]]}")
    assert np.isinf(got[over]).all() and np.array_equal(np.sign(got[over]), np.sign(expected[over]))


@pytest.mark.parametrize("name,op", cross(SIXTEEN, list(OPS), default=[("bfloat16", "add"), ("float16", "sub"),
                                                                       ("float16", "mul")]))
def test_fast_path_equals_the_reference_on_every_value_against_edge_values(name, op):
    """Every value with 0, +-omega, +-largest subnormal, +-smallest normal, +-Omega, +-pred(Omega),
    +-(1 + eps), in both operand orders (the reference of b op a follows from a op b: + and x commute,
    b - a = -(a - b) and RN is odd-symmetric)."""
    vals = params(name)[3]
    edges = _edge_values(name)
    a = np.repeat(vals, len(edges))
    b = np.tile(edges, len(vals))
    expected, exp_over = reference(op, a, b, name)
    swapped = -expected if op == "sub" else expected
    for dt in _working_dtypes(name):
        assert_fast_equals_given_reference(op, a, b, expected, exp_over, name, dt)
        assert_fast_equals_given_reference(op, b, a, swapped, exp_over, name, dt)


@pytest.mark.parametrize("name", SIXTEEN)
def test_fast_path_equals_the_reference_where_the_exact_sum_is_a_midpoint(name):
    """v + h with h half the spacing above |v| (or below, or 3h): the exact sum is a tie."""
    vals = params(name)[3]
    pos = vals[vals > 0]
    gaps_up = np.diff(pos)                       # spacing above pos[:-1]
    gaps_down = np.diff(pos)                     # spacing below pos[1:]
    a = np.concatenate([pos[:-1], pos[1:], pos[:-1], -pos[:-1]])
    h = np.concatenate([gaps_up / 2, -gaps_down / 2, 3 * gaps_up / 2, -gaps_up / 2])
    keep = np.isin(np.abs(h), pos)               # h must itself be a value
    a, h = a[keep], h[keep]
    assert keep.sum() > len(pos)
    for dt in _working_dtypes(name):
        assert_fast_equals_reference("add", a, h, name, dt)
        assert_fast_equals_reference("sub", a, -h, name, dt)


def _random_pairs(name, n, seed):
    """Pairs mixing: uniform over all values; close exponents (index neighbours); near-cancellation."""
    vals = params(name)[3]
    rng = np.random.default_rng(seed)
    k = n // 3
    i = rng.integers(0, len(vals), size=n)
    j = np.concatenate([rng.integers(0, len(vals), size=k),
                        np.clip(i[k:2 * k] + rng.integers(-3000, 3000, size=k), 0, len(vals) - 1),
                        np.clip(len(vals) - 1 - i[2 * k:] + rng.integers(-40, 40, size=n - 2 * k), 0,
                                len(vals) - 1)])
    return vals[i], vals[j]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", SIXTEEN)
def test_fast_path_equals_the_reference_on_100k_random_pairs(name, op):
    a, b = _random_pairs(name, 100_000, seed=11)
    for dt in _working_dtypes(name):
        assert_fast_equals_reference(op, a, b, name, dt)


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", SIXTEEN)
def test_fast_path_equals_the_reference_on_a_million_random_pairs(name, op):
    for chunk in range(10):
        a, b = _random_pairs(name, 100_000, seed=1000 + chunk)
        for dt in _working_dtypes(name):
            assert_fast_equals_reference(op, a, b, name, dt)


# ---- hand cases of the exact path -----------------------------------------------------------------------

def test_exact_path_hand_cases_in_float8_e4m3():
    f = get_format("float8_e4m3")
    assert ops.add(F(1), F(1, 16), f) == 1                 # tie 1 | 1.125 -> even 1
    assert ops.add(F(1), F(3, 16), f) == F(5, 4)           # tie 1.125 | 1.25 -> even 1.25
    assert ops.mul(F(3, 2), F(3, 2), f) == F(9, 4)         # 2.25 exact
    assert ops.mul(F(9, 8), F(9, 8), f) == F(5, 4)         # 1.265625 -> 1.25
    assert ops.sub(F(2) ** -6, F(2) ** -9, f) == 7 * F(2) ** -9
    with pytest.raises(FormatOverflowError):
        ops.add(F(240), F(8), f)
    with pytest.raises(FormatOverflowError):
        ops.mul(F(16), F(16), f)


# ---- formats too wide for float64: the exact fallback ----------------------------------------------------

def test_wide_format_ops_fall_back_to_exact_rounding_on_hand_cases():
    b = get_format("b60_12")
    # sums and products that b60_12 holds exactly and float64 can hold: returned exactly
    r, over = ops.add_array(np.array([1.0, 2.0 ** -1074, 1e308]), np.array([2.0 ** -52, 2.0 ** -1074, -1e308]), b)
    assert r.tolist() == [1.0 + 2.0 ** -52, 2.0 ** -1073, 0.0] and not over.any()
    r, over = ops.mul_array(np.array([2.0 ** 600, 3.0]), np.array([2.0 ** -1000, 0.5]), b)
    assert r.tolist() == [2.0 ** -400, 1.5] and not over.any()
    r, over = ops.sub_array(np.array([np.inf, 1.0]), np.array([1.0, np.nan]), b)
    assert over.all()


def test_wide_format_ops_refuse_results_that_float64_can_not_hold():
    b = get_format("b60_12")
    # 1 + 2**-60 is a b60_12 value (60 fraction bits) but not a float64: no silent second rounding
    with pytest.raises(CondcheckError, match="not a float64"):
        ops.add_array(np.array([1.0]), np.array([2.0 ** -60]), b)
    with pytest.raises(CondcheckError, match="not a float64"):
        ops.mul_array(np.array([1e300]), np.array([1e300]), b)


def test_wide_format_exact_ops_round_hand_cases():
    b = get_format("b60_12")
    one = F(1)
    assert ops.add(one, F(2) ** -60, b) == 1 + F(2) ** -60
    assert ops.add(one, F(2) ** -61, b) == 1                           # tie: 1 is even
    assert ops.add(1 + F(2) ** -60, F(2) ** -61, b) == 1 + F(2) ** -59  # tie: odd -> even upward
    assert ops.mul(F(2) ** 1500, F(2) ** 500, b) == F(2) ** 2000
    with pytest.raises(FormatOverflowError):
        ops.mul(F(2) ** 1500, F(2) ** 600, b)
    assert ops.sub(F(2) ** -2106, F(2) ** -2106, b) == 0


def test_formats_that_do_not_fit_float64_use_the_exact_fallback_for_b3_11():
    f = get_format("b3_11")            # smallest subnormal 2**-1025 is below float64's
    assert not f.fits_float64
    r, over = ops.mul_array(np.array([2.0 ** -1000, 1e300, 1.5]), np.array([2.0 ** -20, 1e300, 1.5]), f)
    assert r[0] == 2.0 ** -1020 and r[2] == 2.25            # 2.25 = 1.001b: 3 fraction bits, exact
    assert over.tolist() == [False, True, False] and r[1] == np.inf
    assert ops.mul(F(2) ** -1000, F(2) ** -25, f) == F(2) ** -1025
    assert ops.mul(F(2) ** -1000, F(2) ** -26, f) == 0      # tie with 0: even


# ---- the scalar fast path (used by the constructors' many single operations) ----------------------------
SCALAR = {"add": ops.add_float, "mul": ops.mul_float}


def _assert_scalar_equals_reference(op, a, b, name):
    fmt = get_format(name)
    expected, exp_over = reference(op, a, b, name)
    for x, y, e, o in zip(a.tolist(), b.tolist(), expected.tolist(), exp_over.tolist()):
        got = SCALAR[op](x, y, fmt)
        assert (got is None) == o, f"{x} {op} {y} in {name}: overflow {got is None}, expected {o}"
        if not o:
            assert got == e, f"{x} {op} {y} in {name}: got {got}, expected {e}"


@pytest.mark.parametrize("op", SCALAR)
@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float6_e3m2fn", "float4_e2m1fn", "b2_5"])
def test_scalar_fast_path_equals_the_reference_on_every_pair(name, op):
    _assert_scalar_equals_reference(op, *all_pairs(name), name)


@pytest.mark.parametrize("op", SCALAR)
@pytest.mark.parametrize("name", SIXTEEN)
def test_scalar_fast_path_equals_the_reference_on_20k_random_pairs(name, op):
    a, b = _random_pairs(name, 20_000, seed=5)
    _assert_scalar_equals_reference(op, a, b, name)
