"""The Dask engine (condcheck/distributed.py) and the chunked check on it: results in order, errors,
a worker killed mid-run, an existing cluster by its address, and dask imported only when used."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from condcheck.distributed import Engine
from condcheck.errors import CondcheckError
from condcheck.rounded_activation import get_rounded
from conditions import condition1, condition2, condition3
from conditions.chunked import check_chunked
from conditions.chunks import Magnitudes


#: the environment's trim threshold before any cluster started (a nanny writes its workers' into ours)
_TRIM_BEFORE = os.environ.get("MALLOC_TRIM_THRESHOLD_")
_NUMBA_THREADS_BEFORE = os.environ.get("NUMBA_NUM_THREADS")


def slow_square(x):
    time.sleep(0.2)
    return x * x


def pick_slowly(shared, x):
    time.sleep(0.2)
    return shared[x]


def fails_on_three(x):
    if x == 3:
        raise CondcheckError("three is not allowed")
    return x


@pytest.fixture(scope="module")
def engine():
    with Engine(workers=2, progress=False) as eng:
        yield eng


def test_map_returns_every_result_in_the_order_of_the_items(engine):
    assert engine.map(slow_square, list(range(12))) == [x * x for x in range(12)]


def test_an_error_in_a_task_stops_the_map_with_its_message(engine):
    with pytest.raises(CondcheckError, match="three is not allowed"):
        engine.map(fails_on_three, list(range(6)))


def _kill_one_worker(engine):
    killed = []

    def on_result(i, _):
        if not killed:
            pid = sorted(engine.worker_pids().values())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return on_result, killed


def test_a_worker_killed_mid_run_costs_time_not_results(engine):
    on_result, killed = _kill_one_worker(engine)
    assert engine.map(slow_square, list(range(20)), on_result=on_result) == [x * x for x in range(20)]
    assert killed


def test_a_shared_input_reaches_every_task_as_its_first_argument(engine):
    table = [x * 7 for x in range(10)]
    assert engine.map(pick_slowly, list(range(10)), shared=table) == table


def test_a_shared_input_lost_with_its_only_worker_is_sent_again_and_the_map_completes():
    table = [x * 7 for x in range(10)]
    with Engine(workers=1, progress=False) as eng:
        on_result, killed = _kill_one_worker(eng)
        assert eng.map(pick_slowly, list(range(10)), on_result=on_result, shared=table) == table
    assert killed and eng.resends >= 1


def test_a_shared_input_lost_more_often_than_the_retries_is_a_one_line_error():
    with Engine(workers=1, progress=False, retries=0) as eng:
        on_result, killed = _kill_one_worker(eng)
        with pytest.raises(CondcheckError, match="lost the shared input 1 times") as e:
            eng.map(pick_slowly, list(range(10)), on_result=on_result, shared=list(range(10)))
    assert killed and "\n" not in str(e.value)


def test_a_shared_input_that_can_not_be_sent_is_a_one_line_error(engine, monkeypatch):
    from distributed.comm.core import CommClosedError

    def closed(*a, **k):
        raise CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is closed")
    monkeypatch.setattr(engine.client, "scatter", closed)
    monkeypatch.setattr("condcheck.distributed.time.sleep", lambda s: None)
    with pytest.raises(CondcheckError, match=r"could not send a shared input .*3 tries.*Stream is closed"):
        engine.map(pick_slowly, [0], shared=[1])


def array_facts(shared, i):
    """(the sum of the shared array, whether the task got a read-only view) -- reads every page."""
    return float(shared.sum()), not shared.flags.writeable and not shared.flags.owndata


def test_on_a_local_cluster_a_shared_input_arrives_memory_mapped_and_its_file_goes_after(engine, tmp_path,
                                                                                         monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    arr = np.arange(1000.0)
    assert engine.map(array_facts, [0, 1, 2], shared=arr) == [(arr.sum(), True)] * 3
    assert list(tmp_path.iterdir()) == []


def test_on_an_existing_cluster_a_shared_input_is_sent_itself(engine, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    arr = np.arange(1000.0)
    with Engine(scheduler=engine.client.scheduler.address, progress=False) as remote:
        assert remote.map(array_facts, [0, 1], shared=arr) == [(arr.sum(), False)] * 2
    assert list(tmp_path.iterdir()) == []


def test_a_shared_input_that_can_not_be_written_is_sent_to_each_worker_with_one_line_on_stderr(engine, monkeypatch,
                                                                                               capsys):
    def full(obj, directory):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("condcheck.distributed.write_mapped", full)
    arr = np.arange(10.0)
    assert engine.map(array_facts, [0], shared=arr, progress=True) == [(45.0, False)]
    assert "could not write the shared input to " in capsys.readouterr().err


def reset_peak() -> float:
    """Reset this process's peak resident memory to its resident memory now (MiB, returned)."""
    from condcheck.distributed import peak_rss_mib
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return peak_rss_mib()


