"""RN_F, round to nearest with ties to even (docs/semantics.md): hand cases, a brute-force reference, and the
vectorized round_array checked against the exact round_fraction.

Expected values are hand-computed (with the arithmetic written out) or come from
tests/fp_reference.NearestReference, which rounds by picking the nearest element of the list of
decoded values, never from condcheck.
"""
from __future__ import annotations

import random
import zlib
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest

from condcheck.errors import FormatOverflowError
from condcheck.formats import all_formats, get_format
from condcheck.rounding import (midpoints_around, round_array, round_array_checked, round_down_up,
                                round_fraction, round_or_none)

from fp_reference import CUSTOM_TWINS, NearestReference, decode_custom, decode_dtype, parse_custom

F = Fraction
E4M3 = get_format("float8_e4m3")        # M=3, e_min=-6, Omega=240, smallest subnormal 2**-9
E4M3FN = get_format("float8_e4m3fn")    # M=3, e_min=-6, Omega=448 (no Inf)
BUILTIN_SMALL = [f.name for f in all_formats() if f.bits <= 16]
TINY = [n for n in BUILTIN_SMALL if get_format(n).bits <= 8] + ["b2_6", "b3_6", "b1_2", "b2_3"]


@lru_cache(maxsize=None)
def reference(name) -> NearestReference:
    if name in CUSTOM_TWINS:
        return NearestReference(decode_custom(*parse_custom(name)))
    return NearestReference(decode_dtype(get_format(name).dtype))


# ---- hand cases: float8_e4m3 ----------------------------------------------------------------------------

@pytest.mark.parametrize("e", range(-6, 8))
def test_tie_between_one_and_its_successor_goes_down_to_the_even_power_of_two_in_every_binade(e):
    # binade 2**e has spacing 2**(e-3); 2**e = 8 * 2**(e-3) is even, 9 * 2**(e-3) odd.
    assert round_fraction(F(17, 2) * F(2) ** (e - 3), E4M3) == F(2) ** e


@pytest.mark.parametrize("e", range(-6, 8))
def test_tie_between_odd_and_even_significand_goes_up_to_the_even_one_in_every_binade(e):
    # (9.5) * 2**(e-3) lies between 9 (odd) and 10 (even) spacings.
    assert round_fraction(F(19, 2) * F(2) ** (e - 3), E4M3) == 10 * F(2) ** (e - 3)


@pytest.mark.parametrize("e", range(-6, 7))
def test_tie_at_the_top_of_a_binade_carries_into_the_next_binade(e):
    # 15.5 * 2**(e-3) lies between 15 (odd) and 16 * 2**(e-3) = 2**(e+1) (even).
    assert round_fraction(F(31, 2) * F(2) ** (e - 3), E4M3) == F(2) ** (e + 1)


@pytest.mark.parametrize("e", range(-6, 8))
def test_values_just_off_a_tie_go_to_the_nearer_neighbour_in_every_binade(e):
    u = F(2) ** (e - 3)
    tie = F(17, 2) * u
    assert round_fraction(tie + F(1, 2 ** 40), E4M3) == 9 * u
    assert round_fraction(tie - F(1, 2 ** 40), E4M3) == 8 * u
    assert round_fraction(-tie - F(1, 2 ** 40), E4M3) == -9 * u


@pytest.mark.parametrize("k,expected", [(1, 0), (3, 2), (5, 2), (7, 4), (9, 4), (11, 6), (13, 6), (15, 8)])
def test_subnormal_ties_go_to_the_even_multiple_of_the_smallest_subnormal(k, expected):
    # k/2 * 2**-9: halfway between (k-1)/2 and (k+1)/2 subnormal steps; the even one wins.
    omega = F(2) ** -9
    assert round_fraction(F(k, 2) * omega, E4M3) == expected * omega
    assert round_fraction(-F(k, 2) * omega, E4M3) == -expected * omega


def test_tie_at_the_subnormal_normal_border_goes_to_the_smallest_normal():
    # largest subnormal 7 * 2**-9 (odd), smallest normal 8 * 2**-9 = 2**-6 (even)
    assert round_fraction(F(15, 2) * F(2) ** -9, E4M3) == F(2) ** -6


