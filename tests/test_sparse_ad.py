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
