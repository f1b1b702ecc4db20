"""Constant neurons of a Theorem 5 network: the states T(b) = K a constant row reads, the exact weights
of each constant the network needs, and the absorber C of the output row (read by the searches too).
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import in_format
from ..formats import Format
from .errors import ConstructionError


class Constants:
    """Constant neurons T(b) = K (K a positive power of two, Condition 1 (c)) and the exact weights w
    with K * w = c for each constant c the network needs (kappa and chain constants of the steps, +-C).

    Each constant picks the state K nearest to 1 (in binades) that makes c / K a value of F, so a
    weight outside the format is never emitted; a constant no state makes exact is an error naming it.
    """

    def __init__(self, F: Format, cz, ct):
        order = np.argsort(np.abs(np.log2(ct)), kind="stable")
        self.F, self.states = F, [(float(cz[i]), float(ct[i])) for i in order]

    def pick(self, c: float):
        for b, K in self.states:
            if in_format(self.F, c / K):
                return b, K
        raise ConstructionError(f"no constant state K = sigma~(b) of {self.F.name} makes the constant {c!r} an exact "
                                f"multiple K * w with w in the format")

    def absorber(self, h_max: float, slope) -> float:
        """C of the output row: the largest power of two C <= Omega with C = K w exact and the backward
        values at the constant neuron T(b) = K finite: |w| h_max and |w| h_max |T'(b)| at most Omega
        (slope(b) = T'(b): gelu~'(b) > 1 where gelu~(b) = 1).  Every constant state K is tried, nearest to 1 first
        (``pick``'s order): with upstream values up to Omega only K >= C leaves them finite, and a
        larger C absorbs larger gradient terms (a quarter ulp of C)."""
        F = self.F
        for e in range(F.e_max, F.e_min - 1, -1):
            C = math.ldexp(1.0, e)
            if C > F.max_float:
                continue
            for b, K in self.states:
                if in_format(F, C / K) and (C / K) * h_max * max(1.0, abs(float(slope(b)))) <= F.max_float:
                    self.absorbing = (b, K)
                    return C
        raise ConstructionError(f"no absorbing constant C fits upstream values up to {h_max!r} in {F.name}")
