"""``require_conditions``: the constructors' one policy for "Conditions 1-3 must hold".

Theorems 5 and 7 both need the three conditions proved (``check_activation`` says ``holds`` True): a
condition that fails refuses with its failing clause, one that is undecided refuses with the checker's
reason.  What comes back are the checkers' typed witnesses, of which the constructors read Condition
1's dead tail (every z <= z_dead has sigma~(z) = L and sigma~'(z) = 0).
"""
from __future__ import annotations

from dataclasses import dataclass

from conditions.condition1 import Condition1Witness
from conditions.condition2 import Condition2Witness
from conditions.condition3 import Condition3Witness

from ..activations import get_activation
from ..check import check_activation
from ..formats import Format
from .errors import ConditionFailure, ConditionUndecided


@dataclass(frozen=True)
class Witnesses:
    """The witnesses of Conditions 1-3 for one (activation, format, implementation), all three proved."""

    condition1: Condition1Witness
    condition2: Condition2Witness
    condition3: Condition3Witness

    @property
    def z_dead(self) -> float:
        """The top of Condition 1's dead tail, as a float64 (exact: it is a value of the format)."""
        return float(self.condition1.z_dead)

    @property
    def L(self) -> float:
        """sigma~ on the dead tail, as a float64 (exact)."""
        return float(self.condition1.L)


def require_conditions(activation, fmt: Format, implementation: str, theorem: int) -> Witnesses:
    """The witnesses of Conditions 1-3, or ``ConditionFailure`` naming the first failing condition and
    its clause, else ``ConditionUndecided`` naming the first undecided one and why (a failure is the
    stronger statement, so it is named first).  ``theorem``: 5 or 7, for the message."""
    act = get_activation(activation)
    res = check_activation(act, fmt, implementation)
    verdicts = [(k, res.verdicts[k]) for k in ("1", "2", "3")]
    need = f"the Theorem {theorem} constructor needs Conditions 1-3 proved"
    for k, v in verdicts:
        if v.holds is False:
            raise ConditionFailure(f"{act.name} on {fmt.name} fails Condition {k}: {v.failing_clause} "
                                   f"({implementation} implementation); {need}")
    for k, v in verdicts:
        if v.holds is None:
            raise ConditionUndecided(f"{act.name} on {fmt.name}: Condition {k} is undecided ({v.reason}) "
                                     f"({implementation} implementation); {need}")
    return Witnesses(*(v.witness for _, v in verdicts))
