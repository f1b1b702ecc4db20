"""Test helpers for the Theorem 5 tests: grids of the float8 box, and layers and networks compared weight
for weight (for the tests that build one network two ways and claim the same result)."""
import numpy as np

from condcheck.formats import get_format
from condcheck.targets import box_sample, full_box, random_targets, separable_part


def spread_sample(monkeypatch, n_points, spread_from, chunk_points):
    """(X, f, h, g): a float16 gelu sample of n_points, spread (beyond spread_from points) over chunks of
    chunk_points for the test."""
    import condcheck.theorem5 as t5
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", spread_from)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", chunk_points)
    X = box_sample("gelu", "float16", 1, n_points, 3)
    return (X, *random_targets("float16", X, 3, 0.25))


def separable_grid(act, fmt, k):
    """The k x k grid (d = 2) of evenly spaced values of the separable part of the d = 1 box."""
    F = get_format(fmt)
    c = separable_part(act, F, full_box(act, F, 1))[:, 0]
    c = c[np.linspace(0, len(c) - 1, k).round().astype(int)]
    return np.array([(u, v) for u in c for v in c])


def assert_same_layer(a, b):
    """The same sparse layer: shape, sparsity pattern, and every weight and bias by bit pattern."""
    assert a.weight.shape == b.weight.shape
    for x, y in ((a.weight.indptr, b.weight.indptr), (a.weight.indices, b.weight.indices),
                 (a.weight.data.view(np.int64), b.weight.data.view(np.int64)),
                 (a.bias.view(np.int64), b.bias.view(np.int64))):
        assert np.array_equal(x, y)


def assert_same_network(a_net, b_net):
    """Weight for weight the same network (``assert_same_layer`` on every layer)."""
    assert len(a_net.layers) == len(b_net.layers)
    for a, b in zip(a_net.layers, b_net.layers):
        assert_same_layer(a, b)
