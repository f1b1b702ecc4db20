"""Spread chunks (condcheck/theorem5/spread.py, speculation.py): large-format domains in chunks of fresh contexts, agreed
on by speculation, in this process or on Dask workers; the same network whatever runs them."""
import pytest

import condcheck.theorem5 as t5
from condcheck.errors import CondcheckError
from condcheck.distributed import peak_rss_mib
from condcheck.theorem5 import chunks, speculation, spread
from condcheck.theorem5.build import Build
from condcheck.theorem5.errors import ConstructionError
from theorem5_helpers import assert_same_network, spread_sample


# ---- the chunks ----------------------------------------------------------------------------------------------
def test_a_large_format_beyond_spread_from_is_split_into_chunks_of_spread_chunk_points(monkeypatch):
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 100)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 30)
    parts = chunks.point_chunks(101, 1, False)
    assert len(parts) == 4 and [zi for c in parts for zi in c.points] == list(range(101))
    assert all(c.points == c.grad_points for c in parts) and max(map(len, parts)) <= 30


def test_a_large_format_up_to_spread_from_stays_one_chunk(monkeypatch):
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 100)
    assert len(chunks.point_chunks(100, 1, False)) == 1


# ---- the agreement by speculation, on rounds of toy chunks -----------------------------------------------
class _Toy:
    """Rounds of a toy construction: a chunk reports its size as its depth, then returns its points with
    the agreed depth (the largest); ``fail`` maps a chunk's first point to the round that raises."""

    def __init__(self, fail=None):
        self.fail, self.runs, self.fresh_ctx = fail or {}, [], False

    def for_spread(self):
        self.fresh_ctx = True

    def rounds(self, chunk, report):
        self.runs.append(chunk.points.start)
        if self.fail.get(chunk.points.start) == 1:
            raise ConstructionError(f"chunk at {chunk.points.start} fails in round 1")
        agreed = yield {"depth": len(chunk.points)}
        if self.fail.get(chunk.points.start) == 2:
            raise ConstructionError(f"chunk at {chunk.points.start} fails in round 2 (depth {agreed['depth']})")
        yield {"branches": (list(chunk.points), agreed["depth"])}

    def combine(self, reports):
        return {"depth": max(r["depth"] for r in reports)}


def _toy_chunks(*sizes):
    out, at = [], 0
    for n in sizes:
        out.append(chunks.Chunk(range(at, at + n), (0,), range(at, at + n)))
        at += n
    return out


def _run_here(toy):
    return lambda items: [speculation.speculate(toy, c, h, hints) for c, h, hints in items]


def test_every_chunk_is_fed_the_agreement_of_all_chunks():
    toy = _Toy()
    parts = _toy_chunks(3, 5, 2)
    out = speculation.agree(toy, parts, _run_here(toy))
    assert out == [(list(c.points), 5) for c in parts]


def test_only_the_chunks_whose_speculation_was_wrong_run_again():
    toy = _Toy()
    speculation.agree(toy, _toy_chunks(3, 5, 2), _run_here(toy))
    assert toy.runs == [0, 3, 8, 0, 8]


def test_a_chunk_that_agrees_with_itself_runs_once():
    toy = _Toy()
    speculation.agree(toy, _toy_chunks(4, 4), _run_here(toy))
    assert toy.runs == [0, 4]


def test_an_error_under_true_agreements_is_raised_first_chunk_first():
    toy = _Toy(fail={3: 2, 8: 2})
    with pytest.raises(ConstructionError, match="chunk at 3 fails in round 2 \\(depth 5\\)"):
        speculation.agree(toy, _toy_chunks(3, 5, 2), _run_here(toy))


def test_an_error_under_a_wrong_speculation_is_not_raised_until_the_truth_raises_it():
    # chunk 8 alone would agree on depth 2 and raise with it; with the true depth 5 it raises with 5
    toy = _Toy(fail={8: 2})
    with pytest.raises(ConstructionError, match="depth 5"):
        speculation.agree(toy, _toy_chunks(3, 5, 2), _run_here(toy))


def test_an_error_in_an_earlier_round_wins_over_a_later_one():
    toy = _Toy(fail={3: 2, 8: 1})
    with pytest.raises(ConstructionError, match="chunk at 8 fails in round 1"):
        speculation.agree(toy, _toy_chunks(3, 5, 2), _run_here(toy))


def test_a_sample_spreads_over_the_chunks_with_both_ends():
    assert speculation.sample_of(127, 8) == [0, 18, 36, 54, 72, 90, 108, 126]
    assert speculation.sample_of(5, 2) == [0, 4]


def test_a_sample_as_large_as_the_chunks_is_every_chunk_and_below_two_none():
    assert speculation.sample_of(3, 8) == [0, 1, 2]
    assert speculation.sample_of(9, 1) == []


