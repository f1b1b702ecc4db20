"""The verdict matrix: every built-in activation x the formats of the conditions issue.

Each cell is check_activation's verdict for Conditions 1, 2 and 3 (h = holds, F = fails, ? = undecided)
followed by the overall verdict; the table is generated, never written by hand.
"""
from __future__ import annotations

import time

from .activations import BUILTIN_ACTIVATIONS
from .check import check_activation

MATRIX_FORMATS = ("float64", "float32", "bfloat16", "float16", "float8_e5m2", "float8_e4m3", "float8_e4m3fn",
                  "float8_e3m4", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float6_e3m2fn",
                  "float6_e2m3fn", "float4_e2m1fn")
_MARK = {True: "h", False: "F", None: "?"}
_WORD = {True: "holds", False: "fails", None: "undecided"}


def verdict_matrix(activations=BUILTIN_ACTIVATIONS, formats=MATRIX_FORMATS, progress=None):
    """{(activation, format): CheckResult} and the total seconds."""
    t0 = time.perf_counter()
    out = {}
    total = len(activations) * len(formats)
    for a in activations:
        for f in formats:
            out[(a, f)] = check_activation(a, f)
            if progress:
                progress(len(out), total)
    return out, time.perf_counter() - t0


def cell(res) -> str:
    marks = "".join(_MARK[res.conditions[k]["holds"]] for k in ("1", "2", "3"))
    return f"{marks} {_WORD[res.holds]}"


def markdown(results, activations=BUILTIN_ACTIVATIONS, formats=MATRIX_FORMATS) -> str:
    head = "| activation | " + " | ".join(formats) + " |"
    rule = "|---" * (len(formats) + 1) + "|"
    rows = [f"| {a} | " + " | ".join(cell(results[(a, f)]) for f in formats) + " |" for a in activations]
    return "\n".join([head, rule] + rows)


def failing_clauses(results) -> list[str]:
    """One line per failing condition: activation, format, condition and clause."""
    lines = []
    for (a, f), res in results.items():
        for k in ("1", "2", "3"):
            c = res.conditions[k]
            if c["holds"] is False:
                lines.append(f"{a} on {f}: Condition {k} fails, {c['failing_clause']}")
    return lines
