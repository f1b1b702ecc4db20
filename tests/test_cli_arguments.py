"""Bad arguments get one line naming the argument, what was wrong and what is allowed -- before any work.

The crashes of issue 27 one by one, then the other arguments and files of every command.
"""
import json
import time

import pytest
from click.testing import CliRunner

from condcheck.cli import main, one_line


def run(args):
    r = CliRunner().invoke(main, args)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def refused(args, *words):
    """Exit status 2 with one line "error: ..." (or click's own "Error: ..." after its usage lines)."""
    r = run(args)
    assert r.exit_code == 2, (r.exit_code, r.output)
    lines = [ln for ln in r.output.strip().splitlines() if ln.startswith(("error: ", "Error: "))]
    assert len(lines) == 1, r.output
    if lines[0].startswith("error: "):
        assert len(r.output.strip().splitlines()) == 1, r.output
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "np." not in lines[0] and "Traceback" not in r.output
    return lines[0]


@pytest.fixture
def files(tmp_path):
    def write(name, obj):
        p = tmp_path / name
        p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
        return str(p)
    return write


# ---- the crashes of issue 27 --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["b60_15", "b15_15"])
def test_check_refuses_formats_beyond_float64s_exponent_range(fmt):
    refused(["check", "gelu", fmt], f"'{fmt}'", "E = 15", "at most 11")


def test_a_negative_random_seed_is_refused(tmp_path):
    refused(["construct", "theorem5", "relu", "float8_e4m3", "--targets", "random:-1", "--out",
             str(tmp_path / "n.json")], "--targets", "random:-1", "integer seed >= 0")


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_negative_or_non_finite_upstream_max_is_refused(tmp_path, value):
    refused(["construct", "theorem5", "relu", "float8_e4m3", "--upstream-max", value, "--out",
             str(tmp_path / "n.json")], "--upstream-max", ">= 0")


@pytest.mark.parametrize("content, what", [("[]", "an empty list"), ("{}", "an object"), ("5", "a number"),
                                           ('"x"', "a string"), ("[[]]", "empty list"), ("[[1], [1, 2]]", "2 coordinates"),
                                           ("[true]", "not a number"), ("[NaN]", "not a finite"), ('["10"]', "not a hexadecimal"),
                                           ("[1e400]", "not a finite"), ("[", "cannot read points file")])
@pytest.mark.parametrize("theorem", ["theorem5", "theorem7"])
def test_a_points_file_that_is_not_a_list_of_points_is_refused(files, tmp_path, content, what, theorem):
    pts = files("p.json", content)
    refused(["construct", theorem, "relu", "float8_e4m3", "--domain", pts, "--out", str(tmp_path / "n.json")],
            "points file", what)


@pytest.mark.parametrize("theorem", ["theorem5", "theorem7"])
@pytest.mark.parametrize("out", ["/nonexistent-folder/net.json", "/proc/net.json", "/proc"])
def test_construct_refuses_an_output_it_cannot_write_before_constructing(theorem, out):
    t0 = time.perf_counter()
    refused(["construct", theorem, "gelu", "float8_e4m3", "--out", out], "--out", repr(out))
    assert time.perf_counter() - t0 < 10                     # refused at once, not after the construction


@pytest.mark.parametrize("out, what", [("/proc/reports", "cannot be used as an output folder"), ("", "is empty")])
def test_report_refuses_an_output_folder_it_cannot_write_before_checking(out, what):
    refused(["report", "gelu", "float8_e4m3", "--no-figures", "--out", out], "--out", what)


def test_dim_2_with_a_1_d_points_file_is_refused(files, tmp_path):
    pts = files("p.json", [[0.5], [1.0]])
    refused(["construct", "theorem5", "relu", "float8_e4m3", "--domain", pts, "--dim", "2", "--out",
             str(tmp_path / "n.json")], "--dim 2", "1 coordinate")


