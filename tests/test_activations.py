"""Activations as symbolic data: built-ins, derivatives, registry, errors."""
import pytest
import sympy

from condcheck import activations as A
from condcheck.activations import (PAPER_ACTIVATIONS, Activation, get_activation, list_activations,
                                   register_activation, x)
from condcheck.errors import CondcheckError, UnknownNameError


@pytest.fixture
def clean_registry():
    with A.scoped_registry():
        yield


def test_paper_activations_are_the_six_of_the_paper_and_registered():
    assert PAPER_ACTIVATIONS == ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")
    assert set(PAPER_ACTIVATIONS) <= set(list_activations())


def test_all_further_builtins_are_registered():
    for name in ("gelu_tanh", "leaky_relu", "selu", "softplus", "mish", "sin"):
        assert name in list_activations()


@pytest.mark.parametrize("name", list(A.BUILTIN_ACTIVATIONS))
def test_derivative_is_sympy_diff_of_the_expression(name):
    act = get_activation(name)
    assert sympy.simplify(act.derivative - sympy.diff(act.expr, x)) == 0


def test_relu_derivative_at_zero_is_zero():
    assert get_activation("relu").derivative.subs(x, 0) == 0


def test_relu_docstring_states_the_derivative_at_zero():
    assert "ReLU'(0) = 0" in A.__doc__
    assert "ReLU'(0) = 0" in get_activation("relu").description


def test_leaky_relu_derivative_at_zero_is_one_hundredth():
    assert get_activation("leaky_relu").derivative.subs(x, 0) == sympy.Rational(1, 100)


def test_elu_derivative_at_zero_is_one():
    assert get_activation("elu").derivative.subs(x, 0) == 1


def test_selu_constants_are_exact_rationals_of_pytorch_literals():
    act = get_activation("selu")
    alpha = sympy.Rational("1.6732632423543772848170429916717")
    scale = sympy.Rational("1.0507009873554804934193349852946")
    assert act.expr.subs(x, 1) == scale
    assert act.derivative.subs(x, 0) == scale * alpha


def test_gelu_tanh_constant_0_044715_is_an_exact_rational():
    expr = get_activation("gelu_tanh").expr
    assert not expr.atoms(sympy.Float)
    assert sympy.Rational(44715, 10 ** 6) == sympy.Rational(8943, 200000)
    assert sympy.Rational(8943, 200000) in expr.atoms(sympy.Rational)


def test_gelu_is_exact_with_erf():
    assert get_activation("gelu").expr.has(sympy.erf)


def test_silu_is_an_alias_of_swish():
    assert get_activation("silu") is get_activation("swish")
    assert "silu" in get_activation("swish").aliases


def test_get_activation_returns_an_activation_unchanged():
    act = get_activation("tanh")
    assert get_activation(act) is act


def test_activation_is_a_frozen_dataclass():
    act = get_activation("tanh")
    assert isinstance(act, Activation)
    with pytest.raises(Exception):
        act.name = "other"


def test_unknown_activation_message_lists_close_names():
    with pytest.raises(UnknownNameError) as info:
        get_activation("sigmoidd")
    assert "'sigmoid'" in str(info.value)
    assert "activation" in str(info.value)


def test_unknown_activation_error_is_a_condcheck_error():
    with pytest.raises(CondcheckError):
        get_activation("no_such_activation")


def test_register_activation_from_a_string(clean_registry):
    act = register_activation("my_cube", "x**3 + x", "a cubic")
    assert get_activation("my_cube") is act
    assert act.derivative == 3 * x ** 2 + 1


def test_register_activation_from_a_sympy_expression_in_a_plain_symbol(clean_registry):
    y = sympy.Symbol("x")
    act = register_activation("my_sq", y ** 2)
    assert act.expr == x ** 2 and act.derivative == 2 * x


def test_register_activation_rejects_a_taken_name(clean_registry):
    with pytest.raises(CondcheckError, match="already taken"):
        register_activation("tanh", "x")


def test_register_activation_rejects_an_alias_name(clean_registry):
    with pytest.raises(CondcheckError, match="already taken"):
        register_activation("silu", "x")


def test_register_activation_rejects_other_free_symbols(clean_registry):
    with pytest.raises(CondcheckError, match="free symbols a"):
        register_activation("param", "a*x")


def test_register_activation_rejects_unparsable_text(clean_registry):
    with pytest.raises(CondcheckError, match="could not parse"):
        register_activation("broken", "x +* 2")


def test_registered_activation_is_listed_after_the_builtins(clean_registry):
    register_activation("my_lin", "2*x")
    assert list_activations()[-1] == "my_lin"
