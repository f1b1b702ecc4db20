"""The exhaustive separator search: every (w, b) in F x F tried as a first-layer neuron T(w x + b) on
the sorted coordinate values, and for every gap the separator with the smallest on-side spread (its
sign s and kappa).  The reference choice on the formats small enough to try every pair; the restricted
search (``restricted``) decides the gaps it leaves open, and the compiled and numpy one-pass searches
here are proved equal to it (tests/test_theorem5_fast_paths.py, tests/test_op_tables.py).
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..constructors.kit import Kit
from ..op_tables import op_tables
from ..ops import add_array, mul_array

#: candidates per block of ``best_separators_np``'s gather
SEPARATOR_BLOCK = 4096

#: formats of at most this many bits choose separators by ``best_separators_np`` (no compiled code)
NUMPY_SEPARATORS_BITS = 8


def separator_table(kit: Kit, vals: np.ndarray):
    """T(w x + b) for every (w, b) pair of candidates, on the coordinate values; rows finite only."""
    F = kit.fmt
    V = F.values()
    tb = op_tables(F)
    if tb is not None:
        return _separator_table_indexed(kit, tb, vals)
    cands = []
    for w in V:
        if w == 0:
            continue
        wx, o = mul_array(np.full_like(vals, w), vals, F)
        if o.any():
            continue
        pre, o2 = add_array(np.broadcast_to(wx, (len(V), len(vals))), np.broadcast_to(V[:, None], (len(V), len(vals))), F)
        good = ~o2.any(axis=1)
        if not good.any():
            continue
        pre = pre[good]
        t, ov = kit.R.value_array(pre.ravel())
        t = t.reshape(pre.shape)
        fine = ~ov.reshape(pre.shape).any(axis=1)
        cands.append((np.full(fine.sum(), w), V[good][fine], t[fine]))
    W = np.concatenate([c[0] for c in cands])
    B = np.concatenate([c[1] for c in cands])
    Tv = np.concatenate([c[2] for c in cands])
    return W, B, Tv


def _separator_table_indexed(kit: Kit, tb, vals: np.ndarray):
    """``separator_table`` on the format's index tables: the same sums, products and T values (T is a
    function of the value: sigma~'s table maps -0 and +0 alike), looked up instead of rounded
    (tests/test_op_tables.py compares the two)."""
    W, B, I, t_all = separator_rows(kit, tb, vals)
    return W, B, t_all[I]


def separator_rows(kit: Kit, tb, vals: np.ndarray):
    """(W, B, I, t): the candidates of ``separator_table`` and the table index of each pre-activation
    (a row per candidate), and T on every index (NaN at the overflow index)."""
    V = tb.values
    n = tb.over
    iv = tb.index(vals)
    t_all, t_bad = kit.by_index()                   # the overflow index: never a finite row
    any_bad = t_bad[:n].any()
    iV = np.arange(n)
    cands = []
    for k in range(n):
        w = V[k]
        if w == 0:
            continue
        iwx = tb.mul_table[k, iv]
        if (iwx == n).any():
            continue
        # a bias whose sum overflows at some value overflows at the smallest or the largest product
        # (RN(p + b) is monotone in p, and the indices are in value order): only those two are looked up
        good = (tb.add_table[iwx.min(), iV] != n) & (tb.add_table[iwx.max(), iV] != n)
        if not good.any():
            continue
        # (bias, value): RN(w x + b), as rows of the sum table read at the products, transposed (a 2-D
        # fancy index costs 40 times as much)
        ipre = tb.add_table.take(iwx, axis=0).T[:n][good]
        if any_bad:
            fine = ~t_bad[ipre].any(axis=1)
            cands.append((np.full(fine.sum(), w), V[good][fine], ipre[fine]))
        else:
            cands.append((np.full(len(ipre), w), V[good], ipre))
    W = np.concatenate([c[0] for c in cands])
    B = np.concatenate([c[1] for c in cands])
    I = np.concatenate([c[2] for c in cands])
    return W, B, I, t_all


def row_source(kit: Kit, t_all, I):
    """(whether a -0 is among the T values the candidate rows I read, the values to read them from:
    t_all in float32 where every value they read is a float32, else t_all, whether a NaN is among the
    values they read).  The tests on the T values of every finite index first: a superset (the rows
    skip the overflowing indices) that passes them decides them alike; else on exactly the values the
    rows read."""
    def tests(tv):
        return ((tv == 0) & np.signbit(tv)).any(), np.array_equal(tv.astype(np.float32), tv), np.isnan(tv).any()
    neg_zero, f32, nan = tests(t_all[~kit.by_index()[1]])
    if neg_zero or not f32 or nan:
        used = np.zeros(len(t_all), bool)
        used[I] = True
        neg_zero, f32, nan = tests(t_all[used])
    return neg_zero, t_all.astype(np.float32) if f32 else t_all, bool(nan)


def separator_extremes(kit: Kit, vals):
    """``extremes(separator_table(kit, vals))`` (without the table itself, which the choice does
    not read): on a tabulated format, T on the value-major grid straight from the pre-activations'
    indices, in float32 exactly when extremes would use it (every T value of the table a float32)."""
    tb = op_tables(kit.fmt)
    if tb is None:
        return extremes(separator_table(kit, vals))
    W, B, I, t_all = _separator_rows_cached(kit, tb, vals)
    src = row_source(kit, t_all, I)[1]
    T = src[I.T]                                    # (values, candidates), C order
    return (W, B, None, running_extremes(np.minimum, T, False), running_extremes(np.maximum, T, False),
            running_extremes(np.minimum, T, True), running_extremes(np.maximum, T, True))


def extremes(table):
    """Prefix and suffix minima and maxima of every candidate separator along the sorted values, as
    (value index, candidate) arrays, so that the rows of a gap are contiguous."""
    W, B, Tv = table
    T32 = Tv.astype(np.float32) if np.array_equal(Tv.astype(np.float32), Tv) else Tv
    T = np.ascontiguousarray(T32.T)
    return (W, B, Tv, running_extremes(np.minimum, T, False), running_extremes(np.maximum, T, False),
            running_extremes(np.minimum, T, True), running_extremes(np.maximum, T, True))


def running_extremes(op, T, reverse):
    """op.accumulate of the rows of T (from the last row up if reverse), one whole row at a time (numpy's
    accumulate along axis 0 walks each column with a stride: ~50x slower here).  The same values: each
    row is op of the previous result row and T's row, in the same order."""
    out = np.empty_like(T)
    n = len(T)
    rows = range(n - 1, -1, -1) if reverse else range(n)
    prev = None
    for i in rows:
        if prev is None:
            out[i] = T[i]
        else:
            op(out[prev], T[i], out=out[i])
        prev = i
    return out


