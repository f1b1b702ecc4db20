"""Every interpreter (condcheck.interpreters) against the reference, on one shared suite of networks.

The reference is the exact interpreter (Fractions, exact rounding).  Every other interpreter -- each
registered one, and the option variants that pick its other strategies and tiny batch sizes -- must
give its values and AD gradients (compared by value: +0 == -0) or raise its failure (pass, layer,
neuron, input and message), or refuse a network it does not handle, where this module expects it to
(its own list, not the interpreter's).  The suite: random sparse networks with dead neurons and
overflows drawn by hypothesis (both semantics, d = 1 and 2, many formats, several upstream values per
point, the same at every point or not), hand-made overflow and IEEE cases, and networks of the
constructors and of the benchmarks.
"""
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from condcheck import kernels
from condcheck.errors import CondcheckError, InterpreterRefusedError, NetworkOverflowError
from condcheck.formats import get_format
from condcheck.interpreters import get_interpreter, interpreter_names
from condcheck.network import Layer, Network
from condcheck.rounding import round_array

needs_numba = pytest.mark.skipif(not kernels.HAVE_NUMBA, reason="numba is not installed")


# the compiled kernels on one thread (tests/conftest.py); the numbers do not depend on it
# (tests/test_sparse_strategies.py runs them on all threads, on constructed networks)
pytestmark = pytest.mark.usefixtures("one_compiled_thread")


# ---- the interpreters ----------------------------------------------------------------------------------------
def _variants():
    """label -> interpreter: every registered one but the reference, and variants with other options."""
    out = {name: (lambda n=name: get_interpreter(n)) for name in interpreter_names() if name != "exact"}
    from condcheck.interpreters.dense import DenseInterpreter
    from condcheck.interpreters.tables import TablesInterpreter
    out["dense-tiny-batches"] = lambda: DenseInterpreter(kernels=False, chunk_elements=64, product_elements=2)
    out["tables-tiny-batches"] = lambda: TablesInterpreter(chunk_elements=64, product_elements=4, fold_steps=2)
    if kernels.HAVE_NUMBA:
        from condcheck.interpreters.sparse import SparseInterpreter
        out.update({
            "sparse-dense-forward": lambda: SparseInterpreter(forward="dense"),
            "sparse-classes": lambda: SparseInterpreter(groups="classes"),
            "sparse-active": lambda: SparseInterpreter(per_point="active"),
            "sparse-unsliced-dense-tables": lambda: SparseInterpreter(sliced_rows=False, sparse_table=0),
            "sparse-every-table-sparse": lambda: SparseInterpreter(sparse_table=1),
            "sparse-merge-every-row": lambda: SparseInterpreter(narrow_row=10 ** 9),
            "sparse-tiny-blocks": lambda: SparseInterpreter(narrow_row=0, block_entries=5, table_block_entries=5,
                                                            default_bytes=1, class_bytes=1, chunk_entries=64),
        })
    return out


VARIANTS = _variants()
_MADE = {}


def interpreter(label):
    if label not in _MADE:
        _MADE[label] = VARIANTS[label]()
    return _MADE[label]


def expected_refusal(label: str, net) -> bool:
    """Whether the interpreter must refuse the network: this module's own list."""
    family = label.split("-")[0]
    if family == "tables":
        return net.ieee or net.format.bits > 8
    if family == "sparse":
        return net.ieee or not kernels.HAVE_NUMBA
    if family == "torch":
        import importlib.util
        return net.ieee or importlib.util.find_spec("torch") is None
    if label == "dense":
        return False
    return False


# ---- outcomes ------------------------------------------------------------------------------------------------
def outcome(interp, net, X, Y):
    """("values", values, gradients) | ("failure", pass, layer, neuron, input index, message) | ("refused", message)."""
    try:
        v, g = interp.evaluate(net, X, Y)
        return ("values", v, g)
    except NetworkOverflowError as e:
        return ("failure", e.pass_name, e.layer, e.neuron, e.input_index, str(e))
    except InterpreterRefusedError as e:
        return ("refused", str(e))


def same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "values":
        return np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    return a == b


def check_every_interpreter(net, X, Y, labels=None):
    """The reference's outcome, after asserting every interpreter's equals it (or refuses as expected)."""
    ref = outcome(get_interpreter("exact"), net, X, Y)
    assert ref[0] != "refused"
    for label in labels or VARIANTS:
        got = outcome(interpreter(label), net, X, Y)
        if expected_refusal(label, net):
            assert got[0] == "refused", (label, got[:2])
            assert "cannot evaluate this network" in got[1], got[1]
            continue
        assert same(got, ref), (label, got[:6], ref[:6])
    return ref


