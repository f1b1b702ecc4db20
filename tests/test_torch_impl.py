"""The "torch" implementation (observed PyTorch CPU tables) and the paper-order PyTorch export.

Every expectation is computed: from PyTorch itself, from condcheck's exact tables, or derived (relu is
exact in any arithmetic; torch's tanh' is 1 - y^2 of its rounded output y).
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from condcheck import activations as A  # noqa: E402
from condcheck.activations import register_activation  # noqa: E402
from condcheck.check import check_activation  # noqa: E402
from condcheck.cli import main  # noqa: E402
from condcheck.errors import CondcheckError, NetworkOverflowError  # noqa: E402
from condcheck.formats import get_format  # noqa: E402
from condcheck.interpreters import get_interpreter  # noqa: E402
from condcheck.network import Layer, Network  # noqa: E402
from condcheck.rounded_activation import get_rounded  # noqa: E402
from condcheck.theorem5 import construct_theorem5  # noqa: E402
from condcheck.interpreters.torch_export import plain_export, to_torch, torch_value_and_gradient  # noqa: E402
from condcheck.torch_comparison import COMPARISON_FORMATS, compare_with_exact  # noqa: E402
from condcheck.torch_impl import table_info, torch_table_arrays  # noqa: E402
from condcheck.verify import verify  # noqa: E402


@pytest.fixture
def registry():
    with A.scoped_registry(plugins_loaded=True):
        yield


# ---- the observed tables -----------------------------------------------------------------------------------
def test_the_cli_checks_gelu_on_bfloat16_as_pytorch_computes_it():
    out = CliRunner().invoke(main, ["check", "gelu", "bfloat16", "--implementation", "torch"])
    res = check_activation("gelu", "bfloat16", "torch")
    assert out.exit_code == {True: 0, False: 1, None: 3}[res.holds]
    assert "gelu on bfloat16 (torch implementation)" in out.output
    assert "native torch.bfloat16" in out.output
    assert "approximate='none'" in out.output


def test_gelu_tanh_maps_to_torchs_tanh_approximation():
    assert "approximate='tanh'" in table_info("gelu_tanh", "float16")["op"]


@pytest.mark.parametrize("fmt", COMPARISON_FORMATS)
def test_relu_is_the_same_in_torch_and_exact_because_it_needs_no_rounding(fmt):
    # relu(z) is z or 0 and relu'(z) is 1 or 0 (torch's threshold gives relu'(0) = 0 like condcheck):
    # every arithmetic computes them exactly
    t, e = get_rounded("relu", fmt, "torch").table(), get_rounded("relu", fmt, "exact").table()
    assert np.array_equal(t.sigma, e.sigma) and np.array_equal(t.dsigma, e.dsigma)


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_torchs_tanh_derivative_is_one_minus_the_square_of_its_rounded_output(fmt):
    # PyTorch's tanh backward uses the op's output y (already rounded to the format), not z:
    # sigma~'(z) = RN(1 - y^2), which is why it differs from the correctly rounded tanh'
    s, _, d, _ = torch_table_arrays("tanh", fmt)
    dt = getattr(torch, fmt)
    y = torch.tensor(s).to(dt).float()
    assert np.array_equal((1 - y * y).to(dt).double().numpy(), d)
    exact = get_rounded("tanh", fmt, "exact").table().dsigma
    assert np.count_nonzero(exact != d) > 0


def test_torchs_sigmoid_derivative_comes_from_its_rounded_output_in_half_precision_arithmetic():
    # float16: (1 - y) * y with both operations rounded to float16; bfloat16: computed in float32, rounded once
    s, _, d, _ = torch_table_arrays("sigmoid", "float16")
    y = torch.tensor(s).to(torch.float16)
    assert np.array_equal(((1 - y) * y).double().numpy(), d)
    s, _, d, _ = torch_table_arrays("sigmoid", "bfloat16")
    y = torch.tensor(s).to(torch.bfloat16).float()
    assert np.array_equal(((1 - y) * y).to(torch.bfloat16).double().numpy(), d)


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float6_e3m2fn"])
def test_float8_and_smaller_formats_go_through_float32_and_say_so(fmt):
    info = table_info("gelu", fmt)
    assert info["mode"].startswith("through float32")
    res = check_activation("gelu", fmt, "torch")
    assert "through float32" in res.conditions["1"]["evidence"]


@pytest.mark.parametrize("act", ["gelu", "sigmoid", "tanh"])
@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_torch_computes_the_table_values_in_bulk_whatever_the_tensor_shape(act, fmt):
    # the exporter evaluates the op on (N, width) tensors of pre-activations; the table came from one
    # flat (padded) tensor of every value.  In bulk (rows of 64, a multiple of every vector width)
    # they agree element by element.
    from condcheck.torch_impl import torch_op
    _, op = torch_op(A.get_activation(act))
    pts = get_format(fmt).values()
    s, _, _, _ = torch_table_arrays(act, fmt)
    x = torch.tensor(pts).to(getattr(torch, fmt))
    n = (pts.size // 64) * 64
    y = op(x[:n].reshape(-1, 64)).reshape(-1).double().numpy()
    assert np.array_equal(y, s[:n])


@pytest.mark.slow
def test_float16_gelu_one_element_at_a_time_differs_from_the_bulk_table_where_reported():
    from condcheck.torch_impl import scalar_path_differences
    diff = scalar_path_differences("gelu", "float16")
    s, _, _, _ = torch_table_arrays("gelu", "float16")
    pts = get_format("float16").values()
    single = np.array([torch.nn.functional.gelu(torch.tensor([z]).to(torch.float16)).double().item() for z in pts])
    assert sorted(pts[single != s].tolist()) == sorted(diff["sigma"])
    assert len(diff["sigma"]) > 0


def test_a_plug_in_with_a_torch_function_uses_it_and_one_without_is_refused_clearly(registry):
    import sympy
    register_activation("softsign", A.x / (1 + sympy.Abs(A.x)), torch_function=torch.nn.functional.softsign)
    res = check_activation("softsign", "bfloat16", "torch")
    assert res.holds is not None and "softsign" in res.source_note
    register_activation("softsign_no_torch", "x/(1+Abs(x))")
    with pytest.raises(CondcheckError, match="no PyTorch op.*torch_function"):
        check_activation("softsign_no_torch", "bfloat16", "torch")


def test_the_torch_implementation_of_float32_is_torchs_float32_kernel_not_a_table():
    res = check_activation("gelu", "float32", "torch")            # symbolic: witnesses evaluated by torch
    assert "native float32" in res.source_note and res.conditions["1"]["holds"] is None
    with pytest.raises(CondcheckError, match="computes in float32"):
        check_activation("gelu", "float64", "torch")


def test_the_comparison_counts_what_the_tables_say():
    rows = compare_with_exact(("gelu", "tanh"), COMPARISON_FORMATS)
    assert len(rows) == 2 * len(COMPARISON_FORMATS)
    for r in rows:
        t = get_rounded(r["activation"], r["format"], "torch").table()
        e = get_rounded(r["activation"], r["format"], "exact").table()
        assert r["sigma_differs"] == np.count_nonzero(t.sigma != e.sigma)
        assert r["dsigma_differs"] == np.count_nonzero(t.dsigma != e.dsigma)
        assert r["mode"] == ("native" if r["format"] in ("float16", "bfloat16") else "float32")
        if r["dsigma_differs"] == 0 and r["sigma_differs"] == 0:
            assert r["verdict_exact"] == r["verdict_torch"] and r["witness_differs"] == []


# ---- the paper-order export ----------------------------------------------------------------------------------
def test_a_plain_torch_export_loses_the_absorption_that_the_paper_order_module_keeps():
    # 16 (+) 1 is a tie in float8_e4m3 and goes to 16, then 16 (+) 1 = 16 again; a matmul gives 18
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0, 1.0, 1.0]]), [0.0])])
    X = np.array([[16.0, 1.0, 1.0]])
    assert net.forward(X)[0] == 16.0
    with torch.no_grad():
        assert plain_export(net)(torch.tensor(X, dtype=torch.float32)).item() == 18.0
    vals, grads = torch_value_and_gradient(to_torch(net), X, [1.0])
    assert vals[0] == 16.0 and np.array_equal(grads, [[1.0, 1.0, 1.0]])


def _targets(F, X, seed):
    V = F.values()
    rng = np.random.default_rng(seed)
    f = rng.choice(V[np.abs(V) <= 4], len(X))
    h = np.full(len(X), 0.25)
    g = rng.choice(np.array([-0.5, -0.25, 0.25, 0.5]), (len(X), 1))
    return f, h, g


def test_a_theorem5_network_built_for_torch_reproduces_its_values_and_gradients_under_torch_autograd():
    # gelu on float8_e4m3 (torch computes float8 through float32; float16 below runs in torch's own dtype)
    F = get_format("float8_e4m3")
    X = np.array([-1.0, -0.5, 0.0, 0.25, 0.75, 1.5, 3.0]).reshape(-1, 1)
    f, h, g = _targets(F, X, 1)
    net, claim = construct_theorem5("gelu", F, X, f, h, g, implementation="torch")
    assert net.implementation == "torch" and verify(net, claim).ok
    vals, grads = torch_value_and_gradient(to_torch(net), X, h)
    assert np.array_equal(vals, f)          # bit for bit: exact values, no tolerance
    assert np.array_equal(grads, g)
    # and the naive export does not
    with torch.no_grad():
        plain = plain_export(net)(torch.tensor(X, dtype=torch.float32)).double().numpy().ravel()
    assert not np.array_equal(plain, f)


def test_a_float16_theorem5_network_built_for_torch_runs_natively_and_torchs_fused_backward_breaks_it():
    # 16 random points of gelu's float16 box, arithmetic in torch.float16.  The paper-order module gives
    # every value and gradient; torch's own gelu backward (RN(v s) with s its unrounded float32
    # derivative instead of v (x) RN(s)) keeps the values and changes gradients (measured: 3 of 16 points)
    from condcheck.targets import box_sample, random_targets
    X = box_sample("gelu", "float16", 1, 16, 0)
    f, h, g = random_targets("float16", X, 0, 0.25)
    net, _ = construct_theorem5("gelu", "float16", X, f, h, g, implementation="torch")     # verified
    m = to_torch(net)
    assert m.activation_mode == "torch" and m.arithmetic == "native torch.float16"
    vals, grads = torch_value_and_gradient(m, X, h)
    assert np.array_equal(vals, f) and np.array_equal(grads, g)
    vals_f, grads_f = torch_value_and_gradient(to_torch(net, "torch-fused"), X, h)
    assert np.array_equal(vals_f, f) and not np.array_equal(grads_f, g)


def _random_net(fmt, act, widths, seed):
    F = get_format(fmt)
    V = F.values()
    rng = np.random.default_rng(seed)
    W = V[((np.abs(V) <= 2) & (np.abs(V) >= 1 / 8)) | (V == 0)]
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        A_ = rng.choice(W, (b, a))
        A_[rng.random((b, a)) < 0.3] = 0
        layers.append(Layer(A_, rng.choice(W, b)))
    return Network(F, act, layers, "torch")


@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
@pytest.mark.parametrize("act", ["gelu", "sigmoid"])
def test_random_networks_in_native_dtypes_match_the_interpreter_and_torchs_fused_backward_does_not(fmt, act):
    net = _random_net(fmt, act, [3, 8, 8, 6, 1], seed=0)
    F = get_format(fmt)
    rng = np.random.default_rng(1)
    V = F.values()
    X = rng.choice(V[np.abs(V) <= 4], (200, 3))
    Y = rng.choice(V[np.abs(V) <= 64], 200)
    iv, ig = net.evaluate(X, Y)
    vals, grads = torch_value_and_gradient(to_torch(net, "torch"), X, Y)
    assert np.array_equal(vals, iv) and np.array_equal(grads, ig)
    # torch's own activation backward computes RN(v * s) with s its unrounded float32 derivative:
    # the same forward values, other gradients
    vals_f, grads_f = torch_value_and_gradient(to_torch(net, "torch-fused"), X, Y)
    assert np.array_equal(vals_f, iv)
    assert np.count_nonzero(grads_f != ig) > 0


def test_an_exact_network_exports_with_condcheck_tables():
    net = _random_net("float8_e4m3", "tanh", [2, 6, 5, 1], seed=3)
    net = Network(net.format, "tanh", net.layers, "exact")
    F = net.format
    X = np.array([[a, b] for a in (-1.0, -0.25, 0.5, 2.0) for b in (-0.5, 0.0, 1.0)])
    Y = np.full(len(X), 0.5)
    iv, ig = net.evaluate(X, Y)
    m = to_torch(net)
    assert m.activation_mode == "table" and "float64" in m.arithmetic
    vals, grads = torch_value_and_gradient(m, X, Y)
    assert np.array_equal(vals, iv) and np.array_equal(grads, ig)
    assert F.name == "float8_e4m3"


# ---- Theorem 5 networks on float32 and float64: torch.autograd in the format's own dtype -------------------
@pytest.fixture(scope="module", params=[("relu", "float64", 4), ("tanh", "float32", 8)], ids=lambda p: p[1])
def wide_theorem5(request):
    """(network, points, f*, h*, g*): a verified Theorem 5 network on a few random box points."""
    from condcheck.targets import box_sample, random_targets
    act, fmt, n = request.param
    X = box_sample(act, fmt, 1, n, 0)
    f, h, g = random_targets(fmt, X, 0, 0.25)
    net, _ = construct_theorem5(act, fmt, X, f, h, g)      # verified by the constructor
    return net, X, f, h, g


def test_the_paper_order_module_gives_a_float32_or_float64_theorem5_networks_values_and_gradients_bit_for_bit(
        wide_theorem5):
    net, X, f, h, g = wide_theorem5
    m = to_torch(net)
    assert m.arithmetic == f"native torch.{net.format.name}"
    vals, grads = torch_value_and_gradient(m, X, h)
    iv, ig = net.evaluate(X, h)
    assert np.array_equal(vals, iv) and np.array_equal(grads, ig)
    assert np.array_equal(vals, f) and np.array_equal(grads, g)


def test_a_plain_linear_export_in_the_formats_dtype_does_not_reproduce_the_network(wide_theorem5):
    # Same weights in nn.Linear layers of the format's own dtype (float32 / float64), torch's activation op,
    # torch.autograd for the gradient.  torch's matmul does not round every partial sum of a row left to
    # right (it accumulates in its own blocked order, possibly with fused multiply-adds), and the
    # construction depends on those roundings: a step row snaps a separator's value with the chain
    # c_k (+) (-c_k) (measured: the first layer whose sums differ from the interpreter's, on the
    # interpreter's own inputs, is layer 2, the steps, with 250-4,092 terms per row), and the output row
    # absorbs the gradient branches into C (+) ... (-C); the plain module's values are wrong at every point
    # measured.  The interpreter stays the reference.
    net, X, f, h, g = wide_theorem5
    dt = getattr(torch, net.format.name)
    differing = []
    V = np.asarray(X, dtype=np.float64)
    dense = get_interpreter("dense")
    for l, layer in enumerate(net.layers, 1):
        z = dense.forward_sums(layer, V, net.format)
        zt = torch.nn.functional.linear(torch.tensor(V, dtype=dt), torch.tensor(layer.weight.toarray(), dtype=dt),
                                        torch.tensor(layer.bias, dtype=dt)).double().numpy()
        if not np.array_equal(zt, z):
            differing.append(l)
        if l < net.depth:
            V = net.rounded.value_array(z)[0]
    assert differing
    with torch.no_grad():
        out = plain_export(net, net.format.name)(torch.tensor(X, dtype=dt)).reshape(-1)
    assert not np.array_equal(out.double().numpy(), f)
    # (its torch.autograd gradients happened to equal g* at all 4 float64 relu points and at 2 of the 8
    # float32 tanh points: the gradient branches' blocker chains are one-term rows)


def test_an_overflow_in_the_paper_order_module_names_the_pass_layer_neuron_and_input():
    # neuron 1 sums 240 (+) 240 = 480 > Omega = 240 in float8_e4m3; neuron 0 stays finite
    net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0, 0.0], [240.0, 240.0]]), [0.0, 0.0]),
                                          Layer(np.array([[1.0, 1.0]]), [0.0])])
    with pytest.raises(NetworkOverflowError, match=r"forward pass: overflow .* at layer 1, neuron 1, input \(1.0, 1.0\)"):
        torch_value_and_gradient(to_torch(net), np.array([[0.0, 0.0], [1.0, 1.0]]), [1.0, 1.0])



def test_a_float32_network_is_refused_while_torch_flushes_subnormals_to_zero():
    net = Network("float32", "relu", [Layer(np.array([[1.0]]), [0.0])])
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        with pytest.raises(CondcheckError, match="flushes subnormals"):
            to_torch(net)
    finally:
        torch.set_flush_denormal(False)
    assert to_torch(net).arithmetic == "native torch.float32"
