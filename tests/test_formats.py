"""Formats (docs/semantics.md): value sets, fields, encodings and neighbours, checked against independent decodings.

Every expected value comes from tests/fp_reference.py (numpy / ml_dtypes decoding of every bit pattern,
or the IEEE 754 formula for custom bM_E formats) or from np.finfo / ml_dtypes.finfo, never from
condcheck itself.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest

from condcheck.errors import CondcheckError, NotInFormatError, UnknownNameError
from condcheck.formats import ENCODED_FIELDS, all_formats, derive_from_encodings, get_format

from fp_reference import (CUSTOM_TWINS, UINT, decode_custom, decode_dtype, ieee_decode, ieee_encode,
                          parse_custom)

BUILTIN_SMALL = [f.name for f in all_formats() if f.bits <= 16]
CUSTOM = list(CUSTOM_TWINS)
SMALL = BUILTIN_SMALL + CUSTOM
# Formats for the per-value loops of the format-independent code (neighbours, decomposition, encoding,
# enumeration): the 16-bit customs b10_5 and b7_8 have exactly the fields of float16 and bfloat16, which
# are looped over (and test_b10_5_is_float16_and_b7_8_is_bfloat16_value_for_value shows them equal).
SMALL_DISTINCT = [n for n in SMALL if n not in ("b10_5", "b7_8")]


@lru_cache(maxsize=None)
def decoded(name):
    """The independent decoding of every bit pattern of a format."""
    if name in CUSTOM_TWINS:
        return decode_custom(*parse_custom(name))
    return decode_dtype(get_format(name).dtype)


def finfo(name):
    dt = get_format(name).dtype
    return np.finfo(dt) if name in ("float16", "float32", "float64") else ml_dtypes.finfo(dt)


def as_fraction_list(values):
    return [Fraction(v) for v in np.asarray(values, dtype=np.float64).tolist()]


def test_the_small_builtin_formats_are_the_ones_expected():
    assert set(BUILTIN_SMALL) == {
        "float16", "bfloat16", "float8_e5m2", "float8_e4m3", "float8_e4m3fn", "float8_e3m4",
        "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float6_e3m2fn", "float6_e2m3fn",
        "float4_e2m1fn"}


# ---- value sets ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SMALL_DISTINCT)
def test_enumerated_values_equal_the_finite_values_of_every_bit_pattern(name):
    assert set(as_fraction_list(get_format(name).values())) == decoded(name).finite_set()


@pytest.mark.parametrize("name", SMALL)
def test_enumerated_values_are_strictly_ascending_with_one_zero(name):
    vals = as_fraction_list(get_format(name).values())
    assert all(a < b for a, b in zip(vals, vals[1:]))
    assert vals.count(0) == 1


@pytest.mark.parametrize("name", SMALL)
def test_fractions_equal_the_decoded_values_in_ascending_order(name):
    assert get_format(name).fractions() == decoded(name).sorted_values()


@pytest.mark.parametrize("name", SMALL)
def test_count_finite_is_the_number_of_distinct_finite_decoded_values(name):
    assert get_format(name).count_finite() == len(decoded(name).finite_set())


@pytest.mark.parametrize("name", BUILTIN_SMALL)
def test_values_in_the_formats_own_dtype_equal_the_float64_values(name):
    fmt = get_format(name)
    vd = fmt.values_dtype()
    assert vd.dtype == fmt.dtype
    assert np.array_equal(vd.astype(np.float64), fmt.values())


@pytest.mark.parametrize("name,twin", [(n, t) for n, t in CUSTOM_TWINS.items() if t is not None])
def test_custom_format_has_the_same_values_as_its_ieee_like_dtype(name, twin):
    assert set(as_fraction_list(get_format(name).values())) == decode_dtype(twin).finite_set()


def test_b3_4_has_the_values_of_float8_e4m3_largest_240():
    b = get_format("b3_4")
    assert np.array_equal(b.values(), get_format("float8_e4m3").values())
    assert b.max == 240


def test_b10_5_is_float16_and_b7_8_is_bfloat16_value_for_value():
    assert np.array_equal(get_format("b10_5").values(), get_format("float16").values())
    assert np.array_equal(get_format("b7_8").values(), get_format("bfloat16").values())


# ---- fields -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ENCODED_FIELDS))
def test_the_stored_fields_of_a_format_are_the_ones_read_off_its_encodings(name):
    stored, derived = get_format(name), derive_from_encodings(name)
    assert stored == derived and stored.ieee is derived.ieee is False
    assert stored.dtype == derived.dtype


@pytest.mark.parametrize("name", BUILTIN_SMALL + ["float32", "float64"])
def test_fields_match_finfo(name):
    fmt, fi = get_format(name), finfo(name)
    assert fmt.M == int(fi.nmant)
    assert fmt.E == int(fi.nexp)
    assert fmt.bits == int(fi.bits)
    assert fmt.max == Fraction(float(fi.max))
    assert fmt.smallest_normal == Fraction(float(fi.smallest_normal))
    assert fmt.smallest_subnormal == Fraction(float(fi.smallest_subnormal))
    assert fmt.eps == Fraction(float(fi.eps))


@pytest.mark.parametrize("name", SMALL)
def test_fields_match_the_extremes_of_the_decoded_values(name):
    fmt, vals = get_format(name), decoded(name).sorted_values()
    positive = [v for v in vals if v > 0]
    assert fmt.max == positive[-1] == -vals[0]
    assert fmt.smallest_subnormal == positive[0]
    assert fmt.Omega == fmt.max
    # e_max: the binade of Omega; e_min: where the spacing stops shrinking (smallest normal).
    assert Fraction(2) ** fmt.e_max <= fmt.max < Fraction(2) ** (fmt.e_max + 1)
    gaps = {b - a for a, b in zip(positive, positive[1:]) if b <= fmt.smallest_normal}
    assert gaps == {fmt.smallest_subnormal}
    assert fmt.smallest_normal in positive and fmt.smallest_normal == Fraction(2) ** fmt.e_min
    assert fmt.p == fmt.M + 1


@pytest.mark.parametrize("name", SMALL)
def test_inf_nan_and_negative_zero_availability_match_the_decoded_patterns(name):
    d = decoded(name)
    assert get_format(name).has_inf == any(v in ("inf", "-inf") for v in d.values)
    assert get_format(name).has_nan == any(v == "nan" for v in d.values)
    sign_bit = 1 << (d.bits - 1)
    neg_zero = any(v == 0 and p & sign_bit for p, v in d.finite())
    assert get_format(name).has_neg_zero == neg_zero


@pytest.mark.parametrize("name,M,E", [("float32", 23, 8), ("float64", 52, 11)])
def test_float32_and_float64_follow_the_ieee_formulas(name, M, E):
    fmt, fi = get_format(name), np.finfo(name)
    bias = 2 ** (E - 1) - 1
    assert (fmt.M, fmt.E, fmt.e_min, fmt.e_max) == (M, E, 1 - bias, bias)
    assert fmt.e_min == fi.minexp and fmt.e_max + 1 == fi.maxexp
    assert fmt.max == (2 - Fraction(2) ** -M) * Fraction(2) ** bias
    assert fmt.has_inf and fmt.has_nan and fmt.has_neg_zero
    # 2**bits patterns, minus the 2**(M+1) with the top exponent (Inf, NaN), minus the duplicate zero.
    assert fmt.count_finite() == 2 ** (1 + M + E) - 2 ** (M + 1) - 1


@pytest.mark.parametrize("name", CUSTOM)
def test_custom_format_fields_follow_the_ieee_formulas(name):
    M, E = parse_custom(name)
    fmt = get_format(name)
    bias = 2 ** (E - 1) - 1
    assert (fmt.bits, fmt.M, fmt.E, fmt.e_min, fmt.e_max) == (1 + M + E, M, E, 1 - bias, bias)
    assert fmt.max == (2 - Fraction(2) ** -M) * Fraction(2) ** bias
    assert fmt.smallest_subnormal == Fraction(2) ** (1 - bias - M)
    assert fmt.has_inf and fmt.has_nan and fmt.has_neg_zero


def test_named_ieee_formats_have_the_largest_values_stated_in_the_spec():
    assert get_format("float8_e4m3").max == 240
    assert get_format("float8_e4m3fn").max == 448
    assert get_format("float16").max == 65504
    assert get_format("float8_e5m2").max == 57344
    assert get_format("float8_e3m4").max == Fraction(31, 2)


# ---- bit patterns -------------------------------------------------------------------------------------

def _expected_pattern(name, value: Fraction, negative_zero=False) -> int:
    """The bit pattern of a value from the dtype's own bit view, or the IEEE formula for customs."""
    if name in CUSTOM_TWINS and CUSTOM_TWINS[name] is None:
        return ieee_encode(value, *parse_custom(name), negative=negative_zero)
    dt = np.dtype(CUSTOM_TWINS[name]) if name in CUSTOM_TWINS else get_format(name).dtype
    x = -0.0 if (value == 0 and negative_zero) else float(value)
    arr = np.array([x]).astype(dt)
    return int(arr.view(UINT[dt.itemsize])[0])


