"""Domains and targets for the constructors: the box, random targets, target files, callables, validation.

The box of an activation on a format is [-M_sigma, M_sigma]^d (``paper.box_bound``).  Random targets
(``random:SEED``) draw values from every value of the format (so zeros, the largest values and
subnormals all occur), upstream values from the format's values with |h| <= h_max with a share of
exact zeros, and gradients from every value, zero where h* = 0.
"""
from __future__ import annotations

import json

import numpy as np

from .constructors.errors import TargetError
from .constructors.kit import enumerated
from .errors import ArgumentError, CondcheckError
from .formats import Format, get_format
from .hexfloat import parse_float64
from .ops import mul_array
from .paper import box_bound
from .rounding import round_array, round_down_up


def full_box(activation: str, fmt, dim: int) -> np.ndarray:
    """Every point of [-M_sigma, M_sigma]^dim in the format (rows, lexicographic order)."""
    fmt = get_format(fmt)
    if dim < 1:
        raise CondcheckError(f"--dim must be at least 1, got {dim}")
    if not enumerated(fmt):
        raise CondcheckError(f"the full box needs an enumerable format of at most 16 bits; {fmt.name} has "
                             f"{fmt.bits}; give the points instead (--domain sample:N or a points file)")
    V = fmt.values()
    c = V[np.abs(V) <= box_bound(activation, fmt)]
    if len(c) ** dim > 1 << 22:
        raise CondcheckError(f"the full box has {len(c)}^{dim} points, more than 2^22; use a smaller --dim")
    grids = np.meshgrid(*([c] * dim), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def box_sample(activation: str, fmt, dim: int, n: int, seed: int = 0) -> np.ndarray:
    """n distinct points of the box [-M_sigma, M_sigma]^dim drawn with a seed (sorted rows): a domain for
    formats whose full box is too large to construct on (16-bit formats have about 60,000 values in it,
    float32 and float64 billions: their points are drawn by bit pattern, see ``random_values``)."""
    fmt = get_format(fmt)
    if dim != 1:
        raise CondcheckError(f"sampled domains support --dim 1 so far, got {dim}")
    bound = box_bound(activation, fmt)
    size = _count_upto(fmt, bound)
    if not 1 <= n <= size:
        raise CondcheckError(f"the sample size must be between 1 and the {size} values of the box, got {n}")
    rng = np.random.default_rng(seed)
    if enumerated(fmt):
        V = fmt.values()
        return np.sort(rng.choice(V[np.abs(V) <= bound], n, replace=False)).reshape(-1, 1)
    out = np.unique(random_values(fmt, rng, 2 * n, bound))
    while len(out) < n:
        out = np.unique(np.concatenate([out, random_values(fmt, rng, n, bound)]))
    return np.sort(rng.choice(out, n, replace=False)).reshape(-1, 1)


def separable_part(activation: str, fmt, X) -> np.ndarray:
    """The points of X (rows, d = 1) without those the Theorem 5 separator search cannot split from a
    neighbour: one point of each failing gap (``separators.distinguishability``) is dropped, repeatedly
    (sigmoid on float8_e5m2: its box is not distinguishable)."""
    from .separators import distinguishability
    while True:
        bad = distinguishability(activation, fmt, X)
        if not bad:
            return X
        X = X[~np.isin(X[:, 0], [b for _, _, b in bad])]


def separable_box_sample(activation: str, fmt, n: int, seed: int = 0) -> np.ndarray:
    """n distinct points of the d = 1 box that the Theorem 5 separator search splits (sorted rows).

    Some boxes are not distinguishable (sigmoid on float8_e5m2 maps -2^-8 and its neighbour to equal
    sigma~ values under every first-layer neuron), so a plain ``box_sample`` of them is refused.  Here a
    box sample of m >= n points is reduced to its ``separable_part`` and n of the rest are drawn with the
    seed (m grows until n remain).  A subset of a separable set is separable: each gap of the subset
    contains a gap of the set, whose separator splits the subset's two sides as well."""
    fmt = get_format(fmt)
    if fmt.bits > 8:
        raise CondcheckError(f"separable_box_sample runs the separator search over every gap, repeatedly, and is "
                             f"limited to formats of at most 8 bits (on bfloat16 it grew past 20 GiB); {fmt.name} "
                             f"has {fmt.bits}: use distinguishable_sample or box_sample there")
    n_box = _count_upto(fmt, box_bound(activation, fmt))
    m = n
    while True:
        X = separable_part(activation, fmt, box_sample(activation, fmt, 1, min(m, n_box), seed))
        if len(X) >= n:
            rng = np.random.default_rng(seed)
            return X[np.sort(rng.choice(len(X), n, replace=False))]
        if m >= n_box:
            raise CondcheckError(f"the {activation} box on {fmt.name} has fewer than {n} separable points")
        m += 2 * (n - len(X)) + 16


def distinguishable_sample(fmt, n: int, seed: int = 0, lo: int = -12, hi: int = 6) -> np.ndarray:
    """n distinct points with |x| in [2^lo, 2^hi] (sorted rows, d = 1): a domain sigmoid distinguishes.

    sigmoid's box on float32, float64 and bfloat16 is not distinguishable: near 0 neighbouring inputs
    share sigma~ and sigma~' under every first-layer neuron T(w x + b) (w x + b rounds to the same value,
    or sigma~ of it does, for every w and b of the format), so no network of sigmoid neurons separates
    them and Theorem 5's construction refuses the box ("distinguishability fails").  Condition 1 still
    suffices on a domain without such pairs; this is the one the tests and benchmarks use: signs and
    exponents drawn uniformly (log-uniform magnitudes), values of float32 for float32 and float64 (so
    float64 reads the same points), else rounded to fmt."""
    fmt = get_format(fmt)
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], 4 * n) * np.exp2(rng.uniform(lo, hi, 4 * n))
    if fmt.name in ("float32", "float64"):
        X = np.unique(X.astype(np.float32).astype(np.float64))
    else:
        X = np.unique(round_array(X, fmt)[0])
    if len(X) < n:
        raise CondcheckError(f"only {len(X)} distinct values of {fmt.name} drawn in [2^{lo}, 2^{hi}], {n} asked")
    return np.sort(rng.choice(X, n, replace=False)).reshape(-1, 1)


