"""Rigorous enclosures of a sympy expression in ``x`` at exact points.

For every node of the expression tree an interval ``[lo, hi]`` is computed that contains the true real
value of that node at the point.  One compiled tree walk (``compiler``) runs on three backends:
``numpy_backend`` (float64 arrays, all points at once, widened by ulps), ``mp_backend`` (mpmath at
``prec`` bits, one point) and ``arb_backend`` (Arb balls, one point, rigorous).

ASSUMPTION (the only non-proved ingredient): libm/numpy/scipy functions are accurate within the numpy
backend's ulp margins, and mpmath's functions within ``2**-(prec - 8)`` relative.  The Arb backend does
not rely on it; with python-flint installed a rounding is decided by Arb, and the mpmath assumption only
enters where Arb leaves a point undecided.  tests/test_intervals.py checks enclosures against 200-bit
mpmath values.
"""
from .arb_backend import HAVE_ARB, ArbBackend
from .compiler import Compiled, compile_expression, enclose_arb, enclose_array, enclose_mp
from .decide import decided_by_sign
from .mp_backend import MpBackend, mp_to_fraction
from .numpy_backend import NumpyBackend

__all__ = ["compile_expression", "enclose_array", "enclose_mp", "enclose_arb", "NumpyBackend", "MpBackend",
           "ArbBackend", "HAVE_ARB", "mp_to_fraction", "Compiled", "decided_by_sign"]
