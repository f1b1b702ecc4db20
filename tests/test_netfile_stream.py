"""Network files are read streamed (ijson): the same network, claim and error messages as ``json.loads``
and ``network_from_dict``, with tens of bytes an entry of a sparse weight, not hundreds."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import condcheck
from condcheck import netfile
from condcheck.errors import CondcheckError
from condcheck.netfile import load_network, network_from_dict, save_network
from condcheck.network import Layer, Network

ROOT = Path(__file__).resolve().parents[1]
#: float8_e4m3 values
VALUES = np.array([1.5, -0.25, 3.0, -240.0, 0.015625, 2.0 ** -9, 224.0, -2.0 ** -6])


def _theorem5():
    return condcheck.construct_theorem5("gelu", "float8_e4m3", [[-1.0], [0.5], [2.0]], [0.25, 2.0, -1.0],
                                        [1.0, 0.5, 0.25], [[3.0], [-0.5], [1.0]])


def _random_sparse(seed, widths=(40, 60, 30, 1), density=0.05):
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(widths, widths[1:]):
        w = sp.random(n_out, n_in, density=density, random_state=rng, format="csr",
                      data_rvs=lambda k: rng.choice(VALUES, size=k))
        layers.append(Layer(w, rng.choice(VALUES, size=n_out)))
    return Network("float8_e4m3", "relu", layers), None


def _old(text):
    """What the reader before streaming gave: (network, claim), or the error message."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        return f"is not valid JSON: {e}"
    try:
        return network_from_dict(d)
    except CondcheckError as e:
        return str(e)


def _new(path, **kw):
    try:
        return load_network(path)
    except CondcheckError as e:
        return str(e)


