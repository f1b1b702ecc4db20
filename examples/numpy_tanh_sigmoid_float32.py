"""tanh and sigmoid as a numpy framework computes them in float32, plugged into condcheck as
implementations (docs/plugins.md):

    PYTHONPATH=examples condcheck --plugin numpy_tanh_sigmoid_float32:register check sigmoid bfloat16 -i numpy_sigmoid

Forward and backward are what an autograd framework does: the forward in float32 (sigmoid in its
overflow-free form), the backward from the forward's own rounded output (tanh' = 1 - y^2,
sigmoid' = y (1 - y)), not from a formula of x.  That is why these are implementations of their own:
`float32-upcast` evaluates sympy's derivative of x in float32, and its sigmoid' is NaN where exp(-x)
overflows (docs/scale.md), where this one is finite.  Inputs are cast up to float32, results back to the
input's dtype (round to nearest, ties to even).
"""
import numpy as np

ONE = np.float32(1.0)


def tanh(x):
    """numpy's float32 tanh."""
    return np.tanh(x.astype(np.float32)).astype(x.dtype)


def tanh_derivative(x):
    """1 - y^2 from the float32 forward y, as autograd's tanh backward computes it."""
    y = np.tanh(x.astype(np.float32))
    return (ONE - y * y).astype(x.dtype)


def _sigmoid32(z):
    """1 / (1 + exp(-z)) for z >= 0 and exp(z) / (1 + exp(z)) below: exp never overflows."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, ONE / (ONE + e), e / (ONE + e)).astype(np.float32)


def sigmoid(x):
    """The overflow-free float32 sigmoid."""
    return _sigmoid32(x.astype(np.float32)).astype(x.dtype)


def sigmoid_derivative(x):
    """y (1 - y) from the float32 forward y, as autograd's sigmoid backward computes it."""
    y = _sigmoid32(x.astype(np.float32))
    return (y * (ONE - y)).astype(x.dtype)


def register():
    """The entry point: register "numpy_tanh" and "numpy_sigmoid" on float32, float16 and bfloat16."""
    from condcheck import register_implementation
    formats = ("float32", "float16", "bfloat16")
    register_implementation("numpy_tanh", "tanh", tanh, tanh_derivative, formats=formats)
    register_implementation("numpy_sigmoid", "sigmoid", sigmoid, sigmoid_derivative, formats=formats)
