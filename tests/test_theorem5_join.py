"""The transfer of a gradient branch from both ends (``Context._join_reach``, ``Context._last_join``): when every
greedy chain fails on an enumerated format with many values, the values that an absorbed output weight and
the last layer's T' reach from h* bound the gain the last layer can carry; the first layers (preimage sets
from g*) are aimed at what is left, and the last layer's weight may be found by joining both ends.

The case is point 162 of sigmoid's 256-point float16 box sample (random:0, |h*| <= 1/4): h* = -2^-24, the
smallest subnormal, and g* = 777.5 (g*/h* = 2^33.6).  Its gates there have T' = 1/4 and every factor before
them is a power of two, so every preimage set is one value."""
import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.formats import get_format
from condcheck.targets import box_sample, random_targets
from condcheck.verify import verify
from condcheck.constructors.witnesses import require_conditions

Y, G = -2.0 ** -24, 777.5
GATE, D3 = 0.4921875, 0.25                     # the gate's forward value and T' at the point
TAIL = [0.25, 16.0, 0.25, -1.0, 0.25, -8.0, 0.25, 1.0]    # T'(gate), a3, T'(p3), a2b, T'(p2), a2, T'(s0), w_g
H_MAX, QUARTER, BMAX = 0.238525390625, 8.0, 32.0


def _ctx():
    """A context for sigmoid on float16 (one point: the transfer reads only the states and the format)."""
    F = get_format("float16")
    kit = t5.Kit("sigmoid", F, "exact")
    st = t5.find_states(kit, require_conditions(kit.act, F, "exact", 5))
    return t5.context.Context(kit, st, F, np.array([[0.0287017822265625]]), [], [], lambda zi: [])


def _backward(ctx, post, A):
    """The exact backward chain at the point: y (x) A, then T'(p_k) (x) a_k of each layer from the last, then
    the factors before the gate; and the forward values T(p_k)."""
    kit = ctx.kit
    v, pre = GATE, []
    for a, c in post:
        pre.append(float(kit.add(kit.mul(a, v), c)))
        v = float(kit.T(pre[-1]))
    b = float(kit.mul(Y, A))
    for (a, _), p in zip(reversed(post), reversed(pre)):
        b = float(kit.mul(kit.mul(b, kit.dT(p)), a))
    for f in TAIL:
        b = float(kit.mul(b, f))
    return b, v, pre


def test_no_greedy_chain_carries_the_smallest_subnormal_upstream_to_that_gradient():
    ctx = _ctx()
    for n in (2, 3, 4, 5, 6):
        assert ctx._transfer_search(Y, G, GATE, D3, TAIL, BMAX, H_MAX, QUARTER, n) is None


def test_first_layers_aimed_at_the_last_layers_reach_carry_it_exactly_through_three_blocker_layers():
    ctx = _ctx()
    ctx.join = True
    post, A, ends = ctx._transfer_search(Y, G, GATE, D3, TAIL, BMAX, H_MAX, QUARTER, 3)
    b, v_last, pre = _backward(ctx, post, A)
    assert b == G
    # every layer is a blocker: live at the point, dead where its input is sigmoid's dead value L = 0
    assert all(not ctx.st.dead(p) and ctx.kit.dT(p) != 0 for p in pre)
    assert all(ctx.st.dead(float(ctx.kit.add(ctx.kit.mul(a, 0.0), c))) for a, c in post)
    # the output term is absorbed by C and the output weight keeps h_max finite
    assert abs(A) * abs(v_last) < QUARTER and abs(A) * H_MAX <= 65504.0
    assert ends[0] == v_last


def test_the_joined_last_layer_refuses_a_preimage_beyond_its_reach():
    # |w| = |RN(RN(y A) T'(p))| is at most 8 x 2^-24 with an absorbed A (|A| T(p) < 8 and sigmoid's T' <= T;
    # measured at p = -9.0078125, A = 65312), and |a| <= Omega, so no last layer reaches a backward value
    # above 8 x 2^-24 x 65504 ~ 0.031
    ctx = _ctx()
    assert ctx._last_join(Y, np.array([0.5]), 0.5, H_MAX, QUARTER) is None
    assert ctx._join_reach(Y, H_MAX, QUARTER)[-1] == np.log2(8 * 2.0 ** -24 * 65504 / 2.0 ** -24)


def test_the_joined_last_layer_lands_exactly_on_a_single_preimage_value():
    # 777.5 / 2^16: a significand (1.518) that no short blocker weight (1 or 1.5) times a power of two gives
    ctx, kit, s = _ctx(), None, 777.5 / 65536
    kit = ctx.kit
    (a, c), A, ends = ctx._last_join(Y, np.array([s]), 0.5, H_MAX, QUARTER)
    p = float(kit.add(kit.mul(a, 0.5), c))
    assert float(kit.mul(kit.mul(kit.mul(Y, A), kit.dT(p)), a)) == s
    assert ctx.st.dead(c) and not ctx.st.dead(p) and abs(A) * abs(float(kit.T(p))) < QUARTER


@pytest.mark.slow
def test_sigmoid_on_256_float16_box_points_realizes_random_targets():
    # measured: depth 8, 27,521 nonzero parameters, 114 CPU s, peak 394 MiB (point 162 needs the join)
    F = get_format("float16")
    X = box_sample("sigmoid", F, 1, 256, 0)
    f, h, g = random_targets(F, X, 0, 0.25)
    net, claim = t5.construct_theorem5("sigmoid", F, X, f, h, g)
    assert verify(net, claim, method="sparse").ok