# ---- random networks --------------------------------------------------------------------------------------------
FORMATS = ["float8_e4m3", "float8_e5m2", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn", "float16", "bfloat16",
           "float32", "float64"]
ACTIVATIONS = ["relu", "gelu", "tanh", "sigmoid", "elu", "swish"]


def _values(fmt, rng, shape, scale, zero_fraction=0.0):
    """Random values of fmt: normal * scale rounded (an overflow becomes 0), some zeros."""
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < zero_fraction] = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        r, over = round_array(x, fmt)
    return np.where(over, 0.0, r)


@dataclass
class Case:
    net: Network
    X: np.ndarray
    Y: np.ndarray


def random_case(fmt_name, act, semantics, d, hidden, seed, scale, zero_fraction, dead_fraction, n_points, K,
                shared, repeat):
    """A random sparse network (a share of its neurons dead: biases of -Omega/2), points (some repeated)
    and K upstream values per point (the same at every point when ``shared``)."""
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(seed)
    widths = [d] + list(hidden) + [1]
    layers = []
    for i, o in zip(widths[:-1], widths[1:]):
        b = _values(fmt, rng, o, scale, 0.3)
        if o > 1:
            b[rng.random(o) < dead_fraction] = -float(fmt.max) / 2
        layers.append(Layer(_values(fmt, rng, (o, i), scale, zero_fraction), b))
    net = Network(fmt, act, layers, semantics=semantics)
    X = _values(fmt, rng, (n_points, d), 2.0)
    X[rng.random(n_points) < repeat] = X[0]
    Y = _values(fmt, rng, (1 if shared else n_points, K), 1.0, 0.2)
    return Case(net, X, np.ascontiguousarray(np.broadcast_to(Y, (n_points, K))))


@st.composite
def random_cases(draw):
    d = draw(st.integers(1, 2))
    return random_case(
        draw(st.sampled_from(FORMATS)), draw(st.sampled_from(ACTIVATIONS)),
        draw(st.sampled_from(["finite", "finite", "ieee"])), d,
        draw(st.lists(st.integers(1, 6), min_size=0, max_size=3)), draw(st.integers(0, 2 ** 32 - 1)),
        draw(st.sampled_from([0.25, 1.0, 4.0, 64.0])), draw(st.sampled_from([0.0, 0.5, 0.8])),
        draw(st.sampled_from([0.0, 0.3, 0.7])), draw(st.integers(1, 6)), draw(st.integers(1, 3)),
        draw(st.booleans()), draw(st.sampled_from([0.0, 0.4])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=random_cases())
def test_every_interpreter_gives_the_references_values_gradients_or_failure_on_random_networks(case):
    check_every_interpreter(case.net, case.X, case.Y)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=random_cases())
def test_every_interpreter_agrees_with_the_reference_on_many_more_random_networks(case):
    check_every_interpreter(case.net, case.X, case.Y)


@pytest.mark.parametrize("fmt_name", FORMATS)
@pytest.mark.parametrize("shared", [False, True])
def test_every_format_runs_through_every_interpreter_with_several_upstream_values(fmt_name, shared):
    """Each format once, d = 2, three upstream values per point (Theorem 7 style when shared)."""
    case = random_case(fmt_name, "gelu", "finite", 2, [5, 4], zlib.crc32(fmt_name.encode()), 0.5, 0.5, 0.3,
                       5, 3, shared, 0.4)
    assert check_every_interpreter(case.net, case.X, case.Y)[0] == "values"


# ---- overflow: the first failing input, its first failing step, the lowest neuron --------------------------
def _net(fmt, act, layers, semantics="finite"):
    return Network(fmt, act, [Layer(np.array(w, float), np.array(b, float)) for w, b in layers],
                   semantics=semantics)


def test_a_forward_overflow_at_a_later_layer_of_an_earlier_input_is_reported_first():
    # input 0 overflows only at layer 2 (120 relu(2) + 120), input 1 already at layer 1 (64 x 4);
    # an interpreter that checks layer by layer over all inputs meets input 1 first
    net = _net("float8_e4m3", "relu", [([[1.0], [64.0]], [0.0, -240.0]), ([[120.0, 1.0]], [120.0]),
                                       ([[1.0]], [0.0])])
    X = np.array([[2.0], [4.0]])
    ref = check_every_interpreter(net, X, np.ones((2, 1)))
    assert ref[:5] == ("failure", "forward", 2, 0, 0)


