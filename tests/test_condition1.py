"""Condition 1 (condcheck's statement: dead tail, live, constant, zero and pass states)."""
from fractions import Fraction

import numpy as np
import pytest

from condcheck.activations import BUILTIN_ACTIVATIONS, PAPER_ACTIVATIONS
from condcheck.check import check_activation
from condcheck.formats import get_format
from condcheck.rounded_activation import get_rounded
from conditions import condition1

from _condition_controls import SMALL_FORMATS, control


def _independent_tail_check(rounded, w):
    """Every value from -Omega up to z_d, evaluated one by one on the certain path."""
    fmt = rounded.format
    for v in fmt.values():
        if v > float(w.z_dead):
            break
        q = Fraction(float(v))
        assert rounded.value(q) == w.L and rounded.derivative(q) == 0, v


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float6_e3m2fn", "float4_e2m1fn"])
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_paper_activations_have_a_dead_tail_that_an_independent_scan_confirms(act, fmt):
    if (act, fmt) == ("sigmoid", "float4_e2m1fn"):
        pytest.skip("sigmoid fails there: see test_sigmoid_on_float4_has_no_pass_state")
    r = get_rounded(act, fmt)
    v = condition1.check_exhaustive(r)
    assert v.holds is True
    _independent_tail_check(r, v.witness)
    assert condition1.recheck(r, v.witness) == []


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", BUILTIN_ACTIVATIONS)
def test_every_builtin_gets_a_verdict_on_every_small_format(act, fmt):
    v = condition1.check_exhaustive(get_rounded(act, fmt))
    assert v.holds in (True, False)
    if v.holds:
        assert condition1.recheck(get_rounded(act, fmt), v.witness) == []
    else:
        assert v.failing_clause and v.counterexample


def test_identity_fails_the_dead_tail():
    v = condition1.check_exhaustive(get_rounded(control("test_identity"), "float8_e4m3"))
    assert v.holds is False and v.failing_clause.startswith("(a)")


def test_a_constant_has_no_live_state():
    v = condition1.check_exhaustive(get_rounded(control("test_constant"), "float8_e4m3"))
    assert v.holds is False and v.failing_clause.startswith("(b)")


def test_heaviside_has_no_pass_state():
    v = condition1.check_exhaustive(get_rounded(control("test_heaviside"), "float8_e4m3"))
    assert v.holds is False and v.failing_clause.startswith("(e)")


@pytest.mark.parametrize("fmt", ["float8_e4m3", "bfloat16", "float6_e3m2fn"])
def test_leaky_relu_fails_only_condition1(fmt):
    res = check_activation("leaky_relu", fmt)
    assert res.conditions["1"]["holds"] is False
    assert res.conditions["1"]["failing_clause"].startswith("(a)")
    assert res.conditions["2"]["holds"] is True and res.conditions["3"]["holds"] is True


def test_sigmoid_on_float4_has_no_pass_state():
    # sigmoid' <= 1/4 and RN(1/4) = 0 in float4_e2m1fn (a tie to even): no nonzero derivative at all
    v = condition1.check_exhaustive(get_rounded("sigmoid", "float4_e2m1fn"))
    assert v.holds is False and v.failing_clause.startswith("(e)")


def test_wide_formats_get_a_proved_tail():
    v = condition1.check_symbolic(get_rounded("gelu", "float32"))
    assert v.holds is True and "clause (a) proved by interval arithmetic" in v.evidence
    # more in tests/test_condition1_symbolic.py


def test_statement_names_every_clause():
    for clause in ("dead tail", "live state", "constant state", "zero state", "pass state"):
        assert clause in condition1.STATEMENT
