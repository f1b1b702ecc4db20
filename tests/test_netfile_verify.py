"""Network files (docs/file-formats.md), claim verification, and `condcheck verify`."""
import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from condcheck import netfile
from condcheck.cli import main
from condcheck.errors import CondcheckError
from condcheck.netfile import Claim, load_network, network_from_dict, network_to_dict, save_network
from condcheck.network import Layer, Network
from condcheck.verify import VerifyResult, verify


def _net():
    return Network("float8_e4m3", "gelu", [Layer(np.array([[0.5], [-1.25]]), [0.125, 0.0]),
                                           Layer(np.array([[1.0, -2.0]]), [0.0])])


def _claim_from_exact_path(net, points, upstream):
    values = [float(net.forward_exact([p])[0]) for p in points]
    grads = [[float(g) for g in net.gradient_exact([p], y)] for p, y in zip(points, upstream)]
    return Claim(5, np.array(points).reshape(-1, 1), values, upstream, grads)


def test_network_file_round_trip_keeps_every_weight_exactly():
    net = _net()
    back, claim = network_from_dict(json.loads(json.dumps(network_to_dict(net))))
    assert claim is None
    for a, b in zip(net.layers, back.layers):
        assert (a.weight != b.weight).nnz == 0 and np.array_equal(a.bias, b.bias)
    assert (back.format.name, back.activation, back.implementation) == ("float8_e4m3", "gelu", "exact")


def test_numbers_are_written_as_float_hex():
    d = network_to_dict(_net())
    assert d["layers"][0]["weight"] == [["0x1.0000000000000p-1"], ["-0x1.4000000000000p+0"]]
    assert d["schema"] == "condcheck.network/1"


def test_a_mostly_zero_layer_is_written_sparse_and_read_back():
    w = sp.csr_matrix(([1.0, -2.0], ([0, 5], [7, 0])), shape=(6, 8))
    net = Network("float16", "relu", [Layer(w, [0.0] * 6), Layer(np.ones((1, 6)), [0.0])])
    d = network_to_dict(net)
    assert "weight_sparse" in d["layers"][0] and "weight" in d["layers"][1]
    back, _ = network_from_dict(json.loads(json.dumps(d)))
    assert (back.layers[0].weight != w).nnz == 0


@pytest.mark.parametrize("seed", range(6))
def test_a_layer_is_written_in_whichever_form_is_the_shorter_text(seed):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(1, 14, size=2)
    dense = np.where(rng.random((rows, cols)) < rng.random(), rng.choice([0.5, -3.0, 0.1875, 1024.0], (rows, cols)), 0.0)
    w = sp.csr_matrix(dense)
    coo = w.tocoo()
    order = np.lexsort((coo.col, coo.row))
    as_rows = json.dumps([[x.hex() for x in row] for row in dense])
    as_entries = json.dumps({"shape": [int(rows), int(cols)],
                             "entries": [[int(coo.row[k]), int(coo.col[k]), coo.data[k].hex()] for k in order]})
    written = netfile.weight_entry(w)
    expected = "weight" if len(as_rows) <= len(as_entries) else "weight_sparse"
    assert list(written) == [expected]
    assert json.dumps(written[expected]) == (as_rows if expected == "weight" else as_entries)


def test_a_true_claim_verifies_with_both_interpreters():
    net = _net()
    pts = [v for v in net.format.values() if abs(v) <= 8]
    claim = _claim_from_exact_path(net, pts, [1.0] * len(pts))
    assert verify(net, claim).ok
    assert verify(net, claim, method="exact").ok


def test_a_wrong_value_is_reported_with_the_first_failing_point():
    net = _net()
    claim = _claim_from_exact_path(net, [0.5, 1.0, 2.0], [1.0, 1.0, 1.0])
    claim.values[1] = net.format.next_up(claim.values[1])
    res = verify(net, claim)
    assert not res.ok and res.value_failures == 1
    assert res.first_failure["kind"] == "value" and res.first_failure["point"] == "(0x1.0000000000000p+0)"


def test_a_wrong_gradient_is_reported():
    net = _net()
    claim = _claim_from_exact_path(net, [0.5, 1.0], [1.0, 2.0])
    claim.gradients[0, 0] = -claim.gradients[0, 0] if claim.gradients[0, 0] else 1.0
    res = verify(net, claim)
    assert not res.ok and res.gradient_failures == 1 and res.first_failure["kind"] == "gradient"


def test_theorem7_claims_check_every_upstream_value():
    net = _net()
    pts, ys = [0.5, 1.0], [1.0, -1.0, 0.25]
    grads = [[[float(g) for g in net.gradient_exact([p], y)] for y in ys] for p in pts]
    values = [float(net.forward_exact([p])[0]) for p in pts]
    claim = Claim(7, np.array(pts).reshape(-1, 1), values, ys, grads)
    assert verify(net, claim).ok and verify(net, claim).gradient_checks == 6


def test_claim_values_outside_the_format_are_refused():
    net = _net()
    claim = Claim(5, [[0.5]], [0.3], [1.0], [[0.0]])
    with pytest.raises(CondcheckError, match="0.3"):
        verify(net, claim)


def test_cli_verify_exits_0_on_a_true_claim_and_1_on_a_false_one(tmp_path):
    net = _net()
    claim = _claim_from_exact_path(net, [0.5, 1.0], [1.0, 1.0])
    good = tmp_path / "good.json"
    save_network(good, net, claim)
    r = CliRunner().invoke(main, ["verify", str(good)])
    assert r.exit_code == 0 and "VERIFIED" in r.output
    claim.values[0] = net.format.next_up(claim.values[0])
    bad = tmp_path / "bad.json"
    save_network(bad, net, claim)
    r = CliRunner().invoke(main, ["verify", str(bad)])
    assert r.exit_code == 1 and "first failure" in r.output and "0x1.0000000000000p-1" in r.output


