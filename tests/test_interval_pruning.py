"""Networks pruned for a part of the domain (condcheck/interval_pruning.py): the bounds hold at every point,
and verification on the pruned network says what it says on the whole one, part by part."""
import numpy as np
import pytest
import scipy.sparse as sp

from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.interpreters import get_interpreter
from condcheck.interval_pruning import intervals, pruned_for, verify_in_parts, verify_pruned
from condcheck.netfile import Claim
from condcheck.network import Layer, Network
from condcheck.targets import box_sample, random_targets
from condcheck.theorem5 import construct_theorem5
from condcheck.verify import verify


@pytest.fixture(scope="module")
def built():
    X = box_sample("gelu", "float16", 1, 160, 2)
    f, h, g = random_targets("float16", X, 2, 0.25)
    return construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)


def _part(claim, p):
    return Claim(5, claim.points[p], claim.values[p], claim.upstream[p], claim.gradients[p])


def test_the_bounds_hold_every_pre_activation_at_every_point_of_the_part(built):
    net, claim = built
    X = claim.points[40:72]
    ivs = intervals(net, X.min(axis=0), X.max(axis=0))
    dense = get_interpreter("dense")
    v = X.astype(float)
    for layer, (lo, hi, unsure) in zip(net.layers, ivs):
        z = dense.forward_sums(layer, v, net.format)
        ok = ~unsure[None, :]
        assert ((z >= lo[None, :]) | ~ok).all() and ((z <= hi[None, :]) | ~ok).all()
        v = dense.activation(net, z, derivative=False)


@pytest.mark.parametrize("start,size", [(0, 32), (50, 17), (128, 32), (159, 1)])
def test_a_pruned_network_verifies_a_part_as_the_whole_network_does(built, start, size):
    net, claim = built
    part = _part(claim, range(start, start + size))
    pruned, kept = pruned_for(net, part.points)
    assert verify(pruned, part, method="sparse").to_dict() == verify(net, part, method="sparse").to_dict()
    # most neurons of the first layers vary elsewhere only
    assert kept[0] < net.layers[0].shape[0] // 2


def test_a_wrong_value_is_found_on_its_part_as_on_the_whole_network(built):
    net, claim = built
    bad = Claim(5, claim.points, claim.values.copy(), claim.upstream, claim.gradients)
    bad.values[70] = -bad.values[70] if bad.values[70] else 1.0
    part = _part(bad, range(64, 96))
    got = verify(pruned_for(net, part.points)[0], part, method="sparse")
    assert not got.ok and got.to_dict() == verify(net, part, method="sparse").to_dict()


def test_verification_in_parts_merges_to_the_verification_of_the_whole_claim(built):
    net, claim = built
    merged = verify_in_parts(net, claim, [range(0, 100), range(100, 160)])
    assert merged.ok and merged.value_checks == 160 and merged.gradient_checks == 160


def test_an_overflow_in_a_neuron_nobody_reads_is_kept_and_reported():
    F = get_format("float16")
    big = float(F.max_float)
    # neuron 1 = T(x) is read by the output; neuron 2 = T(Omega x) overflows for |x| > 1 and is read by nobody
    l1 = Layer(sp.csr_matrix(np.array([[1.0], [big]])), np.zeros(2))
    l2 = Layer(sp.csr_matrix(np.array([[1.0, 0.0]])), np.zeros(1))
    net = Network(F, "gelu", [l1, l2])
    X = np.array([[2.0], [3.0]])
    claim = Claim(5, X, np.zeros(2), np.ones(2), np.zeros((2, 1)))
    pruned, kept = pruned_for(net, X)
    assert kept == [2]
    want = verify(net, claim, method="sparse")
    assert not want.ok and verify(pruned, claim, method="sparse").to_dict() == want.to_dict()


def test_a_format_beyond_16_bits_is_refused_in_one_line():
    F = get_format("float32")
    net = Network(F, "gelu", [Layer(sp.csr_matrix(np.array([[1.0]])), np.zeros(1))])
    with pytest.raises(CondcheckError, match="formats of at most 16 bits, not float32"):
        pruned_for(net, np.array([[1.0]]))


