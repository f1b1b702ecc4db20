"""Regression hashes of constructed networks: a refactor must build the same networks, bit for bit.

Each case builds one network through the public constructors with fixed points and targets, and hashes
what the network *is* (format, activation, implementation, every layer's shape, the positions and float64
bits of its nonzero weights, the bits of its biases), not how a file stores it.  The recorded hashes are
in ``tests/data/network_hashes.json``; ``tests/test_network_hashes.py`` rebuilds the cases and compares.

Record (only when an issue asks for new networks):  ``python3 -m tests.network_hashes --record [CASE ...]``
List or check by hand:                              ``python3 -m tests.network_hashes [--slow] [CASE ...]``
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

RECORD = Path(__file__).parent / "data" / "network_hashes.json"


def network_hash(net) -> str:
    """sha256 (first 16 hex digits) of the network's exact content."""
    h = hashlib.sha256()
    h.update(f"{net.format.name}|{net.activation}|{net.implementation}|{net.input_dim}|{len(net.layers)}".encode())
    for layer in net.layers:
        w = layer.weight.tocsr(copy=True)
        w.eliminate_zeros()
        w.sort_indices()
        h.update(np.asarray(w.shape, dtype=np.int64).tobytes())
        h.update(w.indptr.astype(np.int64).tobytes())
        h.update(w.indices.astype(np.int64).tobytes())
        h.update(np.ascontiguousarray(w.data, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(layer.bias, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def _t5_box(act, fmt, seed=0, jobs=1):
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    X = full_box(act, fmt, 1)
    f, h, g = random_targets(fmt, X, seed, 0.25)
    return construct_theorem5(act, fmt, X, f, h, g, jobs=jobs)[0]


def _t5_grid(act, fmt, k=8, seed=0):
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    c = full_box(act, fmt, 1)[:, 0]
    c = c[np.linspace(0, len(c) - 1, k).astype(int)]
    X = np.array([(a, b) for a in c for b in c])
    f, h, g = random_targets(fmt, X, seed, 0.25)
    return construct_theorem5(act, fmt, X, f, h, g, gating="slices", jobs=1)[0]


def _t5_sample(act, fmt, n, seed=0):
    from condcheck.targets import box_sample, random_targets
    from condcheck.theorem5 import construct_theorem5
    X = box_sample(act, fmt, 1, n, seed)
    f, h, g = random_targets(fmt, X, seed, 0.25)
    return construct_theorem5(act, fmt, X, f, h, g, jobs=1)[0]


def _t5_box2(act, fmt, seed=0):
    from condcheck.targets import full_box, random_targets
    from condcheck.theorem5 import construct_theorem5
    X = full_box(act, fmt, 2)
    f, h, g = random_targets(fmt, X, seed, 0.25)
    return construct_theorem5(act, fmt, X, f, h, g, jobs=1)[0]


def _t7_grid(act, fmt, k=8, seed=0):
    from condcheck.check import paper_constants
    from condcheck.formats import get_format
    from condcheck.targets import full_box, random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format(fmt)
    c = full_box(act, F, 1)[:, 0]
    c = c[np.linspace(0, len(c) - 1, k).astype(int)]
    X = np.array([(a, b) for a in c for b in c])
    Y = F.values().astype(float)
    Y = Y[np.abs(Y) <= float(paper_constants(act, F)["H_sigma"])]
    f, G = random_odd_tables(F, X, Y, seed, per_coordinate=True)
    return construct_theorem7(act, F, X, f, G, upstream=Y).network


def _t7(act, fmt, n=None, seed=0):
    from condcheck.check import paper_constants
    from condcheck.formats import get_format
    from condcheck.targets import full_box, random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format(fmt)
    X = full_box(act, F, 1)
    if n is not None:
        X = X[np.linspace(0, len(X) - 1, n).astype(int)]
    Y = F.values().astype(float)
    Y = Y[np.abs(Y) <= float(paper_constants(act, F)["H_sigma"])]
    f, G = random_odd_tables(F, X, Y, seed)
    return construct_theorem7(act, F, X, f, G, upstream=Y).network


#: name -> (builder, slow?).  The default suite rebuilds the fast ones; `-m slow` all of them.
CASES = {
    **{f"t5-box-{a}-float8_e4m3": (lambda a=a: _t5_box(a, "float8_e4m3"), a not in ("relu", "gelu"))
       for a in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")},
    **{f"t5-box-{a}-float8_e5m2": (lambda a=a: _t5_box(a, "float8_e5m2"), a != "relu")
       for a in ("relu", "elu", "gelu", "swish", "tanh")},
    "t5-box-relu-float8_e5m2-jobs2": (lambda: _t5_box("relu", "float8_e5m2", jobs=2), True),
    "t5-box-swish-float8_e4m3b11fnuz": (lambda: _t5_box("swish", "float8_e4m3b11fnuz"), True),
    "t5-box-relu-float6_e3m2fn": (lambda: _t5_box("relu", "float6_e3m2fn"), False),
    "t5-box-relu-b2_6": (lambda: _t5_box("relu", "b2_6"), True),
    "t5-box2-sigmoid-float8_e4m3": (lambda: _t5_box2("sigmoid", "float8_e4m3"), True),
    "t5-grid8-relu-float8_e4m3": (lambda: _t5_grid("relu", "float8_e4m3"), False),
    "t5-grid8-gelu-float8_e5m2": (lambda: _t5_grid("gelu", "float8_e5m2"), True),
    "t5-grid8-tanh-float8_e4m3": (lambda: _t5_grid("tanh", "float8_e4m3"), True),
    "t5-sample64-gelu-float16": (lambda: _t5_sample("gelu", "float16", 64), True),
    "t5-sample64-relu-bfloat16": (lambda: _t5_sample("relu", "bfloat16", 64), True),
    "t5-sample16-tanh-float32": (lambda: _t5_sample("tanh", "float32", 16), True),
    "t7-box-relu-float6_e3m2fn": (lambda: _t7("relu", "float6_e3m2fn", n=8), False),
    "t7-8pts-gelu-float8_e4m3": (lambda: _t7("gelu", "float8_e4m3", n=8), True),
    "t7-8pts-tanh-float8_e4m3": (lambda: _t7("tanh", "float8_e4m3", n=8), True),
    "t7-8pts-relu-float8_e5m2": (lambda: _t7("relu", "float8_e5m2", n=8), True),
    "t7-box-gelu-float8_e4m3": (lambda: _t7("gelu", "float8_e4m3"), True),
    "t7-box-relu-float8_e5m2": (lambda: _t7("relu", "float8_e5m2"), True),
    "t7-grid8-tanh-float8_e4m3": (lambda: _t7_grid("tanh", "float8_e4m3"), True),
}


def recorded() -> dict:
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


def main(argv):
    record = "--record" in argv
    slow = "--slow" in argv or record
    names = [a for a in argv if not a.startswith("--")] or [n for n, (_, s) in CASES.items() if slow or not s]
    known = recorded()
    bad = 0
    for name in names:
        got = network_hash(CASES[name][0]())
        want = known.get(name)
        mark = "recorded" if record else ("same" if got == want else f"CHANGED (recorded {want})")
        bad += not record and got != want
        print(f"{name}: {got} {mark}", flush=True)
        if record:
            known[name] = got
    if record:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