def _pattern_of(fmt: Format, v: float) -> int:
    """The index of the nonnegative value v among the nonnegative values of fmt (0 -> 0), ascending."""
    sign, m, e = fmt.decompose(v)
    if m == 0:
        return 0
    if m < 2 ** fmt.M:
        return int(m)
    return int(((e - fmt.e_min + 1) << fmt.M) | (m - 2 ** fmt.M))


def _count_upto(fmt: Format, bound: float) -> int:
    """Number of values v of fmt with |v| <= bound (bound a value of fmt; one zero)."""
    return 2 * _pattern_of(fmt, float(round_down_up(bound, fmt)[0])) + 1


def random_values(fmt, rng, n: int, bound: float | None = None) -> np.ndarray:
    """n values of fmt drawn uniformly (with repetition) from its values v with |v| <= bound (default:
    every finite value), without enumerating the format: a value is an index into the ascending
    nonnegative values (biased exponent and fraction, as in IEEE 754) and a sign, so float32 and
    float64 are sampled as evenly as the small formats (zeros, subnormals and the largest values occur
    in proportion to their count)."""
    fmt = get_format(fmt)
    bound = float(fmt.max) if bound is None else float(bound)
    if enumerated(fmt):
        V = fmt.values()
        return rng.choice(V[np.abs(V) <= bound], n)
    top = _pattern_of(fmt, float(round_down_up(min(bound, float(fmt.max)), fmt)[0]))
    k = rng.integers(-top, top + 1, size=n, dtype=np.int64)       # -0 and +0 collapse: one zero
    a = np.abs(k)
    biased, frac = a >> fmt.M, (a & ((1 << fmt.M) - 1)).astype(float)
    mag = np.where(biased == 0, np.ldexp(frac, fmt.e_min - fmt.M),
                   np.ldexp(frac + 2.0 ** fmt.M, (np.maximum(biased, 1) - 1 + fmt.e_min - fmt.M).astype(np.int64)))
    return np.where(k < 0, -mag, mag)


def random_targets(fmt, points: np.ndarray, seed: int, h_max: float, zero_share: float = 0.05):
    """(values, upstream, gradients) drawn with a seed; see the module docstring."""
    fmt = get_format(fmt)
    rng = np.random.default_rng(seed)
    n, d = points.shape
    f = random_values(fmt, rng, n)
    h = random_values(fmt, rng, n, h_max)
    h[rng.random(n) < zero_share] = 0.0
    g = random_values(fmt, rng, n * d).reshape(n, d)
    g[h == 0] = 0.0
    return f, h, g


