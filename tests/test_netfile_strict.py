"""Network files are read strictly: every field known and consistent, every number a hexadecimal float."""
import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner

from condcheck.cli import main
from condcheck.errors import CondcheckError
from condcheck.hexfloat import parse_exact, parse_float64
from condcheck.netfile import Claim, load_network, network_from_dict, network_to_dict
from condcheck.network import Layer, Network


def _file(theorem=5):
    """A two-layer gelu network on float8_e4m3 with a (not necessarily true) claim over two points."""
    net = Network("float8_e4m3", "gelu", [Layer(np.array([[0.5], [-1.25]]), [0.125, 0.0]),
                                          Layer(np.array([[1.0, -2.0]]), [0.0])])
    if theorem == 5:
        claim = Claim(5, np.array([[1.0], [2.0]]), [0.5, 0.25], [1.0, 0.0], [[0.5], [0.0]])
    else:
        claim = Claim(7, np.array([[1.0], [2.0]]), [0.5, 0.25], [1.0, -1.0, 0.0],
                      np.array([[[0.5], [-0.5], [0.0]], [[1.0], [-1.0], [0.0]]]))
    return json.loads(json.dumps(network_to_dict(net, claim)))


def _refused(d, where):
    with pytest.raises(CondcheckError) as e:
        network_from_dict(d)
    msg = str(e.value)
    assert "\n" not in msg and where in msg, msg
    return msg


def test_a_genuine_file_is_read():
    net, claim = network_from_dict(_file())
    assert net.depth == 2 and claim.theorem == 5 and claim.points.shape == (2, 1)
    net, claim = network_from_dict(_file(7))
    assert claim.gradients.shape == (2, 3, 1)


@pytest.mark.parametrize("text", ["10", "1.5", "inf", "nan", "0x1.8", " 0x1p+0", "0x1p+0 ", "0X1P+0",
                                  "1e3", "+0x1p+0", "0x1.00000000000001p+0", "0x1p+99999", "", "0x.8p+0"])
def test_a_number_that_is_not_exactly_a_float64_in_hex_form_is_refused_naming_its_field(text):
    d = _file()
    d["layers"][0]["bias"][1] = text
    msg = _refused(d, "layers[0].bias[1]")
    assert "16" not in msg or text != "10"                 # never read as sixteen


@pytest.mark.parametrize("number", [10, 1.5, None, True, [1], {"hex": "0x1p+0"}])
def test_a_json_number_or_other_value_in_place_of_a_hex_string_is_refused(number):
    d = _file()
    d["claim"]["values"][0] = number
    _refused(d, "claim.values[0]")


@pytest.mark.parametrize("text, value", [("0x1.8p+1", 3.0), ("-0x1.0000000000000p-3", -0.125), ("0x0p+0", 0.0),
                                         ("-0x0.0p+0", 0.0), ("0x3p-1", 1.5), ("0x1.8000000000000p+1", 3.0),
                                         ("0x0.0000000000001p-1022", 5e-324)])
def test_the_float_hex_forms_are_accepted(text, value):
    assert parse_float64(text, "x") == value and parse_exact(text, "x") == value


def test_hex_beyond_float64_is_exact_for_certificates_but_refused_for_networks():
    assert parse_exact("0x1p+2000", "x") == 2 ** 2000
    with pytest.raises(CondcheckError, match="beyond the float64 range"):
        parse_float64("0x1p+2000", "x")