def peak_after_reading(shared, i):
    from condcheck.distributed import peak_rss_mib
    return float(shared.data.sum()) + float(shared.indices.sum()), peak_rss_mib()


def test_a_worker_holds_one_copy_of_a_large_shared_input_even_while_it_arrives(engine):
    # (sent, the 53 M-weight network of a bfloat16 box took a worker to twice its size: dask copies the
    # 64 MiB shards of each buffer together on arrival; sent, this matrix's peak is 1.67 times its size)
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("reads the peak from Linux's /proc")
    import scipy.sparse as sp
    n = 16_000_000                                           # a layer of 16 M weights: 183 MiB
    m = sp.csr_matrix((np.ones(n), np.arange(n, dtype=np.int32) % 1000, np.arange(0, n + 1, 1000, dtype=np.int32)),
                      shape=(n // 1000, 1000))
    size = (m.data.nbytes + m.indices.nbytes) / 2 ** 20
    idle = engine.client.run(reset_peak)
    (total, peak), = engine.map(peak_after_reading, [0], shared=m)
    grew = peak - min(idle.values())
    assert total == n + int(m.indices.sum()) and grew < 1.3 * size, (grew, size)


def test_a_send_to_a_worker_that_does_not_answer_times_out_into_a_one_line_error():
    # (a worker lost in the middle of a send left dask's scatter waiting for ever: a bfloat16 box hung so)
    with Engine(workers=1, progress=False, retries=1, share_timeout=2) as eng:
        pid, = eng.worker_pids().values()
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(CondcheckError, match=r"could not send a shared input .*2 tries.*TimeoutError") as e:
                eng.map(pick_slowly, [0], shared=[1])
            assert time.monotonic() - started < 30 and "\n" not in str(e.value)
        finally:
            os.kill(pid, signal.SIGCONT)


def test_the_serial_runner_passes_a_shared_input_as_the_engine_does():
    from condcheck.distributed import SerialRunner
    assert SerialRunner().map(pick_slowly, [2, 0], shared=[5, 6, 7]) == [7, 5]


def test_a_chunked_check_survives_a_killed_worker_with_the_whole_table_verdicts(engine):
    r = get_rounded("gelu", "bfloat16")
    on_result, killed = _kill_one_worker(engine)

    class Killing:                       # the engine, with the kill hooked into the first map's results
        kind, workers = engine.kind, 2

        def map(self, fn, items, label="tasks", on_result=None):
            return engine.map(fn, items, label, on_result=hook if not killed else None)

        def worker_peaks(self):
            return engine.worker_peaks()
    hook = on_result
    got, info = check_chunked(r, chunk_magnitudes=512, runner=Killing())
    assert killed and info["chunks"] == -(-Magnitudes(r.format).n // 512)
    for key, module in (("1", condition1), ("2", condition2), ("3", condition3)):
        ref = module.check_exhaustive(r)
        assert (got[key].holds, got[key].witness) == (ref.holds, ref.witness)


def test_check_runs_on_an_existing_cluster_given_its_scheduler_address(engine):
    from condcheck.check import check_activation
    address = engine.client.scheduler.address
    res = check_activation("tanh", "b9_8", method="exhaustive", scheduler=address, progress=False)
    sym = check_activation("tanh", "b9_8", method="symbolic")
    assert res.enumeration["points"] == get_rounded("tanh", "b9_8").format.count_finite()
    assert "dask cluster at tcp://" in res.enumeration["engine"]
    assert [res.conditions[k]["holds"] for k in "123"] == [sym.conditions[k]["holds"] for k in "123"] == [True] * 3
    assert res.verdicts["1"].witness.z_dead == sym.verdicts["1"].witness.z_dead


def test_an_unreachable_scheduler_is_a_one_line_error():
    with pytest.raises(CondcheckError, match="could not start or reach the Dask scheduler"):
        with Engine(scheduler="tcp://127.0.0.1:9", connect_timeout=2):
            pass


def test_importing_condcheck_and_its_checks_does_not_load_dask():
    out = subprocess.run([sys.executable, "-c", "import condcheck, condcheck.check, condcheck.cli, conditions.chunked\n"
                          "import sys; print(' '.join(sys.modules))"], capture_output=True, text=True, check=True)
    mods = set(out.stdout.split())
    assert "conditions.chunked" in mods and "dask" not in mods and "distributed" not in mods


def test_the_progress_bar_counts_the_items_on_stderr_when_asked(capsys):
    from condcheck.distributed import SerialRunner
    assert SerialRunner(progress=True).map(abs, [-1, -2, 3], label="chunks") == [1, 2, 3]
    err = capsys.readouterr().err
    assert "chunks" in err and "/3 " in err                  # a bar over the 3 items


def test_the_progress_bar_is_off_when_stderr_is_not_a_terminal(capsys):
    from condcheck.distributed import progress_bar
    with progress_bar(3, "chunks", None) as bar:            # under pytest stderr is captured: not a terminal
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_check_quiet_turns_the_progress_bar_off(monkeypatch):
    from click.testing import CliRunner

    import condcheck.check
    from condcheck.cli import main
    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        raise CondcheckError("stop here")
    monkeypatch.setattr(condcheck.check, "check_activation", fake)
    CliRunner().invoke(main, ["check", "tanh", "float32", "--method", "exhaustive", "--quiet"])
    assert seen["progress"] is False
    CliRunner().invoke(main, ["check", "tanh", "float32", "--method", "exhaustive"])
    assert seen["progress"] is None                          # on exactly when stderr is a terminal


def test_every_local_worker_is_limited_to_2_gib(engine):
    limits = [w["memory_limit"] for w in engine.client.scheduler_info()["workers"].values()]
    assert len(limits) == 2 and all(lim == 2 * 1024 ** 3 for lim in limits)


def test_local_workers_never_pause_for_memory_even_after_a_restart(engine):
    # (a paused worker waits for spillable memory; a chunk's arrays are not, and a bfloat16 box hung)
    on_result, killed = _kill_one_worker(engine)
    engine.map(slow_square, list(range(8)), on_result=on_result)
    assert killed
    assert set(engine.client.run(lambda dask_worker: dask_worker.memory_manager.memory_pause_fraction).values()) \
        == {False}


def test_local_workers_keep_glibcs_trim_threshold_not_dasks_64_kib(engine):
    # (dask's MALLOC_TRIM_THRESHOLD_=65536 made the Theorem 5 chunks cost 1.6-1.9 times the CPU)
    assert set(engine.client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values()) == {_TRIM_BEFORE}


def _numba_threads():
    from condcheck import kernels
    return kernels.load_numba().get_num_threads()


def test_local_workers_run_the_compiled_kernels_on_one_thread_each(engine):
    # (the workers fill the cores: a kernel's team of a thread per core in each would wait for the others)
    assert set(engine.client.run(_numba_threads).values()) == {1}


def test_starting_local_workers_leaves_this_process_s_numba_thread_count_alone(engine):
    # (numba raises on a compile where NUMBA_NUM_THREADS differs from the count its threads started with)
    assert os.environ.get("NUMBA_NUM_THREADS") == _NUMBA_THREADS_BEFORE


def relu16(x):
    return np.maximum(x, x.dtype.type(0))


def step16(x):
    return (x > 0).astype(x.dtype)


def test_a_plugin_implementation_travels_with_its_chunks_to_workers_that_never_registered_it(engine):
    from condcheck import implementations
    from condcheck.distributed import SerialRunner
    with implementations.scoped_implementations():
        implementations.register_implementation("relu16_on_workers", "relu", relu16, step16, formats=("float16",))
        r = get_rounded("relu", "float16", "relu16_on_workers")
        got, info = check_chunked(r, chunk_magnitudes=4096, runner=engine)
        ref, _ = check_chunked(r, chunk_magnitudes=4096, runner=SerialRunner())
    assert info["engine"].startswith("dask") and info["chunks"] > 2
    assert [(got[k].holds, got[k].witness) for k in "123"] == [(ref[k].holds, ref[k].witness) for k in "123"]


PEAK_OF_A_SPAWNED_CHILD = """
import multiprocessing, resource, numpy as np
from condcheck.distributed import peak_rss_mib
if __name__ == "__main__":
    a = np.ones(60_000_000); del a                     # a 458 MiB peak in this parent
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        child = pool.apply(peak_rss_mib)
        child_rusage = pool.apply(resource.getrusage, (resource.RUSAGE_SELF,)).ru_maxrss / 1024
    print(child, child_rusage)
"""


def test_a_spawned_process_reports_its_own_peak_memory_not_its_parents():
    """As a nanny restarts a worker: the child's getrusage peak starts at the parent's (Linux)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("reads the peak from Linux's /proc")
    out = subprocess.run([sys.executable, "-c", PEAK_OF_A_SPAWNED_CHILD], capture_output=True, text=True, check=True)
    child, child_rusage = map(float, out.stdout.split())
    if child_rusage < 450:
        pytest.skip("this kernel does not carry a parent's peak into a spawned child")
    assert child < 300, (child, child_rusage)
