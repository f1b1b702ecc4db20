"""The paper-order interpreter: exact and vectorized paths, sums left to right, overflow errors."""
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from condcheck.errors import CondcheckError, NetworkOverflowError
from condcheck.formats import get_format
from condcheck.network import Layer, Network
from condcheck.rounded_activation import get_rounded
from condcheck.rounding import round_array, round_fraction


def _random_values(fmt, rng, shape, scale=1.0, zero_fraction=0.0):
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < zero_fraction] = 0.0
    return round_array(x, fmt)[0]


def _random_network(fmt_name, act, rng, widths, scale=0.5, zero_fraction=0.3):
    fmt = get_format(fmt_name)
    layers = [Layer(_random_values(fmt, rng, (o, i), scale, zero_fraction), _random_values(fmt, rng, o, scale))
              for i, o in zip(widths[:-1], widths[1:])]
    return Network(fmt_name, act, layers)


def _dense_reference(net, x, y):
    """SPEC 2.3 literally: dense loops over every weight (zeros included), exact rounding."""
    fmt, rnd = net.format, get_rounded(net.activation, net.format, net.implementation)
    v = [Fraction(float(t)) for t in x]
    pres = []
    for l, layer in enumerate(net.layers):
        A = layer.weight.toarray()
        z = []
        for i in range(A.shape[0]):
            acc = round_fraction(Fraction(A[i, 0]) * v[0], fmt)
            for j in range(1, A.shape[1]):
                acc = round_fraction(acc + round_fraction(Fraction(A[i, j]) * v[j], fmt), fmt)
            z.append(round_fraction(acc + Fraction(layer.bias[i]), fmt))
        if l == len(net.layers) - 1:
            value = z[0]
            break
        pres.append(z)
        v = [rnd.value(t) for t in z]
    u = [Fraction(float(y))]
    for l in range(len(net.layers) - 1, -1, -1):
        A = net.layers[l].weight.toarray()
        g = []
        for j in range(A.shape[1]):
            acc = round_fraction(u[0] * Fraction(A[0, j]), fmt)
            for i in range(1, A.shape[0]):
                acc = round_fraction(acc + round_fraction(u[i] * Fraction(A[i, j]), fmt), fmt)
            g.append(acc)
        if l == 0:
            return value, g
        u = [round_fraction(gj * rnd.derivative(zj), fmt) for gj, zj in zip(g, pres[l - 1])]


@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("act", ["relu", "gelu", "sigmoid"])
def test_vectorized_path_equals_exact_path_on_random_networks(fmt_name, act):
    rng = np.random.default_rng(hash((fmt_name, act)) % 2**32)
    net = _random_network(fmt_name, act, rng, [2, 5, 4, 1])
    fmt = net.format
    X = _random_values(fmt, rng, (12, 2))
    Y = _random_values(fmt, rng, (12, 3))
    values, grads = net.evaluate(X, Y)
    for n in range(12):
        val, pre = net.forward_exact(X[n].tolist())
        assert Fraction(values[n]) == val
        for k in range(3):
            exact = net.gradient_exact(X[n].tolist(), Y[n, k], pre)
            assert [Fraction(g) for g in grads[n, k]] == exact


@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float16"])
def test_sparse_interpreter_equals_dense_loops_over_every_weight(fmt_name):
    rng = np.random.default_rng(7)
    net = _random_network(fmt_name, "elu", rng, [3, 6, 6, 1], zero_fraction=0.5)
    X = _random_values(net.format, rng, (8, 3))
    Y = _random_values(net.format, rng, 8)
    values, grads = net.evaluate(X, Y)
    for n in range(8):
        val, g = _dense_reference(net, X[n], Y[n])
        assert Fraction(values[n]) == val
        assert [Fraction(t) for t in grads[n]] == g


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