@pytest.mark.parametrize("edit, where", [
    (lambda d: d.update(extra=1), "extra: unknown field"),
    (lambda d: d["layers"][0].update(note="x"), "layers[0].note: unknown field"),
    (lambda d: d["claim"].update(losses=[]), "claim.losses: unknown field"),
    (lambda d: d["layers"][1].pop("bias"), "layers[1].bias: missing"),
    (lambda d: d.pop("layers"), "layers: missing"),
    (lambda d: d["claim"].pop("upstream"), "claim.upstream: missing"),
    (lambda d: d["layers"][0].update(weight_sparse={"shape": [2, 1], "entries": []}), "exactly one of"),
    (lambda d: d["layers"][1]["weight"][0].pop(), "layers[1].weight[0]: has 1 entries, 2 expected"),
    (lambda d: d["layers"][1].update(weight_sparse={"shape": [1, 3], "entries": []}) or d["layers"][1].pop("weight"),
     "layers[1].weight_sparse: takes 3 inputs, but layers[0] has 2"),
    (lambda d: d["layers"][0]["weight"].append(["0x1p+0", "0x1p+0"]), "layers[0].weight[2]: has 2 entries, 1 expected"),
    (lambda d: d.update(input_dim=2), "layers[0].weight[0]: has 1 entries, 2 expected"),
    (lambda d: d.update(input_dim=0), "input_dim: 0 is not an integer from 1"),
    (lambda d: d.update(input_dim="1"), "input_dim: '1' is not an integer"),
    (lambda d: d["layers"][0]["bias"].pop(), "layers[0].bias: has 1 entries, 2 expected"),
    (lambda d: d["layers"].append({"weight": [["0x1p+0"], ["0x1p+0"]], "bias": ["0x0p+0", "0x0p+0"]}),
     "the last layer must have one output"),
    (lambda d: d.update(layers=[]), "layers: is empty"),
    (lambda d: d.update(schema="condcheck.network/2"), "not a condcheck network file"),
    (lambda d: d.update(format="float8_e4m4"), "format: unknown format 'float8_e4m4'"),
    (lambda d: d.update(format=8), "format: must be a name"),
    (lambda d: d.update(activation="gelux"), "activation: unknown activation"),
    (lambda d: d.update(implementation="exakt"), "implementation: unknown implementation 'exakt'"),
    (lambda d: d.update(semantics="lenient"), "semantics: unknown semantics 'lenient'"),
    (lambda d: d["layers"][0]["weight"][1].__setitem__(0, (0.3).hex()), "layers[0].weight[1][0]: 0x1.3333333333333p-2"),
    (lambda d: d["claim"]["points"][1].__setitem__(0, (0.3).hex()), "claim.points[1][0]: 0x1.3333333333333p-2"),
])
def test_unknown_missing_or_inconsistent_fields_are_refused_by_name(edit, where):
    d = _file()
    edit(d)
    _refused(d, where)


@pytest.mark.parametrize("edit, where", [
    (lambda c: c.update(theorem="5"), "claim.theorem: '5' is neither 5 nor 7"),
    (lambda c: c.update(theorem=6), "claim.theorem: 6"),
    (lambda c: c.update(theorem=True), "claim.theorem: True"),
    (lambda c: c["points"].append(["0x1p+0"]), "claim.values: has 2 entries, 3 expected"),
    (lambda c: c["points"][0].append("0x1p+0"), "claim.points[0]: has 2 entries, 1 expected"),
    (lambda c: c["values"].pop(), "claim.values: has 1 entries, 2 expected"),
    (lambda c: c["upstream"].pop(), "claim.upstream: has 1 entries, 2 expected"),
    (lambda c: c["gradients"][0].append("0x0p+0"), "claim.gradients[0]: has 2 entries, 1 expected"),
    (lambda c: c.update(points=[]), "claim.points: is empty"),
    (lambda c: c.update(points="0x1p+0"), "claim.points: must be a list"),
])
def test_a_theorem_5_claim_must_have_its_shape(edit, where):
    d = _file()
    edit(d["claim"])
    _refused(d, where)