def parse_targets(spec: str):
    """``random:SEED`` -> ("random", seed) (an integer >= 0); ``python:FILE.py`` -> ("python", path); any other
    string is a JSON file name -> ("file", path)."""
    if not isinstance(spec, str) or not spec:
        raise ArgumentError("--targets must be random:SEED, python:FILE.py or a JSON file name")
    if spec.startswith("random:"):
        text = spec.split(":", 1)[1]
        if not text.isdigit() or not text.isascii():
            raise ArgumentError(f"--targets random:SEED needs an integer seed >= 0, got {spec!r}")
        return "random", int(text)
    if spec.startswith("python:"):
        if not spec[7:]:
            raise ArgumentError("--targets python:FILE.py needs the name of a Python file")
        return "python", spec.split(":", 1)[1]
    return "file", spec


def file_number(v, where: str) -> float:
    """A number of a points or targets file: a JSON number (finite, not a boolean) or a hexadecimal float
    text (:mod:`condcheck.hexfloat`); always exactly the float64 given."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ArgumentError(f"{where}: {v!r} is not a number (give JSON numbers or hexadecimal floats like '0x1.8p+1')")
    if isinstance(v, str):
        try:
            return parse_float64(v, where)
        except CondcheckError as e:
            raise ArgumentError(str(e)) from None
    try:
        f = float(v)
    except OverflowError:
        f = float("inf")
    if not np.isfinite(f) or (isinstance(v, int) and f != v):
        raise ArgumentError(f"{where}: {v!r} is not a finite float64 number")
    return f


def _read_json(path: str, what: str):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError, RecursionError) as e:
        raise ArgumentError(f"cannot read {what} {path!r}: {e}") from None


def load_points(path: str, dim: int | None = None) -> np.ndarray:
    """A points file: a non-empty JSON list of points, each a list of d numbers (or, for d = 1, a number).
    ``dim``: the dimension the user asked for (None: the file's); a file of another dimension is refused."""
    obj = _read_json(path, "points file")
    if not isinstance(obj, list) or not obj:
        raise ArgumentError(f"points file {path!r} must hold a non-empty JSON list of points (each a list of d "
                            f"numbers), not {_kind(obj) if obj != [] else 'an empty list'}")
    rows = []
    for i, p in enumerate(obj):
        where = f"points file {path!r}, point {i + 1}"
        coords = p if isinstance(p, list) else [p]
        if not coords:
            raise ArgumentError(f"{where} is an empty list")
        rows.append([file_number(v, where) for v in coords])
        if len(rows[-1]) != len(rows[0]):
            raise ArgumentError(f"{where} has {len(rows[-1])} coordinates, point 1 has {len(rows[0])}")
    X = np.array(rows, dtype=np.float64)
    if dim is not None and X.shape[1] != dim:
        raise ArgumentError(f"--dim {dim} but the points file {path!r} has points of {X.shape[1]} "
                            f"coordinate{'s' if X.shape[1] > 1 else ''}; give --dim {X.shape[1]} or a file of "
                            f"{dim}-coordinate points")
    return X


def _kind(obj) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(obj), "a number")


TARGET_FUNCTIONS = ("values", "upstream", "gradients")


def load_python_targets(path: str):
    """The functions ``values``, ``upstream`` and ``gradients`` of a Python file (each a function of the
    point's coordinates, see ``evaluate_callables``)."""
    import runpy
    try:
        ns = runpy.run_path(path)
    except OSError as e:
        raise CondcheckError(f"cannot read targets file {path!r}: {e}") from None
    except Exception as e:          # the user's module failed to run: say where, not a traceback
        raise CondcheckError(f"targets file {path!r} raised {type(e).__name__}: {e}") from None
    missing = [k for k in TARGET_FUNCTIONS if not callable(ns.get(k))]
    if missing:
        raise CondcheckError(f"targets file {path!r} must define the functions {', '.join(TARGET_FUNCTIONS)} of "
                             f"the point's coordinates; missing: {', '.join(missing)}")
    return tuple(ns[k] for k in TARGET_FUNCTIONS)


