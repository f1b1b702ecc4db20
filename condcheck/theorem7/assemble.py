"""The network from its neurons (``Builder``: layer by layer, from coordinate lists), and the result
record ``Theorem7Network`` with the paper's depth bound, verified exactly (``finish``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..constructors.errors import ConstructionError
from ..formats import Format
from ..network import Layer, Network
from ..paper import depth_bounds
from ..verify import verify


@dataclass
class Theorem7Network:
    network: Network
    claim: object
    depth: int
    widths: list
    paper_bound: int
    layers: dict                  # layer budget: prefix, compression, amplification, input
    verification: object = None

    def summary(self) -> str:
        return (f"Theorem 7 network: depth {self.depth} (paper bound 2^(E+1)+2M+9 = {self.paper_bound}), "
                f"max width {max(self.widths[1:])}, layers {self.layers}")


#: claims with more points are verified in parts of this many points (``finish``)
VERIFY_PART_POINTS = 512


def finish(net, claim, parts: dict, verify_result: bool) -> "Theorem7Network":
    """The result record, with the paper's depth bound, verified exactly unless the caller opts out."""
    res = Theorem7Network(net, claim, net.depth, net.widths, depth_bounds(net.format)["theorem7"]["openreview"], parts)
    if verify_result:
        # the sparse interpreter: the dense one's numbers on the active neurons only (condcheck.interpreters.sparse);
        # beyond VERIFY_PART_POINTS points part by part, each on the network pruned for it (its memory grows
        # with points x upstream values: 2.9 GiB for 1,024 points x 239 y at once)
        n = len(claim.points)
        if n > VERIFY_PART_POINTS:
            from ..interval_pruning import verify_in_parts
            vr = verify_in_parts(net, claim, [range(a, min(n, a + VERIFY_PART_POINTS))
                                              for a in range(0, n, VERIFY_PART_POINTS)])
        else:
            vr = verify(net, claim, method="sparse")
        if not vr.ok:
            raise ConstructionError("the constructed network fails verification: " + vr.summary())
        res.verification = vr
    return res


class Builder:
    """Neurons layer by layer: each neuron is (inputs [(index in the previous layer, weight)], bias).
    A layer is a sequence of segments: lists of such neurons (``add``) and blocks of one-input neurons
    given as arrays (``add_block``: the relays of tens of thousands of chains), in the order added."""

    def __init__(self, L: int):
        self.L = L
        self.layers = [[] for _ in range(L)]          # per layer: segments, a list or (cols, weights, biases)
        self.count = [0] * L

    def add(self, l: int, inputs, bias: float) -> int:
        segs = self.layers[l - 1]
        if not segs or not isinstance(segs[-1], list):
            segs.append([])
        segs[-1].append((list(inputs), float(bias)))
        self.count[l - 1] += 1
        return self.count[l - 1] - 1

    def add_block(self, l: int, cols, weights, biases) -> np.ndarray:
        """Neurons k = 0, 1, ... each reading one neuron cols[k] of the previous layer with weight
        weights[k], bias biases[k] (the same neurons as ``add`` one at a time); their indices."""
        cols = np.asarray(cols, np.int64)
        weights, biases = np.asarray(weights, float), np.asarray(biases, float)
        if not (cols.shape == weights.shape == biases.shape and cols.ndim == 1):
            raise ConstructionError("internal: a block of neurons with unequal arrays")   # pragma: no cover
        start = self.count[l - 1]
        self.layers[l - 1].append((cols, weights, biases))
        self.count[l - 1] += len(cols)
        return np.arange(start, start + len(cols))

    def relay(self, l_from: int, idx: int, l_to: int) -> int:
        """Identity relays (weight 1, bias 0) from layer l_from to l_to; the index in l_to."""
        for l in range(l_from + 1, l_to + 1):
            idx = self.add(l, [(idx, 1.0)], 0.0)
        return idx

    def network(self, F: Format, implementation: str, activation: str = "relu", input_dim: int = 1) -> Network:
        """The layers as CSR matrices (built from coordinate lists: a box network has ~10^6 weights)."""
        layers = []
        prev = input_dim
        for segs, n in zip(self.layers, self.count):
            rows, cols, data, bias = [], [], [], []
            at = 0
            for seg in segs:
                if isinstance(seg, list):
                    rows.append(np.array([at + i for i, (inputs, _) in enumerate(seg) for _ in inputs], np.int64))
                    cols.append(np.array([j for inputs, _ in seg for j, _ in inputs], np.int64))
                    data.append(np.array([w for inputs, _ in seg for _, w in inputs], float))
                    bias.append(np.array([b for _, b in seg], float))
                    at += len(seg)
                else:
                    c, w, b = seg
                    rows.append(np.arange(at, at + len(c), dtype=np.int64))
                    cols.append(c)
                    data.append(w)
                    bias.append(b)
                    at += len(c)
            cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
            rows, cols, data, bias = cat(rows, np.int64), cat(cols, np.int64), cat(data, float), cat(bias, float)
            W = sp.csr_matrix((data, (rows, cols)), shape=(n, prev))
            if W.nnz != len(data):
                raise ConstructionError("internal: a neuron lists one input twice")       # pragma: no cover
            layers.append(Layer(W, bias))
            prev = n
        return Network(F, activation, layers, implementation, input_dim)
