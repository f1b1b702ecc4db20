"""The IEEE-through-Inf option (docs/semantics.md, condcheck.ieee): networks that pass through +-Inf."""
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from condcheck.cli import main
from condcheck.errors import CondcheckError, NetworkOverflowError
from condcheck.formats import get_format
from condcheck.ieee import inf_values, indistinguishable_pairs_ieee
from condcheck.netfile import Claim, load_network, network_from_dict, network_to_dict, save_network
from condcheck.network import Layer, Network
from condcheck.verify import verify

E5M2_MAX = 57344.0


def _net(act, layers, fmt="float8_e5m2", semantics="ieee"):
    return Network(fmt, act, [Layer(w, b) for w, b in layers], semantics=semantics)


def _claim(points, values, upstream, gradients):
    return Claim(5, np.array(points, float).reshape(-1, 1), values, upstream, np.array(gradients, float).reshape(-1, 1))


def _both_paths(net, x, y):
    """(value, gradient) from the fast and the exact path, or the error message of each."""
    out = []
    try:
        v, g = net.evaluate([x], [y])
        out.append((float(v[0]), [float(t) for t in g[0]]))
    except NetworkOverflowError as e:
        out.append(str(e))
    try:
        val, pre = net.forward_exact(x)
        out.append((float(val), [float(t) for t in net.gradient_exact(x, y, pre)]))
    except NetworkOverflowError as e:
        out.append(str(e))
    return out


# ---- the semantics choice ------------------------------------------------------------------------------
def test_networks_use_finite_semantics_unless_told_otherwise():
    net = _net("sigmoid", [([[1.0]], [0.0]), ([[1.0]], [0.0])], semantics="finite")
    assert net.semantics == "finite"
    assert Network("float8_e5m2", "sigmoid", net.layers).semantics == "finite"


def test_an_unknown_semantics_is_refused_with_the_choices():
    with pytest.raises(CondcheckError, match="'finite', 'ieee'"):
        _net("sigmoid", [([[1.0]], [0.0])], semantics="lenient")


# ---- limits at +-Inf ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("act, dead", [("relu", 0.0), ("elu", -1.0), ("gelu", 0.0), ("swish", 0.0),
                                       ("sigmoid", 0.0), ("tanh", -1.0)])
def test_a_minus_inf_pre_activation_gives_the_dead_value_and_derivative_zero(act, dead):
    lim = inf_values(act, "float8_e5m2")
    assert float(lim.sigma_neg) == dead and float(lim.dsigma_neg) == 0.0


def test_saturating_activations_round_their_limit_at_plus_inf_and_unbounded_ones_give_inf():
    assert float(inf_values("sigmoid", "float8_e5m2").sigma_pos) == 1.0
    assert float(inf_values("tanh", "float8_e5m2").sigma_pos) == 1.0
    assert inf_values("relu", "float8_e5m2").sigma_pos == math.inf
    # relu' tends to 1, not 0: sigma~'(+Inf) is NaN (the brief: 0 only where sigma' -> 0).
    assert math.isnan(inf_values("relu", "float8_e5m2").dsigma_pos)


def test_an_irrational_limit_is_rounded_exactly_and_no_limit_gives_nan():
    assert float(inf_values("selu", "float8_e5m2").sigma_neg) == -1.75       # -scale*alpha = -1.758...
    assert float(inf_values("selu", "float16").sigma_neg) == float(np.float16(-1.0507009873554805 * 1.6732632423543772))
    assert math.isnan(inf_values("sin", "float8_e5m2").sigma_pos)


