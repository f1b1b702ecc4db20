"""Condition 3: exhaustive and symbolic checkers agree; witnesses re-check; negative controls fail."""
from __future__ import annotations

import pytest

from condcheck.activations import PAPER_ACTIVATIONS, list_activations
from condcheck.rounded_activation import get_rounded
from conditions import condition3

from _condition_controls import (CUSTOM_16_BIT_FORMATS, CUSTOM_SMALL_FORMATS, SIXTEEN_BIT_FORMATS, SMALL_FORMATS,
                                agree, control, recheck_condition3)

BUILTINS = [a for a in list_activations() if not a.startswith("test_")]


def _agree(act, fmt):
    ex, sy = agree(condition3, recheck_condition3, act, fmt)
    if ex.holds:
        # route (a) is preferred whenever it holds, so both checkers report the same route
        assert sy.witness.route == ex.witness.route
    return ex, sy


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", BUILTINS)
def test_exhaustive_and_symbolic_agree_on_small_formats(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", CUSTOM_SMALL_FORMATS, ids=lambda f: f.name)
def test_exhaustive_and_symbolic_agree_on_custom_formats(fmt):
    for act in BUILTINS:
        _agree(act, fmt)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", CUSTOM_16_BIT_FORMATS, ids=lambda f: f.name)
def test_exhaustive_and_symbolic_agree_on_16_bit_custom_formats(fmt):
    for act in BUILTINS:
        _agree(act, fmt)


@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_exhaustive_and_symbolic_agree_on_16_bit_formats_for_paper_activations(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", [a for a in BUILTINS if a not in PAPER_ACTIVATIONS])
def test_exhaustive_and_symbolic_agree_on_16_bit_formats_for_other_activations(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float16", "bfloat16"])
def test_relu_needs_route_b_because_its_derivative_at_zero_is_zero(fmt):
    v = condition3.check_exhaustive(get_rounded("relu", fmt))
    assert v.holds is True and v.witness.route == "b"


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float16"])
def test_heaviside_step_fails_both_routes_because_its_derivative_is_zero(fmt):
    r = get_rounded(control("test_heaviside"), fmt)
    v = condition3.check_exhaustive(r)
    assert v.holds is False
    assert v.failing_clause.startswith("(a) |sigma~'(0)| = 0.0")
    assert "(b) no x in F with an even last significand bit" in v.failing_clause
    # the symbolic checker refutes it too: sigma~'(0) = 0 by certain rounding, and a cover of every value
    # of the format shows |sigma~'| < 2^-M everywhere
    sy = condition3.check_symbolic(r)
    assert sy.holds is False and sy.failing_clause == v.failing_clause
    assert sy.counterexample["refutation"]["kind"] == "abs_at_least_2^-M"


@pytest.mark.parametrize("fmt", ["float32", "float64"])
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_paper_activations_hold_symbolically_in_float32_and_float64(act, fmt):
    r = get_rounded(act, fmt)
    v = condition3.check_symbolic(r)
    assert v.holds is True, v.reason
    assert recheck_condition3(r, v.witness) == []


def test_statement_names_both_routes():
    assert "(a)" in condition3.STATEMENT and "(b)" in condition3.STATEMENT