def test_many_upstream_values_per_input_give_one_gradient_each():
    rng = np.random.default_rng(3)
    net = _random_network("float8_e4m3", "tanh", rng, [1, 4, 1])
    vals = net.format.values()
    X = vals[np.abs(vals) <= 4].reshape(-1, 1)
    Y = np.tile(vals[np.abs(vals) <= 4][::7], (len(X), 1))
    _, grads = net.evaluate(X, Y)
    assert grads.shape == (len(X), Y.shape[1], 1)
    for n in (0, len(X) // 2, len(X) - 1):
        for k in range(Y.shape[1]):
            assert Fraction(grads[n, k, 0]) == net.gradient_exact([X[n, 0]], Y[n, k])[0]


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


@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float8_e4m3fnuz", "float16", "bfloat16", "float32", "float64"])
def test_compiled_kernels_and_numpy_path_compute_the_same_bits(fmt_name, monkeypatch):
    import condcheck.network as network_module
    if not network_module.kernels.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(11)
    net = _random_network(fmt_name, "swish", rng, [3, 16, 16, 1], zero_fraction=0.4)
    n = 300 if net.format.bits <= 16 else 30     # wide formats evaluate sigma~ on the certain path
    X = _random_values(net.format, rng, (n, 3))
    Y = _random_values(net.format, rng, (n, 4))
    monkeypatch.setattr(network_module, "USE_KERNELS", True)
    v1, g1 = net.evaluate(X, Y)
    monkeypatch.setattr(network_module, "USE_KERNELS", False)
    v2, g2 = net.evaluate(X, Y)
    assert np.array_equal(v1, v2) and np.array_equal(g1, g2)


@pytest.mark.parametrize("fmt_name", ["float8_e5m2", "float16"])
def test_numpy_sums_round_products_in_batches_to_the_same_bits_as_one_step_at_a_time(fmt_name, monkeypatch):
    import condcheck.network as network_module
    rng = np.random.default_rng(5)
    fmt = get_format(fmt_name)
    # a long one-row sum (a last layer), a wide sparse layer, and overflowing products
    m = _random_values(fmt, rng, (40, 300), 2.0, zero_fraction=0.8)
    m[0] = _random_values(fmt, rng, 300, 4.0)
    m[1, :5] = float(fmt.max)
    plan = Layer(m, np.zeros(40)).forward_plan
    V = _random_values(fmt, rng, (7, 3, 300), 4.0)
    V[0, 0, :5] = float(fmt.max)
    monkeypatch.setattr(network_module, "PRODUCT_ELEMENTS", 1)       # one step at a time
    want = plan.apply(V, fmt)
    for budget in (1 << 8, 1 << 15, 1 << 30):
        monkeypatch.setattr(network_module, "PRODUCT_ELEMENTS", budget)
        got = plan.apply(V, fmt)
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.isinf(want).any() and len(plan.active) == 300 and plan.active[-1] == 1


def _sum_plan_by_steps(m):
    """_SumPlan.of as first written: step by step, the k-th term of each sorted row that has one."""
    m = m.tocsr()
    m.sort_indices()
    nnz = np.diff(m.indptr)
    order = np.argsort(-nnz, kind="stable")
    active, cols, weights = [], [], []
    for k in range(int(nnz.max()) if len(nnz) else 0):
        n_k = int(np.count_nonzero(nnz[order] > k))
        pos = m.indptr[order][:n_k] + k
        active.append(n_k)
        cols.append(m.indices[pos].astype(np.intp))
        weights.append(m.data[pos])
    return order, active, cols, weights


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(0, 30), cols=st.integers(1, 30), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_a_sum_plan_made_for_every_term_at_once_equals_the_plan_made_step_by_step(rows, cols, density, seed):
    from condcheck.network import _SumPlan
    m = sp.random(rows, cols, density=density, random_state=np.random.default_rng(seed), format="csr")
    plan = _SumPlan.of(m)
    order, active, step_cols, step_weights = _sum_plan_by_steps(m)
    assert np.array_equal(plan.order, order) and plan.active == active and plan.n_out == rows
    assert len(plan.cols) == len(step_cols) == len(plan.weights)
    for got, want in zip(plan.cols + plan.weights, step_cols + step_weights):
        assert got.dtype == want.dtype and np.array_equal(got, want)
