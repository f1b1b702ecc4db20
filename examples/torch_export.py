"""A Theorem 5 network in PyTorch: the paper-order export reproduces it, a plain nn.Linear export does not.

Usage: python3 examples/torch_export.py NET.json   (needs torch: pip install 'condcheck[torch]')
"""
import sys

import numpy as np
import torch

from condcheck import load_network
from condcheck.interpreters.torch_export import plain_export, to_torch, torch_value_and_gradient

net, claim = load_network(sys.argv[1])
module = to_torch(net)        # each affine map a torch.autograd.Function with the rounded left-to-right sums
values, grads = torch_value_and_gradient(module, claim.points, claim.upstream)
print(f"to_torch: values equal {np.sum(values == claim.values)}/{len(values)}, "
      f"AD gradients equal {np.sum(np.all(grads == claim.gradients, axis=1))}/{len(grads)}")

plain = plain_export(net)     # nn.Linear in float32: a matmul sums in its own order and rounds once
with torch.no_grad():
    out = plain(torch.tensor(claim.points, dtype=torch.float32)).double().numpy().reshape(-1)
print(f"plain nn.Linear export: values equal {np.sum(out == claim.values)}/{len(out)}")
