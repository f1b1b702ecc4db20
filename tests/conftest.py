"""Settings of a test run, loaded by pytest before the test modules.

Under pytest-xdist (``-n auto``: one worker process per core) the compiled kernels run on one thread in
each worker.  Their OpenMP teams would otherwise have a thread per core in every worker, wait for cores
the other workers hold, and spin while they wait: tests/test_theorem7.py, test_theorem7_box.py and
test_interpreters.py on two workers took 174 CPU s of user time with the teams and 117 without.  The
numbers do not depend on the threads (tests/test_sparse_strategies.py runs the kernels on every thread
of the pool).
"""
import os

import pytest

from condcheck import kernels


@pytest.fixture(autouse=True, scope="session")
def one_compiled_thread_per_xdist_worker():
    if not (os.environ.get("PYTEST_XDIST_WORKER") and kernels.HAVE_NUMBA):
        yield
        return
    numba = kernels.load_numba()
    numba.set_num_threads(1)
    yield
