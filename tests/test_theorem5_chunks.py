"""The per-point searches in chunks (condcheck/theorem5/chunks.py): the same network with and without
worker processes, and the runner's rounds, errors and progress."""
import os

import pytest

import condcheck.theorem5 as t5
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.targets import full_box, random_targets
from condcheck.theorem5 import chunks
from theorem5_helpers import assert_same_network, separable_grid

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers need fork")


def _pairs(parts):
    return [pair for c in parts for pair in c.pairs()]


def test_a_small_domain_is_one_chunk_of_every_pair():
    n = t5.tuning.CHUNK_MIN_POINTS - 1
    (only,) = chunks.point_chunks(n, 2, True)
    assert list(only.pairs()) == [(zi, j) for zi in range(n) for j in range(2)] and only.points == range(n)


def test_a_large_format_is_one_chunk_whatever_its_size():
    assert len(chunks.point_chunks(10_000, 1, False, by_coordinate=True)) == 1


def test_point_chunks_split_the_points_in_order_in_even_parts():
    parts = chunks.point_chunks(1001, 2, True)
    assert len(parts) == t5.tuning.POINT_CHUNKS
    assert _pairs(parts) == [(zi, j) for zi in range(1001) for j in range(2)]
    assert [zi for c in parts for zi in c.points] == list(range(1001))
    assert max(map(len, parts)) - min(map(len, parts)) <= 2


def test_coordinate_chunks_take_one_coordinate_each_and_split_the_values_by_points():
    parts = chunks.point_chunks(1001, 2, True, by_coordinate=True)
    assert [c.coords for c in parts] == [(0,), (1,)]
    assert sorted(_pairs(parts)) == [(zi, j) for zi in range(1001) for j in range(2)]
    assert [zi for c in parts for zi in c.points] == list(range(1001))


def test_a_one_coordinate_domain_is_split_by_points_even_when_coordinates_are_asked_for():
    parts = chunks.point_chunks(100, 1, True, by_coordinate=True)
    assert len(parts) == t5.tuning.POINT_CHUNKS and all(c.coords == (0,) for c in parts)
    assert [c.points for c in parts] == [c.grad_points for c in parts]


def _sum_then_scale(chunk, report):
    """Two rounds: the chunk's sum, then each point times the largest sum."""
    for _ in chunk:
        report()
    top = yield sum(chunk)
    for _ in chunk:
        report()
    return [i * top for i in chunk], os.getpid()


@pytest.mark.parametrize("jobs", [1, 2])
def test_rounds_combine_every_chunks_value_before_the_next_round(jobs):
    parts = [range(0, 3), range(3, 10), range(10, 12)]
    seen = []
    out = chunks.run_rounds(parts, _sum_then_scale, max, jobs, seen.append)
    top = max(sum(p) for p in parts)
    assert [r[0] for r in out] == [[i * top for i in p] for p in parts]
    assert seen[-1] == 2 * 12 and seen == sorted(seen)


@needs_fork
def test_rounds_run_every_chunk_but_the_first_in_a_worker_with_two_jobs():
    parts = [range(0, 3), range(3, 10), range(10, 12)]
    pids = [r[1] for r in chunks.run_rounds(parts, _sum_then_scale, max, 2)]
    assert pids[0] == os.getpid() and os.getpid() not in pids[1:] and pids[1] != pids[2]


def _fails_in_round_two_at(bad):
    def rounds(chunk, report):
        yield 0
        if bad in chunk:
            raise t5.ConstructionError(f"point {bad + 1}: no branch")
        return list(chunk)
    return rounds


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_first_chunks_error_is_raised_as_one_process_would(jobs):
    parts = [range(0, 2), range(2, 4), range(4, 6)]

    def rounds(chunk, report):
        yield 0
        if chunk.start > 0:
            raise t5.ConstructionError(f"point {chunk.start + 1}: no branch")
        return []
    with pytest.raises(t5.ConstructionError, match="point 3: no branch"):
        chunks.run_rounds(parts, rounds, max, jobs)


@needs_fork
def test_an_error_in_a_worker_reaches_the_caller_with_its_message():
    with pytest.raises(t5.ConstructionError, match="point 6: no branch"):
        chunks.run_rounds([range(0, 2), range(2, 4), range(4, 6)], _fails_in_round_two_at(5), max, 2)


@needs_fork
def test_a_worker_that_dies_is_an_error_naming_its_points():
    def rounds(chunk, report):
        if chunk.start == 4:
            os._exit(3)
        yield 0
        return []
    with pytest.raises(t5.ConstructionError, match=r"points 5-6\) ended without a result \(exit code 3\)"):
        chunks.run_rounds([range(0, 2), range(2, 4), range(4, 6)], rounds, max, 2)


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "2"])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(CondcheckError, match="jobs must be a positive integer"):
        chunks.resolve_jobs(jobs)


def test_the_environment_gives_the_jobs_when_the_caller_does_not(monkeypatch):
    monkeypatch.setenv("CONDCHECK_JOBS", "3")
    assert chunks.resolve_jobs(None) == 3 and chunks.resolve_jobs(1) == 1


@pytest.mark.parametrize("text", ["0", "two", "-1"])
def test_a_bad_jobs_environment_variable_is_named_in_the_error(monkeypatch, text):
    monkeypatch.setenv("CONDCHECK_JOBS", text)
    with pytest.raises(CondcheckError, match="CONDCHECK_JOBS must be a positive integer"):
        chunks.resolve_jobs(None)


