"""The paper's constants (condcheck.paper): one place for M_sigma, H_sigma, the box and the bounds."""
import pytest

from condcheck.activations import PAPER_ACTIVATIONS
from condcheck.formats import get_format
from condcheck.paper import box_bound, paper_constants


@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_the_box_of_a_paper_activation_is_its_stated_m_sigma(act):
    F = get_format("float8_e4m3")
    assert box_bound(act, F) == paper_constants(act, F)["M_sigma"]


def test_sigmoid_and_tanh_have_twice_the_box_of_relu():
    F = get_format("float8_e5m2")
    assert box_bound("sigmoid", F) == box_bound("tanh", F) == 2 * box_bound("relu", F) == 2.0 ** (F.e_max - 1)


def test_an_activation_the_paper_does_not_cover_has_no_stated_constants_but_the_relu_box():
    F = get_format("bfloat16")
    assert paper_constants("softsign", F) == {"M_sigma": None, "H_sigma": None}
    assert box_bound("softsign", F) == box_bound("relu", F) == 2.0 ** (F.e_max - 2)