def choose_steps(ext, n_vals: int, chunk: int = 16) -> dict:
    """{(gap, up): (w, b, s, kappa) or None} for every gap of the coordinate: the separator with the
    smallest on-side spread relative to the gap, and its sign and kappa (all gaps at once, vectorized
    over the candidates; ties go to the first candidate and to s = +1).

    Sign s = +1: every on-side value is above every dead-side value; s = -1: below.  kappa = -(the
    dead-side value nearest to the on side) * s, so that s n + kappa <= 0 exactly on the dead side.
    """
    W, B, Tv, pmin, pmax, smin, smax = ext
    out = {}
    buf = np.empty((chunk, pmin.shape[1]), dtype=bool)
    for start in range(1, n_vals, chunk):
        stop = min(start + chunk, n_vals)
        gaps = np.arange(start, stop)
        at, below = slice(start, stop), slice(start - 1, stop - 1)       # rows gap and gap - 1
        for up in (True, False):
            if up:       # on = [gap:], dead = [:gap]
                on_min, on_max, d_min, d_max = smin[at], smax[at], pmin[below], pmax[below]
            else:        # on = [:gap], dead = [gap:]
                on_min, on_max, d_min, d_max = pmin[below], pmax[below], smin[at], smax[at]
            best = [None] * len(gaps)
            for s in (1.0, -1.0):
                # ok: every on-side value above the dead side (s = +1) or below it (s = -1: the spreads
                # are those of -T, so -on_max > -d_min, that is on_max < d_min); the spreads only on
                # the candidates that separate some gap of the chunk (a few in ten), in their order:
                # the first smallest finite spread is the same candidate (the comparison writes into
                # one buffer: fresh large temporaries cost more in page faults than in arithmetic)
                ok_all = buf[:len(gaps)]
                if s > 0:
                    np.greater(on_min, d_max, out=ok_all)
                else:
                    np.less(on_max, d_min, out=ok_all)
                cols = np.flatnonzero(ok_all.any(axis=0))
                if s > 0:
                    lo_on, hi_on, edge = on_min[:, cols], on_max[:, cols], d_max[:, cols]
                else:
                    lo_on, hi_on, edge = -on_max[:, cols], -on_min[:, cols], -d_min[:, cols]
                ok = ok_all[:, cols]
                spread = np.where(ok, (hi_on - edge) / np.where(ok, lo_on - edge, 1), np.inf)
                idx = np.argmin(spread, axis=1) if len(cols) else np.zeros(len(gaps), int)
                for k in np.flatnonzero(ok.any(axis=1)):
                    i = int(cols[int(idx[k])])
                    sp = spread[k, int(idx[k])]
                    if sp == np.inf:     # every spread infinite: argmin over all candidates, as in full
                        lo_k, hi_k, ed_k = (on_min[k], on_max[k], d_max[k]) if s > 0 else (-on_max[k], -on_min[k], -d_min[k])
                        row = np.where(ok_all[k], (hi_k - ed_k) / np.where(ok_all[k], lo_k - ed_k, 1), np.inf)
                        i = int(np.argmin(row))
                        edge_i = float(ed_k[i])
                    else:
                        edge_i = float(edge[k, int(idx[k])])
                    if best[k] is None or sp < best[k][0]:
                        best[k] = (sp, s, i, edge_i)
            for k, gap in enumerate(gaps):
                if best[k] is None:
                    out[(int(gap), up)] = None
                else:
                    _, s, i, edge = best[k]
                    out[(int(gap), up)] = (float(W[i]), float(B[i]), s, -edge)
    return out