def _build(act, F, X, jobs, **kw):
    f, h, g = random_targets(F, X, 0, 0.25)
    return t5.construct_theorem5(act, F, X, f, h, g, jobs=jobs, **kw)[0]


@needs_fork
@pytest.mark.parametrize("act,fmt", [("relu", "float8_e5m2"), ("elu", "float8_e4m3")])
def test_workers_build_the_same_network_as_one_process_on_the_full_box(act, fmt):
    F = get_format(fmt)
    X = full_box(act, F, 1)
    assert len(chunks.point_chunks(len(X), 1, True)) > 1
    assert_same_network(_build(act, F, X, 2), _build(act, F, X, 1))


@needs_fork
def test_workers_build_the_same_network_as_one_process_with_sliced_gating():
    F = get_format("float8_e4m3")
    X = separable_grid("sigmoid", F, 12)
    assert [p.coords for p in chunks.point_chunks(len(X), 2, True, by_coordinate=True)] == [(0,), (1,)]
    assert_same_network(_build("sigmoid", F, X, 2, gating="slices"), _build("sigmoid", F, X, 1, gating="slices"))


@needs_fork
def test_an_error_that_does_not_unpickle_reaches_the_caller_as_a_construction_error():
    from condcheck.errors import UnknownNameError

    def rounds(chunk, report):
        if chunk.start == 2:
            # (a lambda among its attributes: it does not pickle even where the exceptions without one do,
            # as after ``import distributed``, whose tblib makes an exception's arguments pickle)
            e = UnknownNameError("format", "float9", ["float8_e4m3"])
            e.hook = lambda: None
            raise e
        yield 0
        return []
    with pytest.raises(t5.ConstructionError, match="UnknownNameError in a construction worker: unknown format"):
        chunks.run_rounds([range(0, 2), range(2, 4)], rounds, max, 2)


def test_each_chunk_builds_the_steps_its_points_read_and_together_every_step():
    from condcheck.theorem5 import step_rounds
    import numpy as np
    vals = [np.arange(6.0)]
    idx = [np.arange(6)]
    every = step_rounds.all_keys(vals)
    first, second = (step_rounds.chunk_keys(vals, idx, range(a, b)) for a, b in ((0, 3), (3, 6)))
    assert sorted(set(first) | set(second)) == sorted(every) and len(every) == 10
    # point 2 reads the step on above its value (gap 3, up), point 3 the step on below it (gap 3, down)
    assert set(first) & set(second) == set() and (0, 3, True) in first and (0, 3, False) in second
    assert step_rounds.gating_keys(vals, idx, 0) == [(0, 1, True)]
    assert step_rounds.gating_keys(vals, idx, 2) == [(0, 2, False), (0, 3, True)]


def test_the_steps_grow_one_layer_for_all_chunks_until_every_step_pads_and_then_stop():
    from condcheck.theorem5.step_rounds import agree_steps
    assert agree_steps([{"step_depth": 1}, {"step_depth": 3}]) == {"depth": 3}
    fail = [{"step_failure": None, "depth": 3}, {"step_failure": "step at gap 7: no boost", "depth": 3}]
    assert agree_steps(fail) == {"depth": 4}
    assert agree_steps([dict(r, depth=t5.tuning.MAX_SHARPEN) for r in fail]) == {"error": "step at gap 7: no boost"}
    assert agree_steps([{"step_failure": None, "depth": 3}] * 2) == {"done": True}


@needs_fork
def test_a_verification_failure_among_the_workers_points_fails_the_construction_naming_that_point(monkeypatch):
    import numpy as np
    from condcheck.interpreters.tables import TablesInterpreter
    F = get_format("float8_e4m3")
    X = full_box("relu", F, 1)[::5]
    assert len(chunks.point_chunks(len(X), 1, True)) == 2
    last = X[-1]
    run = TablesInterpreter.run

    def wrong_at_the_last_point(self, net, P, Y, progress=None):
        values, grads = run(self, net, P, Y, progress)
        hit = np.flatnonzero((np.asarray(P) == last).all(axis=1))
        values[hit] = values[hit] + 1.0
        return values, grads
    monkeypatch.setattr(TablesInterpreter, "run", wrong_at_the_last_point)
    with pytest.raises(t5.ConstructionError, match=r"failed exact verification(.|\n)*values 38/39 equal"
                                                   r"(.|\n)*kind=value, point=\(" + float(last[0]).hex().replace("+", r"\+")):
        _build("relu", F, X, 2)


def test_gc_frozen_freezes_the_heap_inside_and_unfreezes_it_after():
    import gc

    from condcheck.theorem5.chunks import gc_frozen
    assert gc.get_freeze_count() == 0
    with gc_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_gc_frozen_leaves_a_heap_the_caller_froze_frozen():
    """An object the caller froze is still out of the collector's reach after the block (frozen objects
    are absent from gc.get_objects).  The freeze count itself is no measure: a frozen object that dies
    inside the block (a thread of an earlier test ending) leaves the permanent generation."""
    import gc

    from condcheck.theorem5.chunks import gc_frozen

    def collected(obj):
        return any(o is obj for o in gc.get_objects())

    sentinel = [[]]
    assert collected(sentinel)
    gc.freeze()
    try:
        with gc_frozen():
            pass
        assert not collected(sentinel) and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert collected(sentinel)