def test_a_backward_overflow_of_an_earlier_input_comes_before_a_forward_overflow_of_a_later_one():
    # input 0: forward finite, the backward sum through 128 x 128 overflows; input 1 overflows forward
    net = _net("float8_e4m3", "relu", [([[1.0]], [0.0]), ([[128.0]], [0.0]), ([[128.0]], [0.0])])
    X = np.array([[2.0 ** -9], [1.0]])
    ref = check_every_interpreter(net, X, np.ones((2, 1)))
    assert ref[:5] == ("failure", "backward", 2, 0, 0)


def test_at_one_step_the_lowest_failing_neuron_over_every_upstream_value_is_reported():
    # the backward sums of the output layer [16, 128]: y = 4 overflows neuron 1 only (512), y = 32 both
    net = _net("float8_e4m3", "relu", [([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0]), ([[16.0, 128.0]], [0.0])])
    X = np.array([[0.25, 0.25]])
    ref = check_every_interpreter(net, X, np.array([[4.0, 32.0]]))
    assert ref[:5] == ("failure", "backward", 2, 0, 0)


def test_a_product_by_the_activation_derivative_that_overflows_is_reported_at_its_neuron():
    # gelu'(1) > 1: 240 (x) gelu~'(1) overflows float8_e4m3 in the backward pass of hidden neuron 1
    net = _net("float8_e4m3", "gelu", [([[0.0], [1.0]], [0.0, 1.0]), ([[1.0, 240.0]], [0.0])])
    ref = check_every_interpreter(net, np.array([[0.0], [-2.0]]), np.ones((2, 1)))
    assert ref[:5] == ("failure", "backward (activation derivative)", 1, 1, 0)


def test_an_overflowing_activation_value_is_reported_in_the_forward_activation_step():
    # selu(z) = 1.0507 z: selu~(240) overflows float8_e4m3
    net = _net("float8_e4m3", "selu", [([[1.0], [120.0]], [0.0, 0.0]), ([[1.0, 1.0]], [0.0])])
    ref = check_every_interpreter(net, np.array([[1.0], [2.0]]), np.ones((2, 2)))
    assert ref[:5] == ("failure", "forward (activation)", 1, 1, 1)


# ---- IEEE semantics: only the dense interpreters follow it; the others refuse ----------------------------------
E5M2_MAX = 57344.0
IEEE_NETWORKS = {
    "an overflow saturates sigmoid": ("sigmoid", [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])], "values"),
    "a dead tanh at -Inf": ("tanh", [([[E5M2_MAX]], [0.0]), ([[2.0]], [0.5])], "values"),
    "Inf x a zero weight": ("relu", [([[E5M2_MAX], [1.0]], [0.0, 0.0]), ([[0.0, 1.0]], [0.0])], "forward"),
    "Inf - Inf": ("relu", [([[E5M2_MAX], [E5M2_MAX]], [0.0, 0.0]), ([[1.0, -1.0]], [0.0])], "forward"),
    "an infinite output": ("relu", [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])], "forward"),
    "relu~'(+Inf) is NaN": ("relu", [([[E5M2_MAX]], [0.0]), ([[-1.0]], [0.0]), ([[1.0]], [0.0])],
                            "backward (activation derivative)"),
}


@pytest.mark.parametrize("name", IEEE_NETWORKS)
def test_ieee_semantics_cases_give_the_references_outcome(name):
    act, layers, want = IEEE_NETWORKS[name]
    net = _net("float8_e5m2", act, layers, semantics="ieee")
    ref = check_every_interpreter(net, np.array([[-2.0], [2.0]]), np.ones((2, 2)))
    assert ref[0] == want or ref[1] == want


@pytest.mark.parametrize("fmt, act", [("float8_e5m2", "sigmoid"), ("float8_e5m2", "relu"), ("b2_3", "tanh"),
                                      ("float6_e3m2fn", "gelu"), ("b1_3", "elu")])
