"""RN_F arithmetic on exact values, the reference interpreter's (docs/semantics.md): IEEE 754 rules on rationals.

A value is a Fraction (exact), or, past an overflow, the float +inf, -inf or nan.  A product or sum of
Fractions is rounded exactly (``rounding.round_fraction``); beyond Omega it is +-Inf (NaN in a format
without Inf: the ml_dtypes ``fn``/``fnuz`` encodings).  ``Inf x w = +-Inf`` for w != 0, ``Inf + b = Inf``,
``Inf - Inf`` and ``Inf x 0`` are NaN; sigma~ and sigma~' at +-Inf are the rounded limits of
``condcheck.ieee``.

One arithmetic serves both semantics: under "finite" the first value that is not a Fraction fails
(``failures``), so evaluation never goes past an overflow; under "ieee" only a NaN (and a non-finite
output or gradient) fails.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import FormatOverflowError
from ..rounding import round_fraction

NAN = float("nan")
INF = float("inf")
ZERO = Fraction(0)


class ExactArithmetic:
    """Rounded products, sums, sigma~ and sigma~' of one network's format and rounded activation."""

    def __init__(self, rounded):
        self.rounded = rounded
        self.format = rounded.format
        self._activations = {}                 # (z, derivative) -> value: many neurons share a z

    def round(self, q: Fraction):
        """RN_F of an exact rational: +-Inf on overflow (NaN for a format without Inf)."""
        try:
            return round_fraction(q, self.format)
        except FormatOverflowError:
            return (INF if q > 0 else -INF) if self.format.has_inf else NAN

    def mul(self, a, b):
        if isinstance(a, float) or isinstance(b, float):
            fa, fb = float(a), float(b)
            if math.isnan(fa) or math.isnan(fb) or fa == 0 or fb == 0:
                return NAN
            return INF if (fa > 0) == (fb > 0) else -INF
        if not a.numerator or not b.numerator:        # (values of the format: exact without rounding)
            return ZERO
        return self.round(a * b)

    def add(self, a, b):
        if isinstance(a, float) or isinstance(b, float):
            r = float(a) + float(b)                    # Inf + finite = Inf; Inf - Inf = NaN
            return r if not math.isfinite(r) else NAN  # (one side is not finite: r cannot be finite)
        if not a.numerator:
            return b
        if not b.numerator:
            return a
        return self.round(a + b)

    def activation(self, z, derivative: bool):
        """sigma~(z) or sigma~'(z) for z a Fraction or +-inf / nan."""
        key = (z, derivative)
        if key not in self._activations:
            self._activations[key] = self._activation(z, derivative)
        return self._activations[key]

    def _activation(self, z, derivative: bool):
        rounded, fmt = self.rounded, self.format
        if isinstance(z, float):
            if math.isnan(z):
                return NAN
            from ..ieee import inf_values
            return inf_values(rounded.activation, fmt).value(z, derivative)
        try:
            return rounded.derivative(z) if derivative else rounded.value(z)
        except FormatOverflowError:
            if not fmt.has_inf:
                return NAN
            vals, _ = (rounded.derivative_array if derivative else rounded.value_array)(np.array([float(z)]))
            return math.copysign(INF, float(vals[0]))
