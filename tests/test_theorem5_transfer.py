"""The transfer of a gradient branch (``Context._transfer_search``): blocker layers and an output weight that
carry the upstream value h*(z) to g*(z) exactly.  The greedy chain gives each layer an even share of the
gain; when no greedy chain works, a beam over the layers (``_transfer_beam``) is tried."""
import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.verify import verify


def _sigmoid_pair():
    # sigmoid on float8_e4m3 with |h*| up to its H_sigma = 4 (random:0): point 28 of the box has the
    # smallest subnormal upstream, h* = -2^-9, and g* = 0.0859; the point with h* = 4 limits the output
    # weights to |A| <= Omega / 4, so the blocker layers must carry most of the ratio g*/h*
    F = get_format("float8_e4m3")
    X = full_box("sigmoid", F, 1)
    f, h, g = random_targets(F, X, 0, 4.0)
    idx = np.sort([27, int(np.argmax(np.abs(h)))])
    assert h[27] == -2.0 ** -9 and np.max(np.abs(h)) == 4.0
    return F, X[idx], f[idx], h[idx], g[idx]


def test_a_ratio_the_greedy_chain_cannot_carry_is_carried_by_the_beam():
    F, X, f, h, g = _sigmoid_pair()
    net, claim = t5.construct_theorem5("sigmoid", F, X, f, h, g)
    assert verify(net, claim).ok


def test_without_the_beam_that_gradient_branch_is_refused(monkeypatch):
    F, X, f, h, g = _sigmoid_pair()
    monkeypatch.setattr(t5.context.Context, "_transfer_beam", lambda self, *args, **kw: None)
    with pytest.raises(t5.ConstructionError, match="point 1 .*gradient branch not found"):
        t5.construct_theorem5("sigmoid", F, X, f, h, g)