def test_chunks_after_the_sample_speculate_the_deepest_sampled_depth_and_run_once():
    toy = _Toy()
    out = speculation.agree(toy, _toy_chunks(5, 1, 1, 1, 1, 5), _run_here(toy), sample=2)
    assert toy.runs == [0, 9, 5, 6, 7, 8]
    assert out == [(list(c.points), 5) for c in _toy_chunks(5, 1, 1, 1, 1, 5)]


def test_without_a_sample_the_shallow_chunks_run_twice_for_the_same_branches():
    toy = _Toy()
    out = speculation.agree(toy, _toy_chunks(5, 1, 1, 1, 1, 5), _run_here(toy), sample=0)
    assert toy.runs == [0, 5, 6, 7, 8, 9, 5, 6, 7, 8]
    assert out == speculation.agree(_Toy(), _toy_chunks(5, 1, 1, 1, 1, 5), _run_here(_Toy()), sample=2)


def test_a_sample_that_misses_the_deepest_chunk_still_ends_on_the_true_depth():
    toy = _Toy()
    stats = {}
    out = speculation.agree(toy, _toy_chunks(1, 1, 7, 1, 1), _run_here(toy), stats, sample=2)
    assert out == [(list(c.points), 7) for c in _toy_chunks(1, 1, 7, 1, 1)]
    assert stats == {"chunk_runs": 9, "passes": 3, "sample": 2}


class _GatedToy(_Toy):
    """A toy with a second round as the gradient gates': a chunk reports one gate per point, and the
    agreement sums each point's gates over the chunks' reports (as ``build._agree`` does)."""

    def rounds(self, chunk, report):
        self.runs.append(chunk.points.start)
        agreed = yield {"depth": len(chunk.points)}
        gated = yield {"depth": agreed["depth"], "gates": {p: 1 for p in chunk.points}}
        yield {"branches": (list(chunk.points), agreed["depth"], sorted(gated["gates"].items()))}

    def combine(self, reports):
        if "gates" not in reports[0]:
            return super().combine(reports)
        gates = {}
        for r in reports:
            for p, k in r["gates"].items():
                gates[p] = gates.get(p, 0) + k
        return {"depth": max(r["depth"] for r in reports), "gates": gates}


def test_a_sampled_chunk_run_again_does_not_count_its_own_earlier_gates_and_runs_only_twice():
    # the sample (chunks at 0 and 10) speculates depth 1; the chunk at 2 is 7 deep, so both run again,
    # and then their own first reports (one gate a point) must not be added to their new ones
    toy = _GatedToy()
    stats = {}
    parts = _toy_chunks(1, 1, 7, 1, 1)
    out = speculation.agree(toy, parts, _run_here(toy), stats, sample=2)
    assert out == [(list(c.points), 7, [(p, 1) for p in c.points]) for c in parts]
    assert sorted(toy.runs) == [0, 0, 1, 1, 2, 9, 9, 10, 10]
    assert stats == {"chunk_runs": 9, "passes": 3, "sample": 2}


def test_a_sampled_chunk_that_fails_before_any_agreement_stops_the_construction_after_the_sample():
    # (the chunk at 6, not sampled, fails too: run in one process it would be named first)
    toy = _Toy(fail={6: 1, 9: 1})
    with pytest.raises(ConstructionError, match="chunk at 9 fails in round 1"):
        speculation.agree(toy, _toy_chunks(5, 1, 1, 1, 1, 5), _run_here(toy), sample=2)
    assert toy.runs == [0, 9]


def test_a_sampled_chunk_that_fails_after_a_speculated_agreement_waits_for_the_truth():
    # the sampled chunk at 13 raises with the sample's depth 5; the chunk at 5, not sampled, is 7 deep
    toy = _Toy(fail={13: 2})
    with pytest.raises(ConstructionError, match="chunk at 13 fails in round 2 \\(depth 7\\)"):
        speculation.agree(toy, _toy_chunks(5, 7, 1, 5), _run_here(toy), sample=2)
    assert toy.runs == [0, 13, 5, 12, 0, 12, 13]


def test_hints_are_the_sampled_reports_of_each_round_without_branches_or_errors():
    results = [{"reports": [{"depth": 2}, {"branches": "b"}]},
               {"reports": [{"depth": 3}, ConstructionError("x")]}]
    assert speculation.hints_of(results) == [[{"depth": 2}, {"depth": 3}]]


def test_a_chunk_reads_only_its_own_points_gate_counts():
    (c,) = _toy_chunks(3)
    assert speculation.view(c, {"depth": 4, "gates": {1: 2, 5: 1}}) == {"depth": 4, "gates": {1: 2}}


# ---- real constructions --------------------------------------------------------------------------------------
@pytest.fixture
def small_spread(monkeypatch):
    """A float16 sample of 96 points spread over 4 chunks."""
    return spread_sample(monkeypatch, 96, 64, 24)


