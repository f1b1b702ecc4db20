"""Networks (condcheck.network): the data and its checks, and what evaluating them by the paper's order
means on small hand-made cases (sums left to right, upstream first, overflow errors).

Every interpreter against the reference on a shared suite: tests/test_interpreters.py."""
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from condcheck.errors import CondcheckError, NetworkOverflowError
from condcheck.network import Layer, Network


def test_forward_sums_left_to_right_so_small_terms_after_a_large_one_are_absorbed():
    # float8_e4m3 has 4 significand bits: 16 (+) 1 = 17 is a tie between 16 and 18 -> 16 (even).
    # So 16 (+) 1 (+) 1 = 16, while 1 (+) 1 (+) 16 = 18.
    first = Network("float8_e4m3", "relu", [Layer(np.array([[1.0, 1.0, 1.0]]), [0.0])])
    assert first.forward([[16.0, 1.0, 1.0]])[0] == 16.0
    assert first.forward([[1.0, 1.0, 16.0]])[0] == 18.0


def test_backward_multiplies_upstream_first_in_left_associative_order():
    # f(x) = 1 * relu(w1 * x) with w1 = 1.125 and upstream y = 1.125: the gradient is
    # ((y (x) 1) (x) relu'(z)) (x) w1 = 1.125 (x) 1.125 = 1.265625 -> rounds to 1.25 in float8_e4m3.
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.125]]), [0.0]), Layer(np.array([[1.0]]), [0.0])])
    _, g = net.evaluate([[1.0]], [1.125])
    assert g[0, 0] == 1.25
    assert net.gradient_exact([1.0], 1.125) == [Fraction(5, 4)]


def test_forward_overflow_names_the_layer_and_neuron():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0], [128.0]]), [0.0, 0.0]),
                                          Layer(np.array([[1.0, 1.0]]), [0.0])])
    with pytest.raises(NetworkOverflowError) as e:
        net.forward([[2.0]])
    assert (e.value.layer, e.value.neuron, e.value.pass_name) == (1, 1, "forward")
    with pytest.raises(NetworkOverflowError) as e:
        net.forward_exact([2.0])
    assert (e.value.layer, e.value.neuron) == (1, 1)


def test_backward_overflow_is_an_error_too():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[128.0]]), [0.0]), Layer(np.array([[1.0]]), [0.0])])
    with pytest.raises(NetworkOverflowError) as e:
        net.evaluate([[1.0 / 256]], [4.0])
    assert e.value.pass_name == "backward" and e.value.layer == 1


def test_weights_outside_the_format_are_refused_with_their_value():
    with pytest.raises(CondcheckError, match="1.1"):
        Network("float8_e4m3", "relu", [Layer(np.array([[1.1]]), [0.0])])


def test_inputs_outside_the_format_are_refused():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0]]), [0.0])])
    with pytest.raises(CondcheckError, match="not a value of float8_e4m3"):
        net.forward([[0.3]])


def test_sparse_storage_keeps_only_nonzero_weights():
    w = sp.csr_matrix(([1.0, 2.0], ([0, 3], [5, 1])), shape=(1000, 1000))
    net = Network("float16", "relu", [Layer(w, np.zeros(1000)), Layer(np.ones((1, 1000)), [0.0])])
    assert net.layers[0].weight.nnz == 2
    assert net.parameter_count == 1000 * 1000 + 1000 + 1000 + 1


def test_upstream_values_of_a_shape_that_fits_no_point_count_are_refused():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0]]), [0.0])])
    with pytest.raises(CondcheckError, match=r"upstream values must have shape \(N,\) or \(N, K\) for N = 2"):
        net.evaluate([[1.0], [2.0]], [1.0, 1.0, 1.0])


def test_an_interpreter_derives_a_layers_structures_once():
    layer = Layer(np.array([[1.0, 2.0]]), [0.0])
    made = []
    first = layer.derived("test.plan", lambda: made.append(1) or [3])
    assert layer.derived("test.plan", lambda: made.append(1) or [4]) is first and made == [1]


@pytest.mark.parametrize("bad_at", [None, 0, 6, 7, 20, 99])
def test_the_format_check_block_by_block_names_the_first_entry_that_is_not_a_value(monkeypatch, bad_at):
    """first_not_in_format reads FORMAT_CHECK_BLOCK entries at a time (7 here, so that the first bad
    entry may sit in any block); the index is the one a membership test in the enumerated values gives."""
    import condcheck.network as network
    from condcheck.formats import get_format
    fmt = get_format("float8_e4m3")
    values = np.asarray(fmt.values(), dtype=np.float64)
    rng = np.random.default_rng(bad_at or 0)
    arr = rng.choice(values, size=100)
    if bad_at is not None:
        arr[bad_at:] = rng.choice([0.3, np.nan, np.inf, 1e6], size=100 - bad_at)
    expected = None if np.isin(arr, values).all() else int(np.flatnonzero(~np.isin(arr, values))[0])
    monkeypatch.setattr(network, "FORMAT_CHECK_BLOCK", 7)
    assert network.first_not_in_format(arr, fmt) == expected == bad_at
