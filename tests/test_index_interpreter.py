"""The interpreter on RN index tables (``condcheck.index_interpreter``) computes ``Network.evaluate``'s
values, and raises its overflow errors at the same place; ``verify(method="tables")`` uses it."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from condcheck.errors import CondcheckError, NetworkOverflowError
from condcheck.formats import get_format
from condcheck.index_interpreter import evaluate_indexed
from condcheck.netfile import Claim
from condcheck.network import Layer, Network, numpy_path
from condcheck.rounding import round_array
from condcheck.verify import VerifyResult, verify


def _values(fmt, rng, shape, scale, zero_fraction=0.0):
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < zero_fraction] = 0.0
    r, over = round_array(x, fmt)
    return np.where(over, 0.0, r)


def _network(fmt_name, act, rng, widths, scale, zero_fraction=0.4):
    fmt = get_format(fmt_name)
    layers = [Layer(_values(fmt, rng, (o, i), scale, zero_fraction), _values(fmt, rng, o, scale, 0.3))
              for i, o in zip(widths[:-1], widths[1:])]
    return Network(fmt_name, act, layers)


def _outcome(fn):
    """(values, gradients) or the overflow error's (pass, layer, neuron, message)."""
    try:
        with numpy_path():
            return fn()
    except NetworkOverflowError as e:
        return (e.pass_name, e.layer, e.neuron, str(e))


def _same(a, b):
    """Equal outcomes: the same error, or equal values and gradients by value (zeros in the same places)."""
    if isinstance(a[0], str) or isinstance(b[0], str):
        return a == b
    return np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float8_e5m2", "float8_e4m3fnuz", "float6_e3m2fn",
                                      "float4_e2m1fn"])
@pytest.mark.parametrize("act", ["relu", "gelu", "sigmoid", "tanh"])
def test_index_tables_give_the_values_and_gradients_of_the_rounding_interpreter(fmt_name, act):
    rng = np.random.default_rng(abs(hash((fmt_name, act))) % 2**32)
    net = _network(fmt_name, act, rng, [2, 9, 7, 1], 0.5)
    X = _values(net.format, rng, (40, 2), 1.0)
    Y = _values(net.format, rng, (40, 3), 1.0, 0.2)
    got, want = _outcome(lambda: evaluate_indexed(net, X, Y)), _outcome(lambda: net.evaluate(X, Y))
    assert not isinstance(want[0], str) and _same(got, want)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fmt_name=st.sampled_from(["float8_e4m3", "float8_e5m2", "float6_e2m3fn"]),
       act=st.sampled_from(["relu", "elu", "swish", "sigmoid"]), scale=st.sampled_from([0.25, 2.0, 64.0]),
       points=st.integers(1, 30), width=st.integers(1, 12))
def test_index_tables_agree_with_the_rounding_interpreter_on_random_networks_overflows_included(
        seed, fmt_name, act, scale, points, width):
    rng = np.random.default_rng(seed)
    net = _network(fmt_name, act, rng, [2, width, width, 1], scale)
    X = _values(net.format, rng, (points, 2), scale)
    Y = _values(net.format, rng, (points, 2), scale)
    assert _same(_outcome(lambda: evaluate_indexed(net, X, Y)), _outcome(lambda: net.evaluate(X, Y)))


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float8_e4m3fnuz", "float6_e3m2fn", "float4_e2m1fn",
                                  "b3_6"])
def test_adding_zero_maps_every_index_to_itself_so_zero_terms_may_be_skipped(name):
    from condcheck.op_tables import op_tables
    tb = op_tables(get_format(name))
    zero = tb.index_of(0.0)
    assert np.array_equal(tb.add_table[:, zero], np.arange(tb.over + 1))