def test_without_dim_a_points_file_gives_its_own_dimension(files, tmp_path):
    pts = files("p.json", [[0.5, 1.0], [1.0, 2.0]])
    r = run(["construct", "theorem5", "relu", "float8_e4m3", "--domain", pts, "--out", str(tmp_path / "n.json"),
             "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["dim"] == 2


# ---- messages ---------------------------------------------------------------------------------------------
def test_messages_show_numbers_not_numpy_reprs(files, tmp_path):
    pts = files("p.json", [0.3])
    line = refused(["construct", "theorem5", "relu", "float8_e4m3", "--domain", pts, "--out", str(tmp_path / "n.json")],
                   "0.3")
    assert "np.float64" not in line


def test_one_line_strips_numpy_scalar_reprs_and_newlines():
    assert one_line("value np.float64(0.3) is bad\nsecond line") == "value 0.3 is bad second line"


def test_the_exhaustive_method_beyond_32_bits_says_which_method_to_use():
    line = refused(["check", "gelu", "float64", "--method", "exhaustive"], "at most 32 bits", "symbolic")
    assert "()" not in line                                    # no internal function names


# ---- other arguments ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["check", "gelu", "b1_40"], ["'b1_40'", "at most 24"]),
    (["check", "gelu", "b03_4"], ["b3_4"]),
    (["check", "gelu", "b0_4"], ["M >= 1"]),
    (["check", "gelux", "float8_e4m3"], ["unknown activation 'gelux'"]),
    (["check", "gelu", "float8_e8m0fnu"], ["has no zero"]),
    (["check", "gelu", "float8_e4m3", "-i", "exakt"], ["unknown implementation 'exakt'"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--domain", "sample:x", "--out", "{out}"], ["--domain", "sample:N"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--domain", "sample:0", "--out", "{out}"], ["--domain", "at least 1"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--domain", "sample:3:-2", "--out", "{out}"], ["SEED"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--dim", "0", "--out", "{out}"], ["--dim", "at least 1"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--domain", "missing.json", "--out", "{out}"], ["missing.json"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--targets", "python:", "--out", "{out}"], ["python:FILE.py"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "--targets", "random:x", "--out", "{out}"], ["random:SEED"]),
    (["construct", "theorem5", "relu", "float8_e4m3", "-i", "exakt", "--out", "{out}"], ["implementation"]),
    (["construct", "theorem7", "relu", "float8_e4m3", "--dim", "2", "--out", "{out}"], ["--domain full supports d = 1"]),
    (["construct", "theorem5", "relu", "b60_11", "--out", "{out}"], ["the full box", "points file"]),
    (["verify", "{missing}"], ["does not exist"]),
    (["recheck", "{missing}"], ["cannot read certificate"]),
    (["bench", "no-such-case"], ["unknown benchmark case"]),
    (["--plugin", "no_such_module_xyz", "formats"], ["cannot load plug-in"]),
    (["--plugin", "", "formats"], ["cannot load plug-in"]),
])
def test_bad_arguments_are_refused_in_one_line(tmp_path, args, words):
    args = [a.format(out=tmp_path / "n.json", missing=tmp_path / "missing.json") for a in args]
    refused(args, *words)


@pytest.mark.parametrize("targets, words", [
    ({"values": [1.0], "upstream": [1.0]}, ["no 'gradients' list"]),
    ({"values": [1.0], "upstream": [1.0], "gradients": [[1.0]], "extra": 1}, ["unknown field 'extra'"]),
    ({"values": ["10"], "upstream": [1.0], "gradients": [[1.0]]}, ["not a hexadecimal"]),
    ({"values": [True], "upstream": [1.0], "gradients": [[1.0]]}, ["not a number"]),
    ({"values": [1.0, 2.0], "upstream": [1.0], "gradients": [[1.0]]}, ["'values' has shape"]),
    ({"values": 1.0, "upstream": [1.0], "gradients": [[1.0]]}, ["must be a list"]),
    ([1, 2], ["JSON object"]),
])
def test_a_bad_targets_file_is_refused(files, tmp_path, targets, words):
    pts = files("p.json", [[1.0]])
    t = files("t.json", targets)
    refused(["construct", "theorem5", "relu", "float8_e4m3", "--domain", pts, "--targets", t,
             "--out", str(tmp_path / "n.json")], *words)


@pytest.mark.parametrize("targets, words", [
    ({"values": [1.0], "upstream": [], "gradients": [[]]}, ["lists no y"]),
    ({"values": [1.0], "upstream": [1.0, -1.0], "gradients": [[1.0]]}, ["'gradients' has shape"]),
    ({"values": [1.0], "upstream": ["0x1p+0"], "gradients": [["0x1"]]}, ["not a hexadecimal"]),
])
def test_a_bad_theorem7_targets_file_is_refused(files, tmp_path, targets, words):
    pts = files("p.json", [[1.0]])
    t = files("t.json", targets)
    refused(["construct", "theorem7", "relu", "float8_e4m3", "--domain", pts, "--targets", t,
             "--out", str(tmp_path / "n.json")], *words)


def test_report_refuses_a_file_as_its_output_folder(files):
    f = files("f.txt", "x")
    r = run(["report", "gelu", "float8_e4m3", "--out", f])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_report_checks_its_names_before_writing(tmp_path):
    refused(["report", "gelu", "float8_e4m4", "--out", str(tmp_path / "r")], "float8_e4m4")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
