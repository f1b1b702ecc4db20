"""The torch interpreter: the network exported to PyTorch (``torch_export.to_torch``), run under
``torch.autograd`` -- a second opinion from another library's AD engine.

Its sums are the paper's (one ``torch.autograd.Function`` per layer, every operation rounded), its
activation derivative is torch.autograd's of the activation op (implementation "torch") or condcheck's
table ("exact", "float32-upcast"); the arithmetic is the format's own torch dtype (float16, bfloat16,
float32, float64) or float64 rounded by condcheck.  K upstream values per point run as K rows of the
point in one backward pass.  Finite semantics only (the export raises at the first non-finite step).
"""
from __future__ import annotations

import importlib.util

import numpy as np

from .base import Interpreter


class TorchInterpreter(Interpreter):
    """Finite semantics; needs PyTorch.  ``activation``: ``to_torch``'s choice (default: the network's)."""

    name = "torch"

    def __init__(self, activation: str | None = None):
        self.activation = activation

    def refusal(self, net):
        if importlib.util.find_spec("torch") is None:
            return "PyTorch is not installed"
        if net.ieee:
            return "the PyTorch export implements the finite semantics only"
        return None

    def run(self, net, X, Y, progress=None):
        import torch

        from .torch_export import to_torch, torch_value_and_gradient
        module = to_torch(net, self.activation)
        N, K = Y.shape
        if not K:
            with torch.no_grad():
                values = module(X).numpy().astype(np.float64)
            return values, np.empty((N, 0, net.input_dim))
        module.rows_per_point = K
        values, grads = torch_value_and_gradient(module, np.repeat(X, K, axis=0), Y.reshape(-1))
        if progress:
            progress(N, N)
        return values[::K], grads.reshape(N, K, net.input_dim)