@lru_cache(maxsize=None)
def to_bits_of_every_value(name) -> dict:
    fmt = get_format(name)
    return {v: fmt.to_bits(v) for v in decoded(name).sorted_values()}


@lru_cache(maxsize=None)
def from_bits_of_every_finite_pattern(name) -> dict:
    fmt = get_format(name)
    return {p: fmt.from_bits(p) for p, _ in decoded(name).finite()}


@pytest.mark.parametrize("name", SMALL_DISTINCT)
def test_to_bits_agrees_with_the_dtype_bit_view_on_every_value(name):
    got = to_bits_of_every_value(name)
    if name in CUSTOM_TWINS and CUSTOM_TWINS[name] is None:
        for v, p in got.items():
            assert p == _expected_pattern(name, v), v
        return
    dt = np.dtype(CUSTOM_TWINS[name]) if name in CUSTOM_TWINS else get_format(name).dtype
    values = list(got)
    view = np.array([float(v) for v in values]).astype(dt).view(UINT[dt.itemsize]).tolist()
    assert [got[v] for v in values] == view


@pytest.mark.parametrize("name", SMALL)
def test_from_bits_decodes_every_finite_pattern_like_the_dtype(name):
    got = from_bits_of_every_finite_pattern(name)
    for p, v in decoded(name).finite():
        assert got[p] == v, hex(p)


