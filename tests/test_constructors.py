"""The constructors' shared layer: one policy for "Conditions 1-3 must hold" (require_conditions), typed
witnesses, one ConstructionError for both theorems."""
from fractions import Fraction

import mpmath
import pytest

from condcheck import activations as A
from condcheck.check import check_activation
from condcheck.constructors.errors import ConditionFailure, ConditionUndecided, ConstructionError
from condcheck.constructors.witnesses import require_conditions
from condcheck.formats import get_format
from condcheck.theorem5 import construct_theorem5
from conditions.condition1 import Condition1Witness
from conditions.condition2 import Condition2Witness
from conditions.condition3 import Condition3Witness


@pytest.fixture
def relu_callable():
    """relu as an mpmath plug-in (trusted callables, no sympy expression), in a scratch registry."""
    with A.scoped_registry():
        yield A.register_activation("relu_callable", function=lambda t: t if t > 0 else mpmath.mpf(0),
                                    derivative=lambda t: mpmath.mpf(1) if t > 0 else mpmath.mpf(0))


def test_the_witnesses_of_conditions_that_hold_are_the_checkers_typed_witnesses():
    F = get_format("float8_e4m3")
    w = require_conditions("gelu", F, "exact", 5)
    res = check_activation("gelu", F, "exact")
    assert isinstance(w.condition1, Condition1Witness) and isinstance(w.condition2, Condition2Witness)
    assert isinstance(w.condition3, Condition3Witness)
    assert [w.condition1, w.condition2, w.condition3] == [res.verdicts[k].witness for k in "123"]
    tail = res.conditions["1"]["witness"]
    assert (w.z_dead, w.L) == (float(Fraction(tail["z_dead"]["fraction"])), float(Fraction(tail["L"]["fraction"])))


def test_a_failing_condition_is_refused_naming_the_condition_and_its_clause():
    with pytest.raises(ConditionFailure, match=r"sigmoid on float4_e2m1fn fails Condition 1: \(") as info:
        require_conditions("sigmoid", get_format("float4_e2m1fn"), "exact", 7)
    assert "Theorem 7" in str(info.value) and not isinstance(info.value, ConditionUndecided)


def test_an_undecided_condition_is_refused_with_the_checkers_reason(relu_callable):
    F = get_format("float32")
    reason = check_activation(relu_callable, F, "exact").conditions["1"]["reason"]
    assert reason
    with pytest.raises(ConditionUndecided, match="Condition 1 is undecided") as info:
        require_conditions(relu_callable, F, "exact", 5)
    assert reason in str(info.value)


def test_theorem5_refuses_an_undecided_condition_instead_of_crashing(relu_callable):
    # issue 28: relu as a callable on float32 (Condition 1 undecided) crashed with a TypeError
    with pytest.raises(ConditionUndecided, match="relu_callable on float32: Condition 1 is undecided"):
        construct_theorem5(relu_callable, "float32", [[0.0], [1.0]], [0.0, 1.0], [1.0, 1.0], [[1.0], [1.0]])


def test_both_theorems_raise_the_one_construction_error():
    import condcheck.theorem5 as t5
    import condcheck.theorem7 as t7
    assert t5.ConstructionError is t7.ConstructionError is ConstructionError
    assert issubclass(ConditionUndecided, ConditionFailure) and issubclass(ConditionFailure, ConstructionError)
