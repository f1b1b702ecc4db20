"""Which separator each gap of a coordinate gets (``separator_chooser``: the exhaustive search where it is
small enough, else the restricted one), and which points of a domain the first layer can tell apart
at all (``distinguishability``, ``indistinguishable_pairs``: a precondition of Theorem 5).
"""
from __future__ import annotations

import numpy as np

from ..constructors.kit import Kit, enumerated
from ..formats import get_format
from ..ops import add_array, mul_array
from .exhaustive import chosen_steps
from .restricted import find_separators


def separator_chooser(kit: Kit, vals, states=None, gaps=None):
    """choose(gap, up) -> (w, b, s, kappa) or None.  Every (w, b) in F x F when that is small (8-bit
    formats: the smallest spread), else the restricted search (``restricted``, 16-bit formats;
    its "not found" is not a proof of inseparability, and the error says distinguishability fails).
    ``gaps`` = (lo, hi): only those gaps are asked (the chosen ones are the same; the restricted search
    runs a targeted round over its budget for these gaps only)."""
    if kit.fmt.count_finite() ** 2 * len(vals) <= 2e8:
        chosen = chosen_steps(kit, vals, gaps)
        return lambda gap, up: chosen[(gap, up)]
    # the separators of every gap (of the range, where a round is over the budget), kept on the kit per
    # (values, range, states): the chunks of one construction ask for the same coordinate again
    states = None if enumerated(kit.fmt) else states
    found = kit.kept("_separators_found", (vals.dtype.str, vals.shape, vals.tobytes(), gaps), states,
                     lambda: find_separators(kit, vals, states=states, gaps=gaps))
    return lambda gap, up: found.get((gap, up))


def distinguishability(activation, fmt, points, implementation="exact"):
    """Gaps of a domain that no first-layer neuron splits monotonically (empty list: step-separable).

    For every coordinate j and consecutive coordinate values a < a' of the domain, the constructor needs
    a neuron T(w x_j + b), finite on the domain, whose values at x_j <= a all lie below (or all above)
    its values at x_j >= a'.  Every (w, b) in F x F is tried (formats of at most 16 bits).  Returns a list
    of (coordinate (1-based), a, a') that fail.  A domain whose points some coordinate gap cannot even
    separate (equal first-layer outputs) cannot be represented by any network.
    """
    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    X = np.asarray(points, float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    bad = []
    for j in range(X.shape[1]):
        vals = np.unique(X[:, j])
        if len(vals) < 2:
            continue
        chosen = chosen_steps(kit, vals)
        for gap in range(1, len(vals)):
            if chosen[(gap, True)] is None or chosen[(gap, False)] is None:
                bad.append((j + 1, float(vals[gap - 1]), float(vals[gap])))
    return bad


def indistinguishable_pairs(activation, fmt, points, implementation="exact"):
    """Consecutive coordinate values that every first-layer neuron T(w x_j + b) maps to the same output
    (d = 1 domains): no network of this activation and format can give them different values.

    Every (w, b) in F x F that stays finite on the whole domain is tried, one w at a time (memory stays
    at |F| x |domain|).  Returns [(a, a'), ...].
    """
    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    vals = np.unique(np.asarray(points, float).ravel())
    V = F.values()
    differs = np.zeros(len(vals) - 1, dtype=bool)
    for w in V:
        wx, o = mul_array(np.full_like(vals, w), vals, F)
        if o.any():
            continue
        pre, o2 = add_array(np.broadcast_to(wx, (len(V), len(vals))), np.broadcast_to(V[:, None], (len(V), len(vals))), F)
        pre = pre[~o2.any(axis=1)]
        t, ov = kit.R.value_array(pre.ravel())
        t, ov = t.reshape(pre.shape), ov.reshape(pre.shape)
        t = t[~ov.any(axis=1)]
        differs |= (t[:, 1:] != t[:, :-1]).any(axis=0)
    return [(float(vals[i]), float(vals[i + 1])) for i in np.nonzero(~differs)[0]]
