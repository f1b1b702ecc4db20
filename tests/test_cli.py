"""The CLI as a whole: commands that are not covered by the tests of their own modules."""
import json

from click.testing import CliRunner

from condcheck.activations import PAPER_ACTIVATIONS, list_activations
from condcheck.cli import main


def test_activations_lists_every_registered_activation_and_marks_the_paper_six():
    out = CliRunner().invoke(main, ["activations"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert [line[2:].split()[0] for line in lines] == list_activations()
    assert {line[2:].split()[0] for line in lines if line.startswith("*")} == set(PAPER_ACTIVATIONS)


def test_activations_json_gives_each_expression():
    out = CliRunner().invoke(main, ["activations", "--json"])
    rows = json.loads(out.output)
    assert [r["name"] for r in rows] == list_activations()
    assert next(r for r in rows if r["name"] == "swish")["aliases"] == ["silu"]
    assert all(r["expression"] for r in rows)


def test_report_json_names_the_files_written_and_the_verdict(tmp_path):
    out = CliRunner().invoke(main, ["report", "gelu", "float8_e4m3", "--no-figures", "--out", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    assert summary["written"] == [str(tmp_path / "gelu-float8_e4m3.tex")]
    assert (tmp_path / "gelu-float8_e4m3.tex").exists()
    from condcheck.check import check_activation
    assert summary["holds"] == check_activation("gelu", "float8_e4m3").holds


def test_a_plug_in_activation_gets_a_condition_report(tmp_path, monkeypatch):
    from condcheck import activations as A
    (tmp_path / "reportplug_acts.py").write_text("from condcheck.activations import make_activation\n"
                                                 "ACT = make_activation('softsign_report', 'x/(1+Abs(x))')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with A.scoped_registry():                                   # the registration stays inside this test
        out = CliRunner().invoke(main, ["--plugin", "reportplug_acts:ACT", "report", "softsign_report",
                                        "float8_e4m3", "--no-figures", "--out", str(tmp_path / "out"), "--json"])
    assert out.exit_code == 0, out.output
    tex = (tmp_path / "out" / "softsign_report-float8_e4m3.tex").read_text()
    assert "softsign" in tex and "Condition 1" in tex
