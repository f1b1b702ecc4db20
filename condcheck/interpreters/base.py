"""The one interface of every interpreter of the paper's AD order (docs/semantics.md), and the registry by name.

An interpreter computes, for a network, inputs X (N, d) and upstream values Y (N, K), the values
f(x) and the AD gradients ``D_(f,x)(y)`` -- all of them the reference's (``reference``), equal as values
(bit for bit but for the sign of a zero, which docs/semantics.md does not compare), or it refuses the network
(:meth:`Interpreter.refusal`, :class:`~condcheck.errors.InterpreterRefusedError`).  Where a value fails
(an overflow; see ``failures``) it raises the failure the reference raises: the first failing input, its
first failing step, the lowest neuron.  A fast interpreter need only raise a genuine failure of some
input, and the reference's failure when given one input: :meth:`evaluate` finds the first failing
input by bisecting on prefixes of X, then evaluates that input alone.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from importlib import import_module

import numpy as np

from ..errors import InterpreterRefusedError, NetworkOverflowError, UnknownNameError


class Interpreter(ABC):
    """Values and AD gradients of a network in the paper's order; see the module docstring."""

    #: the registry name (``verify(method=...)``, ``condcheck verify``)
    name: str = ""
    #: True when :meth:`run` itself raises the first failing input's failure (no bisection needed)
    reports_in_order: bool = False

    def refusal(self, net) -> str | None:
        """Why this interpreter cannot evaluate ``net`` (a sentence), or None when it can."""
        return None

    def supports(self, net) -> bool:
        return self.refusal(net) is None

    def evaluate(self, net, points, upstream=None, progress=None):
        """Values (N,) of ``net`` at the points (N, d) and, with upstream values, AD gradients.

        ``upstream``: None (values only), (N,) one per point -> gradients (N, d), or (N, K) ->
        gradients (N, K, d).  ``progress(done, total)`` is called as the work goes on."""
        why = self.refusal(net)
        if why is not None:
            raise InterpreterRefusedError(f"the {self.name} interpreter cannot evaluate this network: {why}")
        X = net.check_points(points)
        N = X.shape[0]
        if upstream is None:
            Y2, per_point = np.zeros((N, 0)), False
        else:
            Y2, per_point = net.check_upstream(upstream, N)
        try:
            values, grads = self.run(net, X, np.ascontiguousarray(Y2), progress)
        except NetworkOverflowError as e:
            raise self.first_failure(net, X, Y2, e) from None
        if upstream is None:
            return values
        return values, (grads[:, 0, :] if per_point else grads)

    @abstractmethod
    def run(self, net, X: np.ndarray, Y: np.ndarray, progress=None):
        """(values (N,), gradients (N, K, d)) for checked points X (N, d) and upstream values Y (N, K),
        K >= 0 (K = 0: the forward pass only); raises NetworkOverflowError for some failing input (its
        ``input_index`` set), the reference's failure when N = 1."""

    def first_failure(self, net, X, Y, error: NetworkOverflowError) -> NetworkOverflowError:
        """The reference's failure, given ``error`` at some failing input: the first failing input (by
        bisection on prefixes of X: a prefix fails exactly when it holds a failing input), alone."""
        if self.reports_in_order or X.shape[0] == 1:
            return error
        lo, hi = 0, X.shape[0] if error.input_index is None else int(error.input_index) + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                self.run(net, X[:mid], np.ascontiguousarray(Y[:mid]))
                lo = mid
            except NetworkOverflowError as e:
                hi = mid if e.input_index is None else min(mid, int(e.input_index) + 1)
        p = hi - 1
        try:
            self.run(net, X[p:p + 1], np.ascontiguousarray(Y[p:p + 1]))
        except NetworkOverflowError as e:
            e.input_index = p
            return e
        raise AssertionError(f"the {self.name} interpreter failed on a prefix but not at its last input")


# ---- the registry ---------------------------------------------------------------------------------------
#: name -> (module under condcheck.interpreters, factory name, keyword arguments): imported on first use
_REGISTRY = {
    "exact": ("reference", "ExactInterpreter", {}),
    "dense": ("dense", "DenseInterpreter", {}),
    "dense-numpy": ("dense", "DenseInterpreter", {"kernels": False}),
    "tables": ("tables", "TablesInterpreter", {}),
    "sparse": ("sparse", "SparseInterpreter", {}),
    "sparse-reference": ("sparse", "SparseInterpreter",
                         {"forward": "dense", "groups": "classes", "per_point": "active"}),
    "torch": ("torch_autograd", "TorchInterpreter", {}),
}
_MADE: dict = {}


def interpreter_names() -> list[str]:
    return list(_REGISTRY)


def get_interpreter(name) -> Interpreter:
    """The interpreter registered under ``name`` (an Interpreter passes through)."""
    if isinstance(name, Interpreter):
        return name
    if name not in _REGISTRY:
        raise UnknownNameError("interpreter", name, _REGISTRY)
    if name not in _MADE:
        module, factory, kwargs = _REGISTRY[name]
        made = getattr(import_module(f"{__package__}.{module}"), factory)(**kwargs)
        made.name = name
        _MADE[name] = made
    return _MADE[name]