@pytest.mark.parametrize("sample", [8, 2])
def test_speculation_builds_the_network_of_the_chunks_run_in_lockstep(small_spread, monkeypatch, sample):
    monkeypatch.setattr(t5.tuning, "SPREAD_SAMPLE_CHUNKS", sample)   # (8: no sample pass of the 4 chunks)
    X, f, h, g = small_spread
    stats = {}
    net, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1, stats=stats)
    assert stats["sample"] == (2 if sample == 2 else 0)
    # the reference: every chunk alive at once, fed each round's agreement of all chunks (``run_rounds``)
    build = Build("gelu", "float16", X, f, h, g, "exact", False, None, "auto", False)
    build.for_spread()
    parts = chunks.point_chunks(len(X), 1, False)
    assert len(parts) == 4
    chunks.run_rounds(parts, build.rounds, build.combine, 1)
    assert_same_network(net, build.assembled[0])


def test_the_progress_of_a_spread_construction_counts_up_to_every_point_and_coordinate(small_spread):
    X, f, h, g = small_spread
    seen = []
    t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1, progress=lambda done, total: seen.append((done, total)))
    total = len(X) * 2                      # (d = 1: a gradient branch and a value branch per point)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))


def test_two_dask_workers_build_the_same_network_as_this_process(small_spread):
    X, f, h, g = small_spread
    here, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    stats = {}
    there, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=2, stats=stats)
    assert_same_network(here, there)
    # the peaks of each phase, and of every worker process: the verification's are new processes (the
    # LocalCluster's workers restarted after the chunks), so every process's peak is its own
    chunk, verify, both = (stats[k] for k in ("chunk_worker_peak_mib", "verify_worker_peak_mib", "worker_peak_mib"))
    assert len(chunk) == len(verify) == 2 and not set(chunk) & set(verify)
    assert both == {**chunk, **verify} and all(v > 0 for v in both.values())


def test_restarted_workers_are_new_processes_with_the_engine_s_settings():
    from condcheck.distributed import Engine
    with Engine(workers=2, progress=False) as eng:
        before = set(eng.worker_pids().values())
        assert eng.restart_workers()
        after = eng.worker_pids()
        assert len(after) == 2 and not before & set(after.values())
        assert set(eng.client.run(lambda dask_worker: dask_worker.memory_manager.memory_pause_fraction).values()) \
            == {False}
        assert eng.map(abs, [-1, -2]) == [1, 2]


def test_an_existing_cluster_s_workers_are_not_restarted():
    from condcheck.distributed import Engine
    with Engine(workers=1, progress=False) as local:
        with Engine(scheduler=local.client.scheduler.address, progress=False) as remote:
            before = remote.worker_pids()
            assert remote.restart_workers() is False and remote.worker_pids() == before


def test_releasing_a_workers_chunk_contexts_resets_its_peak_memory():
    import numpy as np
    a = np.ones(40_000_000)                  # 305 MiB
    del a
    before = peak_rss_mib()
    spread._release_builds()
    assert peak_rss_mib() < before - 200


def test_the_verification_survives_the_loss_of_every_worker_and_still_checks_every_part(small_spread, monkeypatch):
    import os
    import signal

    from condcheck.distributed import Engine
    monkeypatch.setattr(t5.tuning, "SPREAD_VERIFY_POINTS", 16)
    real_map, killed, sent = Engine.map, [], []

    def killing_map(self, fn, items, label="tasks", on_result=None, shared=None, progress=None):
        def kill_all(i, r):
            if not killed:
                for pid in self.worker_pids().values():
                    os.kill(pid, signal.SIGKILL)
                killed.append(label)
        if label == "theorem5 verification":
            sent.append(len(items))
            return real_map(self, fn, items, label, kill_all, shared, progress)
        return real_map(self, fn, items, label, on_result, shared, progress)
    monkeypatch.setattr(Engine, "map", killing_map)
    X, f, h, g = small_spread
    stats = {}
    t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=2, stats=stats)   # (raises unless every part passed)
    assert killed == ["theorem5 verification"] and sent == [stats["verify_parts"]] == [6]


def test_a_scheduler_that_is_not_an_address_is_refused_before_any_work(small_spread, monkeypatch):
    X, f, h, g = small_spread
    monkeypatch.setattr(t5.construct, "Build", None)         # (no setup may start)
    with pytest.raises(CondcheckError, match="scheduler must be an address"):
        t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=2, scheduler="  ")


def test_the_construction_workers_are_limited_to_2_gib_as_the_checks_workers():
    from dask.utils import parse_bytes

    from condcheck import distributed
    assert parse_bytes(spread.MEMORY_LIMIT) == parse_bytes(distributed.MEMORY_LIMIT) == 2 * 1024 ** 3
