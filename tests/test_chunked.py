"""The chunked exhaustive checks (conditions/chunked.py): chunk summaries merged into the same verdicts,
witnesses and counterexamples as the whole-table checkers, for many chunkings; chunk evaluation; merges."""
import functools
import random

import numpy as np
import pytest

from _condition_controls import (CONTROLS, CUSTOM_16_BIT_FORMATS, CUSTOM_SMALL_FORMATS, SIXTEEN_BIT_FORMATS,
                                 SMALL_FORMATS, control)
from condcheck.activations import BUILTIN_ACTIVATIONS, PAPER_ACTIVATIONS
from condcheck.distributed import SerialRunner
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.rounded_activation import get_rounded
from conditions import condition1, condition2, condition3
from conditions.chunked import check_chunked, summarize
from conditions.chunks import ChunkJob, Magnitudes, check_cover, evaluate, plan_chunks

CHECKERS = (("1", condition1), ("2", condition2), ("3", condition3))
ALL_ACTIVATIONS = list(BUILTIN_ACTIVATIONS) + list(CONTROLS)


def _chunkings(fmt, seed, sizes=(1, 2, 3, 4, 5, 6, 7)):
    """Chunks of 1 to 7 magnitudes, then random split points."""
    n = Magnitudes(fmt).n
    rng = random.Random(seed)
    out = [{"chunk_magnitudes": s} for s in sizes]
    out += [{"splits": [rng.randrange(1, n) for _ in range(rng.randrange(1, 9))]} for _ in range(2)]
    return out


def _assert_same(act, fmt, kwargs):
    name = control(act) if act in CONTROLS else act
    r = get_rounded(name, fmt)
    got, _ = check_chunked(r, source="table", runner=SerialRunner(), **kwargs)
    for key, module in CHECKERS:
        ref = module.check_exhaustive(r)
        g = got[key]
        assert (g.holds, g.failing_clause, g.counterexample) == (ref.holds, ref.failing_clause, ref.counterexample), \
            (key, kwargs)
        assert g.witness == ref.witness, (key, kwargs)
        assert g.method == "exhaustive"


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", ALL_ACTIVATIONS)
def test_chunked_check_equals_the_whole_table_check_on_8_bit_formats(act, fmt):
    # one chunking per case, cycling through chunks of 1..7 magnitudes and random splits
    i, j = ALL_ACTIVATIONS.index(act), SMALL_FORMATS.index(fmt)
    options = _chunkings(fmt, seed=31 * i + j)
    _assert_same(act, fmt, options[(i + j) % len(options)])


@pytest.mark.parametrize("fmt", CUSTOM_SMALL_FORMATS, ids=lambda f: f.name)
def test_chunked_check_equals_the_whole_table_check_on_custom_small_formats(fmt):
    for i, act in enumerate(["relu", "gelu", "sigmoid", "tanh", *CONTROLS]):
        _assert_same(act, fmt, _chunkings(fmt, seed=i)[i % 9])


@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_chunked_check_equals_the_whole_table_check_on_16_bit_formats(act, fmt):
    _assert_same(act, fmt, _chunkings(fmt, seed=7, sizes=())[0])