def test_cli_verify_on_the_rounding_tables_finds_what_the_other_interpreters_find(tmp_path):
    net = _net()
    claim = _claim_from_exact_path(net, [0.5, 1.0, -3.0], [1.0, 0.25, -2.0])
    good = tmp_path / "good.json"
    save_network(good, net, claim)
    r = CliRunner().invoke(main, ["verify", str(good), "--tables"])
    assert r.exit_code == 0 and "(tables interpreter)" in r.output and "AD gradients 3/3 equal" in r.output
    claim.gradients[2, 0] = net.format.next_up(claim.gradients[2, 0])
    bad = tmp_path / "bad.json"
    save_network(bad, net, claim)
    outputs = [CliRunner().invoke(main, ["verify", str(bad)] + flag) for flag in (["--tables"], ["--exact"])]
    assert [o.exit_code for o in outputs] == [1, 1]
    first = [line for o in outputs for line in o.output.splitlines() if line.startswith("first failure")]
    assert len(first) == 2 and first[0] == first[1] and "kind=gradient" in first[0]


def test_cli_verify_gives_a_message_not_a_traceback_for_a_bad_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    r = CliRunner().invoke(main, ["verify", str(p)])
    assert r.exit_code == 2 and "not valid JSON" in r.output and "Traceback" not in r.output


def test_loading_a_file_with_a_non_format_weight_names_it(tmp_path):
    d = network_to_dict(_net())
    d["layers"][0]["weight"][0][0] = (0.3).hex()
    p = tmp_path / "w.json"
    p.write_text(json.dumps(d))
    with pytest.raises(CondcheckError, match=r"layers\[0\]\.weight\[0\]\[0\]: 0x1.3333333333333p-2 is not a value"):
        load_network(p)


def test_verify_by_tables_or_sparse_falls_back_to_the_dense_interpreter_where_they_do_not_apply():
    claim = Claim(5, np.array([[1.0]]), np.array([2.0]), np.array([1.0]), np.array([[2.0]]))
    for fmt_name, semantics, method, used in (("float8_e4m3", "finite", "tables", "tables"),
                                              ("float16", "finite", "tables", "dense"),
                                              ("float32", "ieee", "sparse", "dense")):
        net = Network(fmt_name, "relu", [Layer(np.array([[2.0]]), [0.0])], semantics=semantics)
        res = verify(net, claim, method=method)
        assert res.ok and res.method == used


def test_verify_names_the_interpreter_it_used_and_fast_is_the_dense_ones_old_name():
    net = _net()
    pts = [v for v in net.format.values() if abs(v) <= 8]
    claim = _claim_from_exact_path(net, pts, [1.0] * len(pts))
    assert verify(net, claim, method="fast").method == "dense"
    assert "(dense interpreter)" in verify(net, claim).summary()
    with pytest.raises(CondcheckError, match="verification method must be one of 'exact', 'dense'"):
        verify(net, claim, method="fastest")


def test_merged_results_add_their_counts_and_keep_the_first_failure_in_part_order():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[2.0]]), [0.0])])
    X = np.array([[1.0], [2.0], [3.0]])
    good = Claim(5, X, np.array([2.0, 4.0, 6.0]), np.ones(3), np.full((3, 1), 2.0))
    bad = Claim(5, X, np.array([2.0, 5.0, 7.0]), np.ones(3), np.full((3, 1), 2.0))
    parts = [verify(net, good, "tables"), verify(net, Claim(5, X[1:], bad.values[1:], np.ones(2), np.full((2, 1), 2.0)),
                                                  "tables")]
    res = VerifyResult.merged(parts)
    whole = verify(net, bad, "tables")
    assert (res.ok, res.points, res.value_checks, res.value_failures) == (False, 5, 5, 2)
    assert res.first_failure == whole.first_failure and whole.value_failures == 2


def test_auto_verifies_small_networks_on_tables_and_others_with_the_sparse_interpreter(monkeypatch):
    import importlib
    verify_module = importlib.import_module("condcheck.verify")     # (condcheck.verify is also the function)
    claim = Claim(5, np.array([[1.0]]), np.array([2.0]), np.array([1.0]), np.array([[2.0]]))
    net8 = Network("float8_e4m3", "relu", [Layer(np.array([[2.0]]), [0.0])])
    assert verify(net8, claim, method="auto").method == "tables"
    monkeypatch.setattr(verify_module, "AUTO_TABLES_WORK", 0)
    assert verify(net8, claim, method="auto").method == "sparse"
    net16 = Network("float16", "relu", [Layer(np.array([[2.0]]), [0.0])])
    assert verify(net16, claim, method="auto").method == "sparse"


def test_condcheck_verify_names_the_interpreter_it_chose(tmp_path):
    net = _net()
    pts = [v for v in net.format.values() if abs(v) <= 8]
    p = tmp_path / "net.json"
    save_network(p, net, _claim_from_exact_path(net, pts, [1.0] * len(pts)))
    for flags, name in (([], "tables"), (["--dense"], "dense"), (["--exact"], "exact")):
        r = CliRunner().invoke(main, ["verify", str(p)] + flags)
        assert r.exit_code == 0 and f"({name} interpreter)" in r.output, r.output