def test_random_networks_with_huge_weights_meet_inf_nan_and_dead_neurons_under_ieee_semantics(fmt, act):
    """A sweep of the format's values as inputs, four random networks with weights anywhere in it: the
    outcomes cover values, values that only IEEE semantics reaches (through Inf), and failures."""
    F = get_format(fmt)
    V = F.values()
    rng = np.random.default_rng(zlib.crc32(f"{fmt} {act}".encode()))
    outcomes = set()
    for trial in range(4):
        w = lambda *s: np.where(rng.random(s) < 0.25, 0.0, rng.choice(V, s))     # some zero weights
        net = _net(F, act, [(w(3, 1), rng.choice(V, 3)), (w(3, 3), rng.choice(V, 3)), (w(1, 3), [0.0])],
                   semantics="ieee")
        X = V[:: max(1, len(V) // 24)].reshape(-1, 1)
        Y = rng.choice(V, (len(X), 1))
        for n in range(len(X)):
            ref = check_every_interpreter(net, X[n:n + 1], Y[n:n + 1], ["dense", "dense-numpy"])
            if ref[0] == "values":
                finite = Network(F, act, net.layers)
                through_inf = outcome(get_interpreter("dense"), finite, X[n:n + 1], Y[n:n + 1])[0] == "failure"
                outcomes.add("values through Inf" if through_inf else "values")
            else:
                outcomes.add(ref[1] + (" NaN" if "NaN" in ref[5] else ""))
    assert "values" in outcomes and len(outcomes) >= 3, outcomes


# ---- networks with structure: wide absorbing rows, one-coordinate grids, long sums of zeros --------------------
def _wide_row_network(rng, fmt_name="float8_e4m3"):
    """Per value a hat neuron live only there (0 elsewhere), a constant C, and one output row C, hats,
    -C: the output row is wide and almost every term is its default; tiny weights are absorbed by C."""
    fmt = get_format(fmt_name)
    vals = fmt.values()
    c = np.unique(vals[(np.abs(vals) <= 2)])
    n = len(c)
    W1 = sp.csr_matrix((np.tile([1.0, -1.0], n), (np.arange(2 * n), np.zeros(2 * n, int))), shape=(2 * n + 1, 1))
    b1 = np.concatenate([np.stack([-c, c], 1).ravel(), [1.0]])
    W2 = sp.lil_matrix((n + 1, 2 * n + 1))
    for t in range(n):
        W2[t, 2 * t] = W2[t, 2 * t + 1] = -32.0
    W2[n, 2 * n] = 1.0
    b2 = np.concatenate([np.ones(n), [0.0]])
    cols = np.concatenate([[n], np.arange(n)])
    w = np.concatenate([[16.0], rng.choice([0.25, -0.5, 1.0, 0.0078125, 2.0 ** -9], n)])
    W3 = sp.csr_matrix((w, (np.zeros(len(cols), int), cols)), shape=(1, n + 1))
    net = Network(fmt_name, "relu", [Layer(W1, b1), Layer(W2.tocsr(), b2), Layer(W3, np.array([-16.0]))])
    return net, c.reshape(-1, 1)


def _sliced_network(fmt_name, act, rng, widths, scale, zero_fraction=0.5, mixed_fraction=0.3):
    """A random network whose hidden neurons read one input coordinate each (or anything: mixed)."""
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


def _long_sums_network(fmt_name, rng, width, long_rows):
    """relu layers of which most neurons are dead at every input, then rows that read every neuron of the
    layer before: long sums of mostly zero terms, with some live."""
    fmt = get_format(fmt_name)
    w1 = _values(fmt, rng, (width, 2), 1.0)
    b1 = np.where(rng.random(width) < 0.8, -float(fmt.max) / 2, _values(fmt, rng, width, 0.5))
    w2 = _values(fmt, rng, (long_rows, width), 0.5, 0.1)
    w3 = _values(fmt, rng, (1, long_rows), 0.5)
    return Network(fmt_name, "relu", [Layer(w1, b1), Layer(w2, _values(fmt, rng, long_rows, 0.5)),
                                      Layer(w3, [0.0])])


def test_a_wide_output_row_of_absorbed_terms_gives_the_references_values():
    rng = np.random.default_rng(11)
    net, X = _wide_row_network(rng)
    X = X[::3]
    vals = get_format("float8_e4m3").values()
    Y = rng.choice(vals[np.abs(vals) <= 0.125], (len(X), 2))
    assert check_every_interpreter(net, X, Y)[0] == "values"
    assert check_every_interpreter(net, X, np.broadcast_to(Y[:1], Y.shape))[0] == "values"


@pytest.mark.parametrize("fmt_name, act", [("float8_e4m3", "relu"), ("float8_e4m3", "tanh"),
                                           ("float8_e5m2", "sigmoid"), ("float16", "gelu"), ("float8_e4m3", "swish")])
def test_networks_of_one_coordinate_neurons_on_a_grid_give_the_references_values(fmt_name, act):
    rng = np.random.default_rng(zlib.crc32(f"{fmt_name} {act}".encode()))
    net = _sliced_network(fmt_name, act, rng, [2, 14, 12, 10, 9, 1], scale=0.7 if act == "relu" else 1.5)
    vals = get_format(fmt_name).values()
    vals = np.unique(vals[np.abs(vals) <= (2 if act == "relu" else 6)])
    X = _grid(vals, rng, 6)
    for K in (1, 2):
        check_every_interpreter(net, X, rng.choice(vals, (len(X), K)))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), fmt_name=st.sampled_from(["float8_e4m3", "float8_e5m2", "float6_e2m3fn"]),
       width=st.integers(8, 80), long_rows=st.integers(1, 20), points=st.integers(1, 12))
