"""The Dask engine: one function over many independent items on a ``dask.distributed`` cluster.

condcheck's exhaustive checks beyond 16 bits (:mod:`conditions.chunked`) run on it, and so can any
other search that splits into independent pieces (the constructions' per-point searches): give
:meth:`Engine.map` a module-level function (importable on the workers) and a list of picklable items.

* Cluster: a ``LocalCluster`` of worker *processes* on all usable cores by default, one thread each
  (numba's kernels too), ``memory_limit`` (2 GiB) per worker, enforced by each worker's nanny; or an
  existing cluster by its scheduler address (``tcp://HOST:PORT``), whose workers must have condcheck
  installed.  Processes, not threads: the work is numpy on arrays of millions of values interleaved
  with pure-Python loops (the certain path's Arb and mpmath evaluations), which hold the GIL; a process
  per core also gives every worker its own memory limit, and a worker that crashes or is killed takes
  no other down.
* Results come back in the order of the items.  A task that raises is retried (``retries``); a task
  lost with its worker is computed again elsewhere by the scheduler (dask's own bookkeeping).  When an
  item can not be computed, :meth:`Engine.map` raises a :class:`~condcheck.errors.CondcheckError`
  naming it and cancels the rest: never a partial list.
* Progress over the items on stderr (``progress``): by default a tqdm bar when stderr is a terminal;
  ``condcheck --progress lines`` makes it plain lines for logs (:mod:`condcheck.progress`).

Dask is imported only here, and only when an Engine starts: ``import condcheck`` does not load it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager

from .errors import CondcheckError
from .mapped_object import MappedObject, forget_loaded, write_mapped
from .progress import Bar, Counter, bar

#: memory limit per worker (the nanny restarts a worker above 95 % of it)
MEMORY_LIMIT = "2GiB"
#: seconds a send of a shared input may take before it is tried again: a worker lost in the middle of
#: the send left dask's scatter waiting for ever (a bfloat16 relu box hung so, docs/boxes.md); sent whole,
#: the 0.62 GB network of the bfloat16 gelu box took 6 s here
SHARE_TIMEOUT = 300.0
#: seconds the workers get to drop a memory-mapped shared input after a map (a courtesy: it goes anyway
#: when they load the next one, or end)
FORGET_TIMEOUT = 10.0

#: the dask setting of the environment variables a LocalCluster's nannies set before they start a worker
WORKER_ENV = "distributed.nanny.pre-spawn-environ"
#: the dask setting of the environment variables a worker process sets itself, before it runs a task
WORKER_ENV_AFTER_SPAWN = "distributed.nanny.environ"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                          # not Linux
        return os.cpu_count() or 1


def progress_bar(total: int, label: str, progress):
    """A :class:`~condcheck.progress.Counter` over ``total`` items on stderr: ``progress`` None follows
    ``condcheck --progress`` (by default a bar when stderr is a terminal), True a bar, False nothing."""
    if progress is None:
        show = bar(label, unit="task")
    else:
        show = Bar(label, "task") if progress else None
    return Counter(total, show)


def peak_rss_mib() -> float:
    """This process's peak resident memory (MiB), rounded to 0.1.

    Linux: VmHWM of /proc/self/status, the peak of this process's own memory (``/proc/self/clear_refs``
    resets it).  Not ``getrusage``: its ru_maxrss starts, in a process spawned by fork and exec, at
    the parent's peak at the fork (a worker a nanny restarted late in a box run reported the calling
    process's 3,635 MiB as its own).  Elsewhere ru_maxrss (KiB on Linux and BSD; bytes on macOS)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


