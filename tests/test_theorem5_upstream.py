"""Theorem 5 with upstream values up to the paper's H_sigma (= Omega for relu and gelu on float8_e4m3).

Two mechanisms only matter there: the absorbing constant C of the output row (its weight C/K multiplies
every upstream value) and the boosts' on values (a value gate's backward gain is about |f*| / on_min).
"""
import math

import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.check import check_activation
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.verify import verify
from condcheck.constructors.witnesses import require_conditions


def _constants(act, F):
    kit = t5.Kit(act, F, "exact")
    st = t5.find_states(kit, require_conditions(kit.act, F, "exact", 5))
    return t5.constants.Constants(F, *st.constants), kit


def test_absorber_finds_a_constant_state_that_keeps_the_largest_upstream_finite():
    F = get_format("float8_e4m3")
    consts, kit = _constants("gelu", F)
    C = consts.absorber(float(F.max_float), kit.dT)
    b, K = consts.absorbing
    assert (C / K) * float(F.max_float) * max(1.0, abs(kit.dT(b))) <= float(F.max_float)
    assert C >= 64          # the constant state nearest 1 alone would have left C = 1 (ulp(C) / 4 = 1/32)


def test_absorber_keeps_the_weight_times_upstream_finite_where_the_constant_state_is_flat():
    # tanh~(b) = 1 is saturated (T'(b) = 0): the product y w itself must still be finite
    F = get_format("float8_e4m3")
    consts, kit = _constants("tanh", F)
    C = consts.absorber(2.0, kit.dT)
    b, K = consts.absorbing
    assert (C / K) * 2.0 <= float(F.max_float)


def test_absorber_keeps_the_state_nearest_one_for_small_upstream():
    F = get_format("float8_e4m3")
    consts, kit = _constants("relu", F)
    C = consts.absorber(0.25, kit.dT)
    assert consts.absorbing == consts.pick(C)


def test_boost_weights_are_the_powers_of_two_unless_widened():
    F = get_format("float8_e4m3")
    narrow = t5.boosts._boost_weights(F, 1.0, False)
    assert narrow[:2] == [math.ldexp(1.0, F.e_max), -math.ldexp(1.0, F.e_max)]
    assert all(math.frexp(abs(a))[0] == 0.5 for a in narrow)
    wide = t5.boosts._boost_weights(F, -1.0, True)
    assert set(narrow) < set(wide) and wide[0] == -float(F.max_float)


@pytest.mark.parametrize("act, seed", [("relu", 6)])
def test_value_that_overflows_with_power_of_two_boosts_builds_with_wide_boosts(act, seed):
    # relu, random:6 with |h*| <= 240: f* = 192 with h* = 176 at point 186 needs boosts' on values above
    # 128, the largest a power-of-two boost gives
    F = get_format("float8_e4m3")
    X = full_box(act, F, 1)
    f, h, g = random_targets(F, X, seed, float(F.max_float))
    args = (act, F, X, f, h, g, "exact", False, None, None, "auto", 1, None, None)
    with pytest.raises(t5.ValueGainOverflow):
        t5.construct._construct_theorem5(*args)
    net, claim = t5.construct_theorem5(act, F, X, f, h, g)
    assert verify(net, claim).ok


@pytest.mark.slow
@pytest.mark.parametrize("act, seed", [(a, s) for a in ("relu", "elu", "gelu", "swish") for s in range(8)])
def test_activations_with_h_sigma_omega_realize_every_upstream_up_to_it_on_the_float8_box(act, seed):
    # H_sigma = Omega = 240 for these four on float8_e4m3 (check_activation's constants)
    F = get_format("float8_e4m3")
    assert float(check_activation(act, F).constants["H_sigma"]) == float(F.max_float)
    X = full_box(act, F, 1)
    f, h, g = random_targets(F, X, seed, float(F.max_float))
    assert np.max(np.abs(h)) > 128
    net, claim = t5.construct_theorem5(act, F, X, f, h, g)
    assert verify(net, claim).ok


@pytest.mark.slow
@pytest.mark.parametrize("act, seed", [(a, s) for a in ("relu", "elu", "gelu", "swish", "tanh") for s in range(3)])
def test_every_upstream_up_to_h_sigma_on_the_float8_e5m2_box(act, seed):
    # H_sigma = Omega = 57,344 for relu, elu, gelu and swish, 1 for tanh (sigmoid's e5m2 box is not
    # distinguishable)
    F = get_format("float8_e5m2")
    H = float(check_activation(act, F).constants["H_sigma"])
    X = full_box(act, F, 1)
    f, h, g = random_targets(F, X, seed, H)
    assert np.max(np.abs(h)) > H / 2
    net, claim = t5.construct_theorem5(act, F, X, f, h, g)
    assert verify(net, claim).ok
