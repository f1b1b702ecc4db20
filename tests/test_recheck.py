"""condcheck recheck: certificates re-checked without the search code, tampering detected."""
import copy
import json

import pytest
from click.testing import CliRunner

from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.recheck import recheck_certificate
from conditions.verdict import exact_value


@pytest.mark.parametrize("act", ["relu", "elu", "gelu", "swish", "sigmoid", "tanh", "softplus"])
@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float6_e2m3fn"])
def test_genuine_certificates_recheck(act, fmt):
    cert = check_activation(act, fmt).to_certificate()
    res = recheck_certificate(cert)
    assert res["ok"]
    for k, v in res["conditions"].items():
        assert v["rechecked"] == (cert["conditions"][k]["holds"] is True) and not v["problems"]


def test_float32_certificates_recheck_all_three_conditions_with_condition1s_tail_cover():
    res = recheck_certificate(check_activation("gelu", "float32").to_certificate())
    assert res["ok"] and all(res["conditions"][k]["rechecked"] for k in "123")


def _tampered(field, value, condition="1", act="gelu"):
    cert = check_activation(act, "float8_e4m3").to_certificate()
    cert = copy.deepcopy(cert)
    cert["conditions"][condition]["witness"][field] = exact_value(value, get_format("float8_e4m3"))
    return cert


def test_a_dead_tail_claimed_too_high_is_caught():
    res = recheck_certificate(_tampered("z_dead", 1))
    assert not res["ok"] and any(p.startswith("(a)") for p in res["conditions"]["1"]["problems"])


def test_a_wrong_pass_state_in_condition2_is_caught():
    res = recheck_certificate(_tampered("delta_1", 3, condition="2"))
    assert not res["ok"] and res["conditions"]["2"]["problems"]


def test_a_hex_that_disagrees_with_its_fraction_is_refused():
    cert = check_activation("relu", "float8_e4m3").to_certificate()
    cert["conditions"]["3"]["witness"]["zeta"]["hex"] = "0x1.0p+3"
    with pytest.raises(CondcheckError, match="hex"):
        recheck_certificate(cert)


def test_cli_recheck_exit_codes(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(check_activation("tanh", "float8_e4m3").to_certificate()))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_tampered("z_dead", 1)))
    r = CliRunner()
    assert r.invoke(main, ["recheck", str(good)]).exit_code == 0
    out = r.invoke(main, ["recheck", str(bad)])
    assert out.exit_code == 1 and "RE-CHECK FAILED" in out.output
    assert r.invoke(main, ["recheck", str(tmp_path / "missing.json")]).exit_code == 2


def test_symbolic_refutations_of_all_three_conditions_recheck():
    # sigmoid on float4_e2m1fn: sigma~' = 0 everywhere (sigmoid' <= 1/4 = omega/2 ties to 0), so Condition 1
    # (e), Condition 2 (ii) and Condition 3 (both routes) fail; the symbolic checkers prove it by covers
    cert = check_activation("sigmoid", "float4_e2m1fn", method="symbolic").to_certificate()
    assert cert["holds"] is False
    for k in "123":
        assert cert["conditions"][k]["method"] == "symbolic" and cert["conditions"][k]["holds"] is False
    res = recheck_certificate(json.loads(json.dumps(cert)))
    assert res["ok"]
    assert all(res["conditions"][k]["rechecked"] and not res["conditions"][k]["problems"] for k in "123")


def test_a_symbolic_clause_a_counterexample_rechecks():
    cert = check_activation("leaky_relu", "float32").to_certificate()
    assert cert["conditions"]["1"]["holds"] is False
    res = recheck_certificate(cert)
    assert res["ok"] and res["conditions"]["1"]["rechecked"]


def test_a_tampered_refutation_is_rejected():
    cert = check_activation("sigmoid", "float4_e2m1fn", method="symbolic").to_certificate()
    # 1) a cover with a gap, and a cover that stops before Omega
    ref = cert["conditions"]["1"]["counterexample"]["refutation"]
    assert ref["cover"] == "m[-0x1.8000000000000p+2, 0x0.0p+0] m[0x1.0000000000000p-1, 0x1.8000000000000p+2]"
    for cover, why in (("m[-0x1.8000000000000p+2, -0x1.0000000000000p-1] m[0x1.0000000000000p-1, 0x1.8000000000000p+2]",
                        "does not continue the cover"),
                       ("m[-0x1.8000000000000p+2, 0x0.0p+0]", "ends before Omega")):
        bad = copy.deepcopy(cert)
        bad["conditions"]["1"]["counterexample"]["refutation"]["cover"] = cover
        res = recheck_certificate(bad)
        assert not res["ok"] and why in res["conditions"]["1"]["problems"][0]
    # 2) the same cover claimed for tanh, whose derivative at 0 is 1: the refutation is wrong there
    other = copy.deepcopy(cert)
    other["activation"] = "tanh"
    res = recheck_certificate(other)
    assert not res["ok"] and all(res["conditions"][k]["problems"] for k in "123")
    # 3) an interval enclosure over a range containing 0 cannot exclude the tie: 1/4 would round to 1/2;
    #    nor is sigmoid' monotone across 0
    for cover, why in (("e[-0x1.8000000000000p+2, 0x1.8000000000000p+2]", "does not exclude"),
                       ("e[-0x1.0000000000000p-1, 0x1.0000000000000p-1]", "does not continue"),
                       ("m[-0x1.8000000000000p+2, 0x1.8000000000000p+2]", "sign over")):
        merged = copy.deepcopy(cert)
        merged["conditions"]["1"]["counterexample"]["refutation"]["cover"] = cover
        res = recheck_certificate(merged)
        assert not res["ok"] and why in res["conditions"]["1"]["problems"][0], res["conditions"]["1"]