def _targets_object(path: str, keys) -> dict:
    obj = _read_json(path, "targets file")
    if not isinstance(obj, dict):
        raise ArgumentError(f"targets file {path!r} must hold a JSON object with the lists {', '.join(keys)}, not "
                            f"{_kind(obj)}")
    for k in obj:
        if k not in keys:
            raise ArgumentError(f"targets file {path!r}: unknown field {k!r}; a targets file has {', '.join(keys)}")
    for k in keys:
        if k not in obj:
            raise ArgumentError(f"targets file {path!r} has no {k!r} list")
    return obj


def _nested(v, where: str):
    """A nested list of file numbers as a float array (rectangular)."""
    if isinstance(v, list):
        parts = [_nested(x, f"{where}[{i}]") for i, x in enumerate(v)]
        shapes = {np.shape(x) for x in parts}
        if len(shapes) > 1:
            raise ArgumentError(f"{where}: its entries have different lengths")
        return np.array(parts, dtype=np.float64).reshape((len(parts),) + (shapes.pop() if parts else ()))
    return np.float64(file_number(v, where))


def load_targets(path: str, n: int, d: int):
    """A JSON file with lists "values" (n), "upstream" (n) and "gradients" (n x d, or n for d = 1), each
    number a JSON number or a hexadecimal float text."""
    obj = _targets_object(path, TARGET_FUNCTIONS)

    def arr(key, shape):
        a = _nested(obj[key], f"targets file {path!r}: {key!r}")
        if a.ndim == 0:
            raise ArgumentError(f"targets file {path!r}: {key!r} must be a list")
        return a.reshape(shape) if a.size == int(np.prod(shape)) else _bad_shape(path, key, a.shape, shape)
    return arr("values", (n,)), arr("upstream", (n,)), arr("gradients", (n, d))


def _bad_shape(path, key, got, want):
    raise CondcheckError(f"targets file {path!r}: {key!r} has shape {got}, expected {want}")


def all_valid(fmt: Format, X, f, h, g, bound) -> bool:
    """Whether every check of ``validate``'s per-point loop passes, decided on whole arrays: finite
    numbers, each a value of fmt (an enumerated format's value list; else RN_F(v) == v, exact under
    ``fits_float64``), inside the box (bound None: no box), and g* = 0 wherever h* = 0.  False when unsure
    (a format that neither lists nor float64-rounds its values): the loop then decides and names the
    first offending point."""
    nums = np.concatenate([X.ravel(), f, h, g.ravel()])
    if not np.isfinite(nums).all():
        return False
    if fmt.enumerable and fmt.bits <= 16:
        V = fmt.values()
        k = np.clip(np.searchsorted(V, nums), 0, len(V) - 1)
        member = V[k] == nums
    elif fmt.fits_float64:
        r, over = round_array(nums, fmt)
        member = ~over & (r == nums)
    else:
        return False
    if not member.all():
        return False
    if bound is not None and (np.abs(X) > bound).any():
        return False
    return not ((h == 0) & (g != 0).any(axis=1)).any()


def _rounded_call(fn, fmt: Format, x: tuple, name: str, i: int, want: int):
    """fn(*x) as ``want`` values of fmt, each RN_F of the exact number fn returned."""
    from fractions import Fraction
    from numbers import Real
    from .rounding import round_fraction

    where = f"point {i + 1} {list(x)}"
    try:
        out = fn(*x)
    except Exception as e:           # the user's code: report where it failed, not a traceback
        raise CondcheckError(f"{where}: the {name} callable raised {type(e).__name__}: {e}") from None
    items = list(np.ravel(np.asarray(out, dtype=object))) if want > 1 or np.ndim(out) else [out]
    if len(items) != want:
        raise CondcheckError(f"{where}: the {name} callable returned {len(items)} numbers, {want} expected")
    res = []
    for v in items:
        if isinstance(v, np.generic):
            v = v.item()
        if not isinstance(v, (Real, Fraction)) or isinstance(v, bool):
            raise CondcheckError(f"{where}: the {name} callable returned {v!r}, not a real number")
        if isinstance(v, float) and not np.isfinite(v):
            raise CondcheckError(f"{where}: the {name} callable returned {v!r} (Inf and NaN are not allowed)")
        res.append(float(round_fraction(Fraction(v), fmt, what=f"{where}: the {name}")))
    return res


