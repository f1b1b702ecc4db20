"""The gating weight rows of the last gate retry on the 16-bit formats (``Gates._least_rows``): the shared
sizes and the per-step sizes together, the smallest largest weight first, on the two gating steps of the
swish float16 box point 35329 (issue 31; the point itself: tests/test_theorem5_offset_gates_16bit.py)."""
from types import SimpleNamespace

import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.theorem5.gates import Gates


class _TwoSteps(Gates):
    """Just what the row makers read: the format and the gating steps' on values."""

    def __init__(self):
        self.F = get_format("float16")
        down = SimpleNamespace(on_min=1805.0, on_sign=1.0, on_lo=1805.0, on_hi=1805.0)
        up = SimpleNamespace(on_min=26.28125, on_sign=1.0, on_lo=26.28125, on_hi=65280.0)
        self.steps = [down, up]


@pytest.fixture
def gates():
    return _TwoSteps()


def test_the_least_rows_are_the_shared_and_the_offset_rows(gates):
    _, B = gates._shifts([0, 1])
    least = gates._least_rows([0, 1], B)
    both = np.concatenate([B, gates._offset_rows([0, 1])])
    assert len(least) == len(both)
    assert sorted(map(tuple, least.tolist())) == sorted(map(tuple, both.tolist()))


def test_the_least_rows_ascend_by_their_largest_weight(gates):
    _, B = gates._shifts([0, 1])
    top = np.abs(gates._least_rows([0, 1], B)).max(axis=1)
    assert (np.diff(top) >= 0).all()


def test_the_least_rows_do_not_start_at_the_offset_rows_largest_weights(gates):
    # the per-step sizes put each step's largest weight first (36.28 on the down-step: 1,805 x 36.28 is
    # near 65,504), the gate whose backward gain left no room for g* = 52,576 at the swish point
    _, B = gates._shifts([0, 1])
    first = gates._offset_rows([0, 1])[0]
    assert first.tolist() == [-36.28125, -1.0029296875]
    assert np.abs(gates._least_rows([0, 1], B)[0]).max() < 1.0
