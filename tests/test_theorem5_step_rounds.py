"""The steps' first builds on the index tables, all keys of a coordinate at once
(``step_rounds._first_builds_indexed``), against one key at a time (``_first_build``): the same Step,
the same boosted pre-activations bit for bit (signs of zero too), the same on side."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from condcheck.constructors.kit import Kit
from condcheck.constructors.witnesses import require_conditions
from condcheck.formats import get_format
from condcheck.targets import full_box
from condcheck.theorem5 import step_rounds as SR
from condcheck.theorem5.gates import gate_push_need
from condcheck.theorem5.states import find_states
from condcheck.separators import separator_chooser


def _setup(act, fmt):
    F = get_format(fmt)
    kit = Kit(act, F, "exact")
    st = find_states(kit, require_conditions(kit.act, F, "exact", 5))
    vals = np.unique(full_box(act, F, 1)[:, 0])
    return kit, st, vals, SR.all_keys([vals]), gate_push_need(st), separator_chooser(kit, vals, st)


def _same_build(a, b) -> bool:
    (s1, p1, o1), (s2, p2, o2) = a, b
    fields = [f.name for f in dataclasses.fields(s1)]
    return (all(getattr(s1, f) == getattr(s2, f) and type(getattr(s1, f)) is type(getattr(s2, f)) for f in fields)
            and p1.dtype == p2.dtype and np.array_equal(p1, p2) and np.array_equal(np.signbit(p1), np.signbit(p2))
            and np.array_equal(o1, o2))


@pytest.mark.parametrize("act,fmt", [("relu", "float8_e5m2"), ("tanh", "float8_e4m3"), ("sigmoid", "b3_4"),
                                     ("elu", "float6_e3m2fn"), ("elu", "float8_e4m3fnuz")])
def test_the_steps_built_all_at_once_equal_the_steps_built_one_by_one(act, fmt):
    kit, st, vals, keys, push, choose = _setup(act, fmt)
    fast = SR._first_builds_indexed(kit, st, vals, choose, keys, push)
    assert len(fast) >= len(keys) // 2          # the common path: most keys
    for key, build in fast.items():
        assert _same_build(build, SR._first_build(kit, st, vals, choose, key, push)), key


def test_the_keys_off_the_common_path_are_built_one_by_one_with_the_same_result():
    kit, st, vals, keys, push, choose = _setup("tanh", "float8_e5m2")
    fast = SR._first_builds_indexed(kit, st, vals, choose, keys, push)
    assert 0 < len(fast) < len(keys)            # (tanh: some keys need a lift or another scale)
    built = SR._first_builds(kit, st, [vals], {0: choose}, keys, push)
    assert list(built) == keys
    for key in keys:
        assert _same_build(built[key], SR._first_build(kit, st, vals, choose, key, push)), key
