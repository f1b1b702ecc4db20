"""The errors a Theorem 5 construction raises: the constructors' ``ConstructionError`` and refusals
(``condcheck.constructors.errors``), and the two kinds its search retries on.
"""
from __future__ import annotations

from ..constructors.errors import ConditionFailure, ConditionUndecided, ConstructionError

__all__ = ["ConditionFailure", "ConditionUndecided", "ConstructionError", "SearchGaveUp", "ValueGainOverflow"]


class ValueGainOverflow(ConstructionError):
    """A value gate's backward gain overflows (large |h*| |f*|): construct_theorem5 retries with wide boosts."""


class SearchGaveUp(ConstructionError):
    """A gradient branch search used up its transfer budget (``TRANSFER_BUDGET``): ``search_gradient_branches``
    moves on to its next variant (or raises this, naming the point) instead of trying every source weight,
    scale, gate and depth, which can take hours on a 16-bit format."""
