"""The errors a Theorem 5 construction raises.
"""
from __future__ import annotations

from ..errors import CondcheckError


class ConstructionError(CondcheckError):
    """The constructor could not build the network; the message names the requirement that failed."""


class ValueGainOverflow(ConstructionError):
    """A value gate's backward gain overflows (large |h*| |f*|): construct_theorem5 retries with wide boosts."""


class SearchGaveUp(ConstructionError):
    """A gradient branch search used up its transfer budget (``TRANSFER_BUDGET``): ``_gradient_branches``
    moves on to its next variant (or raises this, naming the point) instead of trying every source weight,
    scale, gate and depth, which can take hours on a 16-bit format."""


class ConditionFailure(ConstructionError):
    """The activation fails one of Conditions 1-3 on the format (a refusal, not a construction attempt)."""