def evaluate_callables(fmt: Format, points, values, upstream, gradients):
    """Targets given as Python callables, evaluated at every point; arrays pass through unchanged.

    A callable gets the point's coordinates as d floats, ``values(x1, ..., xd)`` and
    ``upstream(x1, ..., xd)`` return one number, ``gradients(x1, ..., xd)`` d numbers (one for d = 1).
    Each number (float, int or Fraction) is rounded to the nearest value of fmt, ties to even, from its
    exact value, so ``values=math.sin`` means f*(x) = RN(float sin(x)); a number beyond Omega, Inf or NaN
    is an error naming the point."""
    X = np.asarray(points, dtype=float)
    F = get_format(fmt)
    n, d = X.shape

    def table(t, name, want):
        if not callable(t):
            return t
        rows = [_rounded_call(t, F, tuple(float(c) for c in X[i]), name, i, want) for i in range(n)]
        rows = np.array(rows, dtype=float)
        return rows.reshape(n, want) if name == "gradient" else rows.reshape(n)
    return table(values, "value", 1), table(upstream, "upstream", 1), table(gradients, "gradient", d)


def as_points(points, what: str = "points") -> np.ndarray:
    """Points as a float array of shape (N, d), N, d >= 1 (a flat list is d = 1), or a clear error."""
    X = _as_numbers(points, what)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ArgumentError(f"{what} must be a non-empty list of d-tuples (N, d >= 1); got an array of shape "
                            f"{X.shape}")
    return X


def _as_numbers(obj, what: str) -> np.ndarray:
    try:
        return np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"{what} must be numbers (values of the format): {e}") from None


