"""click's own usage errors are one line on stderr, exit status 2, with no usage block."""
import pytest
from click.testing import CliRunner

from condcheck.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args), prog_name="condcheck")


@pytest.mark.parametrize("args, names", [
    (("check", "gelu", "float8_e4m3", "--bogus"), "--bogus"),
    (("chek",), "chek"),
    (("check",), "ACTIVATION"),
    (("check", "--method", "foo", "gelu", "float8_e4m3"), "--method"),
])
def test_a_usage_error_is_one_line_naming_the_argument(args, names):
    r = run(*args)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0]
    assert "Usage:" not in r.output and "Traceback" not in r.output


def test_a_usage_error_points_to_the_commands_help():
    r = run("check", "gelu", "float8_e4m3", "--bogus")
    assert r.stderr.strip().endswith("(see condcheck check --help)")


def test_help_still_exits_zero_with_its_usage():
    r = run("--help")
    assert r.exit_code == 0 and r.output.startswith("Usage: ")