def test_the_bounds_read_a_layers_own_sorted_weight_without_a_copy():
    import scipy.sparse as sp

    from condcheck import interval_pruning
    from condcheck.network import Layer
    layer = Layer(sp.csr_matrix(np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])), np.zeros(2))
    assert interval_pruning._sorted_csr(layer) is layer.weight


def test_the_bounds_sort_a_weight_changed_after_its_layer_was_made():
    import scipy.sparse as sp

    from condcheck import interval_pruning
    from condcheck.network import Layer
    layer = Layer(sp.csr_matrix(np.array([[1.0, 2.0]])), np.zeros(1))
    layer.weight = sp.csr_matrix((np.array([2.0, 0.0, 1.0]), np.array([1, 0, 0]), np.array([0, 3])), shape=(1, 2))
    w = interval_pruning._sorted_csr(layer)
    assert w is not layer.weight and w.indices.tolist() == [0, 1] and w.data.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("start,size", [(0, 32), (50, 17), (159, 1)])
def test_a_compacted_network_gives_a_part_the_same_values_and_gradients_bit_for_bit(built, start, size):
    net, claim = built
    X, Y = claim.points[start:start + size], claim.upstream[start:start + size]
    sparse = get_interpreter("sparse")
    want_v, want_g = sparse.evaluate(net, X, Y)
    got_v, got_g = sparse.evaluate(pruned_for(net, X, compact=True)[0], X, Y)
    assert np.array_equal(got_v, want_v) and np.array_equal(got_g, want_g)
    # (a zero's sign is not compared, docs/semantics.md; every other bit is)
    assert np.array_equal(np.abs(got_v).view(np.int64), np.abs(want_v).view(np.int64))
    assert np.array_equal(np.abs(got_g).view(np.int64), np.abs(want_g).view(np.int64))


def test_a_compacted_network_is_as_wide_as_what_the_part_keeps_and_reads(built):
    net, claim = built
    X = claim.points[40:72]
    pruned, kept = pruned_for(net, X)
    compacted, kept_too = pruned_for(net, X, compact=True)
    assert kept_too == kept
    assert [l.weight.nnz for l in compacted.layers] == [l.weight.nnz for l in pruned.layers]
    layers = compacted.layers
    for l in range(len(layers) - 1):
        # every neuron left reads something, or is read by the next layer
        reads = np.diff(layers[l].weight.indptr) > 0
        read = np.bincount(layers[l + 1].weight.indices, minlength=layers[l].shape[0]) > 0
        assert (reads | read).all() and kept[l] <= layers[l].shape[0] <= net.layers[l].shape[0]
    # the first layers vary elsewhere only
    assert all(w < full // 2 for w, full in zip(compacted.widths[1:4], net.widths[1:4]))


def test_a_part_verified_compacted_reports_the_whole_networks_failure():
    F = get_format("float16")
    big = float(F.max_float)
    # neuron 0 is the constant T(-100) that nobody reads (left out when compacted), neuron 1 = T(x) is
    # read by the output, neuron 2 = T(Omega x) overflows for |x| > 1 and is read by nobody
    l1 = Layer(sp.csr_matrix(np.array([[0.0], [1.0], [big]])), np.array([-100.0, 0.0, 0.0]))
    l2 = Layer(sp.csr_matrix(np.array([[0.0, 1.0, 0.0]])), np.zeros(1))
    net = Network(F, "gelu", [l1, l2])
    X = np.array([[2.0], [3.0]])
    claim = Claim(5, X, np.zeros(2), np.ones(2), np.zeros((2, 1)))
    assert pruned_for(net, X, compact=True)[0].widths == [1, 2, 1]
    want = verify(net, claim, method="sparse")
    assert not want.ok and "neuron 2" in str(want.first_failure)
    got = verify_pruned(net, X, lambda n: verify(n, claim, method="sparse"))
    assert got.to_dict() == want.to_dict()
