"""Conditions 1-3 are meant to be sufficient for the Theorem 5 constructor (issue 3): every accepted
(activation, format) of the theorems' branches (E >= 4) must construct, here on the full d = 1 box.

The whole sweep over the built-ins and the formats of at most 8 bits is ``benchmarks/sufficiency.py``;
the slow test below runs each pair of it.  float8_e4m3b11fnuz: gelu constructs through sharpened steps,
tanh, elu and selu through zero ends, swish and mish through lifted boosts and per-step gate weights.
"""
import numpy as np
import pytest

from condcheck.activations import list_activations
from condcheck.check import check_activation, theorem_branch
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.theorem5 import ConstructionError, construct_theorem5
from condcheck.verify import verify

COVERED_8_BITS = ["float8_e5m2", "float8_e4m3", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz"]


def _box_case(act, fmt, seed=0):
    F = get_format(fmt)
    X = full_box(act, F, 1)
    f, h, g = random_targets(F, X, seed, 0.25)
    return X, construct_theorem5(act, F, X, f, h, g)


def test_softplus_on_the_float8_e4m3_box_retries_value_gates_far_from_l():
    # f* = 0.005859375 at point 3: the value gates nearest |f*| sit on softplus~'s smallest values, which no
    # V' maps onto a power of two; the retry takes the gates' on values farthest from L
    X, (net, claim) = _box_case("softplus", "float8_e4m3")
    assert claim.values[2] == 0.005859375
    res = verify(net, claim)
    assert res.ok and res.points == len(X), res.summary()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", COVERED_8_BITS)
@pytest.mark.parametrize("act", [a for a in list_activations() if not a.startswith("test_")])
def test_every_accepted_pair_of_a_covered_8_bit_format_constructs_its_full_box(act, fmt):
    if not check_activation(act, fmt).holds:
        pytest.skip(f"{act} fails a condition on {fmt}: nothing is claimed")
    try:
        X, (net, claim) = _box_case(act, fmt)
    except ConstructionError as e:
        if str(e).startswith("distinguishability fails"):
            pytest.skip(f"the box of {fmt} is not distinguishable for {act} (a property of the domain)")
        raise
    assert verify(net, claim).ok


def test_the_covered_formats_are_those_of_the_theorems_branches():
    assert all(not theorem_branch(get_format(f)).startswith("not covered") for f in COVERED_8_BITS)
    assert theorem_branch(get_format("float8_e4m3b11fnuz")).startswith("low-exponent")
    assert theorem_branch(get_format("float8_e3m4")).startswith("not covered")


def test_a_sharpened_step_of_float8_e4m3b11fnuz_splits_where_its_separator_does_not():
    # Omega = 30 and gelu's dead tail starts at -5 with ulp 1/2: the best first-layer separator of the
    # box's first gap leaves the step row just above the tail (gelu~(-4) = -2^-13), where no boost moves
    # it; a few sharpening layers T(w n + b) (exhaustive over F x F) pull the two sides apart
    from condcheck.theorem5 import Kit, find_states
    from condcheck.theorem5.gates import gate_push_need
    from condcheck.constructors.witnesses import require_conditions
    from condcheck.separators import separator_chooser
    from condcheck.theorem5.boosts import sharpened_split, step_split
    F = get_format("float8_e4m3b11fnuz")
    kit = Kit("gelu", F, "exact")
    st = find_states(kit, require_conditions(kit.act, F, "exact", 5))
    vals = np.unique(full_box("gelu", F, 1)[:, 0])
    w, b, s0, kappa0 = separator_chooser(kit, vals, st)(1, True)
    n = kit.T(kit.row([(w, vals)], b))
    assert step_split(kit, st, n, s0, kappa0, gate_push_need(st))[0] is None
    on = np.arange(len(vals)) >= 1
    layers, n2, best = sharpened_split(kit, st, n, on, gate_push_need(st))
    assert 1 <= len(layers) <= 6
    assert n2[on].min() > n2[~on].max() or n2[on].max() < n2[~on].min()
    boosted = kit.T(kit.add(kit.mul(best[5], kit.T(best[4][0])), best[6]))
    assert (boosted[~on] == st.L).all() and (boosted[on] != st.L).all()


@pytest.mark.slow
@pytest.mark.parametrize("act,seed", [("gelu", 0), ("gelu", 1), ("gelu_tanh", 0)])
def test_gelu_constructs_the_full_float8_e4m3b11fnuz_box_through_sharpened_steps(act, seed):
    # nearly every step needs sharpening layers; the other steps are boosted again to the same depth and
    # the gradient branches relay their passes through as many layers
    X, (net, claim) = _box_case(act, "float8_e4m3b11fnuz", seed)
    res = verify(net, claim)
    assert res.ok and res.points == len(X), res.summary()


def test_a_lift_gives_a_step_at_swishs_minimum_the_push_a_gate_needs():
    # swish~ on float8_e4m3b11fnuz: L = 0, z_d = -13, Omega = 30; a step whose on value is swish~'s minimum
    # -0.28 keeps, after the best boost (whose bias must keep L dead), almost no push for a gate; a lift
    # T(a1 U + c1) with any (a1, c1) before the boost moves it far enough
    from condcheck.theorem5 import Kit, find_states
    from condcheck.theorem5.boosts import boost, lifted_boost
    from condcheck.theorem5.gates import gate_push_need, gate_reach
    from condcheck.constructors.witnesses import require_conditions
    F = get_format("float8_e4m3b11fnuz")
    kit = Kit("swish", F, "exact")
    st = find_states(kit, require_conditions(kit.act, F, "exact", 5))
    V = F.values()
    V = V[np.isfinite(V)]
    pre = np.array([st.z_dead, float(V[np.argmin(kit.T(V))])])
    on = np.array([False, True])
    need = gate_push_need(st)
    a, c = boost(kit, st, kit.T(pre[on]))
    assert gate_reach(F, st, kit.T(kit.add(kit.mul(a, kit.T(pre[on])), c))) < need
    (a1, c1), (a2, c2), reach = lifted_boost(kit, st, pre, on, need)
    assert reach >= need
    out = kit.add(kit.mul(a2, kit.T(kit.add(kit.mul(a1, kit.T(pre)), c1))), c2)
    assert st.dead(out[~on]).all() and not st.dead(out[on]).any()
    assert gate_reach(F, st, kit.T(out[on])) == reach


@pytest.mark.slow
@pytest.mark.parametrize("act,seed", [("swish", 0), ("swish", 1), ("mish", 0), ("mish", 1)])
def test_swish_and_mish_construct_the_full_float8_e4m3b11fnuz_box_through_lifts_and_gate_offsets(act, seed):
    # swish: steps at swish~'s minimum are lifted before their boost (the test above); mish: point 2's
    # gating steps have on values 0.875 and 16, and a shared weight size gives the second a push of 8
    # where 14 is needed, so the gates of the points where everything else failed try per-step sizes
    # (``Context._offset_rows``: point 101 needs weight 1.875 on an on value 16)
    assert check_activation(act, "float8_e4m3b11fnuz").holds
    X, (net, claim) = _box_case(act, "float8_e4m3b11fnuz", seed)
    res = verify(net, claim)
    assert res.ok and res.points == len(X), res.summary()


@pytest.mark.slow
@pytest.mark.parametrize("act", ["tanh", "elu", "selu"])
def test_a_dead_value_below_zero_constructs_the_full_float8_e4m3b11fnuz_box_through_zero_ends(act):
    # some point has the smallest subnormal upstream 2^-13 (tanh: point 12 [-3.25]), where an absorbed
    # output weight |A| < 1/2 gives RN(y A) = 0; its gradient branch ends in an L layer and a zero layer
    X, (net, claim) = _box_case(act, "float8_e4m3b11fnuz")
    res = verify(net, claim)
    assert res.ok and res.points == len(X), res.summary()


def test_an_absorbed_output_weight_loses_the_smallest_subnormal_upstream_where_l_is_minus_one():
    # the premise of the zero end: C <= Omega = 30 is at most 16, so |A| |L| < ulp(16) / 4 = 1/2 bounds
    # |A| below 1/2 for tanh (L = -1), and RN(2^-13 A) is then 0; tanh~ still takes the value L = -1 at
    # live states (T' != 0), and 0 at the live state 0
    from condcheck.rounding import round_float
    from condcheck.theorem5 import Kit, find_states
    from condcheck.constructors.witnesses import require_conditions
    F = get_format("float8_e4m3b11fnuz")
    kit = Kit("tanh", F, "exact")
    st = find_states(kit, require_conditions(kit.act, F, "exact", 5))
    assert st.L == -1.0 and round_float(2.0 ** -13 * 0.5, F) == 0.0
    live = st.z > st.z_dead
    assert ((st.t == st.L) & (st.dt != 0) & live).any()
    assert ((st.t == 0) & (st.dt != 0) & live).any()


@pytest.mark.slow
@pytest.mark.parametrize("act", ["tanh", "elu", "selu"])
def test_the_smallest_subnormal_upstream_reaches_its_gradient_on_a_three_point_domain(act):
    # h* = +-2^-13 at two of three points: with C = 16 an absorbed output weight loses it (the test
    # above), so those branches need the zero end; 17-26 CPU s each
    X = np.array([[-0.5], [0.0], [0.5]])
    net, claim = construct_theorem5(act, "float8_e4m3b11fnuz", X, [0.25, 0.5, -0.25],
                                    [2.0 ** -13, 0.5, -2.0 ** -13], [2.0 ** -10, 0.5, 0.0078125])
    res = verify(net, claim)
    assert res.ok and res.points == 3, res.summary()


def test_a_failure_outside_the_theorems_branches_says_the_construction_is_an_attempt():
    # elu on float6_e3m2fn (E = 3) passes the conditions but its box fails in a gradient transfer (point 1,
    # session 12); gelu there constructs since the lifted boosts of session 12
    F = get_format("float6_e3m2fn")
    assert check_activation("elu", F).holds
    with pytest.raises(ConstructionError, match=r"outside both branches .* an attempt"):
        _box_case("elu", "float6_e3m2fn")
