"""The generic Theorem 7 construction's second attempt with small gates (docs/theorem7.md, "Small gates"):
where the first attempt finds no gate or pass path (gelu on the float6_e3m2fn box), boosts with any
weight of the format and the smallest gating weights build the network; elsewhere nothing changes.
"""
import numpy as np
import pytest

import condcheck.theorem7.generic as generic
from condcheck.formats import get_format
from condcheck.netfile import Claim
from condcheck.targets import full_box, random_odd_tables
from condcheck.theorem7 import ConstructionError, construct_theorem7
from condcheck.theorem7.activation import ActivationTable
from condcheck.theorem7.gating import Gating
from condcheck.verify import verify

F6 = get_format("float6_e3m2fn")


def _box_tables(act, F, seed):
    """The box, every y with |y| <= H_sigma and random odd tables, as `construct theorem7 --targets random:SEED`."""
    from condcheck.check import paper_constants
    X = full_box(act, F, 1)
    Y = F.values().astype(float)
    Y = Y[np.abs(Y) <= float(paper_constants(act, F)["H_sigma"])]
    f, G = random_odd_tables(F, X, Y, seed)
    return X, f, Y, G


@pytest.fixture
def attempts(monkeypatch):
    """The wide_boosts flag of every Gating the generic construction makes, in order (one per attempt)."""
    seen = []

    def spy(act, X, implementation, wide_boosts=False):
        seen.append(wide_boosts)
        return Gating(act, X, implementation, wide_boosts=wide_boosts)

    monkeypatch.setattr(generic, "Gating", spy)
    return seen


def _verified(res, dense_points=2):
    """The constructor's own verification covers every (x, y); n points are checked again, every y, by
    the dense interpreter (independent of the sparse one the constructor uses)."""
    c = res.claim
    assert res.verification.ok and res.verification.gradient_checks == len(c.points) * len(c.upstream)
    idx = np.sort(np.random.default_rng(0).choice(len(c.points), dense_points, replace=False))
    idx = np.union1d(idx, [0])                                          # the edge point x = -4 too
    again = verify(res.network, Claim(7, c.points[idx], c.values[idx], c.upstream, c.gradients[idx]),
                   method="dense")
    assert again.ok and again.gradient_checks == len(idx) * len(c.upstream), again.summary()
    assert res.depth <= res.paper_bound


def _gate_targets(act):
    Om = float(act.F.Omega)
    return [float(z) for z in act.pass_z if abs(act.T(float(z))) <= Om / 4]


def test_the_gelu_float6_edge_point_has_a_gate_only_after_a_wide_boost():
    """x = -4, the box's left edge: its one gating step is on at every other point with gelu~(-1) =
    -0.1875; the power-of-two boosts leave it at -0.125 next to L = 0 (16 x 0.1875 - 3 is L itself), and
    no gate is live at -4 and dead elsewhere.  The boost weight -28 lifts it to gelu~(2) = 2."""
    act = ActivationTable("gelu", F6, "exact")
    X = full_box("gelu", F6, 1)
    assert float(X[0, 0]) == -4.0
    targets = _gate_targets(act)
    narrow = Gating(act, X, "exact")
    (k,) = narrow.gating(0)
    assert set(np.delete(narrow.U_X[k], 0).tolist()) == {-0.125} and narrow.U_X[k][0] == narrow.st.L == 0.0
    for small_first in (False, True):
        with pytest.raises(ConstructionError, match="no gate puts it live"):
            narrow.ctx.find_gate(0, None, targets, small_first=small_first)
    wide = Gating(act, X, "exact", wide_boosts=True)
    assert (wide.steps[k].boost_a, wide.steps[k].boost_c) == (-28.0, -3.0)
    assert set(np.delete(wide.U_X[k], 0).tolist()) == {2.0}
    betas, gamma, pre = wide.ctx.find_gate(0, None, targets, small_first=True)
    assert float(pre[0]) in act.pass_set and wide.st.dead(np.delete(pre, 0)).all()
    assert max(abs(b) for b in betas) == 2.0


@pytest.mark.parametrize("seed", [1, pytest.param(0, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_gelu_float6_box_builds_and_verifies_on_the_second_attempt(seed, attempts):
    X, f, Y, G = _box_tables("gelu", F6, seed)
    res = construct_theorem7("gelu", F6, X, f, G, upstream=Y)
    assert attempts == [False, True]
    assert len(X) == 41 and len(Y) == 63
    _verified(res)


@pytest.mark.slow
def test_elu_float6_box_builds_and_verifies_on_the_second_attempt(attempts):
    X, f, Y, G = _box_tables("elu", F6, 1)
    res = construct_theorem7("elu", F6, X, f, G, upstream=Y)
    assert attempts == [False, True]
    _verified(res)


def test_a_box_the_first_attempt_builds_makes_one_gating(attempts):
    X, f, Y, G = _box_tables("tanh", F6, 1)
    res = construct_theorem7("tanh", F6, X, f, G, upstream=Y)
    assert attempts == [False]
    assert res.verification.ok and res.verification.gradient_checks == len(X) * len(Y)


@pytest.mark.parametrize("second, message", [("second attempt", "^first attempt [(]with small gates: second attempt[)]$"),
                                             ("first attempt", "^first attempt$")])
def test_when_both_attempts_fail_the_first_error_is_raised_then_the_second(monkeypatch, second, message):
    def failing(act, X, implementation, wide_boosts=False):
        raise ConstructionError(second if wide_boosts else "first attempt")

    monkeypatch.setattr(generic, "Gating", failing)
    X, f, Y, G = _box_tables("gelu", F6, 1)
    with pytest.raises(ConstructionError, match=message):
        construct_theorem7("gelu", F6, X, f, G, upstream=Y)
