"""torch's sigma~ and sigma~' against the correctly rounded ones: per (activation, format), how many
values differ, by how many ulps, and whether the verdicts on Conditions 1-3 differ (a study of the
``"torch"`` implementation of :mod:`condcheck.torch_impl`; it runs ``check_activation`` on both).
"""
from __future__ import annotations

import numpy as np

from .activations import get_activation
from .check import check_activation
from .formats import Format, get_format
from .rounded_activation import get_rounded
from .torch_impl import table_info

COMPARISON_FORMATS = ("bfloat16", "float16", "float8_e4m3", "float8_e5m2")


def compare_with_exact(activations=("relu", "elu", "gelu", "swish", "sigmoid", "tanh"), formats=COMPARISON_FORMATS):
    """Per (activation, format): how many finite values have torch's sigma~ (and sigma~') different from
    the correctly rounded one, the largest difference in units of the format's last place at that
    value, the first differing input, and both verdicts with the conditions whose witness differs."""
    rows = []
    for a in activations:
        for f in formats:
            fmt = get_format(f)
            te = get_rounded(a, fmt, "exact").table()
            tt = get_rounded(a, fmt, "torch").table()
            row = {"activation": get_activation(a).name, "format": fmt.name, "values": int(te.points.size),
                   "mode": "native" if table_info(a, fmt)["mode"].startswith("native") else "float32"}
            for key, ev, tv in (("sigma", te.sigma, tt.sigma), ("dsigma", te.dsigma, tt.dsigma)):
                diff = ev != tv
                row[f"{key}_differs"] = int(diff.sum())
                row[f"{key}_first"] = float(te.points[diff][0]) if diff.any() else None
                both = diff & np.isfinite(ev) & np.isfinite(tv)
                row[f"{key}_max_ulps"] = float(np.max(np.abs(ev[both] - tv[both]) / _ulp(np.abs(ev[both]), fmt))) \
                    if both.any() else 0.0
            re, rt = check_activation(a, fmt, "exact"), check_activation(a, fmt, "torch")
            row["verdict_exact"] = _marks(re)
            row["verdict_torch"] = _marks(rt)
            row["witness_differs"] = [k for k in "123" if re.conditions[k]["witness"] != rt.conditions[k]["witness"]]
            rows.append(row)
    return rows


def _ulp(a: np.ndarray, fmt: Format) -> np.ndarray:
    _, e = np.frexp(np.maximum(a, float(fmt.smallest_normal)))
    return np.ldexp(1.0, e - 1 - fmt.M)


def _marks(res) -> str:
    m = "".join({True: "h", False: "F", None: "?"}[res.conditions[k]["holds"]] for k in "123")
    return f"{m} {({True: 'holds', False: 'fails', None: 'undecided'})[res.holds]}"


def comparison_markdown(rows) -> str:
    head = ("| activation | format | torch mode | sigma~ differs | max ulps | first z | sigma~' differs | max ulps | "
            "first z | exact | torch | witnesses differ |")
    out = [head, "|" + "---|" * 12]
    for r in rows:
        out.append(f"| {r['activation']} | {r['format']} | {r['mode']} | {r['sigma_differs']} / {r['values']} | "
                   f"{r['sigma_max_ulps']:g} | {r['sigma_first']} | {r['dsigma_differs']} / {r['values']} | "
                   f"{r['dsigma_max_ulps']:g} | {r['dsigma_first']} | {r['verdict_exact']} | {r['verdict_torch']} | "
                   f"{', '.join('C' + k for k in r['witness_differs']) or '-'} |")
    return "\n".join(out)
