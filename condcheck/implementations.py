"""Plug-in implementations: sigma~ and sigma~' of one activation as a user's array functions compute them.

The question a practitioner asks is "does the GELU *my framework* computes satisfy Conditions 1-3?".
Their implementation is an array function (numpy, jax, cupy, a C kernel, ...) from the format's values
to the format's values.  :func:`register_implementation` names such a pair (``forward`` for sigma~,
``derivative`` for sigma~') for one activation and the formats it serves; the name is then an
implementation like "exact", "float32-upcast" and "torch" everywhere one is taken (``check_activation``,
``condcheck check -i NAME``, the chunked exhaustive float32 check, ``recheck``).

The contract: each function takes a 1-D numpy array of the format's own dtype (numpy's float32 or
float16, ml_dtypes' bfloat16, float8_e4m3, ...) and returns an array of the same shape, of that dtype,
float32 or float64, whose finite values are values of the format (checked exactly on every call);
+-inf and NaN count as overflow (as for "torch").  Anything else (an exception, another shape or dtype,
a value off the format) is a one-line :class:`CondcheckError` naming the implementation.  The values
are observed, not certified: a verdict is exactly as good as the functions are deterministic, and the
certificate says so in ``sigma_source``.

Plug-ins ship through the entry point group of the activations (``condcheck.activations``): a callable
there may call :func:`register_implementation`; an unknown implementation name loads the entry points
once, as an unknown activation name does.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .activations import get_activation, load_plugins, plugins_loaded
from .errors import CondcheckError, UnknownNameError
from .formats import Format, get_format
from .rounding import round_array

#: the implementations condcheck brings (rounded_activation.IMPLEMENTATIONS); plug-ins may not take these names
BUILTIN_IMPLEMENTATIONS = ("exact", "float32-upcast", "torch")

#: the values every registration feeds both functions once, to refuse a broken plug-in before long work starts
PROBE = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)


@dataclass(frozen=True, eq=False)
class Implementation:
    """A registered plug-in implementation: the array functions of one activation, for some formats."""

    name: str
    activation: str             # the activation's registry name
    forward: Callable
    derivative: Callable
    formats: tuple              # format names

    @property
    def origin(self) -> str:
        """Where the functions come from: ``module:qualname`` of forward, then of derivative."""
        def where(f):
            return f"{getattr(f, '__module__', '?')}:{getattr(f, '__qualname__', type(f).__name__)}"
        return f"{where(self.forward)}, {where(self.derivative)}"

    @property
    def source_note(self) -> str:
        """The check's and the certificate's ``sigma_source`` for this implementation."""
        return (f"plug-in implementation {self.name} ({self.origin}): the values its forward and derivative "
                f"functions return, observed, not certified")

    def serves(self, activation, fmt) -> None:
        """Nothing if this implementation computes ``activation`` on ``fmt``; else a one-line CondcheckError."""
        act, F = get_activation(activation), get_format(fmt)
        if act.name != self.activation:
            raise CondcheckError(f"implementation {self.name!r} computes {self.activation} only, not {act.name} "
                                 f"(use exact, float32-upcast or torch for {act.name})")
        if F.name not in self.formats:
            raise CondcheckError(f"implementation {self.name!r} computes {self.activation} on "
                                 f"{', '.join(self.formats)} only, not {F.name}")


_REGISTRY: dict[str, Implementation] = {}


@contextmanager
def scoped_implementations():
    """The registry as it is, for a block whose registrations leave no trace (tests)."""
    saved = dict(_REGISTRY)
    try:
        yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)


def _format_of(name) -> Format:
    F = get_format(name)
    if F.dtype_name is None or F.bits > 32 or not F.fits_float64:
        raise CondcheckError(f"a plug-in implementation needs a format with a numpy dtype of at most 32 bits "
                             f"(float32, float16, bfloat16, the float8 formats, ...); {F.name} is not one")
    return F


def register_implementation(name: str, activation, forward, derivative, formats=("float32",)) -> Implementation:
    """Register the array functions ``forward`` (sigma~) and ``derivative`` (sigma~') of ``activation`` as
    the implementation ``name`` on ``formats``: see the module docstring for the contract.  Both
    functions are tried at a few values of every format at once (a broken plug-in is refused here, not
    an hour into a float32 run).  Registering the same functions again under the same name is allowed.

    >>> import numpy as np
    >>> from condcheck import check_activation, register_implementation
    >>> relu = lambda x: np.maximum(x, x.dtype.type(0))
    >>> step = lambda x: (x > 0).astype(x.dtype)
    >>> impl = register_implementation("numpy_relu", "relu", relu, step, formats=("float16", "bfloat16"))
    >>> check_activation("relu", "bfloat16", "numpy_relu").holds
    True
    >>> print(impl.source_note)                                                    # doctest: +ELLIPSIS
    plug-in implementation numpy_relu (...): the values its forward and derivative functions return, observed, not certified
    """
    if not isinstance(name, str) or not name or name != name.strip() or " " in name:
        raise CondcheckError(f"implementation name must be a non-empty string without spaces, not {name!r}")
    if name in BUILTIN_IMPLEMENTATIONS:
        raise CondcheckError(f"implementation name {name!r} is built in ({', '.join(BUILTIN_IMPLEMENTATIONS)}); "
                             f"choose another")
    act = get_activation(activation)
    for what, f in (("forward", forward), ("derivative", derivative)):
        if not callable(f):
            raise CondcheckError(f"implementation {name!r}: {what} must be a function of a numpy array, "
                                 f"not {type(f).__name__}")
    if isinstance(formats, str) or not formats:
        raise CondcheckError(f"implementation {name!r}: formats must be a non-empty tuple of format names, "
                             f"not {formats!r}")
    fmts = tuple(dict.fromkeys(_format_of(f).name for f in formats))
    impl = Implementation(name, act.name, forward, derivative, fmts)
    old = _REGISTRY.get(name)
    if old is not None and (old.activation, old.forward, old.derivative, old.formats) != \
            (impl.activation, impl.forward, impl.derivative, impl.formats):
        raise CondcheckError(f"implementation name {name!r} is already registered ({old.source_note.split(': ')[0]})")
    for f in fmts:
        F = get_format(f)
        probe = np.unique(round_array(np.array(PROBE), F)[0])
        observe(impl, F, probe)
    _REGISTRY[name] = old or impl
    return _REGISTRY[name]


def get_implementation(name: str) -> Implementation:
    """The registered plug-in implementation ``name`` (entry points are loaded at the first unknown name)."""
    if name not in _REGISTRY and not plugins_loaded():
        load_plugins()
    if name not in _REGISTRY:
        raise UnknownNameError("implementation", name, BUILTIN_IMPLEMENTATIONS + tuple(_REGISTRY))
    return _REGISTRY[name]


def _observe_one(impl: Implementation, fmt: Format, fn, what: str, x: np.ndarray):
    try:
        y = fn(x.copy())
    except Exception as e:                                            # noqa: BLE001 -- third-party code
        first = (str(e).splitlines() or [""])[0][:200]
        raise CondcheckError(f"implementation {impl.name!r}: its {what} raised {type(e).__name__}: {first}") from None
    if not hasattr(y, "shape") or not hasattr(y, "dtype"):
        raise CondcheckError(f"implementation {impl.name!r}: its {what} returned a {type(y).__name__}, not an array")
    y = np.asarray(y)
    if y.shape != x.shape:
        raise CondcheckError(f"implementation {impl.name!r}: its {what} maps {x.shape[0]} values to an array of shape "
                             f"{y.shape}; it must return one value per input (shape {x.shape})")
    allowed = (x.dtype, np.dtype(np.float32), np.dtype(np.float64))
    if y.dtype not in allowed:
        raise CondcheckError(f"implementation {impl.name!r}: its {what} returned {y.dtype} values on {fmt.name}; "
                             f"allowed: {', '.join(dict.fromkeys(str(d) for d in allowed))}")
    a = y.astype(np.float64)
    over = ~np.isfinite(a)
    a[over] = np.where(np.isnan(a[over]), np.inf, a[over])
    r, rover = round_array(np.where(over, 0.0, a), fmt)
    off = ~over & (rover | (r != a))
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise CondcheckError(f"implementation {impl.name!r}: its {what} at {float(x[i].astype(np.float64))!r} "
                             f"returned {a[i]!r}, which is not a value of {fmt.name}")
    return a + 0.0, over                                               # -0 is the value 0


def observe(impl: Implementation, fmt: Format, pts: np.ndarray):
    """(sigma~, overflow, sigma~', overflow) at float64 points of ``fmt``: the implementation's functions
    called on the points in the format's dtype, their outputs checked (module docstring); +-inf where
    they overflow (NaN counts as +inf)."""
    pts = np.asarray(pts, dtype=np.float64).ravel()
    x = pts.astype(fmt.dtype)
    if not np.array_equal(x.astype(np.float64), pts):
        raise CondcheckError(f"implementation {impl.name!r}: the points asked for are not all values of {fmt.name}")
    s, so = _observe_one(impl, fmt, impl.forward, "forward", x)
    d, do = _observe_one(impl, fmt, impl.derivative, "derivative", x)
    return s, so, d, do


def implementation_points(impl: Implementation, activation, fmt, pts: np.ndarray):
    """:func:`observe`, after checking that the implementation serves (activation, fmt).  A chunk job carries
    the Implementation itself to the workers, which need not have registered it."""
    F = get_format(fmt)
    impl.serves(activation, F)
    return observe(impl, F, pts)


def plugin_points(name: str, activation, fmt, pts: np.ndarray):
    """:func:`implementation_points` of the plug-in registered as ``name``."""
    return implementation_points(get_implementation(name), activation, fmt, pts)
