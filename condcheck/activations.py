"""Activation functions as exact symbolic data (docs/semantics.md).

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

Plug-ins (three ways; each gives an :class:`Activation` usable everywhere a built-in is):

* ``register_activation("softsign", x / (1 + sympy.Abs(x)))`` or a string sympy parses
  (``"x*tanh(log(1+exp(x)))"``): the derivative is ``sympy.diff`` and sigma~, sigma~' are *certified*
  (interval enclosures, Ziv's strategy) exactly as for the built-ins.
* ``register_activation("asinh", function=mpmath.asinh, derivative=lambda t: 1/mpmath.sqrt(1+t*t))``:
  a pair of mpmath-capable callables, for functions sympy cannot express.  A callable gives no error
  bound, so its roundings are **trusted, not certified**: it is evaluated at two precisions (about 2x
  and 4x the format's significand bits plus a margin, then higher if needed) and a rounding is
  accepted only when both agree and neither value is within 2^-(prec-8) (relative) of a rounding
  boundary (see ``condcheck.rounded_activation``).  Verdicts for such activations say so in their
  evidence ("callable, trusted").  At registration the derivative is compared with ``mpmath.diff`` of
  the function at fixed sample points (:data:`DERIVATIVE_SAMPLE_POINTS`, which avoid 0 and the
  integers where kinks usually sit); a relative disagreement above 1e-6 is refused, naming the point.
  This is a plausibility check on the user's input, not a proof.
* the entry point group ``condcheck.activations`` (:data:`ENTRY_POINT_GROUP`): a third-party package
  declares e.g. ``[project.entry-points."condcheck.activations"] mish2 = "mypkg.acts:MISH2"``; the
  object is an :class:`Activation` (made with :func:`make_activation`) or a callable that registers
  activations when called.  Entry points are loaded lazily, once: at the first lookup of an unknown
  name or at :func:`list_activations`.  A plug-in that fails to load is reported with a
  :class:`PluginWarning` (one line, no traceback) and in :func:`plugin_errors`; it never breaks import.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Optional

import sympy

from .errors import CondcheckError, PluginError, UnknownNameError

#: The one real symbol every activation expression is written in.
x = sympy.Symbol("x", real=True)

#: The activations of the paper's main results (in this order).
PAPER_ACTIVATIONS = ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")


@dataclass(frozen=True)
class Activation:
    """A real activation sigma (``expr``) and its derivative sigma' (``derivative``), both in :data:`x`."""

    name: str
    expr: Optional[sympy.Expr]                      # None for a callable activation
    derivative: Optional[sympy.Expr] = field(compare=False)
    description: str = field(default="", compare=False)
    aliases: tuple = field(default=(), compare=False)
    #: For a callable activation: sigma and sigma' as mpmath-capable callables (else None).
    function: Optional[Callable] = None
    dfunction: Optional[Callable] = field(default=None, compare=False)
    #: "built-in", "sympy" (a user expression), "callable"; plus " (entry point DIST:NAME)" if shipped by a plug-in.
    source: str = field(default="built-in", compare=False)
    #: Optional: sigma as a function of a torch tensor (for the "torch" implementation of a plug-in).
    torch_function: Optional[Callable] = field(default=None, compare=False)

    def __str__(self):
        return self.name

    # ``derivative`` of a built-in is sympy.diff(expr, x) computed at its first use (``lazy_activation`` passes
    # _LAZY): differentiating all twelve built-ins at import cost about 0.2 CPU s of every process, most
    # of which uses one activation.  The expression is the same whenever it is computed.
    @property
    def _lazy_derivative(self):
        d = self.__dict__["_derivative"]
        if d is _LAZY:
            d = self.__dict__["_derivative"] = sympy.diff(self.expr, x)
        return d

    @_lazy_derivative.setter
    def _lazy_derivative(self, value):
        self.__dict__["_derivative"] = value

    @property
    def derivative_known(self) -> bool:
        """False while a lazily made derivative (:func:`lazy_activation`) has not been computed yet."""
        return self.__dict__.get("_derivative") is not _LAZY

    @property
    def is_callable(self) -> bool:
        """True when sigma~ and sigma~' come from user callables (trusted, not certified)."""
        return self.function is not None


# the dataclass's __init__ (and dataclasses.replace) store ``derivative`` through this property
Activation.derivative = Activation._lazy_derivative