def test_every_chunking_of_one_format_gives_one_verdict():
    fmt = get_format("float8_e4m3")
    for kwargs in _chunkings(fmt, seed=3):
        for act in ("relu", "swish", "test_heaviside"):
            _assert_same(act, fmt, kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", SMALL_FORMATS + CUSTOM_SMALL_FORMATS, ids=lambda f: f.name)
def test_chunked_check_equals_the_whole_table_check_for_every_small_chunking(fmt):
    for act in ALL_ACTIVATIONS:
        for kwargs in _chunkings(fmt, seed=11):
            _assert_same(act, fmt, kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", SIXTEEN_BIT_FORMATS + CUSTOM_16_BIT_FORMATS, ids=lambda f: f.name)
def test_chunked_check_equals_the_whole_table_check_on_every_16_bit_format(fmt):
    for act in ALL_ACTIVATIONS:
        for kwargs in _chunkings(fmt, seed=5, sizes=(fmt.bits * 97,)):
            _assert_same(act, fmt, kwargs)


# ---- merges --------------------------------------------------------------------------------------------
def _summaries(act, fmt, size):
    n = Magnitudes(get_format(fmt)).n
    return [summarize(ChunkJob(act, fmt, "exact", lo, hi, "table")) for lo, hi in plan_chunks(n, size)]


@pytest.mark.parametrize("act", ["gelu", "relu", "sigmoid"])
def test_summaries_merge_to_the_same_summary_in_any_order_and_grouping(act):
    parts = _summaries(act, "float8_e5m2", 3)
    whole = summarize(ChunkJob(act, "float8_e5m2", "exact", 0, Magnitudes(get_format("float8_e5m2")).n, "table"))
    rng = random.Random(0)
    for _ in range(5):
        order = parts[:]
        rng.shuffle(order)
        for key in ("c1", "c2", "c3"):
            items = [getattr(s, key) for s in order]
            while len(items) > 1:                           # merge random neighbours: a random tree
                i = rng.randrange(len(items) - 1)
                items[i:i + 2] = [items[i].merge(items[i + 1])]
            ref = getattr(whole, key)
            assert items[0] == ref if key == "c1" else items[0].same(ref)


def test_condition2_summary_holds_few_numbers_per_chunk():
    s = _summaries("gelu", "float16", 1 << 20)[0].c2           # the whole of float16 as one chunk
    assert all(t.shape == (5,) and b.shape == (11, 2) for t, b in s.V.values())
    assert len(s.V) <= 64 and len(s.W) <= 11


# ---- chunks --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float8_e4m3fnuz", "float4_e2m1fn", "bfloat16", "b3_2"])
def test_magnitude_indices_enumerate_the_positive_values_in_order(name):
    fmt = get_format(name)
    mags = Magnitudes(fmt)
    pos = fmt.values()[fmt.values() >= 0]
    assert mags.n == pos.size
    assert np.array_equal(mags.values(0, mags.n), pos)
    assert np.array_equal(mags.index(pos), np.arange(mags.n))
    assert [mags.at_rank(mags.rank(v)) for v in fmt.values()[::7]] == list(fmt.values()[::7])


def test_float32_magnitude_indices_are_the_bit_patterns():
    mags = Magnitudes(get_format("float32"))
    m = np.array([0, 1, 2 ** 23 - 1, 2 ** 23, 0x3F800000, 0x7F7FFFFF], dtype=np.int64)
    v = mags.values_of(m)
    assert np.array_equal(v, m.astype(np.uint32).view(np.float32).astype(np.float64))
    assert np.array_equal(mags.index(v), m) and mags.n == 0x7F800000


def test_a_chunk_holds_both_signs_of_its_magnitudes_in_value_order():
    c = evaluate(ChunkJob("tanh", "float16", "exact", 0, 5, "table"))
    assert list(c.P) == sorted(c.P) and c.size == 9 and np.array_equal(c.P[:4], -c.P[5:][::-1])


@pytest.mark.parametrize("impl", ["exact", "float32-upcast"])
@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_direct_evaluation_of_a_chunk_equals_the_table(fmt, impl):
    n = Magnitudes(get_format(fmt)).n
    for lo, hi in ((0, 40), (n // 2, n // 2 + 4096), (n - 100, n)):
        a = evaluate(ChunkJob("gelu", fmt, impl, lo, hi, "direct"))
        b = evaluate(ChunkJob("gelu", fmt, impl, lo, hi, "table"))
        assert a.digest == b.digest


def test_torch_points_equal_the_torch_table_where_the_table_goes_through_float32():
    pytest.importorskip("torch")
    from condcheck.rounding import round_array
    from condcheck.torch_impl import torch_points
    fmt = get_format("float8_e4m3")                             # torch has no float8_e4m3 kernels: float32
    t = get_rounded("gelu", fmt, "torch").table()
    s, so, d, do = torch_points("gelu", "float32", t.points)
    for got, over, ref in ((s, so, t.sigma), (d, do, t.dsigma)):
        r, rover = round_array(np.where(over, 0.0, got), fmt)
        assert np.array_equal(np.where(over | rover, np.inf, np.abs(r)), np.abs(ref))


def test_a_float32_slice_summarizes_the_same_in_one_chunk_or_many():
    lo, hi = 0x3F7FFF00, 0x3F800100                               # around 1.0, both signs
    whole = summarize(ChunkJob("tanh", "float32", "exact", lo, hi))
    parts = [summarize(ChunkJob("tanh", "float32", "exact", a, b)) for a, b in
             ((lo, lo + 1), (lo + 1, lo + 77), (lo + 77, 0x3F800000), (0x3F800000, hi))]
    assert functools.reduce(lambda x, y: x.merge(y), [p.c1 for p in parts]) == whole.c1
    assert functools.reduce(lambda x, y: x.merge(y), [p.c2 for p in parts]).same(whole.c2)
    assert functools.reduce(lambda x, y: x.merge(y), [p.c3 for p in parts]).same(whole.c3)


def test_float32_chunk_values_equal_the_certain_path_at_sample_points():
    r = get_rounded("gelu", "float32")
    c = evaluate(ChunkJob("gelu", "float32", "exact", 0x3F000000, 0x3F000400))
    for i in range(0, c.size, 97):
        assert r.value(c.P[i]) == c.S[i] and r.derivative(c.P[i]) == c.D[i]


def test_plan_chunks_tiles_the_magnitudes():
    assert plan_chunks(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert plan_chunks(10, splits=[7, 3, 3, 0, 12]) == [(0, 3), (3, 7), (7, 10)]


@pytest.mark.parametrize("ranges", [[(0, 4), (5, 10)], [(0, 6), (5, 10)], [(0, 4), (4, 9)]])
def test_a_verdict_is_refused_unless_the_chunks_tile_the_format(ranges):
    with pytest.raises(CondcheckError, match="do not cover the format exactly"):
        check_cover(ranges, 10)


def test_formats_beyond_32_bits_are_refused_with_a_clear_message():
    with pytest.raises(CondcheckError, match="at most 32 bits"):
        check_chunked(get_rounded("relu", "float64"), runner=SerialRunner())


@pytest.mark.parametrize("act,lo", [("tanh", 0x41800000), ("sigmoid", 0x4B000000), ("tanh", 0x41100000),
                                    ("relu", 0x3F000000), ("gelu", 0x41700000)])
def test_constant_runs_of_the_exact_implementation_equal_every_point_evaluated(act, lo):
    from condcheck.activations import get_activation
    from condcheck.rounded_activation import evaluate_points
    from conditions.chunks import exact_by_ranges
    fmt = get_format("float32")
    P = Magnitudes(fmt).points(lo, lo + (1 << 14))
    fast = exact_by_ranges(get_activation(act), fmt, P)
    ref = evaluate_points(get_activation(act), fmt, "exact", P)
    for a, b in zip(fast[:4], ref[:4]):
        assert np.array_equal(a, b)


@pytest.fixture
def registry():
    import condcheck.activations as A
    with A.scoped_registry(plugins_loaded=True):
        yield


def test_a_callable_plugin_is_checked_chunk_by_chunk_as_its_trusted_path_computes(registry):
    import mpmath

    from condcheck.activations import register_activation
    act = register_activation("tanh_callable", function=mpmath.tanh, derivative=lambda t: 1 / mpmath.cosh(t) ** 2)
    r = get_rounded(act, "float8_e4m3")
    got, info = check_chunked(r, source="direct", chunk_magnitudes=13, runner=SerialRunner())
    for key, module in CHECKERS:
        ref = module.check_exhaustive(r)
        assert (got[key].holds, got[key].witness) == (ref.holds, ref.witness)
    assert "callable, trusted" in info["sigma_source"]
    # on float32 (its chunks would take days on two cores: docs/scale.md), one small chunk: the built-in's values
    c = evaluate(ChunkJob(act, "float32", "exact", 0x3F800000, 0x3F800000 + 64))
    b = evaluate(ChunkJob("tanh", "float32", "exact", 0x3F800000, 0x3F800000 + 64))
    assert c.digest == b.digest


def test_a_float32_chunk_s_float64_arrays_stay_under_glibc_s_largest_mmap_threshold():
    """glibc serves an allocation of 32 MiB or more by mapping fresh pages every time (its mmap threshold
    never rises above 32 MiB on 64-bit), so a chunk whose float64 arrays were that large paid their page
    faults again at every array: chunks of 2^21 magnitudes spent nearly half their CPU so."""
    from conditions.chunked import CHUNK_MAGNITUDES
    from conditions.chunks import expected_points
    mags = Magnitudes(get_format("float32"))
    ranges = plan_chunks(mags.n, CHUNK_MAGNITUDES)
    assert max(expected_points(lo, hi) for lo, hi in ranges) * 8 < 32 << 20
    assert len(ranges) == 2040 and check_cover(ranges, mags.n) is None
