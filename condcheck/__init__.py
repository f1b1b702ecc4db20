"""condcheck: Conditions 1-3 of floating-point networks with AD (arXiv 2605.01702), checked exactly.

Layers, bottom up (one module each): formats -> rounding -> ops -> activations / rounded_activation
-> network (paper-order forward pass and AD) -> netfile / verify -> conditions (top-level package)
-> check -> cli.
"""
from .activations import PAPER_ACTIVATIONS, get_activation, list_activations, register_activation
from .check import check_activation
from .errors import CondcheckError
from .formats import Format, all_formats, get_format
from .netfile import Claim, load_network, save_network
from .network import Layer, Network
from .rounded_activation import get_rounded
from .rounding import round_fraction
from .verify import verify

__all__ = ["PAPER_ACTIVATIONS", "Claim", "CondcheckError", "Format", "Layer", "Network", "all_formats",
           "check_activation", "get_activation", "get_format", "get_rounded", "list_activations",
           "load_network", "register_activation", "round_fraction", "save_network", "verify", "write_report"]
__version__ = "0.1.0"


def __getattr__(name):
    # write_report lives in the reports package, which sits above condcheck: re-exported on first use
    # (PEP 562), so importing condcheck never loads reports, matplotlib or the templates.
    if name == "write_report":
        import importlib
        return importlib.import_module("reports").write_report
    # prove / prove_certificate / prove_network: Coq developments (condcheck/proofs/), imported lazily
    if name in ("prove", "prove_certificate", "prove_network"):
        from . import proofs
        return getattr(proofs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