def choose_steps_compiled(kit: Kit, vals, gaps=None):
    """``choose_steps(separator_extremes(kit, vals), len(vals))`` by the compiled one-pass search
    (``kernels.best_separators``; on formats of at most NUMPY_SEPARATORS_BITS bits its numpy twin
    ``best_separators_np``, which needs no compiled code), or None where that does not apply (no
    numba on a wider format, no index tables, or a -0 among the T values, whose sign the numpy
    extremes would pass on to kappa).

    Why it is the same choice: the kernel sees the same candidates in the same order with the same
    values (float32 exactly where ``separator_extremes`` uses it) and keeps, per gap, side and sign,
    what np.argmin keeps in ``choose_steps`` (its first NaN, else its first minimum); the two signs
    are then combined as there (s = -1 only when strictly smaller), and the rows whose spreads all
    overflowed to inf take candidate 0, as ``choose_steps``' argmin over all candidates does.  kappa
    is -(the chosen candidate's dead-side extreme), computed as there.  ``gaps`` = (lo, hi): the choices
    of those gaps only (by numpy; the kernel chooses every gap)."""
    tb = op_tables(kit.fmt)
    compiled = kernels.HAVE_NUMBA and kit.fmt.bits > NUMPY_SEPARATORS_BITS
    if tb is None or not (compiled or kit.fmt.bits <= NUMPY_SEPARATORS_BITS):
        return None
    W, B, I, t_all = _separator_rows_cached(kit, tb, vals)
    neg_zero, src, reads_nan = row_source(kit, t_all, I)
    if neg_zero:
        return None
    return choose_from_rows(W, B, I, src, len(vals), compiled, gaps, reads_nan)


