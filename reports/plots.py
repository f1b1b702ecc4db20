"""The report figure: sigma~ and sigma~' as step plots over values of the format, witnesses marked.

Why step plots: sigma~ is only defined on the values of F, and drawing it constant from one value to
the next shows exactly where rounding makes it flat (dead tails, plateaus) without inventing values in
between.  Formats of at most 16 bits are drawn from the full table (every value in the window);
wider ones from a sample of values, and the caption says so.  Matplotlib runs headless (Agg) and is
imported only here, so checking never pays for it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from condcheck.errors import CondcheckError
from condcheck.rounding import round_array

#: (condition, witness key, label) of the witness points drawn, in legend order.
WITNESS_POINTS = (("1", "z_dead", r"C1 $z_d$"), ("1", "live", "C1 live"), ("1", "constant", "C1 constant"),
                  ("1", "zero", "C1 zero"), ("1", "pass", "C1 pass"),
                  ("2", "delta_0", r"C2 $\delta_0$"), ("2", "delta_1", r"C2 $\delta_1$"),
                  ("3", "x", "C3 $x$"), ("3", "s", r"C3 $\pm s$"))
_LABELS = [label for _, _, label in WITNESS_POINTS]
_MARKERS = "ovs^D<>Pp*Xh"
SAMPLES = 600


@dataclass
class Figure:
    path: str              # file name, relative to the report
    caption: str           # LaTeX
    sampled: bool
    window: float          # the plot shows [-window, window]
    points: int            # values of F drawn


def witness_points(cert: dict) -> list[tuple[str, float]]:
    """(label, x) of every witness point of the certificate (s also as -s)."""
    out = []
    for cond, key, label in WITNESS_POINTS:
        w = cert["conditions"][cond].get("witness") or {}
        v = w.get(key)
        if not isinstance(v, dict):
            continue
        x = float(Fraction(v["fraction"]))
        out.append((label, x))
        if key == "s":
            out.append((label, -x))
    return out


def _window(fmt, xs) -> float:
    """A symmetric window [-A, A]: A a power of two covering every witness with a margin (at least 4),
    or Omega when that is smaller."""
    omega = float(fmt.max) if fmt.fits_float64 else math.inf
    if omega <= 64:
        return omega
    a = max([4.0] + [abs(x) * 1.25 for x in xs if math.isfinite(x)])
    return min(omega, 2.0 ** math.ceil(math.log2(a)))


def _sample(fmt, A: float, extra) -> np.ndarray:
    """About SAMPLES values of F in [-A, A]: linear on [-1, 1], log-spaced beyond; plus the witnesses."""
    lin = np.linspace(-min(A, 1.0), min(A, 1.0), SAMPLES // 3)
    pos = np.geomspace(1.0, A, SAMPLES // 3) if A > 1 else np.array([])
    raw = np.concatenate([lin, pos, -pos, np.asarray(extra, dtype=float), [0.0]])
    if fmt.bits < 64:
        raw, over = round_array(raw, fmt)
        raw = raw[~over]
    return np.unique(raw[np.abs(raw) <= A])


def _runs(x: np.ndarray, y: np.ndarray):
    """Drop points that repeat the previous value: a post-step plot of the rest is the same picture."""
    if x.size < 3:
        return x, y
    keep = np.ones(x.size, bool)
    same = (y[1:] == y[:-1]) | (np.isnan(y[1:]) & np.isnan(y[:-1]))
    keep[1:] = ~same
    keep[-1] = True
    return x[keep], y[keep]


def draw(rounded, cert: dict, path: str, image_format: str = "png") -> Figure:
    """Write the figure file and return its caption (which says whether the values were sampled)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib.figure import Figure as MplFigure
    except ImportError:
        raise CondcheckError("figures need matplotlib (python3 -m pip install matplotlib), or pass "
                             "--no-figures") from None
    fmt = rounded.format
    marks = witness_points(cert)
    A = _window(fmt, [x for _, x in marks])
    sampled = fmt.bits > 16
    if sampled:
        P = _sample(fmt, A, [x for _, x in marks if abs(x) <= A])
        S, so = rounded.value_array(P)
        D, do = rounded.derivative_array(P)
    else:
        t = rounded.table()
        inside = np.abs(t.points) <= A
        P, S, D = t.points[inside], t.sigma[inside], t.dsigma[inside]
        so, do = t.sigma_overflow[inside], t.dsigma_overflow[inside]
    S = np.where(so, np.nan, S)
    D = np.where(do, np.nan, D)

    fig = MplFigure(figsize=(7.0, 5.2))
    axes = fig.subplots(2, 1, sharex=True)
    log_x = A > 32
    for ax, Y, name in ((axes[0], S, r"$\tilde\sigma(z)$"), (axes[1], D, r"$\tilde\sigma'(z)$")):
        x, y = _runs(P, Y)
        ax.step(x, y, where="post", linewidth=0.8, color="0.25")
        if P.size <= 256:
            ax.plot(P, Y, ".", markersize=2.5, color="0.25")
        ax.set_ylabel(name)
        if log_x:
            ax.set_xscale("symlog", linthresh=1.0)
            finite = Y[np.isfinite(Y)]
            if finite.size and np.max(np.abs(finite)) > 32:
                ax.set_yscale("symlog", linthresh=1.0)
        ax.grid(True, linewidth=0.3)
    shown = [(label, x) for label, x in marks if abs(x) <= A]
    if shown:
        xs = np.array([x for _, x in shown])
        sv, so_ = rounded.value_array(xs)
        dv, do_ = rounded.derivative_array(xs)
        for i, (label, x) in enumerate(shown):
            first = label not in [lab for lab, _ in shown[:i]]
            j = _LABELS.index(label)
            style = dict(marker=_MARKERS[j % len(_MARKERS)], linestyle="none", markersize=6,
                         markerfacecolor="none", color=f"C{j % 10}")
            axes[0].plot([x], [np.nan if so_[i] else sv[i]], label=label if first else None, **style)
            axes[1].plot([x], [np.nan if do_[i] else dv[i]], **style)
        fig.legend(fontsize=7, ncol=5, loc="lower center", frameon=False)
    axes[1].set_xlabel(f"z in {fmt.name}" + (" (symmetric log scale)" if log_x else ""))
    fig.suptitle(f"{rounded.activation.name} on {fmt.name} ({rounded.implementation})"
                 + (f", sampled: {P.size} values" if sampled else ""), fontsize=10)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.93, bottom=0.17, hspace=0.08)   # tight_layout costs 0.2 s
    fig.savefig(path, format=image_format, dpi=150)

    from .latex import tt
    missing = [label for label, x in marks if abs(x) > A]
    window = tt(repr(A))
    if sampled:
        what = (f"\\textbf{{Sampled}}: {P.size:,} of the {fmt.count_finite():,} finite values of "
                f"{tt(fmt.name)} in $[-A, A]$, $A = {window}$ (evenly spaced on $[-1, 1]$, log-spaced beyond, "
                f"plus the witnesses), drawn as steps between consecutive samples, so steps narrower than "
                f"the sample spacing are not shown.")
    else:
        what = (f"Every one of the {P.size:,} values of {tt(fmt.name)} in $[-A, A]$, $A = {window}$, drawn "
                f"constant from each value to the next (a post-step plot; no sampling).")
    caption = (f"$\\tilde\\sigma$ (top) and $\\tilde\\sigma'$ (bottom) of {tt(rounded.activation.name)}. {what} "
               f"Witness points of the conditions are marked on both panels at their values."
               + (f" Not in the window: {', '.join(sorted(set(missing), key=_LABELS.index))}." if missing else "")
               + (" Overflowing values are left out." if (so.any() or do.any()) else ""))
    return Figure(path=path, caption=caption, sampled=sampled, window=A, points=int(P.size))
