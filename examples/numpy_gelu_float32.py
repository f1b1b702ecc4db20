"""GELU as a numpy framework computes it in float32 (scipy's float32 erf), forward and derivative, plugged
into condcheck as an implementation (docs/plugins.md):

    PYTHONPATH=examples condcheck --plugin numpy_gelu_float32:register check gelu bfloat16 -i numpy_gelu

Both functions take an array of the format's dtype, compute in float32 and cast the result back to that
dtype (round to nearest, ties to even), as a framework does for half-precision inputs.
"""
import numpy as np
from scipy.special import erf

SQRT1_2 = np.float32(0.7071067811865476)           # 1/sqrt(2)
INV_SQRT_2PI = np.float32(0.3989422804014327)      # 1/sqrt(2 pi)
HALF, ONE = np.float32(0.5), np.float32(1.0)


def gelu(x):
    """x * Phi(x) in float32."""
    z = x.astype(np.float32)
    with np.errstate(all="ignore"):
        y = HALF * z * (ONE + erf(z * SQRT1_2))
    return y.astype(x.dtype)


def gelu_derivative(x):
    """Phi(x) + x * phi(x) in float32 (what a hand-written backward kernel computes)."""
    z = x.astype(np.float32)
    with np.errstate(all="ignore"):
        cdf = HALF * (ONE + erf(z * SQRT1_2))
        pdf = INV_SQRT_2PI * np.exp(-HALF * z * z)
        y = cdf + z * pdf
    return y.astype(x.dtype)


def register():
    """The entry point: register the implementation "numpy_gelu" of gelu on float32, float16 and bfloat16."""
    from condcheck import register_implementation
    register_implementation("numpy_gelu", "gelu", gelu, gelu_derivative, formats=("float32", "float16", "bfloat16"))
