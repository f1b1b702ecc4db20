"""Gradient gates with per-step weight sizes on the 16-bit formats (``search.search_gradient_branches``'
last retries, ``Gates._offset_rows`` and ``Gates._least_rows``): the gelu float16 box point whose gate the
shared sizes do not find, and the swish one whose gate of per-step sizes leaves no room for its gradient
(issue 31; docs/boxes.md).  Slow: each chunk reads a ``Build`` of the whole box (57,345 points)."""
import pytest

from condcheck.activations import get_activation
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.theorem5 import speculation
from condcheck.theorem5.build import Build
from condcheck.theorem5.chunks import Chunk

pytestmark = pytest.mark.slow

POINT = 17348          # point 17349 of the message (1-based), x = -0.066162109375
SWISH_POINT = 35328    # point 35329 of the message (1-based), x = 0.0029296875


def _one_point_chunk(act, point):
    """(the Build of act's whole float16 box, the last report of the one-point chunk of point)."""
    F = get_format("float16")
    X = full_box(get_activation(act).name, F, 1)
    f, h, g = random_targets(F, X, 0, 0.25)          # construct's --targets random:0 (--upstream-max 0.25)
    build = Build(get_activation(act).name, F, X, f, h, g, "exact", True, None, "auto", False)
    r = speculation.speculate(build, Chunk(range(point, point + 1), (0,), range(point, point + 1)), [])
    return build, r["reports"][-1]


@pytest.fixture(scope="module")
def gelu_box_branches():
    return _one_point_chunk("gelu", POINT)


@pytest.fixture(scope="module")
def swish_box_branches():
    return _one_point_chunk("swish", SWISH_POINT)


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


def test_the_swish_float16_box_point_gets_its_gradient_branch(swish_box_branches):
    build, last = swish_box_branches
    assert not isinstance(last, BaseException), str(last)
    grad, _, _, _ = last["branches"]
    assert [br.zi for br in grad] == [SWISH_POINT]
    assert float(build.X[SWISH_POINT, 0]) == 0.0029296875


def test_the_swish_gate_leaves_room_for_the_gradient_at_its_output(swish_box_branches):
    # the first gate of per-step sizes weighs the down-step (on value 1,805) by 36.28, so the backward value
    # at its output may not exceed 65,504 / (3 x 36.28) = 601, and the factors before it (gain at most 64)
    # need 52,576 / 64 = 821.5: the gate found weighs both steps by less, live at the point
    build, last = swish_box_branches
    br = last["branches"][0][0]
    gate = br.gate
    assert gate.pz > build.st.z_dead and not build.st.dead(gate.pz)
    assert gate.bmax == max(abs(b) for b in gate.betas) < 36.28125
    assert float(build.gv[SWISH_POINT, 0]) == 52576.0
    assert len(gate.betas) == 2 and all(b < 0 for b in gate.betas)
