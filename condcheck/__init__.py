"""condcheck: Conditions 1-3 of floating-point networks with AD (arXiv 2605.01702), checked exactly.

Layers, bottom up (each imports only those below it): errors -> formats -> rounding -> ops, op_tables,
kernels -> activations, intervals -> torch_impl, rounded_activation -> network and its interpreters ->
netfile, verify -> conditions (top-level package) -> paper, check -> constructors -> separators ->
targets -> theorem5 -> theorem7 -> proofs -> reports (top-level package), cli, bench.

``import condcheck`` is light: the names below are imported from their modules at their first use
(PEP 562), so sympy, numba, scipy, matplotlib, torch, dask and the reports package load only where a
command needs them.
"""
import importlib
import sys
import types

#: public name -> the module that defines it (relative: a module of this package)
_EXPORTS = {
    "CondcheckError": ".errors",
    "Format": ".formats", "all_formats": ".formats", "get_format": ".formats",
    "round_fraction": ".rounding",
    "PAPER_ACTIVATIONS": ".activations", "get_activation": ".activations", "list_activations": ".activations",
    "register_activation": ".activations",
    "register_implementation": ".implementations",
    "get_rounded": ".rounded_activation",
    "check_activation": ".check",
    "Layer": ".network", "Network": ".network",
    "Claim": ".netfile", "load_network": ".netfile", "save_network": ".netfile",
    "verify": ".verify",
    "construct_theorem5": ".theorem5",
    "construct_theorem7": ".theorem7",
    "to_torch": ".interpreters.torch_export",
    "write_report": "reports",          # the reports package sits above condcheck
    "prove": ".proofs", "prove_certificate": ".proofs", "prove_network": ".proofs",   # Coq developments
}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    setattr(sys.modules[__name__], name, value)
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """The package's module type: where a submodule shares its name with the function it exports
    (``condcheck.verify``), the import system's binding of the submodule keeps the function instead."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == "." + name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
