"""check_activation and `condcheck check`: verdict composition, certificate, exit codes."""
import json

from click.testing import CliRunner

from condcheck.check import check_activation, depth_bounds, theorem_branch
from condcheck.cli import main
from condcheck.formats import get_format


def test_overall_verdict_holds_when_all_three_conditions_hold_exhaustively():
    res = check_activation("gelu", "float8_e4m3")
    assert [res.conditions[k]["holds"] for k in "123"] == [True, True, True]
    assert res.holds is True


def test_wide_formats_get_condition1_from_the_certified_range_check():
    res = check_activation("relu", "float32")
    assert res.conditions["1"]["holds"] is True and res.conditions["1"]["method"] == "symbolic"
    assert "clause (a) proved by interval arithmetic" in res.conditions["1"]["evidence"]
    assert res.holds is True


def test_wide_formats_stay_undecided_where_the_range_check_does_not_apply():
    res = check_activation("gelu", "float32", "float32-upcast")
    assert res.conditions["1"]["holds"] is None and "'exact'" in res.conditions["1"]["reason"]
    assert res.holds is None


def test_a_failing_condition_makes_the_overall_verdict_fail():
    res = check_activation("sigmoid", "float4_e2m1fn")
    assert res.conditions["2"]["holds"] is False and res.holds is False


def test_small_formats_are_checked_exhaustively_and_wide_ones_symbolically():
    assert check_activation("relu", "float16").conditions["2"]["method"] == "exhaustive"
    assert check_activation("relu", "float32").conditions["2"]["method"] == "symbolic"


def test_theorem_branch_follows_the_exponent_bits():
    assert theorem_branch(get_format("b3_6")) == "main (E >= 6)"
    assert theorem_branch(get_format("float16")).startswith("low-exponent")
    assert theorem_branch(get_format("float4_e2m1fn")).startswith("not covered")


def test_theorem7_depth_bound_is_two_to_the_e_plus_one_plus_2m_plus_9():
    # float32: 2^9 + 46 + 9 = 567 (OpenReview) and 569 (arXiv), the 569 of the reproduction notes
    assert depth_bounds(get_format("float32"))["theorem7"] == {"openreview": 567, "arxiv_v2": 569}


def test_cli_check_prints_the_certificate_as_json():
    r = CliRunner().invoke(main, ["check", "gelu", "float8_e4m3", "--json"])
    cert = json.loads(r.output)
    assert cert["schema"] == "condcheck.check/2" and cert["holds"] is True and r.exit_code == 0
    w = cert["conditions"]["2"]["witness"]["delta_0"]
    assert set(w) == {"hex", "fraction", "bits"} and len(w["bits"]) == 8


def test_cli_check_lists_close_names_for_an_unknown_format():
    r = CliRunner().invoke(main, ["check", "gelu", "float8_e4m4"])
    assert r.exit_code == 2 and "did you mean 'float8_e4m3'" in r.output and "Traceback" not in r.output


def test_cli_check_refuses_an_unknown_implementation():
    r = CliRunner().invoke(main, ["check", "gelu", "float8_e4m3", "-i", "exakt"])
    assert r.exit_code == 2 and "implementation" in r.output


def test_the_verdict_matrix_is_generated_from_check_activation():
    from condcheck.matrix import failing_clauses, markdown, verdict_matrix
    res, _ = verdict_matrix(activations=("relu", "sin"), formats=("float8_e4m3",))
    table = markdown(res, activations=("relu", "sin"), formats=("float8_e4m3",))
    assert "| relu | hhh holds |" in table and "| sin | Fhh fails |" in table
    assert failing_clauses(res) == [f"sin on float8_e4m3: Condition 1 fails, {res[('sin', 'float8_e4m3')].conditions['1']['failing_clause']}"]