def test_cli_check_method_symbolic_on_a_small_format():
    r = CliRunner().invoke(main, ["check", "sigmoid", "float4_e2m1fn", "--method", "symbolic"])
    assert r.exit_code == 1 and "(exact, symbolic): fails; failing clause (e)" in r.output
    r = CliRunner().invoke(main, ["check", "gelu", "float32", "--method", "exhaustive"])
    assert r.exit_code == 2 and "at most 16 bits" in r.output


def _pair_cert():
    cert = check_activation("gelu", "b3_2", method="symbolic").to_certificate()
    v = cert["conditions"]["2"]
    assert v["holds"] is False and v["counterexample"]["refutation"]["kind"] == "pairs"
    return json.loads(json.dumps(cert))


def test_a_condition2_pair_refutation_rechecks():
    # GELU on b3_2 fails clause (iv) of Condition 2: no pair of values, proved by a cover of the format
    res = recheck_certificate(_pair_cert())
    assert res["ok"] and res["conditions"]["2"] == {"verdict": "fails", "rechecked": True, "problems": []}


def test_a_tampered_pair_refutation_is_rejected():
    cert = _pair_cert()
    ref = cert["conditions"]["2"]["counterexample"]["refutation"]
    items = ref["cover"].split(" ")
    cases = []
    # 1) a gap, and a cover that stops before Omega
    cases.append(("cover", " ".join(items[:3] + items[4:]), "does not continue the cover"))
    cases.append(("cover", " ".join(items[:-2]), "ends before Omega"))
    # 2) one interval over the whole format: its enclosure admits a compatible pair
    om = "0x1.e000000000000p+1"
    cases.append(("cover", f"e[-{om}, {om}]", "does not exclude k"))
    # 3) a single-value tag on an interval of several values
    cases.append(("cover", f"p[-{om}, {om}]", "does not continue the cover"))
    for field, value, why in cases:
        bad = copy.deepcopy(cert)
        bad["conditions"]["2"]["counterexample"]["refutation"][field] = value
        res = recheck_certificate(bad)
        assert not res["ok"] and why in res["conditions"]["2"]["problems"][0], (field, value, res["conditions"]["2"])
    # 4) the refutation claimed for another clause (stage), and a pair for (i)-(iii) that fails (i)
    bad = copy.deepcopy(cert)
    bad["conditions"]["2"]["counterexample"]["refutation"]["stage"] = 3
    assert "pair refutation is about stage" in recheck_certificate(bad)["conditions"]["2"]["problems"][0]
    bad = copy.deepcopy(cert)
    pair = bad["conditions"]["2"]["counterexample"]["pair_for_(i)-(iii)"]
    pair["delta_1"] = pair["delta_0"]                             # sigma~(delta_0) = sigma~(delta_1)
    assert "satisfies only" in recheck_certificate(bad)["conditions"]["2"]["problems"][0]
    # 5) the same certificate claimed for another activation: the cover is re-proved for that one
    other = copy.deepcopy(cert)
    other["activation"] = "elu"                                   # ELU holds Condition 2 on b3_2
    assert recheck_certificate(other)["conditions"]["2"]["problems"]


def test_a_pair_refutation_of_clause_ii_rechecks_with_its_pass_state():
    # the identity: sigma~' = 1 everywhere, so no shrinking state exists for any pass state (clause (ii))
    from _condition_controls import control
    cert = json.loads(json.dumps(check_activation(control("test_identity"), "float8_e4m3", method="symbolic")
                                 .to_certificate()))
    v = cert["conditions"]["2"]
    assert v["holds"] is False and v["failing_clause"].startswith("(ii) no delta_0")
    assert v["counterexample"]["refutation"]["stage"] == 2
    assert recheck_certificate(cert)["conditions"]["2"] == {"verdict": "fails", "rechecked": True, "problems": []}
    bad = copy.deepcopy(cert)
    del bad["conditions"]["2"]["counterexample"]["pass_state"]
    assert "pass state" in recheck_certificate(bad)["conditions"]["2"]["problems"][0]