def _separator_rows_cached(kit: Kit, tb, vals):
    """``separator_rows``, kept on the kit for the last coordinate values asked (the chunks of a
    construction, run one after the other in one process, each choose their own gaps of one coordinate)."""
    key = np.asarray(vals, np.float64).tobytes()
    hit = kit.separator_rows_cache
    if hit is None or hit[0] != key:
        hit = kit.separator_rows_cache = (key, separator_rows(kit, tb, vals))
    return hit[1]


def best_separators_np(I, src, gaps=None, reads_nan=None):
    """``kernels.best_separators(I, src)`` in numpy, on the separating (gap, candidate) pairs only: the same
    (best_i, best_sp) arrays, without loading numba's compiled code (its first load in a process costs
    0.4-0.6 CPU s, more than this whole search on an 8-bit format: 0.1-0.2 s).

    Why the same: the extremes are the kernel's prefix and suffix minima and maxima (``running_extremes``
    rows, in src's dtype; no NaN reaches them from finite rows, and signed zeros are the caller's
    concern as for the kernel); a pair (gap g, candidate c) of case q separates exactly where the
    kernel's ``lo > edge`` holds, and its spread is the kernel's (hi - edge) / (lo - edge) in src's
    dtype.  Per gap, the kernel keeps the first separating candidate and replaces it only by a later
    NaN spread (while its own is not NaN) or a strictly smaller one: that is the first NaN if there
    is one, else the first minimum, which is what the segment minimum (NaN-propagating) and the first
    position equal to it pick here.  A gap without a separating candidate keeps (-1, 0).
    tests/test_theorem5_fast_paths.py compares the arrays with the kernel's.

    ``gaps`` = (lo, hi): only the gaps lo..hi (the others keep (-1, 0)), from the prefix extremes of the
    values below hi and the suffix extremes from value lo, the same numbers as for every gap (a chunk
    of a construction chooses the separators of its own gaps).  ``reads_nan``: whether some row reads a
    NaN of src, where the caller knows (``row_source``), else found here (a gather of every row)."""
    n = I.shape[1]
    dt = src.dtype
    best_i = np.full((n, 4), -1, dtype=np.int64)
    best_sp = np.zeros((n, 4), dtype=dt)
    lo, hi = (1, n - 1) if gaps is None else (max(1, int(gaps[0])), min(n - 1, int(gaps[1])))
    if n < 2 or I.shape[0] == 0 or lo > hi:
        return best_i, best_sp
    # the extremes on the ranks of src's values (a byte each on 8-bit formats: a quarter of the memory
    # traffic of the values; the order, and so every minimum, maximum and comparison, is the same), the
    # values looked up at the separating pairs only.  Where a row reads a NaN, the values themselves
    uv, inv = np.unique(src, return_inverse=True)
    if np.isnan(uv).any() and (np.isnan(src)[I].any() if reads_nan is None else reads_nan):
        uv, key = None, src
    else:
        key = inv.reshape(-1).astype(np.uint8 if len(uv) <= 256 else np.int32)
    # (values, candidates); transposing bytes costs less than I, and a block of candidates at a time
    # less than the whole (the gather's index copy stays in cache)
    T = np.empty((I.shape[1], I.shape[0]), dtype=key.dtype)
    for c0 in range(0, I.shape[0], SEPARATOR_BLOCK):
        T[:, c0:c0 + SEPARATOR_BLOCK] = key[I[c0:c0 + SEPARATOR_BLOCK]].T
    # row r: the gap lo + r (prefix extremes of the values below it, suffix extremes from it)
    pmin, pmax = (running_extremes(op, T[:hi], False)[lo - 1:hi] for op in (np.minimum, np.maximum))
    smin, smax = (running_extremes(op, T[lo:], True)[:hi - lo + 1] for op in (np.minimum, np.maximum))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # q = 0 (on [g:], s = +1) and q = 3 (on [:g], s = -1) separate where smin[g] > pmax[g-1];
        # q = 1 (on [g:], s = -1) and q = 2 (on [:g], s = +1) where pmin[g-1] > smax[g].
        # Case q's (lo, hi, edge) (negated for s = -1) give the kernel's spread (hi - edge) / (lo - edge);
        # (-x) - (-y) = y - x exactly (IEEE subtraction adds the negation, and addition commutes), so
        # the two cases of a mask share the denominator: q = 0 (lo, hi, edge) = (smin, smax, pmax) and
        # q = 3 (-pmax, -pmin, -smin) both divide by smin - pmax; q = 1 (-smax, -smin, -pmin) and
        # q = 2 (pmin, pmax, smax) by pmin - smax.  Per case: (q, minuend, subtrahend) of the numerator
        for mask, (top, bottom), cases in (
                (smin > pmax, (smin, pmax), ((0, smax, pmax), (3, smin, pmin))),
                (pmin > smax, (pmin, smax), ((1, pmin, smin), (2, pmax, smax)))):
            f = np.flatnonzero(mask)                   # np.nonzero's (r, c), in a third of its time
            if not len(f):
                continue
            r = f // mask.shape[1]
            c = f - r * mask.shape[1]
            starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
            seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(r))))
            # a[r, c] by the flat positions (the arrays are C-contiguous, mask's shape)
            vals = {}

            def at(a):
                if id(a) not in vals:
                    v = a.ravel()[f]
                    vals[id(a)] = uv[v] if uv is not None else v
                return vals[id(a)]
            den = at(top) - at(bottom)
            for q, x_a, y_a in cases:
                sp = (at(x_a) - at(y_a)) / den
                m = np.minimum.reduceat(sp, starts)[seg]
                first = np.flatnonzero((sp == m) | (np.isnan(sp) & np.isnan(m)))
                sf = seg[first]                        # nondecreasing: each segment's first is where it changes
                pick = first[np.flatnonzero(np.concatenate(([True], sf[1:] != sf[:-1])))]
                best_i[r[pick] + lo, q] = c[pick]
                best_sp[r[pick] + lo, q] = sp[pick]
    return best_i, best_sp


