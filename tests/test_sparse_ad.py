"""The sparse interpreter (condcheck.sparse_ad) against the dense and the exact interpreters."""
import numpy as np
import pytest

from condcheck.errors import CondcheckError, NetworkOverflowError
from condcheck.formats import get_format
from condcheck.network import Layer, Network
from condcheck.rounding import round_array
from condcheck.sparse_ad import evaluate_sparse


def _values(fmt, rng, shape, scale, zero_fraction):
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < zero_fraction] = 0.0
    return round_array(x, fmt)[0]


def _network(fmt_name, act, rng, widths, scale, zero_fraction=0.6):
    fmt = get_format(fmt_name)
    layers = [Layer(_values(fmt, rng, (o, i), scale, zero_fraction), _values(fmt, rng, o, scale, 0.2))
              for i, o in zip(widths[:-1], widths[1:])]
    return Network(fmt_name, act, layers)


@pytest.mark.parametrize("fmt_name, act", [("float8_e4m3", "relu"), ("float8_e4m3", "tanh"),
                                           ("float8_e5m2", "sigmoid"), ("float6_e3m2fn", "relu"),
                                           ("float16", "gelu")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparse_equals_dense_and_exact(fmt_name, act, seed):
    """Random sparse networks with many dead neurons (relu, saturated tanh/sigmoid): the same values and
    gradients bit for bit as the dense interpreter on every input, and as the exact one on a few."""
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(seed)
    net = _network(fmt_name, act, rng, [2, 12, 9, 7, 1], scale=0.7 if act == "relu" else 2.0)
    vals = fmt.values()
    vals = vals[np.abs(vals) <= (2 if act == "relu" else 8)]
    X = rng.choice(vals, (40, 2))
    Y = rng.choice(vals, 17)
    try:
        dv, dg = net.evaluate(X, np.broadcast_to(Y, (len(X), len(Y))))
    except NetworkOverflowError:
        with pytest.raises(NetworkOverflowError):
            evaluate_sparse(net, X, Y)
        return
    sv, sg = evaluate_sparse(net, X, Y)                      # shared y: the grouped (class) path
    assert np.array_equal(dv, sv) and np.array_equal(dg, sg)
    Y2 = rng.choice(vals, (len(X), 5))                          # per-point y: the per-point kernel
    assert np.array_equal(net.evaluate(X, Y2)[1], evaluate_sparse(net, X, Y2)[1])
    for n in range(0, len(X), 13):
        val, pre = net.forward_exact(X[n].tolist())
        assert float(val) == sv[n]
        for k in range(0, len(Y), 5):
            assert [float(g) for g in net.gradient_exact(X[n].tolist(), Y[k], pre)] == sg[n, k].tolist()


def test_sparse_reports_backward_overflow_like_the_dense_one():
    """A weight chain that overflows only backward (forward values stay small): both interpreters refuse."""
    import scipy.sparse as sp
    big = float(get_format("float8_e4m3").Omega)
    layers = [Layer(sp.csr_matrix([[1.0]]), np.array([0.0])), Layer(sp.csr_matrix([[big]]), np.array([0.0])),
              Layer(sp.csr_matrix([[big]]), np.array([0.0]))]
    net = Network("float8_e4m3", "relu", layers)
    X = np.array([[2.0 ** -9]])
    with pytest.raises(NetworkOverflowError):
        net.evaluate(X, np.array([[1.0]]))
    with pytest.raises(NetworkOverflowError, match="backward"):
        evaluate_sparse(net, X, np.array([1.0]))


def test_sparse_refuses_ieee_semantics():
    net = _network("float8_e4m3", "relu", np.random.default_rng(0), [1, 3, 1], 1.0)
    net.semantics = "ieee"
    with pytest.raises(CondcheckError, match="finite semantics"):
        evaluate_sparse(net, np.array([[1.0]]), np.array([1.0]))


def _expand_codes(comp, P):
    mode, ep, et, ec = comp
    C = np.repeat(mode[None, :], P, axis=0)
    for g in range(len(mode)):
        C[et[ep[g]:ep[g + 1]], g] = ec[ep[g]:ep[g + 1]]
    return C


def _both_forwards(net, X):
    from condcheck import sparse_ad as sa
    X = net._inputs(X)
    dtab, zero_index = sa._derivative_table(net)
    S = sa._Structure(net)
    values = np.empty(len(X))
    try:
        dense = sa._forward_compressed(net, S, X, values, zero_index, dtab)
    except NetworkOverflowError:
        dense = None
    return dense, values, sa._forward_sparse(net, X, zero_index, dtab)


@pytest.mark.parametrize("fmt_name, act", [("float8_e4m3", "relu"), ("float8_e4m3", "tanh"),
                                           ("float8_e5m2", "sigmoid"), ("float6_e3m2fn", "relu"),
                                           ("float16", "gelu"), ("float8_e4m3", "elu")])
@pytest.mark.parametrize("seed", range(6))
def test_sparse_forward_equals_the_dense_compressed_one(fmt_name, act, seed):
    """The forward pass on defaults and exceptions gives the same output values and the same
    pre-activation codes at every point and neuron as the dense pass; None exactly where the dense
    pass reports an overflow."""
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(seed)
    net = _network(fmt_name, act, rng, [2, 12, 9, 7, 1], scale=0.7 if act == "relu" else 2.0,
                   zero_fraction=0.8)
    vals = fmt.values()
    vals = vals[np.abs(vals) <= (2 if act == "relu" else 8)]
    X = rng.choice(vals, (40, 2))
    X[rng.random(40) < 0.5] = X[0]                     # repeated points: few exceptions
    dense, dv, sparse = _both_forwards(net, X)
    if dense is None:
        assert sparse is None
        return
    assert sparse is not None
    sv, comp = sparse
    assert np.array_equal(sv, dv) and np.array_equal(np.signbit(sv), np.signbit(dv))
    assert np.array_equal(_expand_codes(comp, len(X)), _expand_codes(dense, len(X)))


def test_sparse_forward_on_a_theorem7_network():
    """A gated Theorem 7 network (chains on their off states at the other points): the same codes and
    values as the dense pass, and far fewer exceptions than points x neurons."""
    from condcheck.targets import random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format("float8_e4m3")
    V = F.values()
    X = np.array([[-3.0], [0.0], [0.5], [7.0]])
    Y = V[np.abs(V) <= 2]
    fv, G = random_odd_tables(F, X, Y, 1)
    res = construct_theorem7("gelu", F, X, fv, G, upstream=Y)
    dense, dv, sparse = _both_forwards(res.network, X)
    sv, comp = sparse
    assert np.array_equal(sv, dv)
    assert np.array_equal(_expand_codes(comp, len(X)), _expand_codes(dense, len(X)))
    assert len(comp[2]) < len(comp[0]) * len(X) / 2


@pytest.mark.parametrize("fmt_name, act", [("float8_e4m3", "relu"), ("float8_e4m3", "tanh"),
                                           ("float8_e5m2", "sigmoid"), ("float16", "gelu")])
@pytest.mark.parametrize("seed", range(4))
def test_sparse_groups_equal_the_dense_classes(fmt_name, act, seed, monkeypatch):
    """The backward pass with the groups as defaults and exceptions gives the same gradients, bit for bit,
    as with one group number per point and neuron (and as the dense interpreter), repeated points and
    dead neurons included."""
    from condcheck import sparse_ad as sa
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(100 + seed)
    net = _network(fmt_name, act, rng, [2, 10, 8, 8, 6, 1], scale=0.7 if act == "relu" else 2.0,
                   zero_fraction=0.7)
    vals = fmt.values()
    vals = vals[np.abs(vals) <= (2 if act == "relu" else 8)]
    X = rng.choice(vals, (30, 2))
    X[rng.random(30) < 0.4] = X[3]
    Y = rng.choice(vals, 11)
    try:
        dv, dg = net.evaluate(X, np.broadcast_to(Y, (len(X), len(Y))))
    except NetworkOverflowError:
        with pytest.raises(NetworkOverflowError) as new:
            evaluate_sparse(net, X, Y)
        monkeypatch.setattr(sa, "SPARSE_GROUPS", False)
        monkeypatch.setattr(sa, "SPARSE_FORWARD", False)
        with pytest.raises(NetworkOverflowError) as ref:
            evaluate_sparse(net, X, Y)
        assert (new.value.pass_name, new.value.layer) == (ref.value.pass_name, ref.value.layer)
        return
    sv, sg = evaluate_sparse(net, X, Y)
    monkeypatch.setattr(sa, "SPARSE_GROUPS", False)
    monkeypatch.setattr(sa, "SPARSE_FORWARD", False)
    rv, rg = evaluate_sparse(net, X, Y)
    assert np.array_equal(sv, rv) and np.array_equal(sg, rg)
    assert np.array_equal(dv, sv) and np.array_equal(dg, sg)
    assert np.array_equal(np.signbit(dg), np.signbit(sg))


def test_sparse_groups_on_a_theorem7_network(monkeypatch):
    """A gated Theorem 7 network: the sparse groups and forward give the reference path's gradients."""
    from condcheck import sparse_ad as sa
    from condcheck.targets import random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format("float8_e4m3")
    V = F.values()
    X = np.array([[-3.0], [0.0], [0.5], [7.0], [-0.125]])
    Y = V[np.abs(V) <= 2]
    fv, G = random_odd_tables(F, X, Y, 2)
    res = construct_theorem7("swish", F, X, fv, G, upstream=Y)
    sv, sg = evaluate_sparse(res.network, X, Y)
    monkeypatch.setattr(sa, "SPARSE_GROUPS", False)
    monkeypatch.setattr(sa, "SPARSE_FORWARD", False)
    rv, rg = evaluate_sparse(res.network, X, Y)
    assert np.array_equal(sv, rv) and np.array_equal(sg, rg)
    assert np.array_equal(sg[:, :, 0], G)


# ---- per-point upstream values (Theorem 5 claims): tables, default backward values, explicit neurons ----

def _sliced_network(fmt_name, act, rng, widths, scale, zero_fraction=0.5, mixed_fraction=0.3):
    """A random network whose first layers are partly one-coordinate: every hidden neuron has a tag (a
    coordinate, or -1: mixed); a neuron of coordinate c reads only inputs / neurons of coordinate c (or
    nothing: a constant), a mixed one reads anything."""
    fmt = get_format(fmt_name)
    d = widths[0]
    tags = np.arange(d)
    layers = []
    for i, o in zip(widths[:-1], widths[1:]):
        W = _values(fmt, rng, (o, i), scale, zero_fraction)
        new = rng.integers(0, d, o)
        new[rng.random(o) < mixed_fraction] = -1
        if o == 1:
            new[:] = -1
        for r in range(o):
            if new[r] >= 0:
                W[r, (tags != new[r])] = 0.0
        layers.append(Layer(W, _values(fmt, rng, o, scale, 0.2)))
        tags = new
    return Network(fmt_name, act, layers)


def _grid(vals, rng, n, d=2):
    c = np.sort(rng.choice(vals, n, replace=False))
    return np.array(np.meshgrid(*([c] * d), indexing="ij")).reshape(d, -1).T


def _same_as_dense(net, X, Y):
    """evaluate_sparse equals the dense interpreter bit for bit (values with their zero signs; gradients
    by value), or both raise NetworkOverflowError."""
    try:
        dv, dg = net.evaluate(X, Y)
    except NetworkOverflowError:
        with pytest.raises(NetworkOverflowError):
            evaluate_sparse(net, X, Y)
        return False
    sv, sg = evaluate_sparse(net, X, Y)
    assert np.array_equal(dv, sv) and np.array_equal(np.signbit(dv), np.signbit(sv))
    assert np.array_equal(dg, sg.reshape(dg.shape))
    return True


@pytest.mark.parametrize("fmt_name, act", [("float8_e4m3", "relu"), ("float8_e4m3", "tanh"),
                                           ("float8_e5m2", "sigmoid"), ("float16", "gelu"),
                                           ("float8_e4m3", "swish")])
@pytest.mark.parametrize("seed", range(5))
def test_per_point_upstream_values_give_the_dense_numbers_on_one_coordinate_networks(fmt_name, act, seed,
                                                                                     monkeypatch):
    """Networks whose first layers read one coordinate each, on a grid, with a different upstream value at
    every point (one and three per point): the table path gives the dense numbers, and the reference
    per-point path (dense sigma~') agrees with it."""
    from condcheck import sparse_ad as sa
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(200 + seed)
    net = _sliced_network(fmt_name, act, rng, [2, 14, 12, 10, 9, 1], scale=0.7 if act == "relu" else 1.5)
    vals = fmt.values()
    vals = np.unique(vals[np.abs(vals) <= (2 if act == "relu" else 6)])
    X = _grid(vals, rng, 9)
    for K in (1, 3):
        Y = rng.choice(vals, (len(X), K))
        if _same_as_dense(net, X, Y):
            monkeypatch.setattr(sa, "PER_POINT_TABLES", False)
            rv, rg = evaluate_sparse(net, X, Y)
            monkeypatch.setattr(sa, "PER_POINT_TABLES", True)
            sv, sg = evaluate_sparse(net, X, Y)
            assert np.array_equal(rv, sv) and np.array_equal(rg, sg)


@pytest.mark.parametrize("seed", range(4))
def test_per_point_upstream_values_give_the_dense_numbers_on_random_networks(seed):
    """Random sparse networks (rows mixing the coordinates, repeated points, many dead neurons)."""
    rng = np.random.default_rng(300 + seed)
    for fmt_name, act in (("float8_e4m3", "relu"), ("float6_e3m2fn", "elu"), ("float16", "tanh")):
        fmt = get_format(fmt_name)
        net = _network(fmt_name, act, rng, [3, 11, 9, 7, 1], scale=0.7 if act == "relu" else 2.0,
                       zero_fraction=0.75)
        vals = fmt.values()
        vals = vals[np.abs(vals) <= 4]
        X = rng.choice(vals, (50, 3))
        X[rng.random(50) < 0.4] = X[1]
        _same_as_dense(net, X, rng.choice(vals, (50, 1)))


def test_per_point_path_uses_the_tables_not_the_reference():
    """On a one-coordinate network without overflow the table path answers by itself (no fallback)."""
    from condcheck import sparse_ad as sa
    rng = np.random.default_rng(7)
    net = _sliced_network("float8_e4m3", "relu", rng, [2, 10, 8, 6, 1], scale=0.5)
    vals = get_format("float8_e4m3").values()
    X = _grid(np.unique(vals[np.abs(vals) <= 1]), rng, 8)
    Y = rng.choice(vals[np.abs(vals) <= 0.25], (len(X), 1))
    res = sa._evaluate_per_point(net, net._inputs(X), Y, None)
    assert res is not None
    dv, dg = net.evaluate(X, Y)
    assert np.array_equal(res[0], dv) and np.array_equal(res[1], dg.reshape(res[1].shape))


def _wide_row_network(rng, fmt_name="float8_e4m3"):
    """Per point a chain neuron live only there (value 0 elsewhere), a constant C, and one output row
    C, chain ends, -C, ... : the output row is wide and almost every term is its default."""
    import scipy.sparse as sp
    fmt = get_format(fmt_name)
    vals = fmt.values()
    c = np.unique(vals[(np.abs(vals) <= 2)])
    n = len(c)
    # layer 1: relu(x - v) and relu(v - x) per value, a constant 1
    rows = np.repeat(np.arange(2 * n), 1)
    W1 = sp.csr_matrix((np.tile([1.0, -1.0], n), (rows, np.zeros(2 * n, int))), shape=(2 * n + 1, 1))
    b1 = np.concatenate([np.stack([-c, c], 1).ravel(), [1.0]])
    # layer 2: hats relu(1 - 32 r+ - 32 r-) (1 only at v), the constant relayed
    W2 = sp.lil_matrix((n + 1, 2 * n + 1))
    for t in range(n):
        W2[t, 2 * t] = W2[t, 2 * t + 1] = -32.0
    W2[n, 2 * n] = 1.0
    b2 = np.concatenate([np.ones(n), [0.0]])
    # output: C, hats with random weights, -C, hats again (tiny weights: absorbed by C), the constant
    cols = np.concatenate([[n], np.arange(n)])
    w = np.concatenate([[16.0], rng.choice([0.25, -0.5, 1.0, 0.0078125, 2.0 ** -9], n)])
    W3 = sp.csr_matrix((w, (np.zeros(len(cols), int), cols)), shape=(1, n + 1))
    net = Network(fmt_name, "relu", [Layer(W1, b1), Layer(W2.tocsr(), b2), Layer(W3, np.array([-16.0]))])
    return net, c.reshape(-1, 1)


def test_wide_rows_with_few_exceptions_give_the_dense_values_and_zero_signs():
    """A wide output row (a constant, one hat per point, the constant's bias removed at the end): the
    fold from the default prefix sums, with skipped zero terms and re-convergence, gives the dense values
    bit for bit, the sign of zeros included."""
    rng = np.random.default_rng(11)
    net, X = _wide_row_network(rng)
    vals = get_format("float8_e4m3").values()
    Y = rng.choice(vals[np.abs(vals) <= 0.125], (len(X), 1))
    assert _same_as_dense(net, X, Y)


@pytest.mark.parametrize("gate_pass", [False, True])
@pytest.mark.parametrize("act", ["relu", "tanh"])
@pytest.mark.parametrize("fmt_name, n", [("float16", 9), ("float8_e4m3", 7)])
def test_sliced_gating_network_gives_the_dense_numbers(act, fmt_name, n, gate_pass):
    """The benchmark's synthetic d = 2 network (indicators, AND gates, chains, tanh relays at tanh(0))."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sliced_gating.py"
    spec = importlib.util.spec_from_file_location("bench_sliced_gating", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if fmt_name == "float16":
        c = mod.grid_values(fmt_name, n, 0.125)
    else:
        V = get_format(fmt_name).values()
        c = np.unique(V[(np.abs(V) <= 1) & (np.abs(V) >= 0.25)])[::2][:n]
    net, X = mod.sliced_gating(fmt_name, act, c, c[::-1].copy(), chains=2, depth=8, gate_pass=gate_pass)
    rng = np.random.default_rng(5)
    vals = get_format(fmt_name).values()
    Y = rng.choice(vals[np.abs(vals) <= 2.0 ** -5], (len(X), 1))
    assert _same_as_dense(net, X, Y)


def test_per_point_upstream_values_report_a_backward_overflow_like_the_dense_one():
    """A weight chain that overflows only backward, with a different y per point: both refuse."""
    import scipy.sparse as sp
    big = float(get_format("float8_e4m3").Omega)
    layers = [Layer(sp.csr_matrix([[1.0]]), np.array([0.0])), Layer(sp.csr_matrix([[big]]), np.array([0.0])),
              Layer(sp.csr_matrix([[big]]), np.array([0.0]))]
    net = Network("float8_e4m3", "relu", layers)
    X = np.array([[2.0 ** -9], [0.0], [-1.0]])
    Y = np.array([[1.0], [0.0], [2.0 ** -9]])
    with pytest.raises(NetworkOverflowError):
        net.evaluate(X, Y)
    with pytest.raises(NetworkOverflowError, match="backward"):
        evaluate_sparse(net, X, Y)


def test_per_point_upstream_values_report_a_forward_overflow_like_the_dense_one():
    import scipy.sparse as sp
    big = float(get_format("float8_e4m3").Omega)
    layers = [Layer(sp.csr_matrix([[big], [1.0]]), np.array([0.0, 0.0])),
              Layer(sp.csr_matrix([[big, 1.0]]), np.array([0.0]))]
    net = Network("float8_e4m3", "relu", layers)
    X = np.array([[0.0], [0.5], [4.0]])
    Y = np.array([[1.0], [0.5], [0.25]])
    with pytest.raises(NetworkOverflowError):
        net.evaluate(X, Y)
    with pytest.raises(NetworkOverflowError, match="forward"):
        evaluate_sparse(net, X, Y)


@pytest.mark.parametrize("act", ["relu", "tanh", "sigmoid"])
def test_a_theorem5_claim_verifies_with_the_sparse_interpreter(act):
    """A Theorem 5 network on the d = 1 float8_e4m3 box (one upstream value per point): the sparse
    interpreter gives the dense numbers and the claim verifies."""
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    from condcheck.verify import verify
    X = full_box(act, "float8_e4m3", 1)
    f, h, g = random_targets("float8_e4m3", X, 0, 0.25)
    net, claim = construct_theorem5(act, "float8_e4m3", X, f, h, g, verify_result=False)
    assert _same_as_dense(net, X, h.reshape(-1, 1))
    res = verify(net, claim, method="sparse")
    assert res.ok and res.method == "sparse"


def test_a_theorem5_claim_on_a_two_dimensional_grid_gives_the_dense_numbers():
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    rng = np.random.default_rng(3)
    col = full_box("gelu", "float8_e4m3", 1)[:, 0]
    c = np.sort(rng.choice(col, 9, replace=False))
    X = np.array([(a, b) for a in c for b in c])
    f, h, g = random_targets("float8_e4m3", X, 1, 0.25)
    net, claim = construct_theorem5("gelu", "float8_e4m3", X, f, h, g, verify_result=False)
    assert len(np.unique(h)) > 10
    assert _same_as_dense(net, X, h.reshape(-1, 1))
    sv, sg = evaluate_sparse(net, X, h.reshape(-1, 1))
    assert np.array_equal(sv, claim.values) and np.array_equal(sg[:, 0], claim.gradients.reshape(len(X), -1))


def test_every_one_coordinate_sigma_derivative_kept_as_exceptions_gives_the_dense_numbers(monkeypatch):
    """SPARSE_TABLE = 1: every one-coordinate neuron's sigma~' as exceptions to its default, steps (on at
    half the values) too: the dense numbers, on a Theorem 5 network and on random one-coordinate ones."""
    from condcheck import sparse_ad as sa
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    monkeypatch.setattr(sa, "SPARSE_TABLE", 1)
    X = full_box("tanh", "float8_e5m2", 1)
    f, h, g = random_targets("float8_e5m2", X, 2, 0.25)
    net, claim = construct_theorem5("tanh", "float8_e5m2", X, f, h, g, verify_result=False)
    assert _same_as_dense(net, X, h.reshape(-1, 1))
    _, bw = sa._forward_tables(net, net._inputs(X), *sa._derivative_table(net)[::-1])
    assert (bw.bkind >= 0).any() and not ((bw.bkind >= 0) & (bw.tptr >= 0)).any()
    rng = np.random.default_rng(5)
    vals = get_format("float16").values()
    vals = np.unique(vals[np.abs(vals) <= 3])
    net = _sliced_network("float16", "gelu", rng, [2, 12, 10, 30, 1], scale=1.0, zero_fraction=0.4)
    X = _grid(vals, rng, 8)
    _same_as_dense(net, X, rng.choice(vals, (len(X), 2)))


@pytest.mark.parametrize("narrow, block, dbytes, sliced", [(0, 1 << 22, 1 << 28, True),
                                                           (10 ** 9, 5, 1 << 28, True),
                                                           (16, 64, 1, True), (16, 1 << 22, 1 << 28, False)])
def test_per_point_kernels_and_batches_give_the_same_numbers(narrow, block, dbytes, sliced, monkeypatch):
    """Every row summed by the fold (or every row by merging), the general rows in tiny blocks, the
    default backward values one y at a time, no row read as tables: the dense numbers each time."""
    from condcheck import sparse_ad as sa
    monkeypatch.setattr(sa, "SLICED_ROWS", sliced)
    monkeypatch.setattr(sa, "NARROW_ROW", narrow)
    monkeypatch.setattr(sa, "BLOCK_ENTRIES", block)
    monkeypatch.setattr(sa, "DEFAULT_BYTES", dbytes)
    rng = np.random.default_rng(17)
    finite = []
    for fmt_name, act in (("float8_e4m3", "gelu"), ("float8_e5m2", "relu"), ("float16", "tanh")):
        fmt = get_format(fmt_name)
        vals = fmt.values()
        vals = np.unique(vals[np.abs(vals) <= 3])
        net = _sliced_network(fmt_name, act, rng, [2, 12, 10, 30, 1], scale=1.0, zero_fraction=0.4)
        X = _grid(vals, rng, 8)
        finite.append(_same_as_dense(net, X, rng.choice(vals, (len(X), 2))))
    assert sum(finite) >= 2
    net, X = _wide_row_network(rng)
    vals = get_format("float8_e4m3").values()
    assert _same_as_dense(net, X, rng.choice(vals[np.abs(vals) <= 0.125], (len(X), 1)))


@pytest.mark.parametrize("sparse_table", [8, 0])
def test_one_coordinate_tables_with_few_exceptions_give_the_dense_numbers_whether_sparse_or_dense(
        sparse_table, monkeypatch):
    """A Theorem 5 box network's gradient chains are live at their own point only: their sigma~' tables
    are kept as exceptions by value index (SPARSE_TABLE = 8; 0 keeps every table dense), with the dense
    numbers either way (relu on 4,096 bfloat16 box points: the dense tables peaked at 5.96 GiB)."""
    import condcheck.sparse_ad as sa
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    monkeypatch.setattr(sa, "SPARSE_TABLE", sparse_table)
    seen = []
    original = sa._sigma_lists

    def spy(bw, vrow_h, N):
        seen.append(int(((bw.bkind >= 0) & (bw.tptr < 0)).sum()))
        return original(bw, vrow_h, N)
    monkeypatch.setattr(sa, "_sigma_lists", spy)
    X = full_box("relu", "float8_e4m3", 1)
    f, h, g = random_targets("float8_e4m3", X, 0, 0.25)
    net, claim = construct_theorem5("relu", "float8_e4m3", X, f, h, g, verify_result=False)
    assert _same_as_dense(net, X, h.reshape(-1, 1))
    assert (seen[-1] > 100) == (sparse_table > 0)