# ---- hand-built networks -------------------------------------------------------------------------------------
def test_sigmoid_of_an_overflowing_pre_activation_saturates_to_one_with_derivative_zero():
    # z = 57344 * x overflows float8_e5m2 at x = 2; sigmoid~(+Inf) = 1, sigmoid~'(+Inf) = 0.
    layers = [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])]
    claim = _claim([2.0, -2.0], [1.0, 0.0], [1.0, 1.0], [[0.0], [0.0]])
    finite = verify(_net("sigmoid", layers, semantics="finite"), claim)
    assert not finite.ok and "overflow" in finite.first_failure["message"]
    for method in ("fast", "exact"):
        res = verify(_net("sigmoid", layers), claim, method=method)
        assert res.ok, res.summary()
        assert res.semantics == "ieee" and "IEEE 754 through Inf" in res.summary()


def test_tanh_neuron_at_minus_inf_is_dead_and_passes_no_gradient():
    layers = [([[E5M2_MAX]], [0.0]), ([[2.0]], [0.5])]
    claim = _claim([-4.0], [-1.5], [1.0], [[0.0]])               # 2 * tanh~(-Inf) + 0.5 = -1.5
    for method in ("fast", "exact"):
        assert verify(_net("tanh", layers), claim, method=method).ok


def test_inf_times_a_zero_weight_is_nan_and_fails_naming_layer_neuron_and_input():
    # relu(57344 * 2) = +Inf in neuron 0; the next layer has weight 0 on it: 0 x Inf = NaN.
    net = _net("relu", [([[E5M2_MAX], [1.0]], [0.0, 0.0]), ([[0.0, 1.0]], [0.0])])
    fast, exact = _both_paths(net, [2.0], 1.0)
    assert fast == exact
    assert "forward pass: NaN" in fast and "layer 2, neuron 0, input (2.0)" in fast and "Inf x 0" in fast
    res = verify(net, _claim([2.0], [2.0], [1.0], [[1.0]]))
    assert not res.ok and "layer 2, neuron 0" in res.first_failure["message"]


def test_inf_minus_inf_is_nan_and_fails():
    net = _net("relu", [([[E5M2_MAX], [E5M2_MAX]], [0.0, 0.0]), ([[1.0, -1.0]], [0.0])])
    fast, exact = _both_paths(net, [2.0], 1.0)
    assert fast == exact and "Inf - Inf" in fast and "layer 2, neuron 0" in fast


def test_an_infinite_output_fails_verification():
    net = _net("relu", [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])])
    fast, exact = _both_paths(net, [2.0], 1.0)
    assert fast == exact and "the output is +Inf" in fast


def test_a_derivative_without_limit_zero_at_inf_fails_in_the_backward_pass():
    # forward: relu(+Inf) = Inf, then -Inf, relu(-Inf) = 0: the value 0 is finite;
    # backward: relu~'(+Inf) is NaN (relu' -> 1, not 0), so the gradient fails.
    net = _net("relu", [([[E5M2_MAX]], [0.0]), ([[-1.0]], [0.0]), ([[1.0]], [0.0])])
    assert float(net.forward([2.0])[0]) == 0.0
    fast, exact = _both_paths(net, [2.0], 1.0)
    assert fast == exact and fast.startswith("backward (activation derivative) pass: NaN") and "layer 1, neuron 0" in fast


def test_formats_without_inf_refuse_to_pass_an_overflow():
    net = _net("sigmoid", [([[448.0]], [0.0]), ([[1.0]], [0.0])], fmt="float8_e4m3fn")
    fast, exact = _both_paths(net, [2.0], 1.0)
    assert fast == exact and "float8_e4m3fn, which has no Inf" in fast and "layer 1, neuron 0" in fast


def test_ieee_semantics_computes_what_finite_semantics_computes_when_nothing_overflows():
    rng = np.random.default_rng(3)
    F = get_format("float8_e5m2")
    V = F.values()
    small = V[np.abs(V) <= 4]
    layers = [(rng.choice(small, (4, 2)), rng.choice(small, 4)), (rng.choice(small, (3, 4)), rng.choice(small, 3)),
              (rng.choice(small, (1, 3)), [0.0])]
    X = rng.choice(small, (50, 2))
    Y = rng.choice(small, 50)
    a = _net("tanh", layers, semantics="finite").evaluate(X, Y)
    b = _net("tanh", layers).evaluate(X, Y)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