@pytest.mark.parametrize("name", SMALL)
def test_from_bits_of_to_bits_is_the_identity_on_every_value(name):
    to_bits, from_bits = to_bits_of_every_value(name), from_bits_of_every_finite_pattern(name)
    for v, p in to_bits.items():
        assert from_bits[p] == v


@pytest.mark.parametrize("name", SMALL)
def test_from_bits_refuses_inf_and_nan_patterns(name):
    fmt, d = get_format(name), decoded(name)
    nonfinite = [p for p, v in zip(d.patterns, d.values) if not isinstance(v, Fraction)]
    for p in nonfinite:
        with pytest.raises(NotInFormatError):
            fmt.from_bits(p)


@pytest.mark.parametrize("name", SMALL)
def test_from_bits_refuses_patterns_outside_the_bit_width(name):
    fmt = get_format(name)
    for p in (-1, 2 ** fmt.bits):
        with pytest.raises(NotInFormatError, match="out of range"):
            fmt.from_bits(p)


@pytest.mark.parametrize("name", SMALL)
def test_negative_zero_pattern_is_the_sign_bit_where_the_format_has_minus_zero(name):
    fmt = get_format(name)
    expected = (1 << (fmt.bits - 1)) if fmt.has_neg_zero else 0
    assert fmt.to_bits(0, negative_zero=True) == expected
    assert fmt.to_bits(0) == 0


def test_bits_text_of_float8_e4m3_one_is_the_ieee_pattern():
    # 1.0 = sign 0, biased exponent 0 + 7 = 0111, fraction 000.
    assert get_format("float8_e4m3").bits_text(1) == "00111000"
    assert get_format("b3_4").bits_text(-1.5) == "10111100"


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_to_bits_of_wide_formats_agrees_with_the_numpy_bit_view(name):
    fmt, dt = get_format(name), np.dtype(name)
    bits = dt.itemsize * 8
    rng = np.random.default_rng(7)
    pats = rng.integers(0, 2 ** bits, size=4000, dtype=np.uint64, endpoint=False).astype(UINT[dt.itemsize])
    vals = pats.view(dt).astype(np.float64)
    checked = 0
    for p, v in zip(pats.tolist(), vals.tolist()):
        if np.isfinite(v) and v != 0:
            assert fmt.to_bits(v) == p
            assert fmt.from_bits(p) == Fraction(v)
            checked += 1
    assert checked > 3000


# ---- neighbours ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n if n != "bfloat16" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in SMALL_DISTINCT])
def test_next_up_and_next_down_step_along_the_sorted_decoded_values(name):
    fmt, vals = get_format(name), decoded(name).sorted_values()
    for lo, hi in zip(vals, vals[1:]):
        assert fmt.next_up(lo) == hi
        assert fmt.next_down(hi) == lo


@pytest.mark.parametrize("name", SMALL)
def test_next_up_of_the_largest_and_next_down_of_the_smallest_value_are_refused(name):
    fmt = get_format(name)
    with pytest.raises(NotInFormatError):
        fmt.next_up(fmt.max)
    with pytest.raises(NotInFormatError):
        fmt.next_down(-fmt.max)


# ---- decomposition ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SMALL_DISTINCT)
def test_decompose_reconstructs_every_value_with_a_significand_in_range(name):
    fmt = get_format(name)
    for v in decoded(name).sorted_values():
        s, m, e = fmt.decompose(v)
        assert s * m * Fraction(2) ** (e - fmt.M) == v
        assert 0 <= m < 2 ** (fmt.M + 1) and e >= fmt.e_min and s in (-1, 1)
        normal = abs(v) >= fmt.smallest_normal
        assert (m >= 2 ** fmt.M) == normal
        assert e == fmt.e_min or normal


