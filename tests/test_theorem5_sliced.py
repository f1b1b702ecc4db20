"""Theorem 5 with sliced gating (d >= 2): indicators and slice gates per coordinate value, one AND gate
per point and branch (``theorem5.sliced.SlicedContext``).  Every network is verified exactly by the constructor;
the tests verify again and check the structure that makes large d = 2 domains affordable."""
import numpy as np
import pytest

from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.theorem5.tuning import EXACT_GATE_POINTS
from condcheck.theorem5 import construct_theorem5
from condcheck.verify import verify


def _grid(act, fmt, k):
    c = full_box(act, fmt, 1)[:, 0]
    c = c[np.linspace(0, len(c) - 1, k).astype(int)]
    return np.array([(a, b) for a in c for b in c])


def _build(act, fmt, k, seed=0, **kw):
    X = _grid(act, fmt, k)
    f, h, g = random_targets(fmt, X, seed, 0.25)
    return construct_theorem5(act, fmt, X, f, h, g, **kw)


@pytest.mark.parametrize("act,fmt", [("relu", "float8_e4m3"), ("tanh", "float8_e4m3"), ("gelu", "float8_e5m2")])
def test_sliced_gating_realizes_random_targets_on_an_8x8_float8_grid(act, fmt):
    net, claim = _build(act, fmt, 8, gating="slices")
    res = verify(net, claim)
    assert res.ok and res.points == 64, res.summary()


@pytest.mark.slow
@pytest.mark.parametrize("act,fmt", [(a, f) for f in ("float8_e4m3", "float8_e5m2")
                                     for a in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")
                                     if (a, f) != ("sigmoid", "float8_e5m2")])
def test_sliced_gating_realizes_random_targets_for_every_paper_activation(act, fmt):
    net, claim = _build(act, fmt, 8, seed=3, gating="slices")
    assert verify(net, claim).ok


def test_a_sliced_network_verifies_with_the_exact_rational_interpreter():
    net, claim = _build("relu", "float8_e4m3", 4, seed=1, gating="slices")
    res = verify(net, claim, method="exact")
    assert res.ok, res.summary()


def test_each_point_gate_reads_one_slice_neuron_per_coordinate():
    net, claim = _build("gelu", "float8_e4m3", 8, gating="slices")
    d = claim.points.shape[1]
    gates = net.layers[4].weight.tocsr()                  # layer 5: the AND gates of the points
    assert np.diff(gates.indptr).max() == d


def test_slice_neurons_are_shared_by_the_points_of_a_slice():
    net, claim = _build("relu", "float8_e4m3", 8, gating="slices")
    n_gates = net.layers[4].shape[0]
    n_slice = net.layers[3].shape[0]
    assert n_slice < n_gates


def _same(a, b):
    return a.widths == b.widths and all((la.weight != lb.weight).nnz == 0 and np.array_equal(la.bias, lb.bias)
                                        for la, lb in zip(a.layers, b.layers))


def test_auto_gating_switches_to_slices_beyond_the_exact_gate_limit(monkeypatch):
    import condcheck.theorem5 as t5
    below = _build("relu", "float8_e4m3", 5, verify_result=False)[0]
    assert _same(below, _build("relu", "float8_e4m3", 5, verify_result=False, gating="points")[0])
    monkeypatch.setattr(t5.tuning, "EXACT_GATE_POINTS", 24)
    above = _build("relu", "float8_e4m3", 5, verify_result=False)[0]
    assert _same(above, _build("relu", "float8_e4m3", 5, verify_result=False, gating="slices")[0])
    assert not _same(above, below)


def test_gating_other_than_auto_points_or_slices_is_refused():
    X = _grid("relu", "float8_e4m3", 2)
    with pytest.raises(CondcheckError, match="gating must be 'auto', 'points' or 'slices'"):
        construct_theorem5("relu", "float8_e4m3", X, np.zeros(4), np.zeros(4), np.zeros((4, 2)), gating="rows")


def test_one_dimensional_domains_ignore_slices():
    F = get_format("float8_e4m3")
    X = full_box("relu", F, 1)[::16]
    f, h, g = random_targets(F, X, 0, 0.25)
    a, _ = construct_theorem5("relu", F, X, f, h, g, gating="slices")
    b, _ = construct_theorem5("relu", F, X, f, h, g, gating="points")
    assert _same(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("act,fmt", [("relu", "float8_e4m3"), ("gelu", "float8_e5m2")])
def test_the_full_two_dimensional_float8_box_realizes_random_targets(act, fmt):
    X = full_box(act, fmt, 2)
    f, h, g = random_targets(fmt, X, 0, 0.25)
    net, claim = construct_theorem5(act, fmt, X, f, h, g)          # auto: sliced gating
    res = verify(net, claim, method="sparse")
    assert res.ok and res.points == len(X) > 37000, res.summary()


@pytest.mark.slow
@pytest.mark.parametrize("act,fmt", [("relu", "float8_e5m2"), ("elu", "float8_e4m3"), ("swish", "float8_e4m3")])
def test_a_64x64_grid_of_the_float8_box_realizes_random_targets(act, fmt):
    net, claim = _build(act, fmt, 64, seed=1)
    assert verify(net, claim, method="sparse").ok


def test_sliced_search_from_each_points_fewest_layers_is_no_deeper_than_from_the_depth_reached(monkeypatch):
    import condcheck.theorem5 as T5
    monkeypatch.setattr(T5.tuning, "SHORTEST_FIRST_SLICED", False)
    before, _ = _build("sigmoid", "float8_e4m3", 12, gating="slices", verify_result=False)
    monkeypatch.setattr(T5.tuning, "SHORTEST_FIRST_SLICED", True)
    after, claim = _build("sigmoid", "float8_e4m3", 12, gating="slices")
    assert after.depth <= before.depth


def test_sliced_branches_padded_with_relays_to_the_final_depth_verify_exactly():
    net, claim = _build("sigmoid", "float8_e4m3", 12, gating="slices")
    res = verify(net, claim)
    assert res.ok and res.points == 144, res.summary()