def test_tie_just_above_the_smallest_normal_goes_back_to_it():
    # 2**-6 = 8 * 2**-9 (even), next 9 * 2**-9 (odd): same spacing on both sides of the border
    assert round_fraction(F(17, 2) * F(2) ** -9, E4M3) == F(2) ** -6


def test_tiny_values_round_to_zero():
    half_omega = F(2) ** -10
    assert round_fraction(half_omega, E4M3) == 0
    assert round_fraction(-half_omega, E4M3) == 0
    assert round_fraction(F(1, 10 ** 100), E4M3) == 0
    assert round_fraction(half_omega + F(1, 10 ** 100), E4M3) == F(2) ** -9


def test_248_overflows_float8_e4m3_because_the_tie_goes_to_the_even_256():
    # 240 = 15 * 16 (odd), the extended grid's next point is 256 = 8 * 32 (even)
    with pytest.raises(FormatOverflowError, match="248"):
        round_fraction(248, E4M3)
    with pytest.raises(FormatOverflowError):
        round_fraction(-248, E4M3)


def test_just_below_248_rounds_to_240_in_float8_e4m3():
    assert round_fraction(F(24799, 100), E4M3) == 240
    assert round_fraction(248 - F(1, 2 ** 60), E4M3) == 240
    assert round_fraction(-(248 - F(1, 2 ** 60)), E4M3) == -240


def test_464_rounds_to_448_and_480_overflows_in_float8_e4m3fn():
    # 448 = 14 * 32 (even), 480 = 15 * 32 would be the next grid point (odd, and the NaN pattern)
    assert round_fraction(464, E4M3FN) == 448
    assert round_fraction(-464, E4M3FN) == -448
    with pytest.raises(FormatOverflowError):
        round_fraction(480, E4M3FN)
    with pytest.raises(FormatOverflowError):
        round_fraction(464 + F(1, 2 ** 60), E4M3FN)


def test_huge_values_overflow_with_a_format_overflow_error():
    with pytest.raises(FormatOverflowError, match="float16"):
        round_fraction(F(10) ** 400, get_format("float16"))
    assert round_or_none(F(10) ** 400, get_format("float16")) is None


# ---- hand cases: float16 --------------------------------------------------------------------------------

def test_float16_ties_around_one():
    f16 = get_format("float16")
    assert round_fraction(1 + F(2) ** -11, f16) == 1                      # 1 even, 1 + 2**-10 odd
    assert round_fraction(1 + 3 * F(2) ** -11, f16) == 1 + F(2) ** -9     # 1 + 2*2**-10 even
    assert round_fraction(1 - F(2) ** -12, f16) == 1                      # below 1 the spacing is 2**-11


def test_float16_overflow_border_is_65520():
    f16 = get_format("float16")
    assert round_fraction(65520 - F(1, 2 ** 30), f16) == 65504
    with pytest.raises(FormatOverflowError):
        round_fraction(65520, f16)


def test_float16_smallest_subnormal_and_half_of_it():
    f16 = get_format("float16")
    assert round_fraction(F(2) ** -25, f16) == 0
    assert round_fraction(F(3) * F(2) ** -26, f16) == F(2) ** -24


# ---- helpers of the rounding module --------------------------------------------------------------------

def test_round_down_up_brackets_a_value_between_its_neighbours():
    assert round_down_up(F(3, 10), E4M3) == (F(9, 32), F(5, 16))
    assert round_down_up(1, E4M3) == (1, 1)
    assert round_down_up(1000, E4M3) == (240, None)
    assert round_down_up(-1000, E4M3) == (None, -240)


def test_midpoints_around_a_value_are_the_halfway_points_to_its_neighbours():
    assert midpoints_around(F(1), E4M3) == (F(1) - F(1, 32), F(1) + F(1, 16))
    assert midpoints_around(F(240), E4M3) == (F(232), F(248))
    assert midpoints_around(F(0), E4M3) == (-F(2) ** -10, F(2) ** -10)


