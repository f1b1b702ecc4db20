"""A plug-in module: activations condcheck can load with ``--plugin`` or from an entry point.

    PYTHONPATH=examples condcheck --plugin my_activations:XSIG2 check xsig2 float8_e4m3
    PYTHONPATH=examples condcheck --plugin my_activations:register_all activations

XSIG2 is x * sigmoid(2x) given as a pair of mpmath callables (trusted, not certified); register_all
registers a sympy expression (certified like the built-ins).
"""
import mpmath

from condcheck import register_activation
from condcheck.activations import make_activation


def _xsig2(t):
    return t / (1 + mpmath.exp(-2 * t))


def _dxsig2(t):
    s = 1 / (1 + mpmath.exp(-2 * t))
    return s + 2 * t * s * (1 - s)


XSIG2 = make_activation("xsig2", function=_xsig2, derivative=_dxsig2,
                        description="x * sigmoid(2x), mpmath callables")


def register_all():
    register_activation("softsign", "x / (1 + Abs(x))", "softsign, a sympy expression")