def _same_network(a, b):
    (na, ca), (nb, cb) = a, b
    assert (na.format.name, na.activation, na.implementation, na.semantics, na.input_dim) == \
        (nb.format.name, nb.activation, nb.implementation, nb.semantics, nb.input_dim)
    assert len(na.layers) == len(nb.layers)
    for la, lb in zip(na.layers, nb.layers):
        wa, wb = la.weight, lb.weight
        assert wa.shape == wb.shape
        for x, y in ((wa.indptr, wb.indptr), (wa.indices, wb.indices)):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert np.array_equal(wa.data.view(np.int64), wb.data.view(np.int64))
        assert np.array_equal(la.bias.view(np.int64), lb.bias.view(np.int64))
    assert (ca is None) == (cb is None)
    if ca is not None:
        assert ca.theorem == cb.theorem
        for name in ("points", "values", "upstream", "gradients"):
            x, y = getattr(ca, name), getattr(cb, name)
            assert x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def _write(tmp_path, text, name="net.json"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _saved(tmp_path, net, claim):
    path = tmp_path / "net.json"
    save_network(path, net, claim)
    return path, path.read_text()


@pytest.mark.parametrize("make", [_theorem5, lambda: _random_sparse(1), lambda: _random_sparse(2, (7, 300, 1), 0.3),
                                  lambda: _random_sparse(3, (500, 2, 1), 0.01)])
def test_a_streamed_read_gives_the_layers_and_claim_of_the_whole_text_read(tmp_path, make):
    path, text = _saved(tmp_path, *make())
    assert '"weight_sparse"' in text
    _same_network(load_network(path), _old(text))


@pytest.mark.parametrize("backend", ["yajl2_c", "python"])
def test_both_ijson_parsers_give_the_same_network(tmp_path, backend):
    path, text = _saved(tmp_path, *_theorem5())
    _same_network(network_from_dict(netfile.read_streamed(path, backend)), _old(text))


def test_a_file_read_without_ijson_gives_the_same_network(tmp_path, monkeypatch):
    path, text = _saved(tmp_path, *_random_sparse(4))
    monkeypatch.setitem(sys.modules, "ijson", None)          # import ijson raises ImportError
    _same_network(load_network(path), _old(text))


def _sparse_file():
    """A two-layer file whose first layer is weight_sparse, as a dict (entries rows, then columns)."""
    w = np.zeros((3, 12))
    w[0, 0], w[0, 2], w[1, 1], w[2, 0], w[2, 2] = 1.5, -0.25, 3.0, 0.015625, 224.0
    net = Network("float8_e4m3", "relu", [Layer(w, [0.0, 1.5, -0.25]), Layer(np.array([[1.0, 2.0, -1.0]]), [0.0])])
    claim = netfile.Claim(5, np.full((1, 12), 0.5), [0.5], [1.0], [[0.5] * 12])
    d = json.loads(json.dumps(netfile.network_to_dict(net, claim)))
    assert d["layers"][0]["weight_sparse"]["entries"][0] == [0, 0, "0x1.8000000000000p+0"]
    return d


def test_a_hexadecimal_float_in_another_form_is_read_exactly(tmp_path):
    d = _sparse_file()
    entries = d["layers"][0]["weight_sparse"]["entries"]
    entries[0][2], entries[1][2] = "0x3p-1", "-0x1.000p-2"
    entries[2][2] = "0x0.0p+0"                               # an explicit zero: dropped, as before
    text = json.dumps(d)
    _same_network(load_network(_write(tmp_path, text)), _old(text))


def test_the_fields_of_a_sparse_weight_may_come_in_any_order(tmp_path):
    d = _sparse_file()
    ws = d["layers"][0]["weight_sparse"]
    d["layers"][0]["weight_sparse"] = {"entries": ws["entries"], "shape": ws["shape"]}
    text = json.dumps(d)
    _same_network(load_network(_write(tmp_path, text)), _old(text))


def test_a_repeated_key_keeps_its_last_value_as_before(tmp_path):
    text = json.dumps(_sparse_file())
    bad = '"entries": [[0, 0, "0xzz"]], '                    # read, then replaced by the good entries
    text = text.replace('"entries": ', bad + '"entries": ', 1)
    text = text.replace('"layers": ', '"layers": [7], "layers": ', 1)
    assert isinstance(_old(text), tuple)
    _same_network(load_network(_write(tmp_path, text)), _old(text))


def _entries(d, layer=0):
    return d["layers"][layer]["weight_sparse"]["entries"]


def _set(path_keys, value):
    def change(d):
        target = d
        for key in path_keys[:-1]:
            target = target[key]
        target[path_keys[-1]] = value
    return change


def _entry(k, i, value):
    def change(d):
        _entries(d)[k][i] = value
    return change


def _swap(d):
    e = _entries(d)
    e[1], e[2] = e[2], e[1]


def _repeat(d):
    e = _entries(d)
    e.insert(2, list(e[1]))


def _out_of_order_then_outside(d):
    _swap(d)
    _entries(d)[4][0] = 3


def _out_of_order_and_outside_at_once(d):
    _entries(d)[2] = [0, 12, "0x1.8000000000000p+0"]


def _bad_hex_and_unknown_top_field(d):
    _entries(d)[1][2] = "0xnope"
    d["extra"] = 1


def _bad_hex_and_missing_bias(d):
    _entries(d)[1][2] = "0xnope"
    del d["layers"][0]["bias"]


def _entries_first_outside(d):
    ws = d["layers"][0]["weight_sparse"]
    d["layers"][0]["weight_sparse"] = {"entries": ws["entries"], "shape": [2, 12]}


CORRUPTED = {
    "bad hex": _entry(1, 2, "0x1.8q+1"),
    "more bits than float64": _entry(1, 2, "0x1.00000000000001p+0"),
    "hex not a value of the format": _entry(3, 2, "0x1.1000000000000p+0"),
    "infinity as text": _entry(3, 2, "inf"),
    "a number, not text": _entry(1, 2, 1.5),
    "row outside the shape": _entry(3, 0, 3),
    "column outside the shape": _entry(3, 1, 40),
    "negative row": _entry(1, 0, -1),
    "row a float": _entry(1, 0, 1.0),
    "row a bool": _entry(1, 0, True),
    "row a string": _entry(1, 0, "1"),
    "row a list": _entry(1, 0, [1, [2, {"a": None}]]),
    "huge row": _entry(1, 0, 2 ** 31),
    "entry of two": lambda d: _entries(d).__setitem__(1, [0, 2]),
    "entry of four": lambda d: _entries(d).__setitem__(1, [0, 2, "0x1.0000000000000p+0", 1]),
    "entry an object": lambda d: _entries(d).__setitem__(1, {"row": 0}),
    "entry a number": lambda d: _entries(d).__setitem__(1, 4),
    "entries out of order": _swap,
    "entries repeated": _repeat,
    "out of order, then outside the shape": _out_of_order_then_outside,
    "out of order and outside the shape at once": _out_of_order_and_outside_at_once,
    "entries before a smaller shape": _entries_first_outside,
    "shape a string": _set(["layers", 0, "weight_sparse", "shape"], "3x12"),
    "shape of three": _set(["layers", 0, "weight_sparse", "shape"], [3, 12, 1]),
    "shape with a zero": _set(["layers", 0, "weight_sparse", "shape"], [0, 12]),
    "entries an object": _set(["layers", 0, "weight_sparse", "entries"], {"0": [0, 0, "0x1p+0"]}),
    "entries null": _set(["layers", 0, "weight_sparse", "entries"], None),
    "unknown field in weight_sparse": _set(["layers", 0, "weight_sparse", "dtype"], "f8"),
    "unknown field in a layer": _set(["layers", 0, "scale"], 1),
    "bad hex and an unknown top-level field": _bad_hex_and_unknown_top_field,
    "bad hex and a missing bias": _bad_hex_and_missing_bias,
    "weights too wide for the next layer": _set(["layers", 1, "weight"], [["0x1.0000000000000p+0"] * 2]),
    "layers not a list": _set(["layers"], {"0": 1}),
}


@pytest.mark.parametrize("name", sorted(CORRUPTED))
def test_a_corrupted_file_is_refused_with_the_message_of_the_whole_text_read(tmp_path, name):
    d = _sparse_file()
    CORRUPTED[name](d)
    text = json.dumps(d)
    want = _old(text)
    assert isinstance(want, str), want
    got = _new(_write(tmp_path, text))
    assert got == want and "\n" not in got


TEXT_CORRUPTED = {
    "truncated in the entries": lambda t: t[:t.index('"entries": ') + 40],
    "truncated at the end": lambda t: t[:-1],
    "a missing comma between entries": lambda t: t.replace("], [", "] [", 1),
    "a trailing comma in the entries": lambda t: t.replace("]], \"bias\"", "],], \"bias\"", 1),
    "a form feed between tokens": lambda t: t.replace(", ", ",\f", 1),
    "a NaN bias": lambda t: t.replace('"bias": ["0x0.0p+0"', '"bias": [NaN', 1),
    "a row beyond 64 bits": lambda t: t.replace("[0, 0, ", "[18446744073709551616, 0, ", 1),
    "text after the object": lambda t: t + " {}",
    "empty": lambda t: "",
}


@pytest.mark.parametrize("name", sorted(TEXT_CORRUPTED))
def test_a_file_that_is_not_json_is_refused_with_the_message_of_the_whole_text_read(tmp_path, name):
    text = TEXT_CORRUPTED[name](json.dumps(_sparse_file()))
    want = _old(text)
    assert isinstance(want, str), want
    got = _new(_write(tmp_path, text))
    assert got.endswith(want) and "\n" not in got


@pytest.mark.parametrize("backend", ["yajl2_c", "python"])
@pytest.mark.parametrize("name", sorted(TEXT_CORRUPTED))
def test_a_large_file_that_is_not_json_gets_a_one_line_message(tmp_path, monkeypatch, name, backend):
    import ijson
    monkeypatch.setattr(netfile, "EXACT_JSON_ERRORS", 0)       # as if every file were too large to read whole
    monkeypatch.setattr(ijson, "basic_parse", ijson.get_backend(backend).basic_parse)
    text = TEXT_CORRUPTED[name](json.dumps(_sparse_file()))
    path = _write(tmp_path, text)
    with pytest.raises(CondcheckError) as e:
        load_network(path)
    msg = str(e.value)                                          # the python parser reads a 65-bit integer
    assert msg.startswith(f"network file {str(path)!r} is not valid JSON: ") or msg == _old(text), msg
    assert "\n" not in msg


def _synthetic(path, n):
    """A file with a sparse first layer of n entries (about 38 bytes each), written directly."""
    BLOCK = 1 << 18
    width = 4 * int(np.sqrt(n))
    rng = np.random.default_rng(5)
    flat = np.sort(rng.choice(width * width, size=n, replace=False))
    hexes = [float(v).hex() for v in VALUES]
    pick = rng.integers(0, len(VALUES), size=n).tolist()
    head = {"schema": netfile.SCHEMA, "format": "float8_e4m3", "activation": "relu", "layers": "LAYERS"}
    before, after = json.dumps(head).split('"LAYERS"')
    with open(path, "w") as fh:
        fh.write(before + '[{"weight_sparse": {"shape": [%d, %d], "entries": [' % (width, width))
        for a in range(0, n, BLOCK):
            rows, cols = (flat[a:a + BLOCK] // width).tolist(), (flat[a:a + BLOCK] % width).tolist()
            fh.write((", " if a else "") + ", ".join(f'[{r}, {c}, "{hexes[p]}"]'
                                                     for r, c, p in zip(rows, cols, pick[a:a + BLOCK])))
        fh.write(']}, "bias": [%s]}, ' % ", ".join(['"0x0.0p+0"'] * width))
        fh.write('{"weight": [[%s]], "bias": ["0x0.0p+0"]}]' % ", ".join(['"0x1.0000000000000p+0"'] * width))
        fh.write(after)


MEASURE = textwrap.dedent("""
    import json, re, sys, time
    from pathlib import Path
    from condcheck.netfile import load_network, network_from_dict
    def peak():                                                # this process's peak RSS in bytes
        return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024
    load_network(sys.argv[1])                                  # the imports, before the measure
    Path("/proc/self/clear_refs").write_text("5")              # the peak from here on
    before = peak()
    t = time.perf_counter()
    if sys.argv[3] == "streamed":
        net, _ = load_network(sys.argv[2])
    else:
        net, _ = network_from_dict(json.loads(Path(sys.argv[2]).read_text()))
    print(json.dumps({"entries": int(net.layers[0].weight.nnz), "grown": peak() - before,
                      "seconds": time.perf_counter() - t}))
""")


def _measure(small, big, how):
    out = subprocess.run([sys.executable, "-c", MEASURE, str(small), str(big), how], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures the peak RSS in Linux's /proc")
def test_reading_a_million_sparse_entries_grows_the_peak_memory_by_less_than_100_bytes_an_entry(tmp_path):
    """The reader before streaming grew it by about 240-355 bytes an entry (the text, a list per entry);
    streamed, about 60 (2026-12-04).  ``Network``'s own check that every weight is a value of the format
    (``network.first_not_in_format``) goes a block at a time and adds about 3 (41 on a whole layer)."""
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    _synthetic(small, 1000)
    _synthetic(big, 1_000_000)
    got = _measure(small, big, "streamed")
    assert got["entries"] == 1_000_000
    assert got["grown"] / got["entries"] < 100, got
