"""The errors of the constructors: one ``ConstructionError`` for both theorems, and the refusals that
are not construction attempts (the conditions do not hold, the targets are not admissible).
"""
from __future__ import annotations

from ..errors import CondcheckError


class ConstructionError(CondcheckError):
    """The constructor could not build the network; the message names the requirement that failed."""


class ConditionFailure(ConstructionError):
    """The activation fails one of Conditions 1-3 on the format, or one is undecided: a refusal, not a
    construction attempt."""


class ConditionUndecided(ConditionFailure):
    """A condition is undecided (neither proved nor refuted, e.g. a callable activation on a format too
    large to enumerate): the constructors need Conditions 1-3 proved."""


class TargetError(CondcheckError):
    """The targets are not an admissible claim (not odd in y, not values of the format, ...): bad input,
    not a failed construction."""
