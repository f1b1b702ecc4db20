"""The per-point (Theorem 5) sparse interpreter on a synthetic "sliced gating" network, against the dense one.

The network has the structure of the d = 2 Theorem 5 construction (it realizes no claim: the sparse
interpreter must only give the dense interpreter's numbers):

1. layers 1-4 read one coordinate each: r+-(x_j - v) (relu) or tanh(x_j - v), hats h_{j,v} live only
   at x_j = v, boosts, indicators I_{j,v}; some steps (on over half of the grid, varying values) are
   relayed up to the output; a constant neuron is relayed through every layer;
   (relu: h = relu(1 - s r+ - s r-) is 1 at v and at most 15/16 elsewhere, relu(16 h - 15) keeps 1 only);
2. layer 5: per point z an AND gate reading I_{1,z1} and I_{2,z2}, live only at z;
   (``gate_pass``: the gate also reads a step of x_1, which varies over the whole x_1 axis: a pass);
3. layers 6..depth-1: ``chains`` chains per point, live only at their point (tanh: the last chain
   layer are relays at tanh(0), whose sigma~' = 1 at every other point), then one output row reading
   every chain end, the steps and the constant.

Usage: python benchmarks/bench_sliced_gating.py [--fmt float16] [--act relu] [--n 224] [--chains 3]
       [--depth 10] [--check 300]
Prints the sizes, wall and CPU time (time.process_time) and the peak memory (ru_maxrss) of the sparse
pass, and whether it equals the dense interpreter on --check random points.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import scipy.sparse as sp

from condcheck.formats import get_format
from condcheck.network import Layer, Network


def grid_values(fmt, n, step):
    """n values of fmt spaced by ``step`` around 0 (exact in fmt)."""
    F = get_format(fmt)
    v = (np.arange(n) - n // 2) * step
    vals = F.values()
    keep = np.isin(v, vals)
    if not keep.all():
        raise ValueError(f"{fmt} does not hold every multiple of {step} up to {v.max()}")
    return v


def _layer(rows, cols, w, bias, n_in):
    m = sp.csr_matrix((np.asarray(w, float), (np.asarray(rows), np.asarray(cols))), shape=(len(bias), n_in))
    return Layer(m, np.asarray(bias, float))


def sliced_gating(fmt, act, c1, c2, chains=3, depth=10, seed=0, step_every=4, gate_pass=False):
    """The network on the grid c1 x c2 (both grids spaced so that s * gap >= 2, see the module docstring)."""
    if gate_pass:       # a step for every value: the gate of (a, b) also reads the step of x_1 at a
        step_every = 1
    if depth < 7:
        raise ValueError("depth >= 7: four one-coordinate layers, the gates, a chain layer, the output")
    rng = np.random.default_rng(seed)
    cs = [np.asarray(c1, float), np.asarray(c2, float)]
    gap = min(np.diff(np.sort(c)).min() for c in cs)
    top = max(np.abs(c).max() for c in cs)
    F = get_format(fmt)
    cap = 2.0 ** np.floor(np.log2(float(F.max) / (4 * top)))     # s (x - v) stays finite
    s = min(2.0 ** np.ceil(np.log2(2.0 / gap)), cap)
    if act != "tanh" and s * gap < 1 / 16:
        raise ValueError("grid too fine for the hats: s * gap < 1/16")
    tanh = act == "tanh"
    K = min(2.0 ** np.ceil(np.log2(32.0 / gap)), cap)
    layers = []
    # layer 1: for each coordinate j and value v: x_j - v and v - x_j; the constant
    n1 = 0
    rows, cols, w, b = [], [], [], []
    rp, rm = [], []
    for j, c in enumerate(cs):
        t = np.arange(len(c))
        rp.append(n1 + 2 * t)
        rm.append(n1 + 2 * t + 1)
        rows += [n1 + 2 * t, n1 + 2 * t + 1]
        cols += [np.full(len(c), j)] * 2
        if tanh:      # tanh(K(x - v) - 4): dead (-1) below v, ~1 above, tanh(-4) at v
            w += [np.full(len(c), K), np.full(len(c), -K)]
            b += [np.stack([-K * c - 4.0, K * c - 4.0], axis=1).ravel()]
        else:         # relu(x - v), relu(v - x)
            w += [np.ones(len(c)), -np.ones(len(c))]
            b += [np.stack([-c, c], axis=1).ravel()]
        n1 += 2 * len(c)
    k1 = n1
    n1 += 1
    b = np.concatenate(b + [[1.0]])
    layers.append(_layer(np.concatenate(rows), np.concatenate(cols), np.concatenate(w), b, 2))
    # layer 2: hats (live only at x_j = v), steps (every step_every-th r+), the constant
    # relu: h = relu(1 - s r+ - s r-); tanh: h = tanh(1 - s|tanh(x - v)|...) with the same weights
    rows, cols, w, b = [], [], [], []
    n2 = 0
    hat, step = [], []
    for j, c in enumerate(cs):
        t = np.arange(len(c))
        hat.append(n2 + t)
        rows += [n2 + t, n2 + t]
        cols += [rp[j], rm[j]]
        if tanh:      # tanh(-8 (p1 + p2) - 12): p1 + p2 = 2 tanh(-4) at v, 0 elsewhere
            w += [np.full(len(c), -8.0), np.full(len(c), -8.0)]
            b.append(np.full(len(c), -12.0))
        else:
            w += [np.full(len(c), -s), np.full(len(c), -s)]
            b.append(np.ones(len(c)))
        n2 += len(c)
        ts = t[::step_every]
        step.append(n2 + np.arange(len(ts)))
        rows.append(n2 + np.arange(len(ts)))
        cols.append(rp[j][ts])
        w.append(np.ones(len(ts)))
        b.append(np.zeros(len(ts)))
        n2 += len(ts)
    rows.append([n2]); cols.append([k1]); w.append([1.0]); b.append([0.0])
    k2 = n2
    n2 += 1
    layers.append(_layer(np.concatenate(rows), np.concatenate(cols), np.concatenate(w), np.concatenate(b), n1))
    # layers 3 and 4: boosts and indicators; steps and the constant relayed
    prev, prev_step, prev_k, n_prev = hat, step, k2, n2
    for lay in range(2):
        rows, cols, w, b = [], [], [], []
        n = 0
        new, new_step = [], []
        for j in range(2):
            m = len(prev[j])
            new.append(n + np.arange(m))
            rows.append(n + np.arange(m)); cols.append(prev[j])
            if tanh:       # tanh(8 h - 2): -1 stays dead (-10), a live value ~1 stays live
                w.append(np.full(m, 8.0)); b.append(np.full(m, -2.0))
            elif lay == 0:  # relu(16 h - 15): h = 1 only at v, h <= 15/16 elsewhere (s gap >= 1/16)
                w.append(np.full(m, 16.0)); b.append(np.full(m, -15.0))
            else:           # relu(2 b - 1): 1 live, 0 dead
                w.append(np.full(m, 2.0)); b.append(np.full(m, -1.0))
            n += m
            ms = len(prev_step[j])
            new_step.append(n + np.arange(ms))
            rows.append(n + np.arange(ms)); cols.append(prev_step[j]); w.append(np.ones(ms))
            b.append(np.zeros(ms))
            n += ms
        rows.append([n]); cols.append([prev_k]); w.append([1.0]); b.append([0.0])
        new_k = n
        n += 1
        layers.append(_layer(np.concatenate(rows), np.concatenate(cols), np.concatenate(w), np.concatenate(b),
                             n_prev))
        prev, prev_step, prev_k, n_prev = new, new_step, new_k, n
    ind = prev
    # layer 5: one AND gate per point, steps and the constant relayed
    n_pts = len(cs[0]) * len(cs[1])
    a_idx = np.repeat(np.arange(len(cs[0])), len(cs[1]))
    b_idx = np.tile(np.arange(len(cs[1])), len(cs[0]))
    gate = np.arange(n_pts)
    rows = [gate, gate]
    cols = [ind[0][a_idx], ind[1][b_idx]]
    if tanh:
        w = [np.full(n_pts, 6.0), np.full(n_pts, 6.0)]
        b = [np.full(n_pts, -10.0)]
    else:
        w = [np.ones(n_pts), np.ones(n_pts)]         # indicators: 1 live, 0 dead
        b = [np.full(n_pts, -1.5)]
    if gate_pass:       # a third input that varies over the whole x_1 axis, too small to open the gate
        rows.append(gate)
        cols.append(prev_step[0][a_idx])
        w.append(np.full(n_pts, 2.0 ** -7))
    n = n_pts
    steps_out = []
    for j in range(2):
        ms = len(prev_step[j])
        steps_out.append(n + np.arange(ms))
        rows.append(n + np.arange(ms)); cols.append(prev_step[j]); w.append(np.ones(ms)); b.append(np.zeros(ms))
        n += ms
    rows.append([n]); cols.append([prev_k]); w.append([1.0]); b.append([0.0])
    kk = n
    n += 1
    layers.append(_layer(np.concatenate(rows), np.concatenate(cols), np.concatenate(w), np.concatenate(b), n_prev))
    steps_idx = np.concatenate(steps_out)
    n_prev = n
    # chain layers: chains per point; steps and the constant relayed
    F = get_format(fmt)
    chain = [gate] * chains
    n_chain_layers = depth - 6
    for lay in range(n_chain_layers):
        rows, cols, w, b = [], [], [], []
        new = []
        relay = tanh and lay == n_chain_layers - 1
        for r in range(chains):
            idx = r * n_pts + np.arange(n_pts)
            new.append(idx)
            rows.append(idx); cols.append(chain[r])
            if relay:                   # tanh(C + 1): 0 (sigma~' = 1) where C is dead (-1)
                w.append(np.ones(n_pts)); b.append(np.ones(n_pts))
            elif tanh:
                w.append(np.full(n_pts, 8.0)); b.append(np.full(n_pts, -2.0))
            else:                       # v -> a v - 1/16 stays live (0.5 at the gate), 0 stays dead
                w.append(rng.choice([1.0, 1.125], n_pts)); b.append(np.full(n_pts, -0.0625))
        n = chains * n_pts
        ms = len(steps_idx)
        rows.append(n + np.arange(ms)); cols.append(steps_idx); w.append(np.ones(ms)); b.append(np.zeros(ms))
        steps_idx = n + np.arange(ms)
        n += ms
        rows.append([n]); cols.append([kk]); w.append([1.0]); b.append([0.0])
        kk = n
        n += 1
        layers.append(_layer(np.concatenate(rows), np.concatenate(cols), np.concatenate(w), np.concatenate(b),
                             n_prev))
        chain, n_prev = new, n
    # output: the constant, the chain ends, the steps
    ends = np.concatenate(chain)
    wo = rng.choice([0.25, -0.25, 0.5, -0.125, 1.0], len(ends))
    ws = np.full(len(steps_idx), 2.0 ** -3)
    cols = np.concatenate([[kk], ends, steps_idx])
    w = np.concatenate([[1.0], wo, ws])
    layers.append(_layer(np.zeros(len(cols), int), cols, w, [0.0], n_prev))
    X = np.stack([cs[0][a_idx], cs[1][b_idx]], axis=1)
    return Network(fmt, act, layers), X


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmt", default="float16")
    ap.add_argument("--act", default="relu")
    ap.add_argument("--n", type=int, default=224)
    ap.add_argument("--step", type=float, default=0.125)
    ap.add_argument("--bound", type=float, default=0.0, help="the grid: every value of the format in "
                    "[-bound, bound] (instead of --n multiples of --step)")
    ap.add_argument("--chains", type=int, default=3)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--ymax", type=float, default=0.25)
    ap.add_argument("--check", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gate-pass", action="store_true", help="gates also read a step of x_1 (a pass)")
    a = ap.parse_args()
    from condcheck.interpreters import get_interpreter
    from condcheck.targets import random_values
    if a.bound:
        V = get_format(a.fmt).values()
        c = np.unique(V[np.abs(V) <= a.bound])
    else:
        c = grid_values(a.fmt, a.n, a.step)
    t0 = time.time()
    net, X = sliced_gating(a.fmt, a.act, c, c, a.chains, a.depth, a.seed, gate_pass=a.gate_pass)
    rng = np.random.default_rng(a.seed)
    Y = random_values(get_format(a.fmt), rng, len(X), a.ymax).reshape(-1, 1)
    print(f"{a.fmt} {a.act}: N = {len(X):,} points, widths {net.widths}, depth {net.depth}, "
          f"{sum(l.weight.nnz for l in net.layers):,} weights, {len(np.unique(Y)):,} distinct y "
          f"(built in {time.time() - t0:.1f} s)", flush=True)
    sparse = get_interpreter("sparse")
    sparse.evaluate(net, X[:50], Y[:50])                      # compile
    w0, c0 = time.time(), time.process_time()
    values, grads = sparse.evaluate(net, X, Y)
    w1, c1 = time.time(), time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f"sparse per-point pass: wall {w1 - w0:.2f} s, CPU {c1 - c0:.2f} s, peak RSS {peak:.2f} GiB", flush=True)
    if a.check:
        sub = np.sort(rng.choice(len(X), min(a.check, len(X)), replace=False))
        w0 = time.time()
        dv, dg = net.evaluate(X[sub], Y[sub])
        ok = np.array_equal(dv, values[sub]) and np.array_equal(dg, grads[sub])
        nz = int(np.count_nonzero(grads[sub]))
        print(f"dense on {len(sub)} points ({time.time() - w0:.1f} s): equal = {ok} ({nz} nonzero gradient "
              f"coordinates)")


if __name__ == "__main__":
    main()
