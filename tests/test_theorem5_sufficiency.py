"""Conditions 1-3 are meant to be sufficient for the Theorem 5 constructor (issue 3): every accepted
(activation, format) of the theorems' branches (E >= 4) must construct, here on the full d = 1 box.

The whole sweep over the built-ins and the formats of at most 8 bits is ``benchmarks/sufficiency.py``;
the slow test below runs each pair of it.  Known gap: float8_e4m3b11fnuz (see the last tests).
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


def test_float8_e4m3b11fnuz_is_a_known_gap_of_the_step_construction():
    # Conditions 1-3 hold for gelu there, but Omega = 30 and the dead tail starts at -5 with ulp 1/2: a
    # first-layer neuron moves its pre-activation by at most 7.5 * 1/4 between neighbouring box inputs,
    # so every step lands just above the dead tail (gelu~(-4) = -2^-13), and no boost T(a U + c) with c
    # dead moves it (|a U| < ulp(-5) / 2).  This test records the gap; it fails once the gap is closed.
    assert check_activation("gelu", "float8_e4m3b11fnuz").holds
    with pytest.raises(ConstructionError, match=r"step at coordinate 1 gap 1: no boost"):
        _box_case("gelu", "float8_e4m3b11fnuz")


def test_a_failure_outside_the_theorems_branches_says_the_construction_is_an_attempt():
    F = get_format("float6_e3m2fn")
    assert check_activation("gelu", F).holds
    with pytest.raises(ConstructionError, match=r"outside both branches .* an attempt"):
        _box_case("gelu", "float6_e3m2fn")
