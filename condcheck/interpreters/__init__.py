"""Interpreters of the paper's AD order (docs/semantics.md): one reference, fast ones behind one interface.

    exact        reference.py     Fractions, exact rounding, one input at a time (the standalone verifier)
    dense        dense.py         every neuron, vectorized; compiled sums (numba) or numpy (dense-numpy)
    tables       tables.py        the dense one on RN index tables (formats of at most 1024 values)
    sparse       sparse/          active neurons only, points grouped (finite semantics; groups: <= 16 bits)
    torch        torch_autograd.py  the PyTorch export (torch_export.py) under torch.autograd: a second opinion

Each is an :class:`Interpreter` (``base``): ``evaluate(net, points, upstream)`` gives the reference's
values and gradients (equal values: bit for bit but for the sign of a zero), or the reference's failure
(``failures``), or refuses the network saying why.  ``get_interpreter(name)`` is the registry that
``verify(method=...)`` and ``condcheck verify`` use; tests/test_interpreters.py runs every one against
the reference on one shared suite.
"""
from .base import Interpreter, get_interpreter, interpreter_names

__all__ = ["Interpreter", "get_interpreter", "interpreter_names"]
