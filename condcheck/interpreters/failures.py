"""Where evaluation fails, and how every interpreter says so (docs/semantics.md's two semantics).

Which values fail.  Under the "finite" semantics every value that is not finite (an overflow to Inf, a
NaN) fails; under "ieee" (IEEE 754 through Inf, ``condcheck.ieee``) a NaN fails, and so does a
non-finite network output or gradient coordinate.  :class:`Semantics` holds that rule, for exact values
(a Fraction, or the float +-inf / nan of an overflow) and for arrays.

Which failure is reported.  Every interpreter reports the same one, whatever order it computes in:

* the first input (in the order given) at which evaluation fails;
* there, the first step that fails, in the order forward layer 1, its activation, forward layer 2, ...,
  forward layer L (the output), backward layer L, activation derivative of layer L-1, backward layer
  L-1, ..., backward layer 1 (the gradient) -- a step fails when it fails for any of the input's
  upstream values;
* there, the lowest neuron (under "ieee", at the gradient step, a NaN comes before an Inf).

The error is a :class:`~condcheck.errors.NetworkOverflowError` naming the pass, layer, neuron and input
(``input_index``: the input's position).  A product by sigma~' fails exactly where sigma~' fails or the
product overflows (Inf x v is Inf or NaN), so the activation-derivative step checks the products alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import NetworkOverflowError

FORWARD, FORWARD_ACTIVATION = "forward", "forward (activation)"
BACKWARD, BACKWARD_DERIVATIVE = "backward", "backward (activation derivative)"


@dataclass(frozen=True)
class Semantics:
    """The rule of one semantics: which computed values fail (``final``: the output or the gradient)."""

    name: str

    @property
    def ieee(self) -> bool:
        return self.name == "ieee"

    def stages(self, final: bool) -> tuple:
        """The checks of one step, in order: ("nan" | "nonfinite", ...)."""
        if not self.ieee:
            return ("nonfinite",)
        return ("nan", "nonfinite") if final else ("nan",)

    @staticmethod
    def fails_exact(value, stage: str) -> bool:
        """Whether an exact value (Fraction, or the float +-inf / nan) fails a stage."""
        if isinstance(value, Fraction):
            return False
        return math.isnan(value) if stage == "nan" else True

    @staticmethod
    def fails_array(arr: np.ndarray, stage: str) -> np.ndarray:
        return np.isnan(arr) if stage == "nan" else ~np.isfinite(arr)


FINITE, IEEE = Semantics("finite"), Semantics("ieee")


def semantics_of(net) -> Semantics:
    return IEEE if net.ieee else FINITE


def failure(net, pass_name: str, layer: int, neuron: int, x, value=None, final=None,
            index=None) -> NetworkOverflowError:
    """The error of a failing value at (pass, layer, neuron) for input x (its coordinates) at position
    ``index``; ``value`` (the failing value) and ``final`` ("output", "gradient") shape the IEEE message."""
    xs = ", ".join(repr(float(v)) for v in x)
    fmt = net.format.name
    if not net.ieee:
        return NetworkOverflowError(f"{pass_name} pass: overflow (Inf or NaN) in {fmt} at layer {layer}, neuron "
                                    f"{neuron}, input ({xs})", pass_name=pass_name, layer=layer, neuron=neuron,
                                    input_index=index)
    value = float(value)
    where = f"at layer {layer}, neuron {neuron}, input ({xs})"
    if final == "output" and not math.isnan(value):
        what = (f"the output is {'+' if value > 0 else '-'}Inf in {fmt} {where}: under IEEE semantics the "
                f"network's value must be finite")
    elif final == "gradient" and not math.isnan(value):
        what = (f"gradient coordinate {neuron} is {'+' if value > 0 else '-'}Inf in {fmt} {where}: under "
                f"IEEE semantics the AD gradient must be finite")
    elif not net.format.has_inf:
        what = (f"NaN {where}: an overflow in {fmt}, which has no Inf, so IEEE 754 gives NaN "
                f"(IEEE-through-Inf semantics cannot help in {fmt})")
    elif "activation" in pass_name:
        what = (f"NaN in {fmt} {where} under IEEE semantics: {net.activation}~"
                f"{chr(39) if 'derivative' in pass_name else ''} at +-Inf is NaN (no limit, or a derivative "
                f"that does not tend to 0), or Inf x 0 / NaN reached it")
    else:
        what = (f"NaN in {fmt} {where} under IEEE semantics: Inf - Inf or Inf x 0 "
                f"(a zero weight meeting an Inf counts)")
    return NetworkOverflowError(f"{pass_name} pass: {what}", pass_name=pass_name, layer=layer, neuron=neuron,
                                input_index=index)


def check_exact(net, rows, pass_name: str, layer: int, x, index=None, final=None):
    """Raise the failure of one step of the exact interpreter at one input: ``rows`` holds the step's values,
    one list per upstream value (one list in the forward pass), one entry per neuron."""
    sem = semantics_of(net)
    for stage in sem.stages(final is not None):
        for j in range(len(rows[0]) if rows else 0):
            for row in rows:
                if sem.fails_exact(row[j], stage):
                    raise failure(net, pass_name, layer, j, x, row[j], final, index)


def check_array(net, arr: np.ndarray, pass_name: str, layer: int, offset: int, inputs, final=None):
    """Raise the failure of one step of a vectorized interpreter: ``arr`` has the points on its first axis
    (point ``offset + n`` of ``inputs``), the neurons on its last, upstream values between (or none).
    The first point that fails, its first stage, its lowest neuron (the first upstream value there)."""
    sem = semantics_of(net)
    stages = sem.stages(final is not None)
    bad = sem.fails_array(arr, stages[-1])        # the last stage flags every failing value
    if not bad.any():
        return
    n = int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])
    at = arr[n].reshape(-1, arr.shape[-1])         # (upstream values, neurons) of that point
    for stage in stages:
        b = sem.fails_array(at, stage)
        if b.any():
            j = int(np.flatnonzero(b.any(axis=0))[0])
            k = int(np.flatnonzero(b[:, j])[0])
            raise failure(net, pass_name, layer, j, np.asarray(inputs[offset + n]).tolist(), at[k, j], final,
                          offset + n)
