"""Theorem 7 example: one ReLU network, several losses, each loss gets its own chosen AD gradient.

Reverse-mode AD of ``phi o f`` in floating point starts from the upstream seed ``y = RN(phi'(f(x)))`` (the
loss derivative at the network's output, rounded to the format) and then runs the network's backward
pass, so ``D^AD(phi o f)(x) = D_(f,x)(y)``.  Theorem 7 gives one network whose ``D_(f,x)(y)`` is any table
odd in y; choosing the table's values at ``y = +-y_i`` makes every loss phi_i receive its target gradient.

Two constraints come from AD itself: y_i must be a value of the format with |y_i| <= H_sigma (Omega for
ReLU), and the targets must be consistent: losses with the same y_i get the same gradient, with
opposite y_i opposite gradients, and y_i = 0 forces the gradient 0.

The loss derivatives are computed exactly with sympy (the logistic one is irrational: it is evaluated
to 60 digits and rounded only when both ends of a +-10^-50 interval round to the same value).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy

from .errors import CondcheckError
from .formats import get_format
from .rounding import round_fraction
from .theorem7 import TargetError, construct_theorem7

_f, _t = sympy.symbols("f t", real=True)
LOSSES = {
    "squared error (f - t)^2": (_f - _t) ** 2,
    "logistic log(1 + exp(-t f))": sympy.log(1 + sympy.exp(-_t * _f)),
    "hinge max(0, 1 - t f)": sympy.Max(0, 1 - _t * _f),
}


def _to_fraction(expr) -> tuple[Fraction, bool]:
    """(value, exact): an exact Fraction for a rational, else a 60-digit approximation."""
    expr = sympy.nsimplify(expr) if expr.is_Float else expr
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q)), True
    r = sympy.Rational(sympy.N(expr, 60))
    return Fraction(int(r.p), int(r.q)), False


def loss_seed(phi, f_value: float, label: float, fmt) -> tuple[float, Fraction]:
    """(y, phi'(f)) with y = RN_F(phi'(f)) computed exactly; phi a sympy expression in f and t."""
    F = get_format(fmt)
    at = {_f: sympy.Rational(Fraction(f_value)), _t: sympy.Rational(Fraction(label))}
    dexpr = sympy.diff(phi, _f)
    kinks = [h.args[0].subs(at) for h in dexpr.atoms(sympy.Heaviside)]
    d = sympy.simplify(dexpr.subs(at))
    if any(k == 0 for k in kinks) or d.has(sympy.Heaviside, sympy.DiracDelta, sympy.nan) or d.is_real is False:
        raise CondcheckError(f"phi'(f) is not defined at f = {f_value!r}, t = {label!r} (a kink)")
    q, exact = _to_fraction(d)
    y = round_fraction(q, F)
    if not exact:
        eps = Fraction(1, 10 ** 50)
        if round_fraction(q - eps, F) != y or round_fraction(q + eps, F) != y:   # pragma: no cover
            raise CondcheckError(f"phi'(f) = {float(q)!r} is too close to a rounding boundary of {F.name}")
    return float(y), q


def odd_table(fmt, seeds: list[float], targets: list[float]) -> np.ndarray:
    """g*(y) on every value y of the format: targets at the seeds, odd, 0 elsewhere; refuses inconsistency."""
    F = get_format(fmt)
    table: dict[float, float] = {}
    for y, g in zip(seeds, targets):
        for yy, gg in ((y, g), (-y, -g)):
            yy, gg = float(yy) + 0.0, float(gg) + 0.0
            if yy == 0 and gg != 0:
                raise TargetError(f"a loss has seed y = 0 but target gradient {float(g)!r}: AD gives 0 for y = 0")
            if table.get(yy, gg) != gg:
                raise TargetError(f"inconsistent targets: two losses have seeds +-{abs(yy)!r} but targets "
                                  f"{float(table[yy])!r} and {float(gg)!r} (same y must give the same gradient, -y the opposite)")
            table[yy] = gg
    Y = F.values().astype(float)
    return np.array([table.get(float(y) + 0.0, 0.0) for y in Y])


def multi_loss_example(fmt="float8_e4m3", points=(-1.0, 0.5, 2.0), values=(0.75, -1.5, 3.0),
                       labels=(1.0, -1.0, -1.0),
                       targets=((1.0, -2.0, 0.25), (-8.0, 0.5, 0.0), (0.125, 64.0, -3.0)), losses=None):
    """Build and check the example; returns a dict with the network, the rows (one per point and loss)
    and whether every AD gradient equals its target."""
    F = get_format(fmt)
    losses = dict(LOSSES if losses is None else losses)
    names = list(losses)
    Y = F.values().astype(float)
    rows, tables = [], []
    for x, fx, t, tg in zip(points, values, labels, targets):
        seeds = []
        for name, g in zip(names, tg):
            y, q = loss_seed(losses[name], fx, t, F)
            seeds.append(y)
            rows.append({"x": x, "f": fx, "t": t, "loss": name, "phi_prime": q, "y": y, "target": float(g)})
        tables.append(odd_table(F, seeds, list(tg)))
    res = construct_theorem7("relu", F, np.array(points, float).reshape(-1, 1), np.array(values, float),
                             np.array(tables), upstream=Y)
    net = res.network
    fwd = net.forward(np.array(points, float).reshape(-1, 1))
    for r in rows:
        g = net.gradient(np.array([[r["x"]]]), np.array([r["y"]]))     # one x, one upstream y
        r["ad"] = float(g[0, 0])
        r["ok"] = r["ad"] == r["target"]
    ok = all(r["ok"] for r in rows) and fwd.tolist() == [float(v) for v in values]
    return {"format": F.name, "result": res, "network": net, "rows": rows, "forward": fwd.tolist(), "ok": ok}


def report(ex: dict) -> str:
    net = ex["network"]
    lines = [f"format {ex['format']}, ReLU network: depth {net.depth}, widths {net.widths}, "
             f"{net.nonzero_parameters} nonzero parameters",
             f"forward f(x) at the points: {ex['forward']}",
             f"{'x':>5} {'f(x)':>5} {'t':>3}  {'loss':28s} {'phi_prime(f) exact':>20} {'y = RN(phi_prime)':>18} "
             f"{'target':>7} {'AD':>7}"]
    for r in ex["rows"]:
        lines.append(f"{r['x']:5g} {r['f']:5g} {r['t']:3g}  {r['loss']:28s} {float(r['phi_prime']):20.10g} "
                     f"{r['y']:18g} {r['target']:7g} {r['ad']:7g}  {'ok' if r['ok'] else 'WRONG'}")
    lines.append("every loss gets its target gradient exactly" if ex["ok"] else "MISMATCH")
    return "\n".join(lines)