def choose_from_rows(W, B, I, src, n_vals: int, compiled: bool = True, gaps=None, reads_nan=None) -> dict:
    """``choose_steps``' dict from candidate rows (candidate c: weight W[c], bias B[c], values
    src[I[c, :]] on the sorted coordinate values) by ``kernels.best_separators`` (or, not
    ``compiled``, by ``best_separators_np``: the same arrays); with ``gaps`` = (lo, hi), of those gaps."""
    best_i, best_sp = (kernels.best_separators(I, src) if compiled
                       else best_separators_np(I, src, gaps, reads_nan))
    out = {}
    lo, hi = (1, n_vals - 1) if gaps is None else gaps
    for gap in range(max(1, lo), min(n_vals - 1, hi) + 1):
        for up, cases in ((True, ((0, 1.0), (1, -1.0))), (False, ((2, 1.0), (3, -1.0)))):
            best = None
            for q, s in cases:
                i = int(best_i[gap, q])
                if i < 0:
                    continue
                sp = best_sp[gap, q]
                if sp == np.inf:
                    i = 0
                col = src[I[i]]
                dead = col[:gap] if up else col[gap:]
                edge = float(dead.max()) if s > 0 else float(-dead.min())
                if best is None or sp < best[0]:
                    best = (sp, s, i, edge)
            out[(gap, up)] = None if best is None else (float(W[best[2]]), float(B[best[2]]), best[1], -best[3])
    return out


def chosen_steps(kit: Kit, vals, gaps=None) -> dict:
    """``choose_steps`` over every (w, b) in F x F for every gap (at least the gaps lo..hi of
    ``gaps``): the compiled pass where it applies (the same choices), else the numpy extremes."""
    chosen = choose_steps_compiled(kit, vals, gaps)
    return chosen if chosen is not None else choose_steps(separator_extremes(kit, vals), len(vals))