# ---- files and CLI ----------------------------------------------------------------------------------------
def test_a_network_file_round_trip_keeps_the_semantics(tmp_path):
    net = _net("sigmoid", [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])])
    claim = _claim([2.0], [1.0], [1.0], [[0.0]])
    p = tmp_path / "net.json"
    save_network(p, net, claim)
    assert json.loads(p.read_text())["semantics"] == "ieee"
    back, c = load_network(p)
    assert back.semantics == "ieee" and verify(back, c).ok


def test_a_network_file_without_semantics_is_read_as_finite():
    d = network_to_dict(_net("sigmoid", [([[1.0]], [0.0]), ([[1.0]], [0.0])]))
    del d["semantics"]
    assert network_from_dict(d)[0].semantics == "finite"


def test_cli_verify_prints_the_semantics_it_used(tmp_path):
    layers = [([[E5M2_MAX]], [0.0]), ([[1.0]], [0.0])]
    claim = _claim([2.0], [1.0], [1.0], [[0.0]])
    for sem, code in (("ieee", 0), ("finite", 1)):
        p = tmp_path / f"{sem}.json"
        save_network(p, _net("sigmoid", layers, semantics=sem), claim)
        r = CliRunner().invoke(main, ["verify", str(p)])
        assert r.exit_code == code, r.output
        assert f"semantics: {sem}" in r.output
    r = CliRunner().invoke(main, ["verify", str(tmp_path / "finite.json"), "--semantics", "ieee"])
    assert r.exit_code == 0 and "semantics: ieee" in r.output, r.output


# ---- distinguishability -----------------------------------------------------------------------------------
def _sigmoid_box(fmt):
    F = get_format(fmt)
    V = F.values()
    return F, V[np.abs(V) <= 2.0 ** (F.e_max - 1)]


def test_overflowing_first_layer_neurons_distinguish_every_neighbouring_pair_of_the_e5m2_sigmoid_box():
    from condcheck.theorem5 import indistinguishable_pairs
    F, X = _sigmoid_box("float8_e5m2")
    assert len(indistinguishable_pairs("sigmoid", F, X)) == 56
    assert indistinguishable_pairs_ieee("sigmoid", F, X) == []


def test_a_saturating_neuron_separates_the_readme_pair_and_its_network_verifies_only_under_ieee():
    # Find a first-layer neuron sigmoid~(w x + b) that separates -0.00390625 and -0.00341796875 and
    # overflows elsewhere on the box; a two-layer network with it verifies on the whole box only under IEEE.
    F, X = _sigmoid_box("float8_e5m2")
    V = F.values()
    a, b = -0.00390625, -0.00341796875
    for w in V[::-1]:
        found = None
        for bias in V:
            net = _net("sigmoid", [([[w]], [bias]), ([[1.0]], [0.0])])
            va, vb = net.forward([[a], [b]])
            if va != vb:
                found = net
                break
        if found is not None:
            break
    values, grads = found.evaluate(X.reshape(-1, 1), np.ones(len(X)))
    claim = _claim(X, values, np.ones(len(X)), grads)
    assert verify(found, claim).ok and verify(found, claim, method="exact").ok
    finite = Network(F, "sigmoid", found.layers, semantics="finite")
    assert not verify(finite, claim).ok


@pytest.mark.slow
def test_overflowing_first_layer_neurons_distinguish_every_neighbouring_pair_of_the_b2_6_sigmoid_box():
    from condcheck.theorem5 import indistinguishable_pairs
    F, X = _sigmoid_box("b2_6")
    assert len(indistinguishable_pairs("sigmoid", F, X)) == 184
    assert indistinguishable_pairs_ieee("sigmoid", F, X) == []
