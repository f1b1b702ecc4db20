"""Gradient gates with per-step weight sizes on the 16-bit formats (``search.search_gradient_branches``'
last retry, ``Gates._offset_rows``): the gelu float16 box point whose gate the shared sizes do not find
(issue 31; docs/boxes.md).  Slow: the chunk reads a ``Build`` of the whole box (57,345 points)."""
import pytest

from condcheck.activations import get_activation
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.theorem5 import spread
from condcheck.theorem5.build import Build
from condcheck.theorem5.chunks import Chunk

pytestmark = pytest.mark.slow

POINT = 17348          # point 17349 of the message (1-based), x = -0.066162109375


@pytest.fixture(scope="module")
def gelu_box_branches():
    F, act = get_format("float16"), get_activation("gelu").name
    X = full_box(act, F, 1)
    f, h, g = random_targets(F, X, 0, 0.25)          # construct's --targets random:0 (--upstream-max 0.25)
    build = Build(act, F, X, f, h, g, "exact", True, None, "auto", False)
    r = spread.speculate(build, Chunk(range(POINT, POINT + 1), (0,), range(POINT, POINT + 1)), [])
    return build, r["reports"][-1]


def test_the_gelu_float16_box_point_gets_its_gradient_branch(gelu_box_branches):
    build, last = gelu_box_branches
    assert not isinstance(last, BaseException), str(last)
    grad, _, _, _ = last["branches"]
    assert [br.zi for br in grad] == [POINT]
    assert float(build.X[POINT, 0]) == -0.066162109375


def test_its_gate_is_live_at_the_point_with_a_weight_beyond_the_shared_sizes(gelu_box_branches):
    # the shared sizes tie the up-step's weight to 2^-12 x the down-step's (whose on values reach 65,504,
    # so its weight is at most 1): the gate found weighs the up-step by more than that
    build, last = gelu_box_branches
    gate = last["branches"][0][0].gate
    assert gate.pz > build.st.z_dead and not build.st.dead(gate.pz)
    assert abs(gate.betas[1]) > 2.0 ** -12 * abs(gate.betas[0])
