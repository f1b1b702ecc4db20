"""The gate targets of gradient branches and the budget of a gradient search (``search_gradient_branches``).

A gradient gate's value Gz is the forward value the blocker layers after it start from.  Its usual first
target is the smallest value (relu: the smallest subnormal), where the blockers can grow the chain but not
shrink it: with a ratio g*/h* far below 1 no transfer exists, and trying every source weight, scale, gate
and depth took hours (relu on 1,024 bfloat16 box points, point 466: g*/h* = 2^-79.6).  The search now gives
up after TRANSFER_BUDGET transfer searches per attempt, and a last retry puts the gates on the targets whose
value is nearest 1 (``Context._gradient_targets``).  Where every budgeted attempt gives up, one search without
a budget follows (``UNBUDGETED_LAST``; off in these tests).

Since then the last layer of a transfer is aimed at the gains its blockers have (``_transfer_last``), so
that point builds on the usual gates too; the tests of gates near 1 block the usual gates' transfers.  On
formats with many values a search that gave up on a ratio below 1 retries gates near 1 before the join."""
import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.targets import box_sample, random_targets
from condcheck.verify import verify


def _relu_pair():
    # relu on 1,024 bfloat16 box points (random:0): point 466 has h* = -6.8e-4, g* = 7.4e-28 (g*/h* =
    # 2^-79.6); the point with the largest |h*| bounds the output weights
    X = box_sample("relu", "bfloat16", 1, 1024, 0)
    f, h, g = random_targets("bfloat16", X, 0, 0.25)
    assert np.log2(abs(g[465, 0] / h[465])) < -79
    idx = np.sort([465, int(np.argmax(np.abs(h)))])
    return X[idx], f[idx], h[idx], g[idx]


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(t5.tuning, "TRANSFER_BUDGET", 4)


@pytest.fixture
def usual_gates_fail(monkeypatch):
    # every transfer from a gate on the usual targets finds nothing (as before the last layer was aimed at
    # its blockers' gains), so the budget runs out there
    original = t5.context.Context._transfer_search

    def search(self, *args):
        if not self.near_one:
            self.transfer_why = "the usual gates are blocked by the test"
            return None
        return original(self, *args)
    monkeypatch.setattr(t5.context.Context, "_transfer_search", search)


@pytest.fixture(autouse=True)
def no_unbudgeted_last(monkeypatch):
    # the last, unlimited search after every budgeted attempt gave up would take hours on these pairs
    monkeypatch.setattr(t5.tuning, "UNBUDGETED_LAST", False)


def test_a_ratio_far_below_one_is_carried_by_gradient_gates_near_one(small_budget, usual_gates_fail):
    X, f, h, g = _relu_pair()
    net, claim = t5.construct_theorem5("relu", "bfloat16", X, f, h, g)
    assert verify(net, claim).ok


def test_a_ratio_far_below_one_finds_a_last_layer_from_a_gate_on_the_smallest_value(small_budget, monkeypatch):
    # point 466's gate sits on relu's smallest value 2^-133, where every blocker has |a| >= 3/4: the last
    # layer aimed at half of need = 2^-56 found none; aimed within its blockers' gains it does
    monkeypatch.setattr(t5.context.Context, "NEAR_ONE", False)
    X, f, h, g = _relu_pair()
    net, claim = t5.construct_theorem5("relu", "bfloat16", X, f, h, g)
    assert verify(net, claim).ok


def _attempts(monkeypatch, X, f, h, g):
    """The retry flags of every gradient search of the first point, with a budget of 0 (every attempt gives
    up at once)."""
    monkeypatch.setattr(t5.tuning, "TRANSFER_BUDGET", 0)
    seen = []
    original = t5.search._gradient_branches_search

    def spy(ctx, zi, *args, **kw):
        if zi == 0:
            seen.append("near_one" if ctx.near_one else "join" if ctx.join else "usual")
        return original(ctx, zi, *args, **kw)
    monkeypatch.setattr(t5.search, "_gradient_branches_search", spy)
    with pytest.raises(t5.SearchGaveUp):
        t5.construct_theorem5("relu", "bfloat16", X, f, h, g)
    return seen