def _sparse_network(fmt_name, rng, width, long_rows):
    """relu layers of which most neurons are dead at every input (biases far below their sums), then
    rows that read every neuron of the layer before: long sums of mostly zero terms, with some live."""
    fmt = get_format(fmt_name)
    w1 = _values(fmt, rng, (width, 2), 1.0)
    b1 = np.where(rng.random(width) < 0.8, -float(fmt.max_float) / 2, _values(fmt, rng, width, 0.5))
    w2 = _values(fmt, rng, (long_rows, width), 0.5, 0.1)
    w3 = _values(fmt, rng, (1, long_rows), 0.5)
    return Network(fmt_name, "relu", [Layer(w1, b1), Layer(w2, _values(fmt, rng, long_rows, 0.5)),
                                      Layer(w3, [0.0])])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fmt_name=st.sampled_from(["float8_e4m3", "float8_e5m2", "float6_e2m3fn"]),
       width=st.integers(8, 80), long_rows=st.integers(1, 20), points=st.integers(1, 30))
def test_long_sums_of_mostly_zero_terms_give_the_values_of_the_rounding_interpreter(
        seed, fmt_name, width, long_rows, points):
    rng = np.random.default_rng(seed)
    net = _sparse_network(fmt_name, rng, width, long_rows)
    X = _values(net.format, rng, (points, 2), 2.0)
    Y = _values(net.format, rng, (points, 2), 1.0)
    assert _same(_outcome(lambda: evaluate_indexed(net, X, Y)), _outcome(lambda: net.evaluate(X, Y)))


def test_the_sums_of_mostly_zero_terms_are_folded_in_by_their_nonzero_terms(monkeypatch):
    import condcheck.index_interpreter as ii
    calls = []
    fold = ii._fold_nonzero
    monkeypatch.setattr(ii, "_fold_nonzero", lambda *a: calls.append(len(a[1])) or fold(*a))
    rng = np.random.default_rng(3)
    net = _sparse_network("float8_e4m3", rng, 64, 12)
    X = _values(net.format, rng, (25, 2), 2.0)
    Y = _values(net.format, rng, (25, 2), 1.0)
    got, want = _outcome(lambda: evaluate_indexed(net, X, Y)), _outcome(lambda: net.evaluate(X, Y))
    assert calls and not isinstance(want[0], str) and _same(got, want)
    assert np.count_nonzero(want[1]) > 0            # (some gradient flows through the live neurons)


def test_a_forward_overflow_is_reported_at_the_same_layer_neuron_and_input():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0], [128.0]]), [0.0, 0.0]),
                                          Layer(np.array([[1.0, 1.0]]), [0.0])])
    got = _outcome(lambda: evaluate_indexed(net, [[1.0], [2.0]], [1.0, 1.0]))
    assert got[:3] == ("forward", 1, 1) and got == _outcome(lambda: net.evaluate([[1.0], [2.0]], [1.0, 1.0]))


def test_a_backward_overflow_is_reported_at_the_same_place():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[128.0]]), [0.0]), Layer(np.array([[1.0]]), [0.0])])
    got = _outcome(lambda: evaluate_indexed(net, [[1.0 / 256]], [4.0]))
    assert got[:2] == ("backward", 1) and got == _outcome(lambda: net.evaluate([[1.0 / 256]], [4.0]))


def test_one_upstream_per_point_gives_gradients_of_shape_points_by_inputs():
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0, -2.0]]), [0.5]), Layer(np.array([[3.0]]), [0.0])])
    values, grads = evaluate_indexed(net, [[1.0, 0.25], [2.0, 4.0]], [1.0, 0.5])
    # z = 1 - 0.5 + 0.5 = 1 (relu passes it, T' = 1), and 2 - 8 + 0.5 < 0 (dead)
    assert values.tolist() == [3.0, 0.0] and grads.tolist() == [[3.0, -6.0], [0.0, 0.0]]


def test_formats_with_more_than_1024_values_are_refused_by_name():
    net = Network("float16", "relu", [Layer(np.array([[1.0]]), [0.0])])
    with pytest.raises(CondcheckError, match="float16"):
        evaluate_indexed(net, [[1.0]], [1.0])


def test_verify_by_tables_falls_back_to_the_rounding_interpreter_where_they_do_not_apply():
    claim = Claim(5, np.array([[1.0]]), np.array([2.0]), np.array([1.0]), np.array([[2.0]]))
    for fmt_name, method in (("float8_e4m3", "tables"), ("float16", "fast")):
        net = Network(fmt_name, "relu", [Layer(np.array([[2.0]]), [0.0])])
        res = verify(net, claim, method="tables")
        assert res.ok and res.method == method


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
