"""condcheck recheck: every statement of a certificate re-derived without the search code; false ones named.

The false certificates of issue 27 are here one by one; tests/test_certificate_mutations.py mutates every
field of certificates across the verdict matrix and decides independently which mutants are false.
"""
import copy
import json
import re
from fractions import Fraction

import pytest
from click.testing import CliRunner

from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.recheck import recheck_certificate


def _value(q, fmt):
    """An exact value record, written here from the format (not by the checkers' code)."""
    q = Fraction(q)
    f = get_format(fmt)
    return {"hex": float(q).hex(), "fraction": str(q), "bits": f.bits_text(q)}


_CACHE = {}


def cert(act, fmt, method="auto"):
    key = (act, fmt, method)
    if key not in _CACHE:
        _CACHE[key] = json.loads(json.dumps(check_activation(act, fmt, method=method).to_certificate()))
    return copy.deepcopy(_CACHE[key])


def rejected_at(c) -> str:
    res = recheck_certificate(c)
    assert not res["ok"], "a false certificate was accepted"
    return res["problem"]["statement"]


# ---- genuine certificates ---------------------------------------------------------------------------
@pytest.mark.parametrize("act", ["relu", "elu", "gelu", "swish", "sigmoid", "tanh", "softplus", "leaky_relu", "sin"])
@pytest.mark.parametrize("fmt", ["float4_e2m1fn", "float6_e2m3fn", "float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("method", ["auto", "symbolic"])
def test_genuine_certificates_recheck(act, fmt, method):
    res = recheck_certificate(cert(act, fmt, method))
    assert res["ok"], res["problem"]
    assert res["problem"] is None and res["checks"] > 20


@pytest.mark.parametrize("act", ["gelu", "relu", "leaky_relu"])
def test_float32_certificates_recheck_with_their_tail_covers_and_counterexample_points(act):
    c = cert(act, "float32")
    assert all(c["conditions"][k]["method"] == "symbolic" for k in "123")
    assert recheck_certificate(c)["ok"]


def test_a_float16_certificate_is_rechecked_by_enumerating_every_value():
    res = recheck_certificate(cert("relu", "float16"))
    assert res["ok"] and res["checks"] > 30000           # every value up to z_d = 0 checked dead


# ---- the false certificates of issue 27 ---------------------------------------------------------------
def test_the_overall_holds_set_to_true_when_all_three_conditions_fail_is_rejected():
    c = cert("sigmoid", "float4_e2m1fn")
    c["holds"] = True
    assert rejected_at(c) == "holds"


def test_the_overall_holds_set_to_false_when_all_three_conditions_hold_is_rejected():
    c = cert("gelu", "float8_e4m3")
    c["holds"] = False
    assert rejected_at(c) == "holds"


def test_an_exhaustive_holds_claimed_as_fails_is_re_enumerated_and_rejected():
    c = cert("gelu", "float8_e4m3")
    v = c["conditions"]["1"]
    v.update(holds=False, verdict="fails", witness=None,
             failing_clause="(e) pass state: some z > z_d with sigma~'(z) = +-2^k", counterexample={})
    c["holds"] = False
    assert rejected_at(c) == "conditions.1.holds"


def test_a_verdict_text_that_contradicts_holds_is_rejected():
    c = cert("gelu", "float8_e4m3")
    c["conditions"]["3"]["verdict"] = "fails"
    assert rejected_at(c) == "conditions.3.verdict"


@pytest.mark.parametrize("cond, field, value", [
    ("2", "sigma(delta_0)", Fraction(-5, 32)),         # the example: -11/64 really
    ("1", "sigma(live)", Fraction(1, 4)),
    ("2", "dsigma(delta_1)", Fraction(1, 4)),
    ("3", "dsigma(0)", Fraction(1, 4)),
    ("3", "s", Fraction(2)),
])
def test_a_changed_value_inside_a_witness_is_rejected(cond, field, value):
    c = cert("gelu", "float8_e4m3")
    w = c["conditions"][cond]["witness"]
    assert Fraction(w[field]["fraction"]) != value
    w[field] = _value(value, "float8_e4m3")
    assert rejected_at(c) == f"conditions.{cond}.witness.{field}"


def test_a_symbolic_fails_relabelled_exhaustive_is_re_enumerated_not_skipped():
    # gelu on b3_2 fails Condition 2 at (iv), proved symbolically by a pair cover; relabelled exhaustive, the
    # counterexample no longer has the exhaustive fields, and recheck says so
    c = cert("gelu", "b3_2", "symbolic")
    assert c["conditions"]["2"]["holds"] is False
    c["conditions"]["2"]["method"] = "exhaustive"
    assert rejected_at(c).startswith("conditions.2.counterexample")


def test_an_exhaustive_label_beyond_32_bits_is_rejected():
    c = cert("leaky_relu", "float64")          # 17 to 32 bits: tests/test_recheck_wide.py
    c["conditions"]["1"]["method"] = "exhaustive"
    assert rejected_at(c) == "conditions.1.method"


def test_an_exhaustive_fails_names_its_first_failing_clause():
    # sigmoid on float4_e2m1fn: sigma~' = 0 everywhere, so Condition 2 fails first at (ii); (iv) is not first
    c = cert("sigmoid", "float4_e2m1fn")
    v = c["conditions"]["2"]
    assert v["failing_clause"].startswith("(ii)")
    from condcheck.recheck.schema import FAILING_CLAUSES
    v["failing_clause"] = FAILING_CLAUSES["2"]["(iv)"]
    v["counterexample"] = {"pair_for_(i)-(iii)": v["counterexample"]["pair_for_(i)"]}
    assert rejected_at(c) == "conditions.2.failing_clause"


def test_a_counterexample_pair_that_does_not_satisfy_the_clauses_before_is_rejected():
    c = cert("sigmoid", "float4_e2m1fn")
    pair = c["conditions"]["2"]["counterexample"]["pair_for_(i)"]
    for k in ("delta_1", "sigma(delta_1)", "dsigma(delta_1)"):
        pair[k] = pair[k.replace("1", "0")]                # delta_1 = delta_0: (i) fails
    assert rejected_at(c) == "conditions.2.counterexample.pair_for_(i)"


def test_unknown_fields_are_rejected_at_every_level():
    for where in ([], ["conditions", "1"], ["conditions", "2", "witness"]):
        c = cert("gelu", "float8_e4m3")
        d = c
        for k in where:
            d = d[k]
        d["evidence"] = "4 of 5 dentists"
        assert rejected_at(c) == ".".join(where + ["evidence"])


def test_a_missing_statement_is_rejected():
    c = cert("gelu", "float8_e4m3")
    del c["M_sigma"]
    assert rejected_at(c) == "M_sigma"


def test_seconds_is_metadata_and_is_not_read():
    c = cert("gelu", "float8_e4m3")
    c["seconds"] = 1e9
    assert recheck_certificate(c)["ok"]
    del c["seconds"]
    assert recheck_certificate(c)["ok"]


@pytest.mark.parametrize("part, text", [("hex", "0x1.0p+3"), ("fraction", "8"), ("bits", "01000000"),
                                        ("fraction", "2/4"), ("hex", "8")])
def test_the_hex_fraction_and_bits_of_a_value_must_agree(part, text):
    c = cert("relu", "float8_e4m3")
    c["conditions"]["3"]["witness"]["zeta"][part] = text
    assert rejected_at(c).startswith("conditions.3.witness.zeta")


@pytest.mark.parametrize("field, value", [("theorem_branch", "main (E >= 6)"),
                                          ("M_sigma", "0x1.0p+4"), ("H_sigma", None),
                                          ("constants_source", "paper (arXiv 2605.01702) "), ("semantics", "ieee")])
def test_the_paper_statements_are_derived_again(field, value):
    c = cert("gelu", "float8_e4m3")
    c[field] = value
    assert rejected_at(c) == field


def test_a_wrong_depth_bound_is_rejected():
    c = cert("gelu", "float8_e4m3")
    c["depth_bounds"]["theorem7"]["arxiv_v2"] += 1
    assert rejected_at(c) == "depth_bounds.theorem7.arxiv_v2"


def test_a_name_the_registry_spells_otherwise_is_rejected():
    c = cert("swish", "float8_e4m3")
    c["activation"] = "silu"                                # an alias: the certificate names the activation
    assert rejected_at(c) == "activation"


def test_an_undecided_condition_states_nothing_and_the_overall_verdict_follows():
    c = cert("gelu", "float8_e4m3")
    c["conditions"]["1"].update(holds=None, verdict="undecided", method="symbolic", witness=None)
    assert rejected_at(c) == "holds"                        # the conjunction is now undecided
    c["holds"] = None
    assert recheck_certificate(c)["ok"]


# ---- symbolic proofs ---------------------------------------------------------------------------------
def test_symbolic_refutations_of_all_three_conditions_recheck():
    # sigmoid on float4_e2m1fn: sigma~' = 0 everywhere (sigmoid' <= 1/4 = omega/2 ties to 0), so Condition 1
    # (e), Condition 2 (ii) and Condition 3 (both routes) fail; the symbolic checkers prove it by covers
    c = cert("sigmoid", "float4_e2m1fn", "symbolic")
    assert c["holds"] is False
    for k in "123":
        assert c["conditions"][k]["method"] == "symbolic" and c["conditions"][k]["counterexample"]["refutation"]
    assert recheck_certificate(c)["ok"]


def test_a_tampered_refutation_cover_is_rejected():
    c = cert("sigmoid", "float4_e2m1fn", "symbolic")
    ref = c["conditions"]["1"]["counterexample"]["refutation"]
    assert ref["cover"] == "m[-0x1.8000000000000p+2, 0x0.0p+0] m[0x1.0000000000000p-1, 0x1.8000000000000p+2]"
    om = "0x1.8000000000000p+2"
    for cover, why in ((f"m[-{om}, -0x1.0000000000000p-1] m[0x1.0000000000000p-1, {om}]", "does not continue"),
                       (f"m[-{om}, 0x0.0p+0]", "ends before"),
                       # an enclosure over a range holding 0 cannot exclude the tie 1/4 -> 1/2 or 0
                       (f"e[-{om}, {om}]", "does not exclude"),
                       # nor is sigmoid' monotone across 0
                       (f"m[-{om}, {om}]", "sign over"),
                       (f"p[-{om}, {om}]", "single-value")):
        bad = copy.deepcopy(c)
        bad["conditions"]["1"]["counterexample"]["refutation"]["cover"] = cover
        res = recheck_certificate(bad)
        assert not res["ok"] and why in res["problem"]["problem"], (cover, res["problem"])


def test_a_refutation_claimed_for_another_activation_is_re_proved_for_that_one():
    c = cert("sigmoid", "float4_e2m1fn", "symbolic")
    c["activation"] = "tanh"                                # tanh'(0) = 1: the refutation is wrong there
    assert not recheck_certificate(c)["ok"]


def test_a_condition2_pair_refutation_rechecks():
    # GELU on b3_2 fails clause (iv) of Condition 2: no pair of values, proved by a cover of the format
    c = cert("gelu", "b3_2", "symbolic")
    assert c["conditions"]["2"]["counterexample"]["refutation"]["kind"] == "pairs"
    assert recheck_certificate(c)["ok"]


def test_a_tampered_pair_refutation_is_rejected():
    c = cert("gelu", "b3_2", "symbolic")
    items = re.findall(r"[epm]\[[^\]]*\]", c["conditions"]["2"]["counterexample"]["refutation"]["cover"])
    om = "0x1.e000000000000p+1"
    for cover, why in ((" ".join(items[:3] + items[4:]), "does not continue"), (" ".join(items[:-2]), "ends before"),
                       (f"e[-{om}, {om}]", "does not exclude k")):
        bad = copy.deepcopy(c)
        bad["conditions"]["2"]["counterexample"]["refutation"]["cover"] = cover
        res = recheck_certificate(bad)
        assert not res["ok"] and why in res["problem"]["problem"], (cover, res["problem"])
    bad = copy.deepcopy(c)
    bad["conditions"]["2"]["counterexample"]["refutation"]["clause"] = "(iii)"
    assert rejected_at(bad) == "conditions.2.counterexample.refutation.clause"
    other = copy.deepcopy(c)
    other["activation"] = "elu"                             # ELU holds Condition 2 on b3_2
    assert not recheck_certificate(other)["ok"]


def test_a_pair_refutation_of_clause_ii_rechecks_with_its_pair_for_clause_i():
    # the identity: sigma~' = 1 everywhere, so no shrinking state exists for any pass state (clause (ii))
    from _condition_controls import control
    c = json.loads(json.dumps(check_activation(control("test_identity"), "float8_e4m3", method="symbolic")
                              .to_certificate()))
    v = c["conditions"]["2"]
    assert v["failing_clause"].startswith("(ii)") and v["counterexample"]["refutation"]["kind"] == "pairs"
    assert recheck_certificate(c)["ok"]
    del v["counterexample"]["pair_for_(i)"]
    assert rejected_at(c) == "conditions.2.counterexample.pair_for_(i)"


def test_a_tail_cover_that_claims_a_live_value_dead_is_rejected():
    c = cert("gelu", "float32")
    w = c["conditions"]["1"]["witness"]
    last = w["tail_cover"].split(" ")[-2:]
    w["z_dead"] = _value(Fraction(0), "float32")            # the tail claimed up to 0
    w["tail_cover"] = w["tail_cover"][: -len(" ".join(last))] + f"{last[0]} 0x0.0p+0]"
    assert not recheck_certificate(c)["ok"]


# ---- the command ------------------------------------------------------------------------------------
def test_cli_recheck_exits_0_when_every_statement_is_re_proved(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(cert("tanh", "float8_e4m3")))
    out = CliRunner().invoke(main, ["recheck", str(good)])
    assert out.exit_code == 0 and "every statement re-proved" in out.output


def test_cli_recheck_exits_1_naming_the_first_false_statement(tmp_path):
    c = cert("gelu", "float8_e4m3")
    c["conditions"]["2"]["witness"]["sigma(delta_0)"] = _value(Fraction(-5, 32), "float8_e4m3")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(c))
    out = CliRunner().invoke(main, ["recheck", str(bad)])
    assert out.exit_code == 1
    assert out.output.startswith("RE-CHECK FAILED at conditions.2.witness.sigma(delta_0): ")
    assert len(out.output.strip().splitlines()) == 1


@pytest.mark.parametrize("content", ["", "5", "[]", "{}", '{"schema": "condcheck.check/1"}', "{nan"])
def test_cli_recheck_exits_2_for_a_file_that_is_not_a_certificate(tmp_path, content):
    f = tmp_path / "c.json"
    f.write_text(content)
    out = CliRunner().invoke(main, ["recheck", str(f)])
    assert out.exit_code == 2 and out.output.startswith("error: ") and len(out.output.strip().splitlines()) == 1


def test_cli_recheck_exits_2_for_a_missing_file(tmp_path):
    out = CliRunner().invoke(main, ["recheck", str(tmp_path / "missing.json")])
    assert out.exit_code == 2 and "missing.json" in out.output


def test_cli_check_method_symbolic_on_a_small_format():
    r = CliRunner().invoke(main, ["check", "sigmoid", "float4_e2m1fn", "--method", "symbolic"])
    assert r.exit_code == 1 and "(exact, symbolic): fails; failing clause (e)" in r.output
    r = CliRunner().invoke(main, ["check", "gelu", "float64", "--method", "exhaustive"])
    assert r.exit_code == 2 and "at most 32 bits" in r.output


def test_recheck_as_a_function_raises_condcheck_error_for_a_non_certificate():
    with pytest.raises(CondcheckError, match="not a condition certificate"):
        recheck_certificate({"schema": "condcheck.network/1"})
