"""reports: LaTeX reports of condcheck's results, with their templates as package data.

A condition report (``write_report``, ``write_all`` with a catalog and a macros file) is written from
a condition certificate; a construction report (``write_network_report``) re-verifies a network file.
This package sits on top of condcheck, beside its command line: it imports condcheck and conditions,
and neither of them imports it (``condcheck.write_report`` is a lazy re-export).  The templates live
in ``reports/templates`` and are read with ``importlib.resources``, so an installed wheel has them.

Names load on first use (PEP 562), so ``import reports`` stays light.
"""
from __future__ import annotations

import importlib

#: Where ``condcheck report`` writes by default: a folder in the current directory, never the package.
DEFAULT_OUT = "condcheck-reports"

_LAZY = {"write_report": "condition_report", "write_all": "condition_report", "compile_pdf": "condition_report",
         "Report": "condition_report", "ReportError": "condition_report", "VERDICT_WORD": "condition_report",
         "stem": "condition_report", "write_network_report": "network_report", "NetworkReport": "network_report"}

__all__ = ["DEFAULT_OUT", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