# ---- brute-force comparison ----------------------------------------------------------------------------

def _probe_points(ref: NearestReference, name: str, fraction: float = 1.0) -> list[Fraction]:
    """All values, all midpoints (incl. the one above Omega) and +-1/4 gap around every value (or
    around a random ``fraction`` of them, always including both ends)."""
    pts = set()
    pos = ref.pos
    pick = random.Random(name)
    for i, v in enumerate(pos):
        if fraction < 1 and 2 < i < len(pos) - 3 and pick.random() >= fraction:
            continue
        pts.add(v)
        if i + 1 < len(pos):
            pts.add((v + pos[i + 1]) / 2)
            pts.add(v + (pos[i + 1] - v) / 4)
        if i > 0:
            pts.add(v - (v - pos[i - 1]) / 4)
    pts |= {3 * pos[-1], 2 * pos[-1] + F(1, 3)}
    rng = random.Random(name)
    top = 2 * pos[-1]
    for _ in range(500):
        pts.add(F(rng.randrange(1, 10 ** 9), rng.randrange(1, 10 ** 9)) * top / 10 ** 3)
    pts |= {-p for p in pts}
    return sorted(pts)


@pytest.mark.parametrize("name", TINY + ["float16", pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_round_fraction_equals_the_brute_force_nearest_value_with_ties_to_even(name):
    fmt, ref = get_format(name), reference(name)
    # 16 bits: around a random tenth of the values (the next tests cover all of them via round_array)
    points = _probe_points(ref, name, 1.0 if fmt.bits <= 10 else 0.1)
    for x in points:
        assert round_or_none(x, fmt) == ref.round(x), x


@pytest.mark.parametrize("name", TINY)
def test_every_midpoint_rounds_to_the_neighbour_with_an_even_bit_pattern(name):
    fmt, ref = get_format(name), reference(name)
    for lo, hi, lo_even in zip(ref.pos, ref.pos[1:], ref.even):
        expected = lo if lo_even else (hi if hi <= ref.omega_max else None)
        assert round_or_none((lo + hi) / 2, fmt) == expected


@pytest.mark.parametrize("name", TINY)
def test_overflow_starts_exactly_where_the_brute_force_reference_says(name):
    fmt, ref = get_format(name), reference(name)
    omega, ext = ref.pos[-2], ref.pos[-1]
    mid = (omega + ext) / 2
    eps = F(1, 2 ** 80)
    assert round_or_none(mid - eps, fmt) == omega
    assert round_or_none(mid + eps, fmt) is None
    assert round_or_none(mid, fmt) == (omega if ref.even[-2] else None)


# ---- round_array against round_fraction ---------------------------------------------------------------

def _exact_expected(x: np.ndarray, fmt):
    """Elementwise round_fraction (its correctness is shown above) with overflow as a mask."""
    vals, over = [], []
    for v in x.tolist():
        if v != v or v in (float("inf"), float("-inf")):
            vals.append(np.inf)
            over.append(True)
            continue
        r = round_or_none(F(v), fmt)
        vals.append(np.inf if r is None else r)
        over.append(r is None)
    return vals, np.array(over)


def _assert_round_array_matches(x: np.ndarray, fmt):
    got, over = round_array(x, fmt)
    expected, exp_over = _exact_expected(x, fmt)
    assert got.shape == x.shape and over.shape == x.shape
    bad = np.flatnonzero(over != exp_over)
    assert bad.size == 0, f"overflow mask differs at {x[bad[:5]]}"
    for xi, g, e, o in zip(x.tolist(), got.tolist(), expected, over.tolist()):
        if o:
            assert g in (np.inf, -np.inf), xi
            if xi == xi:
                assert (g > 0) == (xi > 0), xi
        else:
            assert F(g) == e, xi


def _grid_points(fmt) -> np.ndarray:
    """Every value, every midpoint (incl. above Omega) and the float64 neighbours of every midpoint."""
    v = fmt.values()
    pos = v[v >= 0]
    top = pos[-1]
    ext = np.append(pos, top + (top - pos[-2]))
    mids = (ext[:-1] + ext[1:]) / 2            # exact in float64: p + 1 bits
    pts = np.concatenate([v, mids, -mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                          -np.nextafter(mids, np.inf), -np.nextafter(mids, -np.inf)])
    return pts


@pytest.mark.parametrize("name", BUILTIN_SMALL + ["b2_6", "b3_6", "b1_2", "b2_3"])
def test_round_array_equals_round_fraction_on_values_midpoints_and_points_just_off_midpoints(name):
    fmt = get_format(name)
    pts = _grid_points(fmt)
    if fmt.bits > 10:   # round_fraction on all ~460k points takes ~10 s; the next test covers them all
        pts = np.random.default_rng(3).choice(pts, size=40000, replace=False)
    _assert_round_array_matches(pts, fmt)


@pytest.mark.parametrize("name", BUILTIN_SMALL + ["b2_6", "b3_6", "b1_2", "b2_3", "b10_5", "b7_8"])
def test_round_array_maps_values_midpoints_and_their_neighbours_as_ties_to_even_requires(name):
    """Expected results built from the decoded value list: a value maps to itself, a midpoint to the
    neighbour whose bit pattern ends in 0, a point just above (below) a midpoint to the upper (lower)
    neighbour; the neighbour above Omega means overflow."""
    fmt, ref = get_format(name), reference(name)
    grid = np.array([float(v) for v in ref.pos])                 # 0 .. Omega, then the point above
    even = np.array(ref.even)
    lo, hi = grid[:-1], grid[1:]
    mids = (lo + hi) / 2
    tie_goes = np.where(even[:-1], lo, hi)
    cases = [(grid[:-1], grid[:-1]), (mids, tie_goes), (np.nextafter(mids, np.inf), hi),
             (np.nextafter(mids, -np.inf), lo)]
    for x, expected in cases:
        for sign in (1.0, -1.0):
            got, over = round_array(sign * x, fmt)
            exp_over = expected > grid[-2]
            assert np.array_equal(over, exp_over)
            assert np.array_equal(got[~over], sign * expected[~over])
            assert np.all(np.isinf(got[over])) and np.all(np.sign(got[over]) == sign)


@pytest.mark.parametrize("name", BUILTIN_SMALL + ["b2_6", "b3_6"])
def test_round_array_equals_round_fraction_on_random_float64_bit_patterns(name):
    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    raw = rng.integers(0, 2 ** 64, size=4000, dtype=np.uint64, endpoint=False).view(np.float64)
    x = np.concatenate([raw, [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 5e-324, -5e-324,
                              1.7976931348623157e308, -1.7976931348623157e308, 1e300, 1e-300]])
    _assert_round_array_matches(x, fmt)


@pytest.mark.parametrize("name", BUILTIN_SMALL + ["b2_6", "b3_6"])
def test_round_array_equals_round_fraction_on_random_float64_inputs_in_and_around_the_range(name):
    fmt = get_format(name)
    rng = np.random.default_rng(len(name))
    mant = rng.random(6000) + 1.0
    expo = rng.integers(fmt.e_min - fmt.M - 6, fmt.e_max + 4, size=6000)
    sign = rng.choice([-1.0, 1.0], size=6000)
    _assert_round_array_matches(sign * np.ldexp(mant, expo), fmt)


def test_round_array_counts_inf_and_nan_as_overflow():
    r, over = round_array(np.array([np.inf, -np.inf, np.nan, 1.0]), E4M3)
    assert over.tolist() == [True, True, True, False]
    assert r[0] == np.inf and r[1] == -np.inf and r[3] == 1.0


def test_round_array_checked_names_the_first_overflowing_element():
    with pytest.raises(FormatOverflowError, match="element 1"):
        round_array_checked(np.array([1.0, 248.0, 1000.0]), E4M3)
    assert round_array_checked(np.array([247.0, -247.0]), E4M3).tolist() == [240.0, -240.0]


def test_round_array_of_float64_is_the_identity_on_finite_values():
    f64 = get_format("float64")
    x = np.array([1.0, 5e-324, 1.7976931348623157e308, -0.1, np.inf])
    r, over = round_array(x, f64)
    assert r[:4].tolist() == x[:4].tolist()
    assert over.tolist() == [False] * 4 + [True]


def test_round_array_counts_nan_with_any_payload_as_overflow():
    # NaN payloads near all-ones used to carry into the sign bit and come out as an unflagged zero.
    pats = np.array([0x7FF0000000000001, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF,
                     0xFFF0000000000001], dtype=np.uint64)
    for name in ("float8_e5m2", "float16", "bfloat16", "float32"):
        r, over = round_array(pats.view(np.float64), get_format(name))
        assert over.all() and np.isinf(r).all()


@pytest.mark.parametrize("name", [n for n in BUILTIN_SMALL if n != "bfloat16"])
def test_round_array_of_float32_input_equals_round_fraction(name):
    fmt = get_format(name)
    pts = _grid_points(fmt)
    if fmt.bits > 10:
        pts = np.random.default_rng(5).choice(pts, size=20000, replace=False)
    x32 = pts.astype(np.float32)
    x32 = np.concatenate([x32, np.nextafter(x32, np.float32(np.inf)), np.nextafter(x32, np.float32(-np.inf)),
                          np.array([np.inf, -np.inf, np.nan, 3e38, -1e-45], dtype=np.float32)])
    got, over = round_array(x32, fmt)
    assert got.dtype == np.float32
    expected, exp_over = _exact_expected(x32.astype(np.float64), fmt)
    assert np.array_equal(over, exp_over)
    for g, e, o in zip(got.tolist(), expected, over.tolist()):
        if not o:
            assert F(g) == e


def test_round_array_into_a_format_wider_than_the_input_keeps_every_finite_input():
    x = np.array([1.0, 1e308, 5e-324, -0.1, np.inf])
    r, over = round_array(x, get_format("b60_12"))
    assert r[:4].tolist() == x[:4].tolist() and over.tolist() == [False] * 4 + [True]
    r32, over32 = round_array(x[:4].astype(np.float32), get_format("float64"))
    assert r32.dtype == np.float32 and r32.tolist() == x[:4].astype(np.float32).tolist()
    assert not over32[[0, 2, 3]].any() and over32[1]      # 1e308 is inf in float32


def test_round_array_accepts_a_scalar_that_overflows():
    from condcheck.formats import get_format
    from condcheck.rounding import round_array
    r, over = round_array(np.float64(1e6), get_format("float8_e4m3"))
    assert r.shape == () and bool(over) and r == np.inf


def _ties_and_neighbours(V):
    """Values, the midpoints between neighbours (ties), the float64 numbers next to those, and negatives."""
    mids = (V[1:] + V[:-1]) / 2
    x = np.concatenate([V, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    return np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf, np.nan]])


def test_rounding_to_binary32_by_numpys_conversion_equals_the_bit_trick_bit_for_bit(monkeypatch):
    import condcheck.rounding as rounding
    fmt = get_format("float32")
    rng = np.random.default_rng(11)
    # random binary32 values of every binade, subnormals, the normal boundary and Omega
    r = (rng.standard_normal(100000) * 2.0 ** rng.integers(-149, 128, 100000)).astype(np.float32)
    V = np.unique(np.abs(np.concatenate([r, np.float32([1.4e-45, 1.1754942e-38, 1.1754944e-38,
                                                           3.4028235e38])]).astype(float)))
    x = np.concatenate([_ties_and_neighbours(V), rng.standard_normal(50000) * 2.0 ** rng.integers(-160, 140, 50000),
                        [float(fmt.max) * (1 + 2.0 ** -30), float(fmt.max) + float(fmt.max) * 2.0 ** -(fmt.M + 1)]])
    got = round_array(x, fmt)
    assert rounding._PLANS[(id(fmt), x.dtype)][1][0] == "cast"
    monkeypatch.setattr(rounding, "CAST", False)
    monkeypatch.setattr(rounding, "_PLANS", {})
    want = round_array(x, fmt)
    assert np.array_equal(got[0].view(np.int64), want[0].view(np.int64)) and np.array_equal(got[1], want[1])