def test_long_sums_of_mostly_zero_terms_give_the_references_values(seed, fmt_name, width, long_rows, points):
    rng = np.random.default_rng(seed)
    net = _long_sums_network(fmt_name, rng, width, long_rows)
    X = _values(net.format, rng, (points, 2), 2.0)
    check_every_interpreter(net, X, _values(net.format, rng, (points, 2), 1.0))


def test_the_benchmarks_sliced_gating_network_gives_the_references_values():
    """The synthetic d = 2 network of benchmarks/bench_sliced_gating.py (indicators, AND gates, chains)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sliced_gating.py"
    spec = importlib.util.spec_from_file_location("bench_sliced_gating", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    V = get_format("float8_e4m3").values()
    c = np.unique(V[(np.abs(V) <= 1) & (np.abs(V) >= 0.25)])[::2][:4]
    for gate_pass in (False, True):
        net, X = mod.sliced_gating("float8_e4m3", "tanh", c, c[::-1].copy(), chains=2, depth=7, gate_pass=gate_pass)
        Y = np.random.default_rng(5).choice(V[np.abs(V) <= 2.0 ** -5], (len(X), 1))
        check_every_interpreter(net, X, Y)


# ---- constructed networks -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def theorem5_network():
    """A Theorem 5 network on 12 points of the relu float8_e4m3 box (one upstream value per point)."""
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    X = full_box("relu", "float8_e4m3", 1)[::16]
    f, h, g = random_targets("float8_e4m3", X, 0, 0.25)
    net, claim = construct_theorem5("relu", "float8_e4m3", X, f, h, g, verify_result=False)
    return net, X, h.reshape(-1, 1), f, g


@pytest.fixture(scope="module")
def theorem7_network():
    """A gated Theorem 7 network (4 points, the same upstream values at every point)."""
    from condcheck.targets import random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format("float8_e4m3")
    V = F.values()
    X = np.array([[-3.0], [0.0], [0.5], [7.0]])
    Y = V[np.abs(V) <= 2]
    f, G = random_odd_tables(F, X, Y, 2)
    res = construct_theorem7("swish", F, X, f, G, upstream=Y, verify_result=False)
    return res.network, X, Y, f, G


def test_a_theorem5_network_gives_the_references_values_and_its_targets(theorem5_network):
    net, X, Y, f, g = theorem5_network
    ref = check_every_interpreter(net, X, Y)
    assert np.array_equal(ref[1], f) and np.array_equal(ref[2][:, 0], g)


def test_a_theorem7_network_gives_the_references_values_and_its_targets(theorem7_network):
    net, X, Y, f, G = theorem7_network
    k = np.linspace(0, len(Y) - 1, 5).astype(int)           # both ends, zero, two between
    ys = Y[k]
    ref = check_every_interpreter(net, X, np.broadcast_to(ys, (len(X), len(ys))))
    assert np.array_equal(ref[1], f) and np.array_equal(ref[2][:, :, 0], G[:, k])


# ---- the constructors' own evaluators -----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(fmt_name=st.sampled_from(["float8_e4m3", "float8_e5m2", "float6_e2m3fn", "float16", "bfloat16"]),
       seed=st.integers(0, 2 ** 32 - 1), depth=st.integers(1, 6), scale=st.sampled_from([0.25, 1.0, 8.0]))
def test_theorem7s_rounded_product_chains_are_the_references_backward_pass_through_a_chain_of_relays(
        fmt_name, seed, depth, scale):
    """``theorem7.chains.chain(y, [w_L, ..., w_1])`` is what Theorem 7 predicts of a chain of relu relays:
    one neuron per layer, every pre-activation positive (sigma~' = 1), so the backward value is
    RN(...RN(RN(y w_L) w_(L-1))... w_1).  The reference gives it, or fails where the chain overflows."""
    from condcheck.theorem7.chains import chain
    fmt = get_format(fmt_name)
    rng = np.random.default_rng(seed)
    weights = np.abs(_values(fmt, rng, depth + 1, scale))
    weights[weights == 0] = 1.0
    net = _net(fmt, "relu", [([[w]], [float(fmt.smallest_subnormal)]) for w in weights])
    X = np.abs(_values(fmt, rng, (4, 1), 1.0))
    Y = _values(fmt, rng, (4, 1), scale * 4)
    predicted = chain(Y[:, 0], weights[::-1], fmt)
    for n in range(len(X)):
        ref = outcome(get_interpreter("exact"), net, X[n:n + 1], Y[n:n + 1])
        if ref[0] == "failure" and ref[1] == "forward":
            continue                                    # the relays themselves overflow: nothing predicted
        if np.isfinite(predicted[n]):
            assert ref[0] == "values" and ref[2][0, 0, 0] == predicted[n], (ref[:2], predicted[n])
        else:
            assert ref[0] == "failure" and ref[1] == "backward", ref[:2]


# ---- what comparing by value leaves out: the bits of zeros -----------------------------------------------------
@needs_numba
@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float8_e4m3fnuz", "float16", "bfloat16", "float32", "float64"])
def test_the_compiled_and_the_numpy_dense_interpreters_compute_the_same_bits(fmt_name):
    case = random_case(fmt_name, "swish", "finite", 3, [16, 16], 11, 0.5, 0.4, 0.2,
                       300 if get_format(fmt_name).bits <= 16 else 30, 4, False, 0.0)
    v1, g1 = get_interpreter("dense").evaluate(case.net, case.X, case.Y)
    v2, g2 = get_interpreter("dense-numpy").evaluate(case.net, case.X, case.Y)
    assert v1.tobytes() == v2.tobytes() and g1.tobytes() == g2.tobytes()


@needs_numba
@pytest.mark.parametrize("shared", [False, True])
def test_the_sparse_interpreters_values_keep_the_dense_ones_zero_signs(shared):
    case = random_case("float8_e4m3", "tanh", "finite", 2, [12, 9, 7], 3, 2.0, 0.6, 0.3, 40, 3, shared, 0.4)
    dv, _ = get_interpreter("dense").evaluate(case.net, case.X, case.Y)
    sv, _ = get_interpreter("sparse").evaluate(case.net, case.X, case.Y)
    assert dv.tobytes() == sv.tobytes()


# ---- the interface --------------------------------------------------------------------------------------------------
def test_a_refusal_names_the_interpreter_and_why():
    net = _net("float32", "relu", [([[1.0]], [0.0])])
    with pytest.raises(InterpreterRefusedError, match="the tables interpreter cannot evaluate this network: .*float32"):
        get_interpreter("tables").evaluate(net, [[1.0]], [1.0])


def test_an_unknown_interpreter_is_refused_with_the_known_names():
    with pytest.raises(CondcheckError, match="unknown interpreter 'fastest'.*Known interpreters: dense"):
        get_interpreter("fastest")


def test_one_upstream_value_per_point_gives_gradients_of_shape_points_by_inputs_and_none_gives_values_only():
    net = _net("float8_e4m3", "relu", [([[1.0, -2.0]], [0.5]), ([[3.0]], [0.0])])
    X = [[1.0, 0.25], [2.0, 4.0]]
    for label in VARIANTS:
        if expected_refusal(label, net):
            continue
        values, grads = interpreter(label).evaluate(net, X, [1.0, 0.5])
        # z = 1 - 0.5 + 0.5 = 1 (relu passes it, T' = 1), and 2 - 8 + 0.5 < 0 (dead)
        assert values.tolist() == [3.0, 0.0] and grads.tolist() == [[3.0, -6.0], [0.0, 0.0]], label
        assert interpreter(label).evaluate(net, X).tolist() == [3.0, 0.0], label


# ---- the reference itself: docs/semantics.md literally, zero weights included -------------------------------------------
def _dense_loops(net, x, y):
    """docs/semantics.md literally: dense loops over every weight (zeros included), exact rounding."""
    from fractions import Fraction

    from condcheck.rounding import round_fraction
    fmt, rnd = net.format, net.rounded
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


@pytest.mark.parametrize("fmt_name", ["float8_e4m3", "float16", "float64"])
def test_the_reference_computes_what_dense_loops_over_every_weight_compute(fmt_name):
    case = random_case(fmt_name, "elu", "finite", 3, [6, 6], 7, 0.5, 0.5, 0.0, 8, 1, False, 0.0)
    values, grads = get_interpreter("exact").evaluate(case.net, case.X, case.Y[:, 0])
    for n in range(len(case.X)):
        val, g = _dense_loops(case.net, case.X[n], case.Y[n, 0])
        assert values[n] == val and grads[n].tolist() == [float(t) for t in g]


# ---- the dense interpreter's numpy sums -----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt_name", ["float8_e5m2", "float16"])
def test_numpy_sums_round_products_in_batches_to_the_same_bits_as_one_step_at_a_time(fmt_name):
    from condcheck.interpreters.sum_plan import SumPlan
    rng = np.random.default_rng(5)
    fmt = get_format(fmt_name)
    # a long one-row sum (a last layer), a wide sparse layer, and overflowing products
    m = _values(fmt, rng, (40, 300), 2.0, zero_fraction=0.8)
    m[0] = _values(fmt, rng, 300, 4.0)
    m[1, :5] = float(fmt.max)
    plan = SumPlan.of(sp.csr_matrix(m))
    V = _values(fmt, rng, (7, 3, 300), 4.0)
    V[0, 0, :5] = float(fmt.max)
    want = plan.apply(V, fmt, product_elements=1)                      # one step at a time
    for budget in (1 << 8, 1 << 15, 1 << 30):
        got = plan.apply(V, fmt, product_elements=budget)
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.isinf(want).any() and len(plan.active) == 300 and plan.active[-1] == 1


def _sum_plan_by_steps(m):
    """SumPlan.of as first written: step by step, the k-th term of each sorted row that has one."""
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


@settings(max_examples=100, deadline=None)
@given(rows=st.integers(0, 30), cols=st.integers(1, 30), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_a_sum_plan_made_for_every_term_at_once_equals_the_plan_made_step_by_step(rows, cols, density, seed):
    from condcheck.interpreters.sum_plan import SumPlan
    m = sp.random(rows, cols, density=density, random_state=np.random.default_rng(seed), format="csr")
    plan = SumPlan.of(m)
    order, active, step_cols, step_weights = _sum_plan_by_steps(m)
    assert np.array_equal(plan.order, order) and plan.active == active and plan.n_out == rows
    assert len(plan.cols) == len(step_cols) == len(plan.weights)
    for got, want in zip(plan.cols + plan.weights, step_cols + step_weights):
        assert got.dtype == want.dtype and np.array_equal(got, want)


# ---- the tables interpreter's zero terms -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float8_e4m3fnuz", "float6_e3m2fn", "float4_e2m1fn",
                                  "b3_6"])
def test_adding_zero_maps_every_index_to_itself_so_the_tables_may_skip_zero_terms(name):
    from condcheck.op_tables import op_tables
    tb = op_tables(get_format(name))
    zero = tb.index_of(0.0)
    assert np.array_equal(tb.add_table[:, zero], np.arange(tb.over + 1))


def test_the_tables_interpreter_folds_long_sums_of_mostly_zero_terms_in_by_their_nonzero_terms(monkeypatch):
    import condcheck.interpreters.tables as tables
    calls = []
    fold = tables.fold_nonzero
    monkeypatch.setattr(tables, "fold_nonzero", lambda *a: calls.append(len(a[1])) or fold(*a))
    rng = np.random.default_rng(3)
    net = _long_sums_network("float8_e4m3", rng, 64, 12)
    X = _values(net.format, rng, (25, 2), 2.0)
    ref = check_every_interpreter(net, X, _values(net.format, rng, (25, 2), 1.0), ["tables"])
    assert calls and ref[0] == "values" and np.count_nonzero(ref[2]) > 0
