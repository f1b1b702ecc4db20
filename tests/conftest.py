"""Settings of a test run, loaded by pytest before the test modules.

Under pytest-xdist (``-n auto``: one worker process per core) the compiled kernels run on one thread in
each worker.  Their OpenMP teams would otherwise have a thread per core in every worker, wait for cores
the other workers hold, and spin while they wait: tests/test_theorem7.py, test_theorem7_box.py and
test_interpreters.py on two workers took 174 CPU s of user time with the teams and 115-117 without.  The
numbers do not depend on the threads (tests/test_sparse_strategies.py runs the kernels on every thread
of the pool).
"""
import os
from contextlib import contextmanager

import pytest

from condcheck import kernels


@contextmanager
def compiled_threads(n=None):
    """The compiled kernels on n threads of numba's pool (None: every thread), restored after; nothing
    without numba."""
    if not kernels.HAVE_NUMBA:
        yield
        return
    numba = kernels.load_numba()
    saved = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if n is None else n)
    try:
        yield
    finally:
        numba.set_num_threads(saved)


@pytest.fixture(autouse=True, scope="session")
def one_compiled_thread_per_xdist_worker():
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    with compiled_threads(1):
        yield


@pytest.fixture(scope="module")
def one_compiled_thread():
    """For a module's small networks, whose kernels' thread pool costs far more than the work (30-80
    times, on a loaded machine)."""
    with compiled_threads(1):
        yield


@pytest.fixture(scope="module")
def every_compiled_thread():
    with compiled_threads():
        yield