def test_a_search_that_gave_up_on_a_ratio_below_one_retries_gates_near_one_before_the_join(monkeypatch):
    X, f, h, g = _relu_pair()               # its first point, 466: g*/h* = 2^-79.6
    assert abs(g[0, 0]) < abs(h[0])
    assert _attempts(monkeypatch, X, f, h, g) == ["usual", "near_one", "join"]


def test_a_search_that_gave_up_on_a_ratio_above_one_retries_the_join_before_gates_near_one(monkeypatch):
    X = box_sample("relu", "bfloat16", 1, 4, 0)
    f, h, g = random_targets("bfloat16", X, 0, 0.25)
    assert abs(g[0, 0]) > abs(h[0])
    seen = _attempts(monkeypatch, X, f, h, g)
    assert seen[:2] == ["usual", "join"] and seen.index("near_one") > 1


def test_without_gates_near_one_that_gradient_search_gives_up_naming_the_point(small_budget, usual_gates_fail,
                                                                               monkeypatch):
    X, f, h, g = _relu_pair()
    monkeypatch.setattr(t5.context.Context, "NEAR_ONE", False)
    with pytest.raises(t5.SearchGaveUp, match=r"point \d .*gave up after 4 transfer searches"):
        t5.construct_theorem5("relu", "bfloat16", X, f, h, g)


def test_a_search_with_no_budget_gives_up_at_its_first_transfer(monkeypatch):
    monkeypatch.setattr(t5.tuning, "TRANSFER_BUDGET", 0)
    X = box_sample("relu", "bfloat16", 1, 4, 0)
    f, h, g = random_targets("bfloat16", X, 0, 0.25)
    with pytest.raises(t5.SearchGaveUp, match="point 1 .*gave up after 0 transfer searches"):
        t5.construct_theorem5("relu", "bfloat16", X, f, h, g)


def test_gates_near_one_are_the_gate_targets_ordered_by_the_distance_of_their_value_from_one(monkeypatch):
    seen = {}
    original = t5.context.Context._gradient_targets

    def spy(self):
        r = original(self)
        if self.near_one:
            seen["near"], seen["all"], seen["ctx"] = r, self.gate_targets, self
        return r
    monkeypatch.setattr(t5.context.Context, "_gradient_targets", spy)
    monkeypatch.setattr(t5.tuning, "TRANSFER_BUDGET", 0)
    X = box_sample("relu", "bfloat16", 1, 4, 0)
    f, h, g = random_targets("bfloat16", X, 0, 0.25)
    with pytest.raises(t5.SearchGaveUp):
        t5.construct_theorem5("relu", "bfloat16", X, f, h, g)
    near, ctx = np.asarray(seen["near"], float), seen["ctx"]
    assert sorted(near.tolist()) == sorted(np.asarray(seen["all"], float).tolist())
    dist = np.abs(np.log2(np.abs(ctx.kit.T(near) - ctx.st.L)))
    assert (np.diff(dist) >= 0).all() and dist[0] < 1 < dist[-1]


def test_a_search_that_gave_up_everywhere_is_tried_once_more_without_a_budget(monkeypatch):
    # with a budget of 0 every budgeted attempt gives up at once; the last search has no budget and builds
    # the four points (as the search did before the budget existed)
    monkeypatch.setattr(t5.tuning, "TRANSFER_BUDGET", 0)
    monkeypatch.setattr(t5.tuning, "UNBUDGETED_LAST", True)
    X = box_sample("tanh", "bfloat16", 1, 4, 0)
    f, h, g = random_targets("bfloat16", X, 0, 0.25)
    net, claim = t5.construct_theorem5("tanh", "bfloat16", X, f, h, g)
    assert verify(net, claim).ok
