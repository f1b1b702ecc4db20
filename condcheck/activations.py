"""Activation functions as exact symbolic data (SPEC 2.2).

An :class:`Activation` is a real function sigma given ONCE as a sympy expression in the module-level
symbol :data:`x`; its derivative is ``sympy.diff(expr, x)``, computed once when the activation is
made.  Everything numeric (enclosures, correctly rounded tables, framework emulations) is derived from
these two expressions, so there is no second hand-written formula that could disagree.

Conventions at the kinks (they follow from how the Piecewise is written, and sympy's derivative of a
Piecewise differentiates each branch under the same condition):

* ``relu = Piecewise((0, x <= 0), (x, True))``, so **ReLU'(0) = 0** (the branch ``x <= 0`` holds at 0).
* ``leaky_relu = Piecewise((x/100, x <= 0), (x, True))``, so LeakyReLU'(0) = 1/100.
* ``elu``: ELU'(0) = exp(0) = 1 (both one-sided derivatives agree).
* ``selu``: SELU'(0) = scale * alpha (the ``x <= 0`` branch), as in PyTorch.

All constants are exact: gelu_tanh's 0.044715 is ``Rational(44715, 10**6)``, SELU's alpha and scale are
the exact rationals of PyTorch's decimal literals.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from .errors import CondcheckError, UnknownNameError

#: The one real symbol every activation expression is written in.
x = sympy.Symbol("x", real=True)

#: The activations of the paper's main results (in this order).
PAPER_ACTIVATIONS = ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")


@dataclass(frozen=True)
class Activation:
    """A real activation sigma (``expr``) and its derivative sigma' (``derivative``), both in :data:`x`."""

    name: str
    expr: sympy.Expr
    derivative: sympy.Expr = field(compare=False)
    description: str = field(default="", compare=False)
    aliases: tuple = field(default=(), compare=False)

    def __str__(self):
        return self.name


_REGISTRY: dict[str, Activation] = {}
_ALIASES: dict[str, str] = {}


def _make(name: str, expr: sympy.Expr, description: str, aliases=()) -> Activation:
    return Activation(name=name, expr=expr, derivative=sympy.diff(expr, x), description=description,
                      aliases=tuple(aliases))


def _add(act: Activation) -> Activation:
    _REGISTRY[act.name] = act
    for a in act.aliases:
        _ALIASES[a] = act.name
    return act


def _taken(name: str) -> bool:
    return name in _REGISTRY or name in _ALIASES


def _parse(expr) -> sympy.Expr:
    if isinstance(expr, str):
        try:
            parsed = sympy.sympify(expr, locals={"x": x})
        except (sympy.SympifyError, SyntaxError, TypeError) as exc:
            raise CondcheckError(f"could not parse activation expression {expr!r}: {exc}") from None
    else:
        try:
            parsed = sympy.sympify(expr)
        except sympy.SympifyError as exc:
            raise CondcheckError(f"activation expression must be a sympy expression or a string, "
                                 f"not {expr!r}: {exc}") from None
    if not isinstance(parsed, sympy.Expr):
        raise CondcheckError(f"activation expression {expr!r} is not an expression (got {type(parsed).__name__})")
    # A user's own Symbol('x') (without real=True) means our x.
    plain = [s for s in parsed.free_symbols if s.name == "x" and s != x]
    if plain:
        parsed = parsed.subs({s: x for s in plain})
    others = sorted(str(s) for s in parsed.free_symbols if s != x)
    if others:
        raise CondcheckError(f"activation expression {parsed} has free symbols {', '.join(others)}; "
                             f"only x is allowed (substitute numbers for parameters)")
    return parsed


def register_activation(name: str, expr, description: str = "") -> Activation:
    """Register a user activation given as a sympy expression in ``x`` or a string sympy can parse.

    The derivative is ``sympy.diff``.  Names already taken (including aliases) and expressions with
    free symbols other than ``x`` are refused with a :class:`CondcheckError`.
    """
    if not isinstance(name, str) or not name.strip():
        raise CondcheckError(f"activation name must be a non-empty string, not {name!r}")
    name = name.strip()
    if _taken(name):
        raise CondcheckError(f"activation name {name!r} is already taken; choose another name")
    return _add(_make(name, _parse(expr), description))


def get_activation(name_or_activation) -> Activation:
    """An activation by name or alias (an :class:`Activation` is returned as is)."""
    if isinstance(name_or_activation, Activation):
        return name_or_activation
    if not isinstance(name_or_activation, str):
        raise CondcheckError(f"activation must be a name such as 'relu', not {name_or_activation!r}")
    key = name_or_activation.strip()
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        raise UnknownNameError("activation", name_or_activation, list(_REGISTRY) + list(_ALIASES))
    return _REGISTRY[key]


def list_activations() -> list[str]:
    """Names of all registered activations (built-ins first, then plug-ins, in registration order)."""
    return list(_REGISTRY)


# ---- built-ins -------------------------------------------------------------------------------------
_R = sympy.Rational
_SELU_ALPHA = _R("1.6732632423543772848170429916717")
_SELU_SCALE = _R("1.0507009873554804934193349852946")

_add(_make("relu", sympy.Piecewise((0, x <= 0), (x, True)),
           "ReLU max(0, x); written Piecewise((0, x <= 0), (x, True)) so that ReLU'(0) = 0"))
_add(_make("elu", sympy.Piecewise((sympy.exp(x) - 1, x <= 0), (x, True)),
           "ELU with alpha = 1: exp(x) - 1 for x <= 0, x otherwise; ELU'(0) = 1"))
_add(_make("gelu", x / 2 * (1 + sympy.erf(x / sympy.sqrt(2))),
           "GELU (exact, with erf): x/2 * (1 + erf(x/sqrt(2)))"))
_add(_make("swish", x / (1 + sympy.exp(-x)), "Swish / SiLU: x * sigmoid(x) = x / (1 + exp(-x))",
           aliases=("silu",)))
_add(_make("sigmoid", 1 / (1 + sympy.exp(-x)), "logistic sigmoid 1 / (1 + exp(-x))"))
_add(_make("tanh", sympy.tanh(x), "hyperbolic tangent"))
_add(_make("gelu_tanh",
           x / 2 * (1 + sympy.tanh(sympy.sqrt(2 / sympy.pi) * (x + _R(44715, 10 ** 6) * x ** 3))),
           "GELU, tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))"))
_add(_make("leaky_relu", sympy.Piecewise((x / 100, x <= 0), (x, True)),
           "LeakyReLU with slope 1/100: x/100 for x <= 0, x otherwise; LeakyReLU'(0) = 1/100"))
_add(_make("selu", sympy.Piecewise((_SELU_SCALE * _SELU_ALPHA * (sympy.exp(x) - 1), x <= 0),
                                   (_SELU_SCALE * x, True)),
           "SELU with PyTorch's alpha and scale as exact rationals; SELU'(0) = scale * alpha"))
_add(_make("softplus", sympy.log(1 + sympy.exp(x)), "softplus log(1 + exp(x))"))
_add(_make("mish", x * sympy.tanh(sympy.log(1 + sympy.exp(x))), "Mish x * tanh(softplus(x))"))
_add(_make("sin", sympy.sin(x), "sine"))

BUILTIN_ACTIVATIONS = tuple(_REGISTRY)
