"""Fast paths of the per-point searches on 16-bit formats equal what they replace: the compiled one-term rows
and product chains (condcheck/theorem5/rows.py) Kit.T_row and the rounded products, ``sets.lexsort_head``
the head of np.lexsort, and the gate sums kept per point build what the ones kept for the last point built."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from condcheck.constructors.errors import ConstructionError
from condcheck.constructors.kit import Kit
from condcheck.formats import get_format
from condcheck.theorem5 import rows


def _reference(kit, w, v, b):
    try:
        return kit.T_row([(w, v)], b)
    except ConstructionError as e:
        return str(e)


def _fast(kit, w, v, b):
    try:
        return rows.t_row(kit, w, v, b)
    except ConstructionError as e:
        return str(e)


def _assert_same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.int64), b.view(np.int64))      # every bit, the sign of zero too


_KITS = {}


def _kit(act, fmt):
    if (act, fmt) not in _KITS:
        _KITS[act, fmt] = Kit(act, get_format(fmt), "exact")
    return _KITS[act, fmt]


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@pytest.mark.parametrize("act", ["gelu", "sigmoid", "elu"])
def test_the_compiled_row_equals_kit_t_row_bit_for_bit_on_every_value_of_the_format(act, fmt):
    kit = _kit(act, fmt)
    V = get_format(fmt).values()
    rng = np.random.default_rng(1)
    for _ in range(40):
        w, b = (float(x) for x in rng.choice(V, 2))
        if rng.random() < 0.5:                    # the powers of two the searches try most
            w = float(np.ldexp(rng.choice([-1.0, 1.0]), int(rng.integers(-4, 4))))
        _assert_same(_fast(kit, w, V, b), _reference(kit, w, V, b))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["float16", "bfloat16"]), st.integers(0, 2**32 - 1),
       st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0 ** -24, 65504.0, 3.0 ** 5]))
def test_the_compiled_row_equals_kit_t_row_on_small_rows_with_zeros_subnormals_and_overflow(fmt, seed, b0):
    kit = _kit("gelu", fmt)
    F = get_format(fmt)
    V = F.values()
    rng = np.random.default_rng(seed)
    v = rng.choice(V, int(rng.integers(1, 20)))
    v[rng.random(len(v)) < 0.2] = 0.0
    w = float(rng.choice(V))
    b = float(rng.choice(V)) if rng.random() < 0.5 else float(kit.mul(b0, 1.0)) if abs(b0) <= F.max_float else 0.0
    _assert_same(_fast(kit, w, v, b), _reference(kit, w, v, b))


def test_a_row_that_overflows_raises_what_kit_t_row_raises():
    kit = _kit("gelu", "float16")
    v = np.array([1.0, 60000.0])
    with pytest.raises(ConstructionError) as fast:
        rows.t_row(kit, 2.0, v, 0.0)
    with pytest.raises(ConstructionError) as ref:
        kit.T_row([(2.0, v)], 0.0)
    assert str(fast.value) == str(ref.value)


def test_formats_with_index_tables_take_kit_t_row():
    kit = _kit("gelu", "float8_e4m3")
    assert rows._plan(kit) is None
    V = kit.fmt.values()
    _assert_same(_fast(kit, 0.5, V, 0.25), _reference(kit, 0.5, V, 0.25))


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_a_row_without_overflow_is_made_by_the_compiled_pass(fmt, monkeypatch):
    kit = Kit("gelu", get_format(fmt), "exact")
    V = get_format(fmt).values()
    v = V[np.abs(V) <= 8]
    want = kit.T_row([(0.5, v)], -0.25)
    monkeypatch.setattr(kit, "T_row", lambda *a: pytest.fail("Kit.T_row was called"))
    _assert_same(rows.t_row(kit, 0.5, v, -0.25), want)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(0, 320), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_lexsort_head_is_the_head_of_the_stable_lexsort_with_ties_and_signed_zeros(n, k, n_keys, seed):
    from condcheck.theorem5.sets import lexsort_head
    rng = np.random.default_rng(seed)
    keys = []
    for _ in range(n_keys):
        kind = rng.integers(0, 3)
        if kind == 0:
            keys.append(rng.random(n) < 0.1)                                  # a bool key, mostly one value
        elif kind == 1:
            keys.append(rng.integers(0, int(rng.integers(1, 8)), n).astype(float) * rng.choice([-1.0, 1.0]))
        else:
            keys.append(np.where(rng.random(n) < 0.5, -0.0, 0.0) + rng.integers(0, 3, n))
    assert np.array_equal(lexsort_head(keys, k), np.lexsort(keys)[:k])


def test_lexsort_head_with_a_nan_is_the_head_of_the_whole_sort():
    from condcheck.theorem5.sets import lexsort_head
    keys = [np.array([1.0, np.nan, 0.0, 1.0]), np.array([0, 0, 0, 0])]
    assert np.array_equal(lexsort_head(keys, 2), np.lexsort(keys)[:2])


def test_gate_sums_kept_for_every_point_build_the_network_of_sums_kept_for_the_last_point(monkeypatch):
    import condcheck.theorem5 as t5
    from condcheck.targets import box_sample, random_targets
    from theorem5_helpers import assert_same_network
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 32)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 24)
    monkeypatch.setattr(t5.tuning, "EXACT_GATE_POINTS", 16)        # the bounds of large domains (``_gate_base``)
    X = box_sample("gelu", "float16", 1, 48, 3)
    f, h, g = random_targets("float16", X, 3, 0.25)
    kept, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    monkeypatch.setattr(t5.tuning, "GATE_BASE_POINTS", 1)
    last, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    assert_same_network(kept, last)


class _Probe:
    def __init__(self, F):
        self.F, self.tables = F, None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["float16", "bfloat16"]), st.integers(0, 2**32 - 1))
def test_the_compiled_product_chain_equals_the_rounded_products_bit_for_bit_with_nan_and_overflow(fmt, seed):
    import condcheck.theorem5.transfer as transfer
    F = get_format(fmt)
    V = F.values()
    rng = np.random.default_rng(seed)
    t = rng.choice(V, int(rng.integers(1, 40)))
    t[rng.random(len(t)) < 0.1] = np.nan
    t[rng.random(len(t)) < 0.1] = 0.0
    d, a = (rng.choice(V[np.abs(V) <= float(rng.choice([1.0, 4.0, 1e4]))], k) for k in [int(rng.integers(1, 30))] * 2)
    fast = transfer.Transfers._rn_chain_2d(_Probe(F), t, d, a)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transfer, "rn_chain_2d", lambda *args: None)      # the rounded products
        ref = transfer.Transfers._rn_chain_2d(_Probe(F), t, d, a)
    assert fast.shape == ref.shape and np.array_equal(fast.view(np.int64), ref.view(np.int64))