class _Lazy:
    """The marker of a derivative not yet computed (see Activation._lazy_derivative); pickles as itself."""

    def __reduce__(self):
        return "_LAZY"


_LAZY = _Lazy()

_REGISTRY: dict[str, Activation] = {}
_ALIASES: dict[str, str] = {}


def lazy_activation(name: str, expr: sympy.Expr, description: str, aliases=()) -> Activation:
    """An activation whose derivative sympy.diff(expr, x) is computed at its first use (the built-ins)."""
    return Activation(name=name, expr=expr, derivative=_LAZY, description=description, aliases=tuple(aliases))


def _add(act: Activation) -> Activation:
    _REGISTRY[act.name] = act
    for a in act.aliases:
        _ALIASES[a] = act.name
    return act


def _taken(name: str) -> bool:
    return name in _REGISTRY or name in _ALIASES


def _first_line(exc: BaseException) -> str:
    base = getattr(exc, "base_exc", None) or exc
    if isinstance(base, SyntaxError) or type(base).__name__ == "TokenError":
        return "invalid syntax"
    text = str(base).strip().splitlines()
    return f"{type(base).__name__}: {text[0][:120]}" if text else type(base).__name__


def _parse(expr) -> sympy.Expr:
    if isinstance(expr, str):
        try:
            parsed = sympy.sympify(expr, locals={"x": x})
        except Exception as exc:                      # noqa: BLE001 -- sympify evaluates the text
            raise PluginError(f"could not parse activation expression {expr!r} as a sympy expression in x "
                              f"({_first_line(exc)})") from None
    else:
        try:
            parsed = sympy.sympify(expr)
        except Exception as exc:                      # noqa: BLE001
            raise PluginError(f"activation expression must be a sympy expression or a string, not "
                              f"{type(expr).__name__} ({_first_line(exc)})") from None
    if not isinstance(parsed, sympy.Expr) or isinstance(parsed, sympy.Lambda):
        raise PluginError(f"activation expression {expr!r} is not an expression in x (got {type(parsed).__name__})")
    # A user's own Symbol('x') (without real=True) means our x.
    plain = [s for s in parsed.free_symbols if s.name == "x" and s != x]
    if plain:
        parsed = parsed.subs({s: x for s in plain})
    others = sorted(str(s) for s in parsed.free_symbols if s != x)
    if others:
        raise PluginError(f"activation expression {parsed} has free symbols {', '.join(others)}; "
                          f"only x is allowed (substitute numbers for parameters)")
    if parsed.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I):
        raise PluginError(f"activation expression {parsed} contains an infinite, undefined or imaginary constant; "
                          f"an activation is a real function of x")
    return parsed


#: Where a callable's derivative is compared with mpmath.diff of its function (not 0, not integers,
#: both signs, several binades; user kinks conventionally sit at 0 or at integers).
DERIVATIVE_SAMPLE_POINTS = ("-7.3125", "-2.71875", "-1.15625", "-0.40625", "-0.0390625", "0.0390625",
                            "0.40625", "1.15625", "2.71875", "7.3125")
DERIVATIVE_RTOL = 1e-6
_CHECK_PREC = 113


def _real_number(v, what: str, point):
    """v as an mpmath mpf (Fractions/ints/floats/mpf accepted), else a CondcheckError naming the point."""
    import mpmath
    from fractions import Fraction
    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    if isinstance(v, (int, float, mpmath.mpf)) and not isinstance(v, bool):
        return mpmath.mpf(v)
    raise PluginError(f"{what} returned {v!r} (a {type(v).__name__}) at x = {point}; it must return a real "
                         f"number (an mpmath mpf, int, float or Fraction) for an mpmath mpf input")