@pytest.mark.parametrize("edit, where", [
    (lambda c: c.update(upstream=[]), "claim.upstream: is empty"),
    (lambda c: c["gradients"][1].pop(), "claim.gradients[1]: has 2 entries, 3 expected"),
    (lambda c: c["gradients"][0][2].append("0x0p+0"), "claim.gradients[0][2]: has 2 entries, 1 expected"),
    (lambda c: c.update(gradients=[["0x0p+0"] * 3] * 2), "claim.gradients[0][0]: must be a list"),
    (lambda c: c.update(theorem=5), "claim.upstream: has 3 entries, 2 expected"),
])
def test_a_theorem_7_claim_must_have_its_shape(edit, where):
    d = _file(7)
    edit(d["claim"])
    _refused(d, where)


@pytest.mark.parametrize("entries, where", [
    ([[1, 0, "0x1p+0"], [0, 0, "0x1p+0"]], "sorted by row"),
    ([[0, 0, "0x1p+0"], [0, 0, "0x1p+0"]], "without repeats"),
    ([[2, 0, "0x1p+0"]], "outside the shape"),
    ([[0, -1, "0x1p+0"]], "entries[0][1]: -1 is not an integer"),
    ([[0, 0, "1"]], "entries[0][2]"),
    ([[0, 0]], "entries[0]: has 2 entries, 3 expected"),
    ([[0, 0, (0.3).hex()]], "entries[0][2]: 0x1.3333333333333p-2 is not a value"),
])
def test_sparse_weights_are_checked_entry_by_entry(entries, where):
    d = _file()
    d["layers"][0].pop("weight")
    d["layers"][0]["weight_sparse"] = {"shape": [2, 1], "entries": entries}
    _refused(d, where)


def test_a_file_without_a_claim_or_with_a_null_claim_is_a_network_only():
    d = _file()
    d["claim"] = None
    assert network_from_dict(d)[1] is None
    del d["claim"]
    assert network_from_dict(d)[1] is None


@pytest.mark.parametrize("content", ["", "[]", "5", '{"schema": "condcheck.network/1"}', "[[[[", "\xff"])
def test_verify_refuses_files_that_are_not_network_files_in_one_line(tmp_path, content):
    f = tmp_path / "n.json"
    f.write_bytes(content.encode("latin-1"))
    r = CliRunner().invoke(main, ["verify", str(f)])
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1


def test_the_writer_and_the_strict_reader_agree_on_a_constructed_network():
    from condcheck.theorem5 import construct_theorem5
    X = np.array([[-1.0], [0.5], [2.0]])
    net, claim = construct_theorem5("relu", "float8_e4m3", X, [1.0, -2.0, 0.0], [1.0, 0.5, 0.0],
                                    [[2.0], [-1.0], [0.0]], jobs=1)
    back, c2 = network_from_dict(copy.deepcopy(json.loads(json.dumps(network_to_dict(net, claim)))))
    assert back.depth == net.depth and np.array_equal(c2.values, claim.values)


def test_load_network_names_a_missing_file(tmp_path):
    with pytest.raises(CondcheckError, match="does not exist"):
        load_network(tmp_path / "nope.json")


@pytest.mark.parametrize("block", [1, 3, 1 << 20])
def test_a_network_file_is_written_as_the_json_text_of_its_dict_block_by_block(tmp_path, monkeypatch, block):
    """``save_network`` streams the layers (their sparse entries a block at a time); the text is
    json.dumps of ``network_to_dict``, for constructed networks with sparse and dense layers."""
    import condcheck.netfile as nf
    from condcheck import construct_theorem5
    monkeypatch.setattr(nf, "BLOCK", block)
    net, claim = construct_theorem5("gelu", "float8_e4m3", [[-1.0], [0.5], [2.0]], [0.25, 2.0, -1.0],
                                    [1.0, 0.5, 0.25], [[3.0], [-0.5], [1.0]])
    kinds = {next(iter(e)) for e in network_to_dict(net)["layers"]}
    assert kinds == {"weight", "weight_sparse"}
    for c in (claim, None):
        nf.save_network(tmp_path / "net.json", net, c)
        assert (tmp_path / "net.json").read_text() == json.dumps(network_to_dict(net, c))
