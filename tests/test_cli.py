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
