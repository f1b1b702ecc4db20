"""recheck of exhaustive verdicts beyond 16 bits (condcheck/recheck/wide.py): the existential statements
re-derived point by point, the dead tail enumerated only when asked, every other universal statement
named as not re-derived, and nothing accepted that was not proved.  The certificates are real chunked
runs on 17- to 19-bit custom formats (seconds, in this process)."""
import copy
import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

import condcheck.distributed as distributed
from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.distributed import SerialRunner
from condcheck.formats import get_format
from condcheck.recheck import recheck_certificate
from condcheck.rounded_activation import get_rounded

_CACHE = {}


def wide_cert(act, fmt):
    """A chunked exhaustive certificate, the chunks run in this process."""
    if (act, fmt) not in _CACHE:
        mp = pytest.MonkeyPatch()
        mp.setattr(distributed, "Engine", lambda *a, **k: SerialRunner())
        try:
            res = check_activation(act, fmt, method="exhaustive")
        finally:
            mp.undo()
        assert res.enumeration["points"] == get_format(fmt).count_finite()
        _CACHE[act, fmt] = json.loads(json.dumps(res.to_certificate()))
    return copy.deepcopy(_CACHE[act, fmt])


def _value(q, fmt):
    q = Fraction(q)
    return {"hex": float(q).hex(), "fraction": str(q), "bits": get_format(fmt).bits_text(q)}


def not_rederived(res) -> list:
    return [p["statement"] for p in res["not_rederived"]]


def test_a_wide_certificate_that_holds_is_not_accepted_without_enumerating_its_dead_tail():
    c = wide_cert("tanh", "b9_8")
    assert [c["conditions"][k]["holds"] for k in "123"] == [True] * 3
    res = recheck_certificate(c)
    assert not res["ok"] and not_rederived(res) == ["conditions.1.witness.z_dead"]
    assert res["problem"]["statement"] == "conditions.1.witness.z_dead" and res["checks"] > 20


def test_a_wide_certificate_that_holds_is_accepted_when_its_dead_tail_is_enumerated():
    c = wide_cert("tanh", "b9_8")
    res = recheck_certificate(c, enumerate_wide=True, runner=SerialRunner())
    assert res["ok"] and res["not_rederived"] == []
    assert res["checks"] >= c["conditions"]["1"]["witness"]["dead_count"]       # every tail value counted


def test_a_dead_tail_claimed_one_value_too_far_is_rejected_by_the_enumeration():
    c = wide_cert("tanh", "b9_8")
    w = c["conditions"]["1"]["witness"]
    fmt = get_format("b9_8")
    zd = Fraction(w["z_dead"]["fraction"])
    w["z_dead"] = _value(fmt.next_up(zd), "b9_8")            # the first value that is not dead
    w["dead_count"] += 1
    res = recheck_certificate(c, enumerate_wide=True, runner=SerialRunner())
    assert not res["ok"] and res["problem"]["statement"] == "conditions.1.witness.z_dead"
    assert "is not dead" in res["problem"]["problem"] and res["not_rederived"] == []


def test_a_false_witness_value_is_rejected_before_any_statement_is_named_not_re_derived():
    c = wide_cert("tanh", "b9_8")
    w = c["conditions"]["2"]["witness"]
    w["sigma(delta_1)"] = w["sigma(delta_0)"]
    res = recheck_certificate(c)
    assert res["problem"]["statement"] == "conditions.2.witness.sigma(delta_1)" and res["not_rederived"] == []


def test_a_wide_fails_re_derives_its_points_and_names_its_universal_statements():
    # sigmoid on b14_2: Condition 1 fails at (a) (a point refutes it), Condition 2 at (iii) (no pair: universal)
    c = wide_cert("sigmoid", "b14_2")
    assert c["conditions"]["1"]["failing_clause"].startswith("(a)")
    assert c["conditions"]["2"]["failing_clause"].startswith("(iii)")
    res = recheck_certificate(c, enumerate_wide=True, runner=SerialRunner())
    assert not res["ok"] and not_rederived(res) == ["conditions.2.failing_clause"]


def test_a_wide_pair_for_the_clauses_before_a_failing_one_is_re_derived():
    c = wide_cert("sigmoid", "b14_2")
    pair = c["conditions"]["2"]["counterexample"]["pair_for_(i)-(ii)"]
    pair["delta_1"] = pair["delta_0"]
    res = recheck_certificate(c)
    assert res["problem"]["statement"].startswith("conditions.2.counterexample.pair_for_(i)-(ii)")


def test_a_clause_a_counterexample_above_minus_omega_half_is_rejected():
    c = wide_cert("sigmoid", "b14_2")
    cx = c["conditions"]["1"]["counterexample"]
    fmt, r = get_format("b14_2"), get_rounded("sigmoid", "b14_2")
    z = fmt.next_up(-fmt.max / 2)
    cx.update({"z": _value(z, "b14_2"), "sigma(z)": _value(r.value(z), "b14_2"),
               "dsigma(z)": _value(r.derivative(z), "b14_2")})
    res = recheck_certificate(c)
    assert res["problem"]["statement"] == "conditions.1.counterexample.z" and res["not_rederived"] == []


def test_a_float32_witness_labelled_exhaustive_is_re_derived_point_by_point_and_its_tail_named():
    c = json.loads(json.dumps(check_activation("gelu", "float32").to_certificate()))
    assert [c["conditions"][k]["holds"] for k in "123"] == [True] * 3
    for k in "123":
        c["conditions"][k]["method"] = "exhaustive"
    del c["conditions"]["1"]["witness"]["tail_cover"]
    res = recheck_certificate(c)
    assert not_rederived(res) == ["conditions.1.witness.z_dead"] and res["checks"] > 20
    c["conditions"]["3"]["witness"]["sigma(s)"] = c["conditions"]["3"]["witness"]["sigma(0)"]
    assert recheck_certificate(c)["problem"]["statement"] == "conditions.3.witness.sigma(s)"


def _write(tmp_path, c):
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(c))
    return str(path)


def test_cli_recheck_of_a_wide_certificate_exits_1_listing_what_it_did_not_re_derive(tmp_path):
    r = CliRunner().invoke(main, ["recheck", _write(tmp_path, wide_cert("tanh", "b9_8"))])
    assert r.exit_code == 1 and "NOT RE-PROVED" in r.output
    assert "conditions.1.witness.z_dead: not re-derived" in r.output and "--enumerate" in r.output


def test_cli_recheck_enumerate_re_derives_the_dead_tail_and_exits_0(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "Engine", lambda *a, **k: SerialRunner())
    r = CliRunner().invoke(main, ["recheck", _write(tmp_path, wide_cert("tanh", "b9_8")), "--enumerate"])
    assert r.exit_code == 0 and "every statement re-proved" in r.output