@pytest.mark.parametrize("name", SMALL_DISTINCT)
def test_even_significand_is_a_zero_last_bit_of_the_bit_pattern(name):
    fmt = get_format(name)
    for p, v in decoded(name).finite():
        assert fmt.has_even_significand(v) == (p % 2 == 0), hex(p)


# ---- wide custom formats ------------------------------------------------------------------------------

def test_wide_custom_format_encodes_and_decodes_like_the_ieee_formula():
    fmt = get_format("b60_12")
    assert (fmt.bits, fmt.e_min, fmt.e_max) == (73, -2046, 2047)
    for v in [Fraction(1), 1 + Fraction(2) ** -60, -Fraction(2) ** 2047 * 3 / 2, fmt.max,
              Fraction(2) ** (-2046 - 60), 7 * Fraction(2) ** (-2046 - 60), Fraction(-5, 8)]:
        p = fmt.to_bits(v)
        assert p == ieee_encode(v, 60, 12)
        assert fmt.from_bits(p) == v == ieee_decode(p, 60, 12)


def test_wide_custom_format_neighbours_of_one():
    fmt = get_format("b60_12")
    assert fmt.next_up(1) == 1 + Fraction(2) ** -60
    assert fmt.next_down(1) == 1 - Fraction(2) ** -61
    assert fmt.next_up(0) == Fraction(2) ** (-2046 - 60)


# ---- errors -------------------------------------------------------------------------------------------

def test_float8_e8m0fnu_is_refused_because_it_has_no_zero():
    with pytest.raises(CondcheckError, match=r"float8_e8m0fnu.*not supported.*no zero"):
        get_format("float8_e8m0fnu")


def test_unknown_format_name_lists_close_names():
    with pytest.raises(UnknownNameError) as info:
        get_format("float8_e4m4")
    msg = str(info.value)
    assert "unknown format 'float8_e4m4'" in msg
    assert "did you mean" in msg and "'float8_e4m3'" in msg
    assert isinstance(info.value, CondcheckError)


def test_a_value_not_in_the_format_is_named_in_the_error():
    fmt = get_format("float8_e4m3")
    with pytest.raises(NotInFormatError) as info:
        fmt.check(0.3)
    msg = str(info.value)
    assert "0.3" in msg and "float8_e4m3" in msg
    # the nearest values 0.28125 and 0.3125 are named too
    assert "0.28125" in msg and "0.3125" in msg


@pytest.mark.parametrize("name", ["float8_e4m3", "float6_e3m2fn", "float8_e5m2fnuz", "b3_4"])
def test_the_error_for_a_value_not_in_the_format_names_the_two_values_rounding_falls_between(name):
    from condcheck.formats import num_text
    from condcheck.rounding import round_down_up
    fmt = get_format(name)
    vals = fmt.fractions()
    # midpoints and points a third of the way between neighbours, and points beyond the range
    cands = [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [(2 * a + b) / 3 for a, b in zip(vals, vals[1:])]
    cands += [fmt.max * 2, -fmt.max * 2, fmt.max + fmt.smallest_subnormal / 3]
    for q in cands:
        with pytest.raises(NotInFormatError) as info:
            fmt.check(q)
        named = " and ".join(num_text(v) for v in round_down_up(q, fmt) if v is not None)
        assert f"(nearest values: {named})" in str(info.value)


def test_a_value_beyond_the_range_is_named_in_the_error():
    with pytest.raises(NotInFormatError, match="1000"):
        get_format("float8_e4m3").check(1000)


def test_non_finite_values_are_refused_with_a_message_naming_them():
    with pytest.raises(NotInFormatError, match="inf"):
        get_format("float16").check(float("inf"))


def test_a_value_not_in_a_wide_custom_format_is_named_in_the_error():
    fmt = get_format("b60_12")
    with pytest.raises(NotInFormatError, match="b60_12"):
        fmt.check(Fraction(1, 3))


def test_neighbours_of_a_value_not_in_the_format_are_refused():
    with pytest.raises(NotInFormatError, match="0.3"):
        get_format("float8_e4m3").next_up(0.3)


def test_contains_accepts_exactly_the_decoded_values_of_float8_e4m3():
    fmt = get_format("float8_e4m3")
    vals = decoded("float8_e4m3").finite_set()
    # every multiple of 2**-11 (a quarter of the smallest subnormal) in [-4, 4], and steps of 1/8 to 300
    grid = {Fraction(k, 2 ** 11) for k in range(-4 * 2 ** 11, 4 * 2 ** 11 + 1)}
    grid |= {Fraction(k, 8) for k in range(-300 * 8, 300 * 8 + 1)}
    for q in grid:
        assert fmt.contains(q) == (q in vals), q
