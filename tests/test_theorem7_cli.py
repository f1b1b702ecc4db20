"""Theorem 7 from the command line (`condcheck construct theorem7`), random odd tables, and the multi-loss
example (one network, three losses, each loss's AD gradient equal to its own target)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from condcheck.cli import main
from condcheck.formats import get_format
from condcheck.multiloss import LOSSES, loss_seed, multi_loss_example, odd_table
from condcheck.netfile import load_network
from condcheck.targets import random_odd_tables
from condcheck.theorem7 import TargetError
from condcheck.verify import verify


def _run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _points(tmp_path, pts):
    p = tmp_path / "points.json"
    p.write_text(json.dumps([[x] for x in pts]))
    return str(p)


# ---- random odd tables ----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_odd_tables_are_odd_values_of_the_format_with_zeros_and_the_largest_values(seed):
    F = get_format("float8_e4m3")
    Y = F.values()
    X = np.array([[-2.0], [0.0], [1.5]])
    f, G = random_odd_tables(F, X, Y, seed)
    assert f.shape == (3,) and G.shape == (3, len(Y))
    vals = set(Y.tolist())
    assert set(f.tolist()) <= vals and set(G.ravel().tolist()) <= vals
    neg = {y: j for j, y in enumerate(Y.tolist())}
    for j, y in enumerate(Y.tolist()):
        assert (G[:, neg[-y]] == -G[:, j]).all()
    assert (G[:, Y == 0] == 0).all()
    for row in G:
        assert (row[Y > 0] == 0).any()
        assert float(F.Omega) in row[Y > 0] and -float(F.Omega) in row[Y > 0]
    assert (random_odd_tables(F, X, Y, seed)[1] == G).all()


# ---- the command ------------------------------------------------------------------------------------------
def test_construct_theorem7_builds_writes_a_file_that_verify_rechecks(tmp_path):
    out = tmp_path / "net7.json"
    dom = _points(tmp_path, [-4.0, 0.0, 0.125])
    r = _run("construct", "theorem7", "relu", "float6_e3m2fn", "--domain", dom, "--targets", "random:3",
             "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["verified"] and s["points"] == 3 and s["upstream_values"] == 63 and s["checks"] == 189
    assert s["paper_depth_bounds"] == {"openreview": 29, "arxiv_v2": 31}
    assert s["depth"] <= 29 and s["nonzero_parameters"] > 0
    net, claim = load_network(out)
    assert claim.theorem == 7 and claim.gradients.shape == (3, 63, 1)
    assert verify(net, claim).ok
    r = _run("verify", str(out))
    assert r.exit_code == 0 and "AD gradients 189/189 equal" in r.output


def test_construct_theorem7_text_summary_names_depth_widths_parameters_and_both_paper_bounds(tmp_path):
    out = tmp_path / "net7.json"
    r = _run("construct", "theorem7", "relu", "float8_e4m3", "--domain", _points(tmp_path, [1.0]),
             "--targets", "random:0", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "depth" in r.output and "widths" in r.output and "nonzero" in r.output
    assert "= 47 OpenReview / + 11 = 49 arXiv v2" in r.output and "verified" in r.output


def test_a_tampered_file_fails_verify(tmp_path):
    out = tmp_path / "net7.json"
    assert _run("construct", "theorem7", "relu", "float6_e3m2fn", "--domain", _points(tmp_path, [2.0]),
                "--targets", "random:1", "--out", str(out)).exit_code == 0
    d = json.loads(out.read_text())
    g = d["claim"]["gradients"][0]
    j = next(j for j, y in enumerate(d["claim"]["upstream"]) if float.fromhex(y) > 0)
    old = float.fromhex(g[j][0])
    g[j][0] = (1.0 if old == 0 else -old).hex()                         # a different value of the format
    out.write_text(json.dumps(d))
    r = _run("verify", str(out))
    assert r.exit_code == 1 and "FAILED" in r.output


@pytest.mark.parametrize("args, message", [
    (["nosuchact", "float6_e3m2fn"], "nosuchact"),
    (["relu", "float6_e3m2fn", "--dim", "2"], "sample:N"),
    (["relu", "float6_e3m2fn", "--targets", "random:x"], "integer seed"),
    (["relu", "nosuchformat"], "format"),
])
def test_bad_input_exits_2_saying_what_is_supported(tmp_path, args, message):
    r = CliRunner().invoke(main, ["construct", "theorem7", *args, "--out", str(tmp_path / "n.json")])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not (tmp_path / "n.json").exists()


def test_points_with_two_coordinates(tmp_path):
    """d = 2 from a points file: one random table per coordinate, built, verified, re-verified from file."""
    p = tmp_path / "p2.json"
    p.write_text(json.dumps([[1.0, 2.0], [-0.5, 2.0]]))
    out = tmp_path / "n.json"
    r = CliRunner().invoke(main, ["construct", "theorem7", "tanh", "float8_e4m3", "--domain", str(p),
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "2 points (d = 2)" in r.output
    d = json.loads(out.read_text())
    assert d["input_dim"] == 2 and len(d["claim"]["gradients"][0][0]) == 2
    r = _run("verify", str(out))
    assert r.exit_code == 0 and "VERIFIED" in r.output


def _targets_file(tmp_path, G, Y, values):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"values": values, "upstream": [float(y).hex() for y in Y],
                             "gradients": [[float(g).hex() for g in row] for row in G]}))
    return str(p)


def test_a_targets_file_odd_in_y_is_built(tmp_path):
    Y = [-3.0, -0.5, 0.0, 0.5, 3.0]
    G = [[1.0, 0.25, 0.0, -0.25, -1.0], [0.0, -28.0, 0.0, 28.0, 0.0]]
    r = _run("construct", "theorem7", "relu", "float6_e3m2fn", "--domain", _points(tmp_path, [-1.0, 1.0]),
             "--targets", _targets_file(tmp_path, G, Y, [2.0, -0.5]), "--out", str(tmp_path / "n.json"))
    assert r.exit_code == 0, r.output
    assert _run("verify", str(tmp_path / "n.json")).exit_code == 0


def test_a_targets_file_not_odd_in_y_is_refused_naming_x_and_y(tmp_path):
    Y = [-3.0, -0.5, 0.0, 0.5, 3.0]
    G = [[1.0, 0.25, 0.0, -0.25, -1.0], [0.0, 28.0, 0.0, 28.0, 0.0]]      # g(1, -0.5) = g(1, 0.5)
    r = CliRunner().invoke(main, ["construct", "theorem7", "relu", "float6_e3m2fn", "--domain",
                                  _points(tmp_path, [-1.0, 1.0]), "--targets",
                                  _targets_file(tmp_path, G, Y, [2.0, -0.5]), "--out", str(tmp_path / "n.json")])
    assert r.exit_code == 2
    assert "not odd in y" in r.output and "x = 1.0, y = -0.5" in r.output
    G[0][2] = 1.0                                                          # g(-1, 0) != 0
    r = CliRunner().invoke(main, ["construct", "theorem7", "relu", "float6_e3m2fn", "--domain",
                                  _points(tmp_path, [-1.0, 1.0]), "--targets",
                                  _targets_file(tmp_path, G, Y, [2.0, -0.5]), "--out", str(tmp_path / "n.json")])
    assert r.exit_code == 2 and "x = -1.0, y = 0" in r.output


def test_float4_fails_the_construction_with_exit_1_and_the_reason(tmp_path):
    r = CliRunner().invoke(main, ["construct", "theorem7", "relu", "float4_e2m1fn", "--domain",
                                  _points(tmp_path, [1.0]), "--out", str(tmp_path / "n.json")])
    assert r.exit_code == 1 and "construction failed" in r.output and "float4_e2m1fn" in r.output


# ---- one network, three losses ----------------------------------------------------------------------------------
def test_every_loss_gets_its_own_target_gradient_from_one_network():
    ex = multi_loss_example()
    assert ex["ok"]
    assert len(ex["rows"]) == 9 and all(r["ad"] == r["target"] for r in ex["rows"])
    assert ex["forward"] == [0.75, -1.5, 3.0]
    assert verify(ex["network"], ex["result"].claim).ok
    # the seeds are the rounded loss derivatives (logistic irrational, rounded in float8_e4m3)
    seeds = {(r["x"], r["loss"].split()[0]): r["y"] for r in ex["rows"]}
    assert seeds[(-1.0, "squared")] == -0.5 and seeds[(-1.0, "logistic")] == -0.3125
    assert seeds[(0.5, "hinge")] == 0.0 and seeds[(2.0, "logistic")] == 0.9375


def test_loss_seeds_are_correctly_rounded_derivatives():
    F = get_format("float8_e4m3")
    y, q = loss_seed(LOSSES["squared error (f - t)^2"], 3.0, -1.0, F)
    assert (y, q) == (8.0, 8)
    y, q = loss_seed(LOSSES["logistic log(1 + exp(-t f))"], 0.75, 1.0, F)
    assert abs(float(q) + 1 / (1 + np.exp(0.75))) < 1e-15 and y == -0.3125
    with pytest.raises(Exception, match="kink"):
        loss_seed(LOSSES["hinge max(0, 1 - t f)"], 1.0, 1.0, F)


def test_equal_seeds_force_equal_gradients_and_a_zero_seed_forces_zero():
    F = get_format("float8_e4m3")
    with pytest.raises(TargetError, match="inconsistent"):
        odd_table(F, [0.5, 0.5], [1.0, 2.0])
    with pytest.raises(TargetError, match="inconsistent"):
        odd_table(F, [0.5, -0.5], [1.0, 1.0])
    with pytest.raises(TargetError, match="y = 0"):
        odd_table(F, [0.0], [1.0])
    t = odd_table(F, [0.5, -0.5, 0.0], [1.0, -1.0, 0.0])
    Y = F.values()
    assert t[Y == 0.5][0] == 1.0 and t[Y == -0.5][0] == -1.0 and (t[np.abs(Y) != 0.5] == 0).all()


def test_construct_theorem7_generic_activation_covers_every_y_up_to_H_sigma(tmp_path):
    """sigmoid on float8_e4m3: the random targets cover every |y| <= H_sigma = 2^(M-1) = 4."""
    out = tmp_path / "sig7.json"
    dom = _points(tmp_path, [-64.0, 0.0, 0.375])
    r = _run("construct", "theorem7", "sigmoid", "float8_e4m3", "--domain", dom, "--targets", "random:2",
             "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    Y = get_format("float8_e4m3").values()
    assert s["verified"] and s["activation"] == "sigmoid" and s["upstream_values"] == int((np.abs(Y) <= 4).sum())
    assert s["depth"] <= s["paper_depth_bounds"]["openreview"]
    net, claim = load_network(out)
    assert net.activation == "sigmoid" and verify(net, claim).ok
    assert _run("verify", str(out)).exit_code == 0