def validate(fmt: Format, activation: str, points, values, upstream, gradients, box: bool = True):
    """Clear errors naming the first offending point: outside the format or the box, repeated,
    non-finite targets, targets that are not values of the format, h* = 0 with g* != 0.  Targets may be
    callables (``evaluate_callables``)."""
    X = as_points(points)
    n, d = X.shape
    values, upstream, gradients = evaluate_callables(fmt, X, values, upstream, gradients)
    f = _as_numbers(values, "values").reshape(-1)
    h = _as_numbers(upstream, "upstream values").reshape(-1)
    g = _as_numbers(gradients, "gradients")
    g = g.reshape(n, -1) if g.size == n * d else None
    if f.shape[0] != n or h.shape[0] != n or g is None:
        raise CondcheckError(f"{n} points need {n} values, {n} upstream values and {n} x {d} gradients")
    bound = box_bound(activation, fmt)

    def where(i):
        return f"point {i + 1} {X[i].tolist()}"
    if all_valid(fmt, X, f, h, g, bound if box else None):
        n_loop = 0       # the loop below would raise nothing: skip its per-number exact membership tests
    else:
        n_loop = n
    for i in range(n_loop):
        for name, arr in (("point", X[i]), ("value", [f[i]]), ("upstream", [h[i]]), ("gradient", g[i])):
            for v in arr:
                if not np.isfinite(v):
                    raise CondcheckError(f"{where(i)}: the {name} {float(v)!r} is not finite (Inf and NaN are not allowed)")
                if not fmt.contains(v):
                    raise CondcheckError(f"{where(i)}: the {name} {float(v)!r} is not a value of {fmt.name}")
        if box and np.any(np.abs(X[i]) > bound):
            raise CondcheckError(f"{where(i)} is outside the box [-{bound:g}, {bound:g}]^{d} of {activation} on {fmt.name}")
        if h[i] == 0 and np.any(g[i] != 0):
            raise CondcheckError(f"{where(i)}: upstream h* = 0 but gradient g* != 0 (AD maps a zero upstream to a "
                                 f"zero gradient)")
    _, first, counts = np.unique(X, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        rep = X[first[np.nonzero(counts > 1)[0][0]]]
        i = int(np.nonzero((X == rep).all(axis=1))[0][1])
        raise CondcheckError(f"{where(i)} is repeated")
    return X, f, h, g


# ---- Theorem 7: tables g*(x, y) odd in the upstream y -------------------------------------------------------
def as_values(arr, fmt: Format, what: str) -> np.ndarray:
    """``arr`` as a float array, each entry a finite value of fmt, else TargetError naming the first."""
    a = np.asarray(arr, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(a)
    if bad.any():
        raise TargetError(f"{what} {float(a[bad].ravel()[0])!r} is not finite")
    r, over = mul_array(a, np.ones_like(a), fmt)
    bad = over | (r != a)
    if bad.any():
        raise TargetError(f"{what} {float(a[bad].ravel()[0])!r} is not a value of {fmt.name}")
    return a


def point_text(x) -> str:
    """A point for a message: the number for d = 1, the tuple otherwise."""
    x = np.atleast_1d(np.asarray(x, float))
    return repr(float(x[0])) if x.size == 1 else "(" + ", ".join(repr(float(v)) for v in x) + ")"


def gradient_table(fmt: Format, points: np.ndarray, upstream: np.ndarray, g) -> np.ndarray:
    """The table G[i, j, c] = coordinate c of g*(points[i], upstream[j]), shape (N, K, d), from an array
    ((N, K, d); for d = 1 also (N, K), and (K,) for one point) or a callable g(x, y) (x a number for d = 1,
    a tuple otherwise; returning a number for d = 1, d numbers otherwise)."""
    N, d = points.shape
    if callable(g):
        def at(x, y):
            r = g(float(x[0]), float(y)) if d == 1 else g(tuple(float(v) for v in x), float(y))
            return np.atleast_1d(np.asarray(r, float)).tolist()
        G = np.array([[at(x, y) for y in upstream] for x in points], dtype=float)
    else:
        G = np.asarray(g, dtype=float)
        if G.ndim == 1 and d == 1:
            G = G.reshape(1, -1)
        if G.ndim == 2 and d == 1:
            G = G[:, :, None]
    if G.shape != (N, len(upstream), d):
        raise TargetError(f"gradient table has shape {G.shape}, expected ({N}, {len(upstream)}, {d}) "
                          f"(points x upstream values x coordinates; (N, K) for d = 1)")
    return as_values(G, fmt, "target gradient")


def check_odd(points: np.ndarray, upstream: np.ndarray, G: np.ndarray) -> None:
    """Refuse a table that is not odd in y (g*(x, -y) = -g*(x, y), so g*(x, 0) = 0), naming the first (x, y).
    G: (N, K) or (N, K, d)."""
    G = G if G.ndim == 3 else G[:, :, None]
    index = {}
    for j, y in enumerate(upstream):
        key = float(y)
        if key in index and G[:, index[key]].tolist() != G[:, j].tolist():
            i = int(np.argwhere(G[:, index[key]] != G[:, j])[0][0])
            raise TargetError(f"upstream value y = {key!r} is listed twice with different targets at "
                              f"x = {point_text(points[i])}")
        index[key] = j
    ys = np.asarray(upstream, float)
    partner = np.array([index.get(-float(y), -1) for y in ys])
    for i, x in enumerate(points):
        for j, y in enumerate(ys.tolist()):
            g = G[i, j]
            if y == 0 and (g != 0).any():
                raise TargetError(f"g* is not odd in y: at x = {point_text(x)}, y = 0 the target is {point_text(g)}, but "
                                  f"AD gives D_(f,x)(0) = 0 for every network")
            if partner[j] >= 0 and (G[i, partner[j]] != -g).any():
                raise TargetError(f"g* is not odd in y: at x = {point_text(x)}, y = {y!r} the target is {point_text(g)} "
                                  f"but at y = {-y!r} it is {point_text(G[i, partner[j]])}; AD gives "
                                  f"D_(f,x)(-y) = -D_(f,x)(y) for every network")


def validate_odd_targets(fmt: Format, activation: str, X: np.ndarray, values, table, upstream, box: float,
                         H: float):
    """(points, values, upstream, gradients (N, K, d)) of a Theorem 7 claim, checked: the points (X, of
    shape (N, d)) and targets values of fmt, the points inside the box [-box, box]^d and distinct, one
    value per point, the upstream values (default: every value with |y| <= H) at most H_sigma = H in
    magnitude, the table (``gradient_table``) odd in y (``check_odd``).  TargetError names the first
    offending entry."""
    X = as_values(X, fmt, "input point")
    out = np.argwhere(np.abs(X) > box)
    if out.size:
        raise TargetError(f"input point {point_text(X[out[0][0]])} is outside the box "
                          f"[-{box}, {box}]^{X.shape[1]} (M_sigma of {activation})")
    if len(np.unique(X, axis=0)) != len(X):
        raise TargetError("the domain lists a point twice")
    fv = as_values(np.asarray(values, dtype=float).reshape(-1), fmt, "target value")
    if fv.shape != (X.shape[0],):
        raise TargetError(f"expected {X.shape[0]} target values, got {fv.shape[0]}")
    if upstream is None:
        Y = fmt.values().astype(float)
        Y = Y[np.abs(Y) <= H]
    else:
        Y = as_values(np.asarray(upstream, dtype=float).reshape(-1), fmt, "upstream value")
        big = np.flatnonzero(np.abs(Y) > H)
        if big.size:
            raise TargetError(f"upstream value y = {float(Y[big[0]])!r} exceeds H_sigma = {float(H)!r} of {activation} on {fmt.name}")
    G = gradient_table(fmt, X, Y, table)
    check_odd(X, Y, G)
    return X, fv, Y, G


def random_odd_tables(fmt, points, upstream_values, seed: int, zero_share: float = 0.1, per_coordinate=False):
    """(values, gradients) with a seed: f*(x) and g*(x, y) (shape (N, K)) odd in y, for Theorem 7 (d = 1).
    ``per_coordinate``: one table per coordinate of the points, gradients of shape (N, K, d) (the first
    coordinate's table is the d = 1 table of the same seed).

    f*(x) is drawn from every value of the format.  For each point, g*(x, v) is drawn from every value of
    the format for each distinct positive v = |y| listed, a share ``zero_share`` of them set to 0, and,
    when there are at least two positive v, one set to +Omega and one to -Omega (the largest values);
    then g*(x, -v) = -g*(x, v) and g*(x, 0) = 0.
    """
    fmt = get_format(fmt)
    rng = np.random.default_rng(seed)
    V = fmt.values()
    X = np.asarray(points, dtype=float).reshape(len(points), -1)
    Y = np.asarray(upstream_values, dtype=float).reshape(-1)
    pos = np.unique(np.abs(Y[Y != 0]))
    f = rng.choice(V, X.shape[0])
    Om = float(fmt.max)
    G = np.zeros((X.shape[0], Y.shape[0]))
    idx = np.searchsorted(pos, np.abs(Y))
    nz = Y != 0
    for i in range(X.shape[0]):
        t = rng.choice(V, len(pos)).astype(float)
        t[rng.random(len(pos)) < zero_share] = 0.0
        if len(pos) >= 2:
            a, b = rng.choice(len(pos), 2, replace=False)
            t[a], t[b] = Om, -Om
        G[i, nz] = np.sign(Y[nz]) * t[idx[nz]]
    if not per_coordinate:
        return f, G
    tabs = [G] + [random_odd_tables(fmt, points, upstream_values, seed + 1000 * c, zero_share)[1]
                  for c in range(1, X.shape[1])]
    return f, np.stack(tabs, axis=2)


def load_odd_tables(path: str, n: int, d: int = 1):
    """A Theorem 7 targets file: JSON with "values" (n), "upstream" (K) and "gradients" (n x K, or
    n x K x d), numbers or float.hex() strings.  Returns (values, upstream, gradients (n, K) for d = 1,
    (n, K, d) otherwise).
    Oddness in y is checked by the constructor (which names the first offending (x, y))."""
    obj = _targets_object(path, TARGET_FUNCTIONS)
    out = []
    for key in TARGET_FUNCTIONS:
        a = _nested(obj[key], f"targets file {path!r}: {key!r}")
        if a.ndim == 0:
            raise ArgumentError(f"targets file {path!r}: {key!r} must be a list")
        out.append(a)
    f, y, g = out
    f, y = f.reshape(-1), y.reshape(-1)
    if y.size == 0:
        raise ArgumentError(f"targets file {path!r}: 'upstream' lists no y (at least one is needed)")
    if g.ndim == 3 and g.shape[2] == 1 and d == 1:
        g = g[:, :, 0]
    if f.shape != (n,):
        raise CondcheckError(f"targets file {path!r}: {n} points need {n} values, got {f.size}")
    want = (n, y.shape[0]) if d == 1 else (n, y.shape[0], d)
    if g.shape != want:
        raise CondcheckError(f"targets file {path!r}: 'gradients' has shape {g.shape}, expected {want} "
                             f"(points x upstream values{'' if d == 1 else ' x coordinates'})")
    return f, y, g
