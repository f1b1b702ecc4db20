"""The records a construction builds: gates and gradient branches.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Gate:
    """A gate neuron T(sum_k beta_k u_k (+) gamma) of one point: live at it (pre-activation pz), dead at
    every other point of the domain.  ``inputs`` are what it reads (boosted step indices; for the AND
    gates of ``SlicedContext`` slice-neuron keys), in the row's summation order; ``bmax`` bounds the
    backward gain from its output into the layers below (max |beta|, times the slice neurons' gains)."""
    inputs: list
    betas: list
    gamma: float
    pz: float
    bmax: float


@dataclass
class Branch:
    zi: int
    gate: Gate
    post: list            # (a, c) of each layer after the gate: V' then relays, or the passes
    out_weight: float
    # gradient branches only
    coord: int = -1
    w_g: float = 0.0
    b_g: float = 0.0
    a2: float = 0.0
    c2: float = 0.0
    a2b: float = 0.0
    c3: float = 0.0
    a3: float = 0.0
    slice_gate: Gate | None = None      # sliced gating: the gate of the pass on its coordinate's slice
    part: int = 0                       # which of the equal branches of a split gradient
    relays: tuple = ()                  # (a, c) of the relays between the second pass and the gate
