"""User-facing errors.

Every error a user can cause by bad input is a :class:`CondcheckError`: the CLI prints its message
and exits with status 2, never a traceback.  Messages say which argument was wrong, what it was and
what is allowed.
"""
from __future__ import annotations

import difflib


class CondcheckError(Exception):
    """An error caused by input; its message is meant for the user."""


class UnknownNameError(CondcheckError, KeyError):
    """A name (format, activation, implementation) that is not registered."""

    def __init__(self, kind: str, name: str, known):
        known = sorted(known)
        close = difflib.get_close_matches(str(name), known, n=4, cutoff=0.5)
        msg = f"unknown {kind} {name!r}"
        if close:
            msg += f"; did you mean {', '.join(repr(c) for c in close)}?"
        msg += f" Known {kind}s: {', '.join(known)}"
        super().__init__(msg)
        self.kind, self.name, self.close = kind, name, close

    def __str__(self):  # KeyError would otherwise quote the message
        return self.args[0]


class NotInFormatError(CondcheckError, ValueError):
    """A value that is not a finite value of the format it was given for."""


class PluginError(CondcheckError, ValueError):
    """An activation plug-in (expression, callables, entry point) that fails validation."""


class ArgumentError(CondcheckError, ValueError):
    """A command-line argument, or a file it names (points, targets), that is not allowed."""


class FormatOverflowError(CondcheckError, ArithmeticError):
    """A rounded result beyond the largest finite value of the format (or a NaN)."""


class NetworkOverflowError(FormatOverflowError):
    """Inf or NaN inside a network: names the pass, layer and neuron where it appeared."""

    def __init__(self, message: str, *, pass_name: str, layer: int, neuron: int, input_index=None):
        super().__init__(message)
        self.pass_name, self.layer, self.neuron, self.input_index = pass_name, layer, neuron, input_index


class InterpreterRefusedError(CondcheckError):
    """An interpreter asked to evaluate a network it does not handle (a format, the semantics): says why."""
