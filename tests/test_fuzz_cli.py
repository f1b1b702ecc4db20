"""Property-based fuzzing of the command line: no input ends in a traceback or a hang.

Every file the CLI reads -- condition certificates (``recheck``), network files (``verify``), points
files (``--domain``), Theorem 5 and Theorem 7 targets files (``--targets``) -- is replaced by random JSON
documents and by near-valid ones (a genuine file with one to three random edits: a subtree replaced by
random JSON, deleted, or a field inserted), and every command gets random argument lists drawn from
names, numbers, specs and paths (good and bad).  Each run goes through click's CliRunner: the exit
status must be 0, 1, 2 or 3, no exception may escape, and nothing may print a traceback.  Runs are
bounded: small formats only (no ``matrix``, ``report --all`` or benchmark runs, which are long by
design), at most 180 s each (an alarm fails a hang; the numba kernels are compiled once beforehand), hypothesis's database off, derandomized.

Budget: the default suite runs 40 examples per file kind (5 kinds) and 120 argument lists, 320 runs in
about 40 s on an idle machine; ``-m slow`` runs 300 per file kind and 1,000 argument lists.
"""
from __future__ import annotations

import contextlib
import copy
import json
import signal
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from condcheck.cli import main

FILE_KINDS = ("certificate", "network", "points", "targets5", "targets7")
DEFAULT = dict(database=None, derandomize=True, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


#: seconds a single run may take (a loaded machine compiles the interpreters' numba kernels slowly once)
LIMIT = 180


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"a run took more than {LIMIT} s")