def check_callable_derivative(name: str, function, derivative, points=DERIVATIVE_SAMPLE_POINTS,
                              rtol: float = DERIVATIVE_RTOL) -> None:
    """Compare ``derivative`` with ``mpmath.diff(function)`` at each sample point (at 113 bits).

    Raises a :class:`CondcheckError` naming the first point where the relative difference exceeds
    ``rtol`` (or where either callable fails or returns a non-real value).  A plausibility check of the
    user's input, not a proof that ``derivative`` is sigma'.
    """
    import mpmath
    for p in points:
        with mpmath.workprec(_CHECK_PREC):
            t = mpmath.mpf(p)
            try:
                d = _real_number(derivative(t), f"the derivative of {name!r}", p)
            except CondcheckError:
                raise
            except Exception as e:                                    # noqa: BLE001 -- user code
                raise PluginError(f"the derivative of activation {name!r} failed at x = {p}: "
                                     f"{type(e).__name__}: {e}") from None
            try:
                _real_number(function(t), f"the function of {name!r}", p)
                num = mpmath.diff(lambda u: _real_number(function(u), f"the function of {name!r}", p), t)
            except CondcheckError:
                raise
            except Exception as e:                                    # noqa: BLE001
                raise PluginError(f"the function of activation {name!r} failed at x = {p}: "
                                     f"{type(e).__name__}: {e}") from None
            if not (mpmath.isfinite(d) and mpmath.isfinite(num)):
                raise PluginError(f"activation {name!r}: the derivative or the numerical derivative of the "
                                     f"function is not finite at x = {p} ({d}, {num})")
            scale = max(abs(d), abs(num))
            if abs(d - num) > rtol * scale:
                raise PluginError(
                    f"activation {name!r}: the derivative does not match the function at x = {p}: derivative "
                    f"gives {mpmath.nstr(d, 12)}, mpmath.diff of the function gives {mpmath.nstr(num, 12)} "
                    f"(relative difference {mpmath.nstr(abs(d - num) / scale, 3)} > {rtol:g})")


def make_activation(name: str, expr=None, description: str = "", *, function=None, derivative=None,
                    torch_function=None, check_derivative: bool = True) -> Activation:
    """An :class:`Activation` (not registered; :func:`register_activation` registers one).

    Give either ``expr`` (a sympy expression in ``x`` or a string; certified) or ``function`` and
    ``derivative`` (mpmath-capable callables of one mpf argument returning a real number at the
    current ``mpmath.mp.prec``; trusted to be accurate to that precision, not certified; the
    derivative is checked against ``mpmath.diff`` of the function, see
    :func:`check_callable_derivative`).  ``torch_function`` (optional) maps a torch tensor to sigma of
    it, for the ``"torch"`` implementation.
    """
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"activation name must be a non-empty string, not {name!r}")
    name = name.strip()
    if torch_function is not None and not callable(torch_function):
        raise PluginError(f"torch_function of activation {name!r} must be callable")
    if expr is not None:
        if function is not None or derivative is not None:
            raise PluginError(f"activation {name!r}: give either an expression or function= and derivative=, "
                                 f"not both")
        e = _parse(expr)
        return Activation(name=name, expr=e, derivative=sympy.diff(e, x), description=description or str(e),
                          source="sympy", torch_function=torch_function)
    if function is None or derivative is None:
        raise PluginError(f"activation {name!r}: give an expression, or both function= and derivative= "
                             f"(mpmath-capable callables)")
    if not callable(function) or not callable(derivative):
        raise PluginError(f"activation {name!r}: function= and derivative= must be callables")
    if check_derivative:
        check_callable_derivative(name, function, derivative)
    return Activation(name=name, expr=None, derivative=None,
                      description=description or f"user callable {getattr(function, '__name__', 'function')}",
                      function=function, dfunction=derivative, source="callable", torch_function=torch_function)


def register_activation(name, expr=None, description: str = "", *, function=None, derivative=None,
                        torch_function=None) -> Activation:
    """Register a user activation; returns it.  Three forms:

    * ``register_activation("softsign", x / (1 + sympy.Abs(x)))`` (sympy expression in ``x``) or a
      string sympy can parse; the derivative is ``sympy.diff``; sigma~ and sigma~' are certified.
    * ``register_activation("asinh", function=mpmath.asinh, derivative=lambda t: 1/mpmath.sqrt(1+t**2))``:
      mpmath-capable callables.  Trusted to be accurate to their mpmath precision, NOT certified like
      sympy expressions; verdicts computed with them say "callable, trusted" in their evidence.  The
      derivative is compared with ``mpmath.diff`` of the function at sample points and refused (an
      error naming the point) when they disagree by more than a relative 1e-6.
    * ``register_activation(activation)`` for an :class:`Activation` made by :func:`make_activation`.

    Names already taken (including aliases) and expressions with free symbols other than ``x`` are
    refused with a :class:`CondcheckError`.
    """
    if isinstance(name, Activation):
        act = name
    else:
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"activation name must be a non-empty string, not {name!r}")
        if _taken(name.strip()):
            raise PluginError(f"activation name {name.strip()!r} is already taken; choose another name")
        act = make_activation(name, expr, description, function=function, derivative=derivative,
                              torch_function=torch_function)
    if _taken(act.name):
        if _REGISTRY.get(act.name) is act:
            return act
        raise PluginError(f"activation name {act.name!r} is already taken; choose another name")
    return _add(act)


