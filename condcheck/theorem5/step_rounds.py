"""The steps of a construction, built in rounds: each chunk of the domain builds the steps its points
read, and the chunks agree on the layers every step spans.

A step (key (coordinate j, gap, up)) is a neuron that is on at the coordinate values on one side of a
gap and dead at the others (``steps.Step``).  Point z is gated by the steps next to its value in each
coordinate (``gating_keys``): a step is read only by the points whose coordinate value is next to its
gap on its dead side.  So a chunk of points needs only the steps of ``chunk_keys``, and the chunks
together need every step (every coordinate value is some point's).

Why the steps do not depend on the chunks: a step's first build is a function of its key (the chosen
separator, its split, sharpening and lift; the kit's caches hold pure functions), and the padding of a
step to ``depth`` layers is a function of the step and ``depth``.  ``depth`` starts at the most layers
any step needs and grows by one while some step can not be padded to it; the chunks agree on both
(``agree_steps``), so each step comes out as one process building every step would build it.
"""
from __future__ import annotations

import numpy as np

from ..op_tables import op_tables
from . import tuning
from .boosts import _lifted_boost, _padded_split, _reboosts, _sharpened_split, _step_split
from .errors import ConstructionError
from .steps import Step, _separator_chooser


def all_keys(coord_vals) -> list:
    """Every step's key (j, gap, up), in the order of the network's step neurons: coordinate by
    coordinate, gap by gap, the "on above the gap" step first."""
    return [(j, gap, up) for j, vals in enumerate(coord_vals) if len(vals) >= 2
            for gap in range(1, len(vals)) for up in (True, False)]


def gating_keys(coord_vals, coord_idx, zi) -> list:
    """The keys of the steps that are dead exactly at point zi (and at least one on elsewhere): per
    coordinate, the step on at the values below z_j (if any) and the step on at the values above it."""
    out = []
    for j in range(len(coord_vals)):
        m = int(coord_idx[j][zi])
        if m > 0:
            out.append((j, m, False))           # on iff x_j <= value below z_j
        if m < len(coord_vals[j]) - 1:
            out.append((j, m + 1, True))        # on iff x_j >= value above z_j
    return out


def chunk_keys(coord_vals, coord_idx, points) -> list:
    """The keys of the steps that gate the points, in ``all_keys`` order."""
    want = {k for zi in points for k in gating_keys(coord_vals, coord_idx, zi)}
    return [k for k in all_keys(coord_vals) if k in want]


def step_rounds(kit, st, coord_vals, keys, push_need):
    """Build the steps of ``keys`` (a generator of rounds, ``chunks.run_rounds``; combine the reports with
    ``agree_steps``).  Returns ({key: Step}, {key: the step's values T on coordinate key[0]'s values}).

    The separators are chosen per coordinate for the range of gaps the keys span (``_separator_chooser``:
    the same choice as over every gap)."""
    choosers = {}
    for j in sorted({key[0] for key in keys}):
        gaps = [key[1] for key in keys if key[0] == j]
        choosers[j] = _separator_chooser(kit, coord_vals[j], st, gaps=(min(gaps), max(gaps)))
    built = {key: _first_build(kit, st, coord_vals[key[0]], choosers[key[0]], key, push_need) for key in keys}
    # every step spans the same layers: a step with fewer sharpening layers than the deepest is boosted
    # again after its boost (each boost keeps L dead and its on values on one side of L, so the step
    # stays a step), else sharpened to the full depth (one layer deeper for all steps when some step can
    # not be padded: a longer greedy chain can split where a shorter one did not); without sharpening
    # (every format but the narrow 8-bit ones) nothing changes.  With wide boosts (a retry for large
    # upstream values, see _boost_weights) every step is boosted twice: one boost can leave an on value
    # near L far from Omega (swish~ on float8_e4m3: the step's on value -0.23 boosts to at most 48, the
    # second boost takes it to 224)
    depth = (yield {"step_depth": max([len(s.sharpen) + len(s.lift) for s, _, _ in built.values()]
                                      + [1 if kit.wide_boosts else 0])})["depth"]
    while True:
        padded, failure = {}, None
        for key, (s, pre, on) in built.items():
            extra = _reboosts(kit, st, pre, on, depth - len(s.sharpen) - len(s.lift))
            if extra is not None:
                padded[key] = (None, extra)
                continue
            r = _padded_split(kit, st, kit.T(kit.row([(s.w, coord_vals[s.coord])], s.b)), on,
                              len(s.sharpen), depth, push_need)
            if isinstance(r, str):
                failure = (f"step at coordinate {s.coord + 1} gap {s.gap}: neither boosts nor sharpening "
                           f"layers pad it to {depth} layers: {r}")
                break
            padded[key] = r
        agreed = yield {"step_failure": failure, "depth": depth}
        if agreed.get("error"):
            raise ConstructionError(agreed["error"])
        if agreed.get("done"):
            break
        depth = agreed["depth"]
    steps, values = {}, {}
    for key, (s, pre, on) in built.items():
        layers, extra = padded[key][0], padded[key][-1]
        if layers is not None:
            _, s.s, s.kappa, on, (pre, s.k0, s.K), s.boost_a, s.boost_c = padded[key][1]
            s.sharpen, s.lift = tuple(layers), ()
            pre = kit.add(kit.mul(s.boost_a, kit.T(pre)), s.boost_c)
        for a, c in extra:
            pre = kit.add(kit.mul(a, kit.T(pre)), c)
        on_t = kit.T(pre[on])
        tv = on_t - st.L
        s.on_min, s.on_max, s.on_sign = float(np.abs(tv).min()), float(np.abs(tv).max()), float(np.sign(tv)[0])
        s.on_lo, s.on_hi, s.reboost = float(on_t.min()), float(on_t.max()), tuple(s.lift) + tuple(extra)
        steps[key], values[key] = s, kit.T(pre)
    return steps, values