def invoke(args):
    """Run the CLI; assert a clean exit (0-3), no escaped exception, no traceback."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT)
    try:
        r = CliRunner().invoke(main, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if isinstance(r.exception, Hang):
        raise AssertionError(f"hang: {args}")
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert r.exit_code in (0, 1, 2, 3), (args, r.exit_code, r.output[-500:])
    assert "Traceback" not in r.output, (args, r.output[-500:])
    return r


# ---- genuine files and their near-valid edits ---------------------------------------------------------
@lru_cache(maxsize=None)
def templates():
    from condcheck.check import check_activation
    from condcheck.netfile import network_to_dict
    from condcheck.theorem5 import construct_theorem5
    X = np.array([[-1.0], [0.5], [2.0]])
    net, claim = construct_theorem5("relu", "float8_e4m3", X, [1.0, -2.0, 0.0], [1.0, 0.5, 0.0],
                                    [[2.0], [-1.0], [0.0]], jobs=1)
    from condcheck.verify import verify
    for method in ("sparse", "fast", "tables"):                 # compile the interpreters once, outside the runs
        verify(net, claim, method=method)
    return {
        "certificate": [json.loads(json.dumps(check_activation("sigmoid", "float4_e2m1fn", method="symbolic")
                                              .to_certificate())),
                        json.loads(json.dumps(check_activation("gelu", "float6_e2m3fn").to_certificate()))],
        "network": [json.loads(json.dumps(network_to_dict(net, claim)))],
        "points": [[[-1.0], [0.5], [2.0]], ["-0x1p+0", "0x1p-1"]],
        "targets5": [{"values": [1.0, -2.0, 0.0], "upstream": [1.0, 0.5, 0.0], "gradients": [[2.0], [-1.0], [0.0]]}],
        "targets7": [{"values": [1.0, -2.0], "upstream": [1.0, -1.0, 0.0],
                      "gradients": [[[2.0], [-2.0], [0.0]], [[0.5], [-0.5], [0.0]]]}],
    }


json_leaves = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True)
               | st.text(max_size=12) | st.sampled_from(["0x1p+0", "-0x1.8p-1", "10", "0x1.8", "nan", "inf", "",
                                                          "condcheck.check/2", "condcheck.network/1", "gelu",
                                                          "float8_e4m3", "exact", "holds", "fails", "(a)"]))
json_docs = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=5)
                         | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=25)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


@st.composite
def near_valid(draw, kind):
    doc = copy.deepcopy(draw(st.sampled_from(templates()[kind])))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["replace", "delete", "insert"]))
        if not path:
            doc = draw(json_docs) if how == "replace" else doc
            continue
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if how == "replace":
            parent[path[-1]] = draw(json_docs)
        elif how == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(json_leaves)
        else:
            parent.insert(path[-1], draw(json_leaves))
    return doc


def documents(kind):
    return st.one_of(json_docs, near_valid(kind))


def run_file(kind, doc):
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):      # a relative output lands there
        tmp = Path(tmp)
        f = tmp / "in.json"
        try:
            f.write_text(json.dumps(doc, allow_nan=True))
        except (ValueError, OverflowError):
            f.write_text(str(doc))
        out = str(tmp / "out.json")
        pts = tmp / "pts.json"
        pts.write_text("[[-1.0], [0.5], [2.0]]")
        pts7 = tmp / "pts7.json"
        pts7.write_text("[[-1.0], [0.5]]")
        args = {"certificate": ["recheck", str(f)],
                "network": ["verify", str(f)],
                "points": ["construct", "theorem5", "relu", "float8_e4m3", "--domain", str(f), "--out", out],
                "targets5": ["construct", "theorem5", "relu", "float8_e4m3", "--domain", str(pts), "--targets", str(f),
                             "--out", out, "--jobs", "1"],
                "targets7": ["construct", "theorem7", "relu", "float6_e3m2fn", "--domain", str(pts7), "--targets",
                             str(f), "--out", out]}[kind]
        invoke(args)


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_random_files_never_end_in_a_traceback(kind):
    given(documents(kind))(settings(max_examples=40, **DEFAULT)(lambda doc: run_file(kind, doc)))()


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILE_KINDS)
def test_many_random_files_never_end_in_a_traceback(kind):
    given(documents(kind))(settings(max_examples=300, **{**DEFAULT, "derandomize": False})(
        lambda doc: run_file(kind, doc)))()


# ---- random argument lists ------------------------------------------------------------------------------
ACTS = ["relu", "gelu", "sigmoid", "tanh", "swish", "leaky_relu", "sin", "silu", "nosuch", "", "-1", "GELU"]
FORMATS = ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "b3_2", "b2_3", "b1_40", "b0_3", "b03_4", "b60_15",
           "float8_e8m0fnu", "float8_e4m4", "", "32", "float32"]
CONSTRUCT_FORMATS = ["float4_e2m1fn", "float6_e3m2fn", "b2_3", "b1_40", "b0_3", "float8_e4m4", "", "float32", "b60_11"]
NUMBERS = ["-1", "0", "1", "2", "0.25", "1e309", "nan", "inf", "-inf", "x", "", "99999999999999999999"]
SPECS = ["full", "sample:2", "sample:0", "sample:-1", "sample:2:-1", "sample:x", "sample:", "random:1", "random:-1",
         "random:x", "python:", "python:/nonexistent.py", "/nonexistent.json", "/proc/x", "", "{points}", "{empty}",
         "{five}"]


@st.composite
def arg_lists(draw):
    opt = lambda name, values: [name, draw(st.sampled_from(values))]          # noqa: E731
    extra = draw(st.lists(st.sampled_from(["--json", "--help", "-h", "--bogus", "--exact", "--dense", "--tables"]),
                          max_size=2))
    cmd = draw(st.sampled_from(["formats", "activations", "check", "verify", "recheck", "construct5", "construct7",
                                "report", "bench", "matrix", "plugin", "nothing"]))
    if cmd in ("formats", "activations"):
        return [cmd] + extra
    if cmd == "check":
        fmt = draw(st.sampled_from(FORMATS))
        args = ["check", draw(st.sampled_from(ACTS)), fmt]
        if draw(st.booleans()):
            # every float32 value on Dask is a legitimate hours-long job (tests/test_chunked.py covers it)
            methods = ["auto", "symbolic", "bogus", ""] + ([] if fmt == "float32" else ["exhaustive"])
            args += opt("--method", methods)
        if draw(st.booleans()):
            args += opt("-i", ["exact", "float32-upcast", "exakt", ""])
        return args + [e for e in extra if e != "--exact"]
    if cmd in ("verify", "recheck"):
        args = [cmd, draw(st.sampled_from(["{network}", "{cert}", "{five}", "/nonexistent", "/proc", "", "{points}"]))]
        if cmd == "verify" and draw(st.booleans()):
            args += opt("--semantics", ["finite", "ieee", "lenient"])
        return args + extra
    if cmd in ("construct5", "construct7"):
        args = ["construct", "theorem" + cmd[-1], draw(st.sampled_from(ACTS[:4] + ["nosuch"])),
                draw(st.sampled_from(CONSTRUCT_FORMATS))]
        for name, values in (("--domain", SPECS), ("--dim", NUMBERS[:5] + ["x"]), ("--targets", SPECS),
                             ("--out", ["{out}", "/proc/x.json", "/nonexistent/x.json", "", "{tmp}"])):
            if draw(st.booleans()):
                args += opt(name, values)
        if cmd == "construct5" and draw(st.booleans()):
            args += opt("--upstream-max", NUMBERS)
        if cmd == "construct5" and draw(st.booleans()):
            args += opt("--jobs", ["1", "0", "-2", "x"])
        return args + [e for e in extra if e not in ("--exact", "--dense", "--tables")]
    if cmd == "report":
        args = ["report"] + draw(st.lists(st.sampled_from(ACTS[:3] + FORMATS[:4]), max_size=3))
        args += opt("--out", ["{tmp}", "/proc/r", "{five}", ""])
        if draw(st.booleans()):
            args += opt("--network", ["{network}", "{five}", "/nonexistent"])
        return args + ["--no-figures"] + extra
    if cmd == "bench":
        return ["bench"] + draw(st.sampled_from([["--list"], ["no-such-case"], ["--repeat", "0", "x"],
                                                 ["--repeat", "x"]]))
    if cmd == "matrix":
        return ["matrix", "--help"]
    if cmd == "plugin":
        return ["--plugin", draw(st.sampled_from(["", "nosuch_xyz", "nosuch_xyz:A", ":", "math:nosuch",
                                                  "condcheck.activations:x"])), "activations"]
    return draw(st.lists(st.sampled_from(["", "-", "--", "check", "--help", "x"]), max_size=3))


def run_args(args):
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        tmp = Path(tmp)
        net = tmp / "net.json"
        cert = tmp / "cert.json"
        net.write_text(json.dumps(templates()["network"][0]))
        cert.write_text(json.dumps(templates()["certificate"][0]))
        (tmp / "points.json").write_text("[[-1.0], [0.5]]")
        (tmp / "empty.json").write_text("[]")
        (tmp / "five.json").write_text("5")
        names = {"{network}": str(net), "{cert}": str(cert), "{out}": str(tmp / "o.json"), "{tmp}": str(tmp / "r"),
                 "{points}": str(tmp / "points.json"), "{empty}": str(tmp / "empty.json"),
                 "{five}": str(tmp / "five.json")}
        invoke([names.get(a, a) for a in args])


def test_random_argument_lists_never_end_in_a_traceback():
    given(arg_lists())(settings(max_examples=120, **DEFAULT)(run_args))()


@pytest.mark.slow
def test_many_random_argument_lists_never_end_in_a_traceback():
    given(arg_lists())(settings(max_examples=1000, **{**DEFAULT, "derandomize": False})(run_args))()
