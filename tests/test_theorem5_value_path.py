"""Theorem 5 constructor, first part: the value path (exact values, AD gradient exactly zero).

Gradient branches are not built yet (issue 4 is open); these tests pin what works today.
"""
import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.theorem5 import ConstructionError, construct_theorem5
from condcheck.verify import verify


def _box(fmt, act):
    F = get_format(fmt)
    V = F.values()
    m = 2.0 ** (F.e_max - 1) if act in ("sigmoid", "tanh") else 2.0 ** (F.e_max - 2)
    return F, V[np.abs(V) <= m]


@pytest.mark.parametrize("act", ["relu", "gelu", "tanh"])
def test_value_path_realizes_random_values_on_the_float6_box(act):
    F, X = _box("float6_e3m2fn", act)
    rng = np.random.default_rng(7)
    f = rng.choice(F.values(), len(X))
    net, claim = construct_theorem5(act, F, X, f, np.zeros(len(X)), np.zeros((len(X), 1)))
    res = verify(net, claim, method="exact")
    assert res.ok, res.summary()
    assert res.points == len(X)


def test_value_path_has_zero_gradient_for_nonzero_upstream():
    F, X = _box("float6_e3m2fn", "relu")
    rng = np.random.default_rng(3)
    f = rng.choice(F.values(), len(X))
    h = rng.choice(np.array([-1.0, -0.5, 0.25, 1.0]), len(X))
    net, claim = construct_theorem5("relu", F, X, f, h, np.zeros((len(X), 1)))
    assert verify(net, claim).ok


def test_a_zero_upstream_with_a_nonzero_gradient_is_refused_with_the_point():
    F, X = _box("float6_e3m2fn", "relu")
    g = np.zeros((len(X), 1))
    g[4, 0] = 1.0
    with pytest.raises(ConstructionError, match=r"point 5 .*h\* = 0"):
        construct_theorem5("relu", F, X, np.zeros(len(X)), np.zeros(len(X)), g)


def test_gradient_branches_are_reported_as_not_built():
    F, X = _box("float6_e3m2fn", "relu")
    g = np.zeros((len(X), 1))
    g[0, 0] = 1.0
    with pytest.raises(ConstructionError, match="not built yet"):
        construct_theorem5("relu", F, X, np.zeros(len(X)), np.ones(len(X)), g)


@pytest.mark.slow
@pytest.mark.parametrize("act", ["relu", "elu", "gelu", "swish", "sigmoid", "tanh"])
def test_value_path_on_the_full_float8_e4m3_box(act):
    F, X = _box("float8_e4m3", act)
    f = np.random.default_rng(1).choice(F.values(), len(X))
    net, claim = construct_theorem5(act, F, X, f, np.zeros(len(X)), np.zeros((len(X), 1)))
    assert verify(net, claim).ok