def agree_steps(reports) -> dict:
    """What the chunks agree on in ``step_rounds``: the most layers any step needs, then, after each
    padding round, whether every step was padded (done), else one layer more for all, or (at
    tuning.MAX_SHARPEN layers) the first failure in chunk order as the error."""
    if "step_depth" in reports[0]:
        return {"depth": max(r["step_depth"] for r in reports)}
    failure = next((r["step_failure"] for r in reports if r["step_failure"]), None)
    if failure is None:
        return {"done": True}
    depth = reports[0]["depth"]
    if depth >= tuning.MAX_SHARPEN:
        return {"error": failure}
    return {"depth": depth + 1}


def _first_build(kit, st, vals, choose, key, push_need):
    """(Step, its boosted pre-activations on the coordinate values, its on side) of a step's first build:
    the chosen separator, split by a quantizer chain and boosted (sharpening layers first where the
    separator does not split, on the tabulated formats; a lift where the boost leaves a gate too little
    push)."""
    j, gap, up = key
    F = kit.fmt
    ch = choose(gap, up)
    if ch is None:
        raise ConstructionError(
            f"distinguishability fails: no neuron T(w x_{j + 1} + b) separates coordinate values "
            f"<= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
    w, b, s0, kappa0 = ch
    n = kit.T(kit.row([(w, vals)], b))
    best, why = _step_split(kit, st, n, s0, kappa0, push_need)
    sharpen = ()
    if best is None and op_tables(F) is not None:
        # only where the separator does not split: sharpening layers first
        on_side = np.arange(len(vals)) >= gap if up else np.arange(len(vals)) < gap
        layers, n2, best2 = _sharpened_split(kit, st, n, on_side, push_need)
        if layers is not None:
            sharpen, n, best = tuple(layers), n2, best2
    if best is None:
        raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: {why}")
    _, s, kappa, on, (pre, k0, K), ba, bc = best
    lift = _lifted_boost(kit, st, pre, on, 2 * push_need) if best[0] < 2 * push_need else None
    lift = lift if lift is not None and lift[2] > best[0] else None
    if lift is not None:
        (ba, bc), lift = lift[0], (lift[1],)
    pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
    for a2, c2 in lift or ():
        pre = kit.add(kit.mul(a2, kit.T(pre)), c2)
    return (Step(j, gap, up, w, b, s, kappa, k0, K, boost_a=ba, boost_c=bc, sharpen=sharpen, lift=lift or ()),
            pre, on)
