"""Padding relays of gradient branches (``Context.pad_gradient``): a relay appended after a branch's last
layer must carry the branch's backward value back unchanged, exactly, and keep its forward value
absorbed by the output's constant."""
from fractions import Fraction

import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.formats import get_format
from condcheck.ops import add, mul
from condcheck.constructors.witnesses import require_conditions


def _sigmoid_ctx():
    F = get_format("float8_e4m3")
    kit = t5.Kit("sigmoid", F, "exact")
    st = t5.find_states(kit, require_conditions(kit.act, F, "exact", 5))
    return F, kit, t5.context.Context(kit, st, F, np.zeros((1, 1)), [], [], lambda zi: [])


def _branch(y, ow, post, ends):
    br = t5.records.Branch(0, None, list(post), ow)
    br.ends, br.y = ends, y
    return br


def _rn_mul(a, b, F):
    return float(mul(Fraction(a), Fraction(b), F))


def test_a_relay_pads_a_sigmoid_branch_whose_backward_value_is_subnormal():
    # upstream -2^-9 and output weight -5.5 (as at point 15 of the 64 x 64 sigmoid grid on float8_e4m3,
    # seed 1): the backward value 5.5 x 2^-9 rounds to the subnormal 6 x 2^-9, and at sigmoid's pass
    # states T' <= 1/4, so t1 (x) T' rounds again; the branch's last forward value here is 0.5625
    F, kit, ctx = _sigmoid_ctx()
    y, ow = -2.0 ** -9, -5.5
    br = _branch(y, ow, [(2.0, -2.75)], (0.5625, 0.0, 1.0))
    ctx.pad_gradient(br, 2, 0.25, 4.0)
    assert len(br.post) == 2
    a, c = br.post[-1]
    # checked with the exact Fraction arithmetic: the relay's pre-activation at the point, its
    # derivative there, and the backward value y (x) ow' (x) T' (x) a == y (x) ow
    q = float(add(Fraction(_rn_mul(a, 0.5625, F)), Fraction(c), F))
    d = float(kit.dT(q))
    back = _rn_mul(_rn_mul(_rn_mul(y, br.out_weight, F), d, F), a, F)
    assert back == _rn_mul(y, ow, F) == 6 * 2.0 ** -9
    # its forward values (on at the point, off elsewhere) stay absorbed: |ow'| |T| < ulp(C) / 4
    off = float(add(Fraction(_rn_mul(a, 0.0, F)), Fraction(c), F))
    assert abs(br.out_weight) * max(abs(kit.T(q)), abs(kit.T(off))) < 4.0


def test_power_of_two_relays_alone_cannot_pad_that_branch(monkeypatch):
    # why the relay above may have a weight a with T'(r) a not a power of two (here a = 2.75)
    F, kit, ctx = _sigmoid_ctx()
    monkeypatch.setattr(t5.context.Context, "_odd_relay", lambda self, *args: None)
    br = _branch(-2.0 ** -9, -5.5, [(2.0, -2.75)], (0.5625, 0.0, 1.0))
    with pytest.raises(t5.ConstructionError, match="no relay pads"):
        ctx.pad_gradient(br, 2, 0.25, 4.0)


def test_a_branch_that_no_relay_can_pad_is_refused_naming_its_point():
    F, kit, ctx = _sigmoid_ctx()
    # an absorption bound (ulp(C) / 4 = 2^-9) below every relay's forward value times any output weight
    br = _branch(-2.0 ** -9, -5.5, [(2.0, -2.75)], (0.5, 0.0, 1.0))
    with pytest.raises(t5.ConstructionError, match="point 1: no relay pads its gradient branch to 2 layers"):
        ctx.pad_gradient(br, 2, 0.25, 2.0 ** -9)


def test_a_lazy_row_makes_its_items_as_they_are_read_and_gives_them_again():
    from condcheck.theorem5.gradient_branches import LazyRow
    made = []

    def items():
        for k in range(5):
            made.append(k)
            yield k * k
    row = LazyRow(items())
    first = iter(row)
    assert [next(first), next(first)] == [0, 1] and made == [0, 1]
    assert list(row) == [0, 1, 4, 9, 16] and made == [0, 1, 2, 3, 4]     # (the earlier ones not made again)
    assert list(first) == [4, 9, 16] and list(row) == [0, 1, 4, 9, 16] and made == [0, 1, 2, 3, 4]


def test_the_padding_relays_read_lazily_are_every_pass_state_s_relay_in_order():
    from condcheck.theorem5.gradient_branches import PAD_SCALES
    F, kit, ctx = _sigmoid_ctx()
    v_on, v_off = 0.5625, 0.0
    rows = ctx._pad_relay_rows(v_on, v_off)
    assert [m for m, _ in rows] == list(PAD_SCALES)
    for m, row in rows:
        want = []
        for q, d in zip(ctx.pass_z, ctx.pass_d):                 # every pass state, by the kit's operations
            a = 2.0 ** m / float(d)
            c = t5.gates.solve_affine(kit, float(kit.mul(a, v_on)), float(q)) if F.contains(a) else None
            if c is None:
                continue
            off = float(kit.add(kit.mul(a, v_off), c))
            want.append((a, c, float(kit.T(q)), float(kit.T(off)), d, abs(float(kit.dT(off)))))
        assert list(row) == want and want