class SerialRunner:
    """The Engine's interface in this process, one item after another (tests, small jobs)."""

    kind = "serial (this process)"
    workers = 1

    def __init__(self, progress=False):
        self.progress = progress
        self.tasks = 0

    def map(self, fn, items, label: str = "tasks", on_result=None, shared=None, progress=None):
        out = []
        with progress_bar(len(items), label, self.progress if progress is None else progress) as bar:
            for i, item in enumerate(items):
                out.append(fn(item) if shared is None else fn(shared, item))
                self.tasks += 1
                bar.update(1)
                if on_result:
                    on_result(i, out[-1])
        return out

    def worker_peaks(self) -> dict:
        return {"this process": peak_rss_mib()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Engine:
    """A dask.distributed client: ``with Engine() as eng: eng.map(fn, items)`` (see the module docstring).

    ``scheduler``: None for a LocalCluster, else the address of an existing scheduler;
    ``workers``: LocalCluster worker processes (default: all usable cores)."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None, memory_limit: str = MEMORY_LIMIT,
                 progress=None, retries: int = 2, connect_timeout: float = 20.0,
                 share_timeout: float = SHARE_TIMEOUT):
        if scheduler is not None and not (isinstance(scheduler, str) and scheduler.strip()):
            raise CondcheckError(f"scheduler must be an address such as tcp://HOST:PORT, not {scheduler!r}")
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise CondcheckError(f"workers must be a positive number of processes, not {workers!r}")
        self.scheduler, self.n_workers, self.memory_limit = scheduler, workers, memory_limit
        self.progress, self.retries, self.connect_timeout = progress, retries, connect_timeout
        self.share_timeout = share_timeout
        self.client = self.cluster = None
        self.tasks = 0
        #: times a shared input was sent again, after the workers lost it (``map``'s ``shared``)
        self.resends = 0

    def __enter__(self):
        import logging

        import dask
        from distributed import Client, LocalCluster
        try:
            if self.scheduler is None:
                # (glibc's own trim threshold for the workers, not dask's 64 KiB, which returned freed
                # memory to the system after every numpy temporary: the Theorem 5 chunks spent 1.6-1.9
                # times the CPU, a third of it in the kernel, see docs/boxes.md).
                # No memory pause: a worker paused at 80 % of its limit waits for managed data to spill,
                # but a chunk's memory is its own arrays, so it waits for ever (a bfloat16 box hung so);
                # above 95 % the nanny restarts the worker and its task is retried.  Given as the nannies'
                # config: a worker a nanny restarts does not keep a dask.config.set made here.
                # One numba thread per worker, as one dask thread: the workers already fill the cores, and
                # the compiled kernels' OpenMP teams (a thread per core in every worker) would wait and spin
                # for cores the other workers hold (a test run on 2 workers: 174 -> 115 CPU s).  Set in
                # the worker process (WORKER_ENV_AFTER_SPAWN), not before the spawn: the nannies set those
                # in this process's environment too, and numba refuses a thread count that changes after
                # its threads started.
                env = {**dask.config.get(WORKER_ENV), "MALLOC_TRIM_THRESHOLD_": None}
                after = {**dask.config.get(WORKER_ENV_AFTER_SPAWN), "NUMBA_NUM_THREADS": 1}
                with dask.config.set({WORKER_ENV: env, WORKER_ENV_AFTER_SPAWN: after}):
                    self.cluster = LocalCluster(n_workers=self.n_workers or usable_cores(), threads_per_worker=1,
                                                processes=True, memory_limit=self.memory_limit,
                                                config={"distributed.worker.memory.pause": False},
                                                dashboard_address=":0", silence_logs=logging.CRITICAL)
                self.client = Client(self.cluster)
            else:
                self.client = Client(self.scheduler.strip(), timeout=f"{self.connect_timeout}s")
        except (OSError, TimeoutError) as e:
            self.__exit__(None, None, None)
            raise CondcheckError(f"could not start or reach the Dask scheduler "
                                 f"{self.scheduler or '(local cluster)'}: {e}") from None
        return self

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
        return False

    @property
    def workers(self) -> int:
        return len(self.client.scheduler_info()["workers"])

    @property
    def kind(self) -> str:
        if self.cluster is not None:
            return f"dask LocalCluster ({self.workers} worker processes, 1 thread, {self.memory_limit} each)"
        return f"dask cluster at {self.scheduler} ({self.workers} workers)"

    def share(self, obj):
        """A future of ``obj``, held by every worker, to pass to many tasks (``map``'s ``shared``).  On a
        LocalCluster it goes straight to the workers, not through the scheduler (which lives in this
        process and would keep a copy of it).  A send that fails or takes over ``share_timeout`` seconds
        (a worker lost while receiving it) is tried again, ``retries`` times, then ends in a
        CondcheckError.  (dask's own scatter ``timeout`` bounds only the wait for workers, not the send.)"""
        direct = True if self.cluster is not None else None
        for attempt in range(self.retries + 1):
            try:
                return _within(self.share_timeout,
                               lambda: self.client.scatter([obj], broadcast=True, hash=False, direct=direct)[0])
            except (OSError, TimeoutError) as exc:          # (dask's CommClosedError is an OSError)
                if attempt == self.retries:
                    raise CondcheckError(f"could not send a shared input to the Dask workers "
                                         f"({self.retries + 1} tries): {type(exc).__name__}: {exc}") from None
                time.sleep(1.0)

    def map(self, fn, items, label: str = "tasks", on_result=None, shared=None, progress=None):
        """fn(item) for every item, on the cluster; results in item order (see the module docstring).
        ``on_result(i, result)`` is called as results arrive (tests use it to kill a worker).

        ``shared``: an object every task reads (the network a verification checks), sent once to every
        worker (``share``); fn is then called as fn(shared, item).  On a LocalCluster what is sent is a
        handle to a memory-mapped copy (``_mapped``).  Dask can not compute a sent object again: when the
        workers lose it (a worker restarted), it is sent again and the items not done run again,
        ``retries`` times.  ``progress`` overrides the Engine's for this map."""
        if not items:
            return []
        out, done = [None] * len(items), [False] * len(items)
        show = self.progress if progress is None else progress
        with progress_bar(len(items), label, show) as counter, self._mapped(shared, label, show) as sending:
            for attempt in range(self.retries + 1):
                held = self.share(sending) if shared is not None else None
                try:
                    self._run(fn, items, label, on_result, held, out, done, counter)
                    return out
                except _SharedLost:
                    if attempt == self.retries:
                        raise CondcheckError(f"{label}: the workers lost the shared input {self.retries + 1} "
                                             f"times ({done.count(False)} of {len(items)} items not done)") from None
                    self.resends += 1
                    if show is not False:
                        print(f"{label}: a worker was lost with the shared input; sending it again "
                              f"({attempt + 1} of {self.retries})", file=sys.stderr, flush=True)
                finally:
                    if held is not None:
                        self.client.cancel([held])
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def _mapped(self, shared, label, show):
        """What ``map`` sends for ``shared``: on a LocalCluster a :class:`MappedObject` handle to it,
        written to a temporary file that the workers memory-map (no copy on arrival, one copy of the
        pages for all of them) and removed after the map; elsewhere (the workers may be on other
        machines), or where the file can not be written, ``shared`` itself."""
        if shared is None or self.cluster is None:
            yield shared
            return
        directory = tempfile.mkdtemp(prefix="condcheck-shared-")
        try:
            try:
                sending = write_mapped(shared, directory)
            except OSError as exc:
                sending = shared
                if show is not False:
                    print(f"{label}: could not write the shared input to {directory} ({exc.strerror or exc}); "
                          f"sending it to each worker instead", file=sys.stderr, flush=True)
            yield sending
        finally:
            try:                                    # (a worker that does not answer would hang client.run)
                _within(FORGET_TIMEOUT, lambda: self.client.run(forget_loaded))
            except Exception:                       # noqa: BLE001 -- a worker gone or silent: its mapping
                pass                                # goes when it loads the next shared input, or ends
            shutil.rmtree(directory, ignore_errors=True)

    def _run(self, fn, items, label, on_result, held, out, done, counter):
        """Run the items not ``done`` (filling ``out`` and ``done``); raises _SharedLost when ``held`` was
        lost with the workers that held it."""
        from distributed import as_completed
        todo = [i for i in range(len(items)) if not done[i]]
        tag = uuid.uuid4().hex[:8]
        keys = [f"{label.replace(' ', '-')}-{tag}-{i}" for i in todo]
        if held is None:
            futures = self.client.map(fn, [items[i] for i in todo], key=keys, pure=False, retries=self.retries)
        else:
            futures = self.client.map(_with_shared, [fn] * len(todo), [held] * len(todo), [items[i] for i in todo],
                                      key=keys, pure=False, retries=self.retries)
        index = {f.key: i for f, i in zip(futures, todo)}
        try:
            for fut in as_completed(futures):
                i = index[fut.key]
                if done[i]:
                    continue
                try:                                    # waits again for a result lost with its worker
                    out[i] = fut.result()
                except CondcheckError:
                    raise
                except Exception as exc:                # noqa: BLE001 -- a task's error, or KilledWorker
                    if held is not None and held.status != "finished":
                        raise _SharedLost() from None
                    raise CondcheckError(f"{label}: item {i} ({_short(items[i])}) could not be computed: "
                                         f"{type(exc).__name__}: {exc}") from None
                done[i] = True
                self.tasks += 1
                counter.update(1)
                if on_result:
                    on_result(i, out[i])
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                self.client.cancel(pending)
        if not all(done[i] for i in todo):
            raise CondcheckError(f"{label}: {sum(not done[i] for i in todo)} of {len(items)} items did not come back")

    def worker_pids(self) -> dict:
        return self.client.run(os.getpid)

    def restart_workers(self) -> bool:
        """Restart a LocalCluster's workers, each as a new process (its memory back to a new process's,
        its peak reset).  Whether it was done: not on an existing cluster (its workers are not ours to
        restart), nor where the restart fails or takes over ``share_timeout`` seconds."""
        if self.cluster is None:
            return False
        try:
            _within(self.share_timeout, lambda: self.client.restart(timeout=self.share_timeout))
            return True
        except Exception:                               # noqa: BLE001 -- the caller goes on with the workers it has
            return False

    def worker_peaks(self) -> dict:
        """Peak resident memory (MiB) of each current worker process."""
        return dict(self.client.run(peak_rss_mib))


def _within(timeout: float, call):
    """``call()``, given up after ``timeout`` seconds (TimeoutError).  It runs in a daemon thread, left
    behind if it never returns (dask's calls wait for ever on a worker that does not answer; the
    client's close ends them)."""
    box = {}

    def run():
        try:
            box["result"] = call()
        except BaseException as exc:                    # noqa: BLE001 -- raised again below, in the caller
            box["error"] = exc
    thread = threading.Thread(target=run, name="condcheck-within", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"no answer from the workers after {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


class _SharedLost(Exception):
    """The workers lost the object ``Engine.map`` shared with its tasks."""


def _with_shared(fn, shared, item):
    return fn(shared.load() if isinstance(shared, MappedObject) else shared, item)


def _short(item) -> str:
    text = repr(item)
    return text if len(text) <= 120 else text[:117] + "..."
