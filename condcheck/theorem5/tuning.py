"""Tunable constants of the Theorem 5 construction (search budgets, thresholds); read as
``tuning.NAME`` at every use, so a test or user can change one in one place.
"""
from __future__ import annotations

import contextlib
import sys


#: domains with at most this many points evaluate each gate's sum on every point; larger ones bound it
EXACT_GATE_POINTS = 512

#: transfer searches (``Context._transfer_search``, uncached) one attempt of ``search_gradient_branches`` may run
#: on a format with more than 4,096 values before it gives up (SearchGaveUp); each retry (join, gates near
#: 1) gets as many again.  relu on 1,024 bfloat16 box points: at most 145 for every point that its first
#: attempt builds
TRANSFER_BUDGET = 400

#: when every budgeted attempt of a point gave up, search once more without a budget (as before the budget
#: existed: sigmoid on 4,096 distinguishable bfloat16 points, point 21, g*/h* = 2^203, needs it); False
#: lets SearchGaveUp through (tests of the budget)
UNBUDGETED_LAST = True

#: the blocker searches with a window of weights (large formats) kept per on value, most recent first
BLOCKER_WINDOWS = 16

#: 8-bit networks with at most this many (points x nonzero parameters) are verified on the RN index
#: tables, each chunk its own points (no compiled code to load: the full float8 box, d = 1, is at most
#: 233 x 27,000)
TABLES_VERIFY_WORK = 10_000_000

#: the last-layer search (``Context._last_layer_tables``) builds an upstream value's reach rows after this many calls
REACH_ROWS_AFTER = 32

#: sliced gating (d >= 2) on the small formats: each gradient branch is searched from one layer after its
#: gate upwards (the point's own fewest layers), and a branch shorter than the final depth is padded with
#: exact relays (``Context.pad_gradient``), rebuilt at that depth only where no relay pads it.  Searching
#: from the depth reached so far first cost a full failing sweep (every source, scale and gate) for each
#: point that works only with fewer layers, and a rebuild for each one built before the depth grew
SHORTEST_FIRST_SLICED = True


#: the per-point searches of a construction on the small formats run in this many chunks of the domain
#: (``chunks.point_chunks``; sliced gating: one chunk per coordinate), side by side in worker processes
#: where there are cores; the chunks, and so the network, do not depend on the machine
POINT_CHUNKS = 2

#: domains with fewer points are one chunk (a worker costs a fork and a cold cache)
CHUNK_MIN_POINTS = 32

#: formats with more than 4,096 values (16 bits and up) split domains of more points than this into chunks
#: of SPREAD_CHUNK_POINTS points, each searched in a fresh context, on Dask workers (``spread``); smaller
#: domains stay one chunk in this process
SPREAD_FROM = 8192
SPREAD_CHUNK_POINTS = 512

#: a spread construction of more chunks first runs this many, spread over the domain, whose reports every
#: later chunk reads to speculate the agreements (``spread.agree``): fewer chunks run twice, same network
SPREAD_SAMPLE_CHUNKS = 8

#: points per verification task of a spread construction (each task evaluates every neuron of the network
#: on its points: tables of neurons x points)
SPREAD_VERIFY_POINTS = 256

#: worker processes for the chunks (None: the environment variable CONDCHECK_JOBS if set, else the CPUs
#: this process may use; 1: none, all in this process)
JOBS = None


#: rows at least this long take the chain maps of ``_ChainMaps`` on 16-bit formats (shorter rows: the
#: rounded sums cost less than building the maps, about 2 CPU s once per format and process)
CHAIN_MAP_MIN = 256


#: the points whose gates' shared sums of the gating terms ``Gates._gate_base`` keeps (a point's value gate
#: comes a round after its gradient gates; a spread chunk has 512 points)
GATE_BASE_POINTS = 4096


#: the most sharpening layers a step may take before its row
MAX_SHARPEN = 6


@contextlib.contextmanager
def overridden(values: dict):
    """These constants set to ``values`` inside the block (as they were after): what a worker process
    applies to read its caller's (``spread``)."""
    module = sys.modules[__name__]
    old = {k: getattr(module, k) for k in values}
    try:
        for k, v in values.items():
            setattr(module, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