# ---- entry points ----------------------------------------------------------------------------------
ENTRY_POINT_GROUP = "condcheck.activations"


class PluginWarning(UserWarning):
    """A plug-in from the entry point group could not be loaded (the rest of condcheck still works)."""


_PLUGINS = {"loaded": False, "errors": []}


def plugin_errors() -> list[str]:
    """One line per plug-in that failed to load (after entry points were loaded)."""
    return list(_PLUGINS["errors"])


def plugins_loaded() -> bool:
    """Whether the entry point plug-ins have been loaded (the first lookup of an unknown name loads them)."""
    return _PLUGINS["loaded"]


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered activation or alias now (plug-ins not loaded yet do not count)."""
    return _taken(name)


@contextmanager
def scoped_registry(plugins_loaded: bool | None = None):
    """The registry as it is, for a block whose registrations leave no trace: after it the activations,
    aliases and plug-in state are what they were before (tests; a tool trying activations out).
    ``plugins_loaded``: whether the entry points count as loaded inside the block (None: as they are;
    False: the first lookup of an unknown name inside loads them)."""
    saved = dict(_REGISTRY), dict(_ALIASES), dict(_PLUGINS)
    if plugins_loaded is not None:
        _PLUGINS.update(loaded=plugins_loaded, errors=[])
    try:
        yield
    finally:
        for live, before in zip((_REGISTRY, _ALIASES, _PLUGINS), saved):
            live.clear()
            live.update(before)


def _entry_points():
    from importlib.metadata import entry_points
    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except TypeError:                                   # Python < 3.10 API (not supported, but harmless)
        return list(entry_points().get(ENTRY_POINT_GROUP, []))


def _load_one(ep) -> None:
    dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
    where = f"entry point {dist}:{ep.name}"
    obj = ep.load()
    if isinstance(obj, Activation):
        acts = [obj]
    elif callable(obj):
        out = obj()                                      # registers, or returns Activation(s) to register
        if isinstance(out, Activation):
            acts = [out]
        elif isinstance(out, (list, tuple)):
            acts = [a for a in out if isinstance(a, Activation)]
        else:
            acts = []
    else:
        raise PluginError(f"it loads a {type(obj).__name__}, not an Activation or a callable that registers one")
    for act in acts:
        if _REGISTRY.get(act.name) is act or (act.name in _REGISTRY and _REGISTRY[act.name] == act):
            continue
        if _taken(act.name):
            raise PluginError(f"activation name {act.name!r} is already taken")
        _add(_replace(act, source=f"{act.source} ({where})"))


def _replace(act: Activation, **kw) -> Activation:
    import dataclasses
    return dataclasses.replace(act, **kw)


def load_plugins(force: bool = False) -> list[str]:
    """Load the entry points of :data:`ENTRY_POINT_GROUP` (once unless ``force``); returns the errors.

    Each failure becomes one :class:`PluginWarning` line naming the entry point and the error; the
    plug-in is skipped, nothing is raised."""
    if _PLUGINS["loaded"] and not force:
        return plugin_errors()
    _PLUGINS["loaded"] = True
    errors = []
    try:
        eps = _entry_points()
    except Exception as e:                                            # noqa: BLE001 -- broken metadata
        eps = []
        errors.append(f"could not read the entry points of {ENTRY_POINT_GROUP!r}: {type(e).__name__}: {e}")
    seen = set()
    for ep in eps:
        key = (ep.name, ep.value)
        if key in seen:                                  # the same distribution twice on sys.path
            continue
        seen.add(key)
        try:
            _load_one(ep)
        except Exception as e:                                        # noqa: BLE001 -- third-party code
            dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
            errors.append(f"condcheck plug-in {ep.name!r} ({ep.value}, distribution {dist}) could not be loaded: "
                          f"{type(e).__name__}: {e}")
    _PLUGINS["errors"] = errors
    for line in errors:
        warnings.warn(line, PluginWarning, stacklevel=2)
    return list(errors)


def load_plugin_spec(spec: str) -> list[str]:
    """Load ``module`` or ``module:attr`` as an entry point would (the CLI's ``--plugin``); returns the
    names it registered.  Errors are CondcheckErrors (a one-line message)."""
    import importlib
    before = set(_REGISTRY)
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
        obj = mod
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
    except Exception as e:                                            # noqa: BLE001
        raise PluginError(f"cannot load plug-in {spec!r}: {_first_line(e)}") from None
    if attr:
        class _EP:                                       # the entry point protocol: .name, .value, .load()
            name, value, dist = attr, spec, None

            @staticmethod
            def load():
                return obj
        try:
            _load_one(_EP)
        except CondcheckError as e:
            raise PluginError(f"plug-in {spec!r}: {e}") from None
        except Exception as e:                                        # noqa: BLE001
            raise PluginError(f"plug-in {spec!r} failed: {_first_line(e)}") from None
    return [n for n in _REGISTRY if n not in before]


def get_activation(name_or_activation) -> Activation:
    """An activation by name or alias (an :class:`Activation` is returned as is)."""
    if isinstance(name_or_activation, Activation):
        return name_or_activation
    if not isinstance(name_or_activation, str):
        raise CondcheckError(f"activation must be a name such as 'relu', not {name_or_activation!r}")
    key = name_or_activation.strip()
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY and not _PLUGINS["loaded"]:
        load_plugins()
        key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        err = UnknownNameError("activation", name_or_activation, list(_REGISTRY) + list(_ALIASES))
        if _PLUGINS["errors"]:
            err.args = (err.args[0] + ". Plug-ins that failed to load: " + "; ".join(_PLUGINS["errors"]),)
        raise err
    return _REGISTRY[key]


def list_activations() -> list[str]:
    """Names of all registered activations (built-ins first, then plug-ins, in registration order);
    loads the entry point plug-ins first (once)."""
    load_plugins()
    return list(_REGISTRY)


# ---- built-ins -------------------------------------------------------------------------------------
_R = sympy.Rational
_SELU_ALPHA = _R("1.6732632423543772848170429916717")
_SELU_SCALE = _R("1.0507009873554804934193349852946")

_add(lazy_activation("relu", sympy.Piecewise((0, x <= 0), (x, True)),
           "ReLU max(0, x); written Piecewise((0, x <= 0), (x, True)) so that ReLU'(0) = 0"))
_add(lazy_activation("elu", sympy.Piecewise((sympy.exp(x) - 1, x <= 0), (x, True)),
           "ELU with alpha = 1: exp(x) - 1 for x <= 0, x otherwise; ELU'(0) = 1"))
_add(lazy_activation("gelu", x / 2 * (1 + sympy.erf(x / sympy.sqrt(2))),
           "GELU (exact, with erf): x/2 * (1 + erf(x/sqrt(2)))"))
_add(lazy_activation("swish", x / (1 + sympy.exp(-x)), "Swish / SiLU: x * sigmoid(x) = x / (1 + exp(-x))",
           aliases=("silu",)))
_add(lazy_activation("sigmoid", 1 / (1 + sympy.exp(-x)), "logistic sigmoid 1 / (1 + exp(-x))"))
_add(lazy_activation("tanh", sympy.tanh(x), "hyperbolic tangent"))
_add(lazy_activation("gelu_tanh",
           x / 2 * (1 + sympy.tanh(sympy.sqrt(2 / sympy.pi) * (x + _R(44715, 10 ** 6) * x ** 3))),
           "GELU, tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))"))
_add(lazy_activation("leaky_relu", sympy.Piecewise((x / 100, x <= 0), (x, True)),
           "LeakyReLU with slope 1/100: x/100 for x <= 0, x otherwise; LeakyReLU'(0) = 1/100"))
_add(lazy_activation("selu", sympy.Piecewise((_SELU_SCALE * _SELU_ALPHA * (sympy.exp(x) - 1), x <= 0),
                                   (_SELU_SCALE * x, True)),
           "SELU with PyTorch's alpha and scale as exact rationals; SELU'(0) = scale * alpha"))
_add(lazy_activation("softplus", sympy.log(1 + sympy.exp(x)), "softplus log(1 + exp(x))"))
_add(lazy_activation("mish", x * sympy.tanh(sympy.log(1 + sympy.exp(x))), "Mish x * tanh(softplus(x))"))
_add(lazy_activation("sin", sympy.sin(x), "sine"))

BUILTIN_ACTIVATIONS = tuple(_REGISTRY)
