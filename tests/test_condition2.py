"""Condition 2: exhaustive and symbolic checkers agree; witnesses re-check; negative controls fail."""
from __future__ import annotations

import pytest

from condcheck.activations import PAPER_ACTIVATIONS, list_activations
from condcheck.rounded_activation import get_rounded
from conditions import condition2
from conditions.verdict import Verdict

from _condition_controls import (CUSTOM_16_BIT_FORMATS, CUSTOM_SMALL_FORMATS, SIXTEEN_BIT_FORMATS, SMALL_FORMATS,
                                agree, control, recheck_condition2)

BUILTINS = [a for a in list_activations() if not a.startswith("test_")]


def _agree(act, fmt):
    return agree(condition2, recheck_condition2, act, fmt)


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", BUILTINS)
def test_exhaustive_and_symbolic_agree_on_small_formats(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_exhaustive_and_symbolic_agree_on_16_bit_formats_for_paper_activations(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", [a for a in BUILTINS if a not in PAPER_ACTIVATIONS])
def test_exhaustive_and_symbolic_agree_on_16_bit_formats_for_other_activations(act, fmt):
    _agree(act, fmt)


@pytest.mark.parametrize("fmt", CUSTOM_SMALL_FORMATS, ids=lambda f: f.name)
def test_exhaustive_and_symbolic_agree_on_custom_formats(fmt):
    # every built-in on every bM_E of at most 8 bits: the same verdict and the same first failing clause.
    # On E = 2 (e_max = 1, so k in {-1, 0}) GELU, GELU-tanh and Mish fail (iv) and Swish holds on b5_2 only
    # by pairs off the candidate points: decided by the certified pair scan (conditions._pairs).
    for act in BUILTINS:
        _agree(act, fmt)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", CUSTOM_16_BIT_FORMATS, ids=lambda f: f.name)
def test_exhaustive_and_symbolic_agree_on_16_bit_custom_formats(fmt):
    for act in BUILTINS:
        _agree(act, fmt)


@pytest.mark.parametrize("fmt, act, clause", [("b3_2", "gelu", "(iv)"), ("b4_2", "mish", "(iv)"),
                                              ("b5_2", "gelu_tanh", "(iv)"), ("b5_2", "swish", None)])
def test_e2_pair_clauses_are_decided_by_the_certified_pair_scan(fmt, act, clause):
    r = get_rounded(act, fmt)
    ex, sy = condition2.check_exhaustive(r), condition2.check_symbolic(r)
    assert "certified pair scan" in sy.evidence
    if clause is None:
        assert ex.holds is sy.holds is True and recheck_condition2(r, sy.witness) == []
        return
    assert ex.holds is sy.holds is False and sy.failing_clause == ex.failing_clause
    assert sy.failing_clause.startswith(clause)
    ref = sy.counterexample["refutation"]
    assert ref["kind"] == "pairs" and ref["stage"] == 4 and ref["cover"]
    # the pair shown for (i)-(iii) fails only (iv)
    from fractions import Fraction
    pair = sy.counterexample["pair_for_(i)-(iii)"]
    _, why = condition2.check_pair(r, Fraction(pair["delta_0"]["fraction"]), Fraction(pair["delta_1"]["fraction"]))
    assert why[0] == "(iv)"
    from condcheck.check import check_activation
    from condcheck.recheck import recheck_certificate
    cert = check_activation(act, fmt, method="symbolic").to_certificate()
    res = recheck_certificate(cert)
    assert res["ok"] and res["conditions"]["2"] == {"verdict": "fails", "method": "symbolic"}


def test_sigmoid_fails_in_float4_because_its_derivative_never_reaches_2_to_minus_M():
    # sigma'(x) <= 1/4 < 2^-1 = 2^-M in float4_e2m1fn, so no pass state exists.
    r = get_rounded("sigmoid", "float4_e2m1fn")
    v = condition2.check_exhaustive(r)
    assert v.holds is False and v.failing_clause.startswith("(ii) no delta_1")


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float16"])
def test_identity_fails_clause_ii_because_it_cannot_suppress_gradients(fmt):
    v = condition2.check_exhaustive(get_rounded(control("test_identity"), fmt))
    assert v.holds is False
    assert v.failing_clause.startswith("(ii)") and "eta_0" in v.failing_clause
    assert v.counterexample["largest_eta_0"] == 0          # 2^0 * 1 <= 1 is the best it can do
    # the symbolic checker proves it too: sigma~' = 1 at every value, so the pair scan finds no shrinking
    # state delta_0 (|sigma~'(delta_0)| <= 1/2) for any pass state
    sy = condition2.check_symbolic(get_rounded("test_identity", fmt))
    assert sy.holds is False and sy.failing_clause == v.failing_clause
    assert sy.counterexample["refutation"]["kind"] == "pairs"


@pytest.mark.parametrize("fmt", ["float8_e4m3", "bfloat16"])
def test_constant_fails_clause_i_because_it_carries_no_bit(fmt):
    v = condition2.check_exhaustive(get_rounded(control("test_constant"), fmt))
    assert v.holds is False and v.failing_clause.startswith("(i)")
    assert v.counterexample["count"] == 1


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float16"])
def test_heaviside_step_fails_clause_ii_because_no_derivative_is_a_power_of_two(fmt):
    r = get_rounded(control("test_heaviside"), fmt)
    v = condition2.check_exhaustive(r)
    assert v.holds is False
    assert v.failing_clause.startswith("(ii) no delta_1 with sigma~'(delta_1) a power of two")
    # the symbolic checker proves it too (sigma~' = 0 at every value, by a refutation cover)
    sy = condition2.check_symbolic(r)
    assert sy.holds is False and sy.failing_clause == v.failing_clause
    assert sy.counterexample["refutation"]["kind"] == "pass_pow2"


@pytest.mark.parametrize("fmt", ["float32", "float64"])
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_paper_activations_hold_symbolically_in_float32_and_float64(act, fmt):
    r = get_rounded(act, fmt)
    v = condition2.check_symbolic(r)
    assert v.holds is True, v.reason
    assert recheck_condition2(r, v.witness) == []


def test_verdict_refuses_a_symbolic_false_without_a_certified_counterexample():
    with pytest.raises(ValueError):
        Verdict(condition=2, activation="relu", format="float32", implementation="exact", method="symbolic",
                holds=False)


def test_witness_report_carries_exact_values_and_bit_patterns():
    r = get_rounded("relu", "float8_e4m3")
    d = condition2.check_exhaustive(r).to_dict()
    w = d["witness"]
    assert d["verdict"] == "holds"
    for key in ("delta_0", "delta_1"):
        fr = w[key]["fraction"]
        assert r.format.from_bits(int(w[key]["bits"], 2)) == __import__("fractions").Fraction(fr)
        assert float.fromhex(w[key]["hex"]) == float(__import__("fractions").Fraction(fr))


def test_statement_names_every_clause():
    for clause in ("(i)", "(ii)", "(iii)", "(iv)"):
        assert clause in condition2.STATEMENT


@pytest.mark.parametrize("fmt", ["b2_2", "b3_2", "b5_2"])
def test_sigmoid_fails_clause_iii_on_e2_formats_and_the_symbolic_checker_proves_it(fmt):
    # e_max = 1 there, so (iii) needs -k <= 1, i.e. |sigma~'(delta_1)| >= 1/2; but sigmoid' <= 1/4
    r = get_rounded("sigmoid", fmt)
    ex, sy = condition2.check_exhaustive(r), condition2.check_symbolic(r)
    assert ex.holds is sy.holds is False
    assert ex.failing_clause.startswith("(iii)") and sy.failing_clause == ex.failing_clause
    assert sy.counterexample["refutation"]["kind"] == "pass_pow2_iii"
    from condcheck.check import check_activation
    from condcheck.recheck import recheck_certificate
    cert = check_activation("sigmoid", fmt, method="symbolic").to_certificate()
    res = recheck_certificate(cert)
    assert res["ok"] and res["conditions"]["2"] == {"verdict": "fails", "method": "symbolic"}
