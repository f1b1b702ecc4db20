"""Theorem 7: one network whose AD output is an arbitrary odd function of the upstream y.

Status: any finite domain inside the box |x_c| <= M_sigma (d = 1: the full float8 boxes, all six
activations; d = 2: grids of 64 points, see tests/test_theorem7_box.py), every y with |y| <= H_sigma
(both as ``check_activation`` reports them), enumerable formats of at most 16 bits.  Two constructions:

* relu: its own (the first part of this docstring; checked on float6_e3m2fn and float8_e4m3; it needs a
  value strictly between 1/2 and 1, so float4_e2m1fn is refused, although a closure search shows its
  odd tables are reachable with sums, tests/test_theorem7.py);
* any activation satisfying Conditions 1-3 (the generic construction, "Any activation" below), which
  reads only the rounded table (sigma~, sigma~' on every value) and Condition 1's dead tail, never the
  activation's name.  Checked: elu, gelu, swish, tanh, sigmoid (and relu through ``generic=True``) on
  float8_e4m3 and float8_e5m2.

At a fixed input x every ReLU neuron has sigma~' in {0, 1}, so the AD output ``D(y) = D_(f,x)(y)`` is a
function of the upstream y built only from rounded products by fixed weights and rounded sums in the
order of SPEC 2.3.  Scale equivariance (``RN(2z) = 2 RN(z)`` in the normal range) says that any
nonlinearity in y must come from the subnormal range; the construction uses it three ways.

1. *Threshold.*  A chain of rounded multiplications ``N(y) = RN(...RN(RN(y c_1) c_2)... c_r)`` with
   positive weights is odd and monotone in y (RN is monotone), so ``{y > 0 : N(y) != 0}`` is an interval
   ``[t, Omega]``.  For every positive value t of the format a prefix (c_1, ..., c_r) with that threshold
   is found by a breadth-first search over chains of weights in (0, 1] (``threshold_prefixes``): r <= 3
   for float6_e3m2fn and float8_e4m3 (checked for every t, every y).
2. *Saturation (compression).*  With ``h = succ(1/2)`` the product ``RN(u h)`` maps s (the smallest
   subnormal) to s (``s h > s/2``) and strictly lowers every ``u >= 2s`` (``u (1 - h) >= 2s (1/2 - 2^-M-1)``
   rounds down by at least s), so after enough layers every nonzero value becomes exactly ``sign(y) s``:
   the chain ``I_t(y) = sign(y) s [|y| >= t]`` is an exact saturating indicator (checked for every y).
   Each layer at most halves the dynamic range, so this costs about ``log2(Omega c_r / s)`` layers.
3. *Amplification.*  ``sign(y) s`` is multiplied by powers of two and finally by the input weight, all
   exact products, to give ``sign(y) d`` for any value d of the format.

Point indicators and the table.  With v_1 < ... < v_n the positive values up to max|y| and
``d_k = g*(x, v_k)``, the first layer holds, left to right, the pairs ``(+d_k I_(v_k), -d_k I_(v_(k+1)))``.
The input gradient is their left-to-right rounded sum.  At ``|y| = v_k`` both members of every pair j < k
are on and pair k has only its first member on, so the partial sums run ``d_1, 0, d_2, 0, ..., d_k, d_k,
..., d_k``: every partial sum is a value of the format and ``D(y) = sign(y) d_k = g*(x, y)`` exactly, for
every odd table.  Pairs with ``d_k = 0`` are left out.

The forward pass.  Every chain neuron is a relay: one input weight (the backward factor) and a bias that
makes its pre-activation the smallest positive value reachable (ReLU'(z) = 1 needs z > 0; a small forward
value keeps the next product finite, which decides how the amplification is spread over layers).  The
output row is ``C (+) (chain terms) (+) (-C)`` then the bias f*(x): the chain terms are below a quarter
ulp of C, so they are absorbed, ``C - C = 0`` and ``f(x) = f*(x)``, while AD still sees their weights.
C comes from two constant neurons (zero input weights, bias C), whose backward values go nowhere.

Several points (``_construct_gated``): every chain of point x_i starts with a two-sided gate whose
weights are +-1 (so no backward product can overflow, even for |y| = Omega), and every point gets a value
neuron fed only by neurons that are dead at that point (zero AD gradient); see that function.

Sizes (measured; paper bound 2^(E+1) + 2M + 9): float6_e3m2fn depth 18 (one point) / 20 (gated), bound 29;
float8_e4m3 depth 27 / 29, bound 47.  Width: one neuron per chain per layer, two chains per nonzero
|y|-value per point (float8_e4m3, one point: 239), plus 5 first-layer neurons per gated chain and the
value ladders.

Any activation (``_Act``, ``_Chains``, ``_construct_generic_one``, ``_construct_generic_gated``).
At a fixed x every neuron sits at a fixed pre-activation z, so the backward pass multiplies by the fixed
sigma~'(z).  The generic construction puts every chain neuron, at its point, on a *pass state*: a live z
(above the dead tail) with sigma~'(z) = d, where d is the largest power of two in (0, 1] that sigma~'
takes there (1 for gelu, swish, elu, tanh and relu; 1/4 for sigmoid, whose derivative is at most 1/4).
One chain layer then acts on the backward value as the *composite step* u -> RN(RN(u w) d) (the weight
into the next layer first, then the derivative: SPEC 2.3), and everything above is redone with composite
steps, so the factor d is accounted for exactly where it is applied, never by dividing afterwards
(RN(RN(u/4) 4) != u for subnormal u, which is where the thresholds live):

* thresholds: the same breadth-first search over chains of composite steps, on the positive y <= max|y|
  (``generic_threshold_prefixes``; every threshold up to H_sigma is found, r <= 3);
* saturation: one weight repeated where one exists (d = 1: succ(1/2), as above), otherwise a beam search
  over weight sequences (d = 1/4 on float8_e4m3: the integer map k -> RN(RN(k w s) / 4) / s has no w that
  fixes 1 and lowers 2; a sequence reaching one value c for every input exists) (``generic_compression``);
  the saturated value c need not be s;
* amplification: weights 2^k >= 1/d give the exact net factor 2^k d (c 2^k is exact, and so is the
  division by 1/d of a multiple of 4s), the input weight w_1 > 0 is the rest (|tau| / (c 2^K) a value);
  where the last product w_1 a would overflow (sigmoid at x = 64 with tau = Omega) two chains carry
  tau/2 each, side by side (tau/2 (+) tau/2 = tau; the pairs' partial sums stay values);
* identity padding is the composite step (1/d, d), exact while |u/d| <= Omega;
* relays: the bias puts RN(RN(w a) + b) on a pass state, smallest |sigma~| first (``_Act.relay_bias``);
  each chain's backward output is recomputed exactly at y = pred(t), t and max|y| (``_Chains.build``:
  all its factors are positive but the signed output weight and RN is monotone, so |output| is
  nondecreasing in |y| and these three values decide every y);
* the sign of a chain sits in its output weight (RN is odd): the input weight stays positive, so the
  chain's live value stays above its off value (see the gates);
* absorption: C = 2^e_max is the left-to-right sum of n constant neurons sigma~(b) = K (a power of two)
  with weight C/(nK) each (every partial sum exact), n the fewest with (C/(nK)) H_sigma <= Omega (sigmoid
  and tanh take at most 1, so one weight C would overflow backward); -C the same way after the chains.

Several points, any activation (``_construct_generic_gated``; condcheck.theorem5's 1-D machinery for
layers 1-3).  Layer 1: monotone separators for every gap between consecutive domain values, constant
neurons, sources; layer 2: steps (a separator, snapped by a chain of rounded sums of succ(2^k) constants
into the dead tail on one side and far from it on the other), pass neurons P2; layer 3: boosts (L stays
dead, the on values move far from L), pass neurons P3; layer 4: one gate per point and *pass plan*,
sigma~(sum beta_j boost_j + a_g P3 + gamma): live on a pass state at its point (its gating steps, the
down-step below and the up-step above, are dead there, so no gradient enters them), dead at every other
point (a gating step is on and pushes it into the dead tail).  Then the chains of the point read their
gate (first chain neuron, weight w_1), so the gate's backward value is the left-to-right sum of the
point's chain contributions: the paired-indicator sum above, lam g*(x_i, y).  The pass path carries it to
x: sigma~'(G) = d, a_g, d, a3, d, a2, d, w_s (source T(w_s x + b_s) at a pass state), chosen per |g| among
*pass plans* (lam, a_g, a3, a2, w_s, n_src, sign) that are exact for that g (``_pass_plans``: for
sigmoid, small |g| need lam = 4 and weights 4 beside each 1/4, large |g| need two sources carrying g/2
each, since w_s sigma~'(S) <= 3.75/4 < 1 with |w_s| 64 <= Omega; with both box edges +-64 in the domain
w_s x + b_s must stay finite at both, so w_s = 1 and |g| > 120 needs four sources carrying g/4), that keep the gate's backward value
times its gating weights finite, and whose forward values stay finite on the whole domain (negative
a2, a3 keep them small: sigma~ is bounded below).  At the other points the gate is dead (sigma~' = 0):
the chains run on fixed *off* states (the relay biases prefer an off pre-activation in the dead tail,
which blocks the chain there); their outputs are absorbed as well and their backward sums into the dead
gate are checked finite.  Values: the boosts are relayed (L stays dead, no gradient ever flows through
them: at a point its gating relays are dead, elsewhere the value gate is dead) to layer L-3; a value gate
at L-2 (live only at its point) and V' = sigma~(a V + c) at L-1 mapping L to a zero of sigma~ and the live
value to a power of two P, output weight f*/P, summed after -C (``_value_branch``: every product of its
backward chain checked finite at |y| = H_sigma, which decides every smaller |y| since RN is monotone).
A value whose branch would overflow is split into powers of two (exact partial sums), each part with
its own relays.  Measured (float8_e4m3, 8 random points, random odd tables): depth 21 (tanh) to 32
(gelu), bound 47; float8_e5m2 see the tests and README.

d >= 2 (generic construction only): one *unit* per (point, coordinate c), each with its own gates, chains
and pass paths whose sources read x_c only, realizing the table g*_c(x, y); the steps are built per
coordinate (two per gap between consecutive values of that coordinate, as in theorem5), and the gating
steps of a point are those around it on every coordinate: all dead at the point, one of them on at every
other point of the domain.  relu's own construction is d = 1 only and is the default up to 64 points
(beyond that its value ladders, growing as N^2 in width, make it wider than the generic one).

Speed on many points: the searches are cached per (format, activation) (threshold prefixes, pass
plans, compressions) and per chain (amplifications, relay tails, whole chains: a box has tens of
thousands of chains but few distinct ones), the chains are checked on every y at once
(``_Chains.check_built``), the value-branch candidates are screened at once
(``_value_candidates_finite``), and the layers are assembled from coordinate lists.

Every network is verified exactly, on every listed y, before it is returned, with the sparse interpreter
(``condcheck.sparse_ad``: the dense interpreter's numbers, computed once per group of points whose
backward values provably coincide; tests/test_sparse_ad.py checks it against the dense and the exact
interpreters).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from .constructors.errors import ConstructionError, TargetError
from .errors import CondcheckError
from .formats import Format, get_format
from .network import Layer, Network
from .ops import add_array, add_float, mul_array, mul_float


# ---- exact primitives on arrays (every y at once) ------------------------------------------------------
def rn_mul(a, w, fmt: Format) -> np.ndarray:
    """RN_F(a * w) elementwise; +-inf where it overflows (never silently), NaN for inf * 0."""
    a, w = np.broadcast_arrays(np.asarray(a, float), np.asarray(w, float))
    with np.errstate(invalid="ignore", over="ignore"):
        r, over = mul_array(a, w, fmt)
        return np.where(over, np.copysign(np.inf, a * w), r)


def rn_add(a, b, fmt: Format) -> np.ndarray:
    r, over = add_array(np.asarray(a, float), np.asarray(b, float), fmt)
    return np.where(over, np.inf, r)


def chain(y, weights, fmt: Format) -> np.ndarray:
    """The backward value of a chain of relays: RN(...RN(RN(y w_1) w_2)... w_k) for every y."""
    u = np.asarray(y, float)
    for w in weights:
        u = rn_mul(u, w, fmt)
    return u


def underflow_threshold(y, k: int, fmt: Format) -> np.ndarray:
    """RN(RN(y 2^-k) 2^k): y rounded to the grid s 2^k where y 2^-k falls in the subnormal range."""
    return chain(y, [2.0 ** -k, 2.0 ** k], fmt)


def subnormal_quantizer(y, c: float, fmt: Format) -> np.ndarray:
    """RN(y c) where |y c| < 2^(e_min+1): s * round_half_even(y c / s)."""
    return chain(y, [c], fmt)


def positive_values(fmt: Format) -> np.ndarray:
    v = fmt.values()
    return v[v > 0]


def compression_weight(fmt: Format) -> float:
    """h = the smallest value above 1/2: RN(s h) = s and RN(u h) < u for every u >= 2s."""
    h = float(fmt.next_up(0.5)) if fmt.contains(0.5) else None
    if h is None or not h < 1:
        raise ConstructionError(f"{fmt.name} has no value strictly between 1/2 and 1, so a single product cannot "
                                f"compress the backward range while keeping the smallest subnormal "
                                f"(saturation step); this format is not supported")
    return h


def saturation_length(u_max: float, fmt: Format) -> int:
    """Number of products by h that take every value in (0, u_max] to s (the smallest subnormal)."""
    h, s = compression_weight(fmt), float(fmt.smallest_subnormal)
    pos = positive_values(fmt)
    u = pos[pos <= u_max]
    n = 0
    while u.size and u.max() > s:
        u = rn_mul(u, h, fmt)
        n += 1
        if n > 4 * (fmt.e_max - fmt.e_min + fmt.M + 4):
            raise ConstructionError("the compression chain does not converge")   # pragma: no cover
    if u.size and not (u == s).all():
        raise ConstructionError("the compression chain sends a nonzero value to zero")  # pragma: no cover
    return n


def saturating_indicator(y, prefix, n_comp: int, fmt: Format) -> np.ndarray:
    """sign(y) s [|y| >= t] when prefix has threshold t and n_comp is long enough (checked by callers)."""
    return chain(y, list(prefix) + [compression_weight(fmt)] * n_comp, fmt)


@lru_cache(maxsize=None)
def _threshold_prefixes_cached(name: str, max_len: int, wide: bool) -> tuple:
    fmt = get_format(name)
    pos = positive_values(fmt)
    mults = pos if wide else pos[pos <= 1]
    return tuple(sorted(_chain_bfs(fmt, pos, mults, 1.0, max_len).items()))


def _chain_bfs(fmt: Format, pos: np.ndarray, mults: np.ndarray, d: float, max_len: int) -> dict[int, tuple]:
    """Breadth-first over chains of steps u -> RN(RN(u w) d) (w in mults) applied to every y in pos:
    {index i: the shortest chain found whose image is nonzero exactly from pos[i] on} (i = 0: the empty
    chain, nonzero iff y != 0).  Rows already seen are not expanded again."""
    n = len(pos)
    found: dict[int, tuple] = {0: ()}
    frontier = {pos.tobytes(): (pos, ())}
    seen = set(frontier)
    for _ in range(max_len):
        if len(found) == n or not frontier:
            break
        states = np.stack([v[0] for v in frontier.values()])
        chains = [v[1] for v in frontier.values()]
        P = rn_mul(states[:, None, :], mults[None, :, None], fmt)       # (state, multiplier, y)
        if d != 1.0:
            P = rn_mul(P, d, fmt)
        ok = np.isfinite(P).all(axis=2) & (P != 0).any(axis=2)
        new = {}
        for a, b in zip(*np.nonzero(ok)):
            row = P[a, b]
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            ch = chains[a] + (float(mults[b]),)
            new[key] = (row, ch)
            i = int(np.argmax(row != 0))
            if i not in found or len(ch) < len(found[i]):
                found[i] = ch
        frontier = new
    return found


def threshold_prefixes(fmt, max_len: int = 4) -> dict[float, tuple]:
    """For every positive value t reachable: a chain of weights whose product chain is nonzero iff |y| >= t.

    Breadth-first over chains of weights in (0, 1] (then any weight, without overflow, for the thresholds
    still missing), deduplicated by the chain's values on every positive y.
    """
    fmt = get_format(fmt)
    pos = positive_values(fmt)
    found = dict(_threshold_prefixes_cached(fmt.name, max_len, False))
    if len(found) < len(pos):
        for i, ch in _threshold_prefixes_cached(fmt.name, max_len, True):
            found.setdefault(i, ch)
    return {float(pos[i]): ch for i, ch in found.items()}


# ---- forward-pass helpers --------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _all_values(name: str) -> np.ndarray:
    return get_format(name).values()


def _smallest_positive_bias(P: float, fmt: Format) -> tuple[float, float]:
    """(b, z): the bias b making z = RN(P + b) the smallest positive value reachable."""
    return _spb_cached(fmt.name, float(P))


@lru_cache(maxsize=None)
def _spb_cached(name: str, P: float) -> tuple[float, float]:
    fmt = get_format(name)
    B = _all_values(name)
    Z = rn_add(np.full_like(B, P), B, fmt)
    ok = np.isfinite(Z) & (Z > 0)
    if not ok.any():
        raise ConstructionError(f"no bias makes the pre-activation {P!r} positive")   # pragma: no cover
    zmin = Z[ok].min()
    cand = np.flatnonzero(ok & (Z == zmin))
    b = B[cand[np.argmin(np.abs(B[cand]))]]
    return float(b), float(zmin)


# ---- targets ------------------------------------------------------------------------------------------------
def _as_values(arr, fmt: Format, what: str) -> np.ndarray:
    a = np.asarray(arr, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(a)
    if bad.any():
        raise TargetError(f"{what} {a[bad].ravel()[0]!r} is not finite")
    r, over = mul_array(a, np.ones_like(a), fmt)
    bad = over | (r != a)
    if bad.any():
        raise TargetError(f"{what} {a[bad].ravel()[0]!r} is not a value of {fmt.name}")
    return a


def _pt(x) -> str:
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
    return _as_values(G, fmt, "target gradient")


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
                              f"x = {_pt(points[i])}")
        index[key] = j
    ys = np.asarray(upstream, float)
    partner = np.array([index.get(-float(y), -1) for y in ys])
    for i, x in enumerate(points):
        for j, y in enumerate(ys.tolist()):
            g = G[i, j]
            if y == 0 and (g != 0).any():
                raise TargetError(f"g* is not odd in y: at x = {_pt(x)}, y = 0 the target is {_pt(g)}, but "
                                  f"AD gives D_(f,x)(0) = 0 for every network")
            if partner[j] >= 0 and (G[i, partner[j]] != -g).any():
                raise TargetError(f"g* is not odd in y: at x = {_pt(x)}, y = {y!r} the target is {_pt(g)} "
                                  f"but at y = {-y!r} it is {_pt(G[i, partner[j]])}; AD gives "
                                  f"D_(f,x)(-y) = -D_(f,x)(y) for every network")


# ---- the construction -----------------------------------------------------------------------------------------
@dataclass
class _Term:
    sign: float                   # +1 or -1: which member of a pair
    d: float                      # the coefficient (a value of the format)
    threshold: float
    weights: list = field(default_factory=list)    # input -> output: w_1 (input weight), ..., w_L (output)
    biases: list = field(default_factory=list)     # hidden layers 1..L-1


@dataclass
class Theorem7Network:
    network: Network
    claim: object
    depth: int
    widths: list
    paper_bound: int
    layers: dict                  # layer budget: prefix, compression, amplification, input
    verification: object = None

    def summary(self) -> str:
        return (f"Theorem 7 network: depth {self.depth} (paper bound 2^(E+1)+2M+9 = {self.paper_bound}), "
                f"max width {max(self.widths[1:])}, layers {self.layers}")


def _decompose(d: float, fmt: Format) -> tuple[float, int]:
    """|d| = s * m * 2^K with m = |w_1| in [1, 2) a value of the format and K >= 0."""
    s = float(fmt.smallest_subnormal)
    N = abs(d) / s                                   # an integer: every value is a multiple of s
    K = int(math.floor(math.log2(N)))
    m = N / 2.0 ** K
    if not fmt.contains(m):
        raise ConstructionError(f"coefficient {d!r}: mantissa {m!r} is not a value of {fmt.name}")  # pragma: no cover
    return m, K


def construct_theorem7(activation, fmt, points, values, gradient_table_or_callable, upstream=None,
                       implementation="exact", verify_result=True, generic=None) -> Theorem7Network:
    """One network with f(x) = values and D_(f,x)(y) = g*(x, y) for every listed y (any d).

    ``gradient_table_or_callable``: an array (N, K, d) aligned with ``upstream`` (d = 1: also (N, K), and
    (K,) for one point), or a callable ``g(x, y)`` (x a number for d = 1, a tuple otherwise).  ``upstream`` defaults to every finite value of the format with
    |y| <= H_sigma (as check_activation reports it: Omega for relu, elu, gelu, swish; 2^(M-1) for
    sigmoid, 2^(M-2) for tanh).  ``generic``: use the activation-generic construction (the default for
    every activation but relu; relu has its own, shallower one, the default up to 64 points and d = 1).
    """
    from .activations import get_activation
    from .errors import UnknownNameError
    from .netfile import Claim

    F = get_format(fmt)
    try:
        name = get_activation(activation).name
    except UnknownNameError as e:
        raise ConstructionError(str(e))
    if generic is None:
        # relu's own construction is shallower, but its value ladders grow as N^2 in width (34,074 neurons
        # at 32 float8_e4m3 points against 6,874 for the generic one; 205,734 on the 193-point box against
        # 41,504): up to 64 points (e.g. the 41-point float6_e3m2fn box) it keeps its smaller depth
        generic = name != "relu" or len(points) > 64
    if not F.enumerable or F.bits > 16:
        raise ConstructionError(f"the Theorem 7 constructor enumerates the format; {F.name} is too large")
    X = np.asarray(points, dtype=float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise TargetError(f"the points must have shape (N, d) with N, d >= 1, got {X.shape}")
    if not generic and (implementation != "exact" or X.shape[1] > 1):
        generic = True                # relu's own construction: d = 1, exact implementation
    act = _Act(name, F, implementation) if generic else None
    X = _as_values(X, F, "input point")
    box = act.M_sigma if generic else 2.0 ** (F.e_max - 2)
    out = np.argwhere(np.abs(X) > box)
    if out.size:
        raise TargetError(f"input point {_pt(X[out[0][0]])} is outside the box [-{box}, {box}]^{X.shape[1]} "
                          f"(M_sigma of {name})")
    if len(np.unique(X, axis=0)) != len(X):
        raise TargetError("the domain lists a point twice")
    fv = _as_values(np.asarray(values, dtype=float).reshape(-1), F, "target value")
    if fv.shape != (X.shape[0],):
        raise TargetError(f"expected {X.shape[0]} target values, got {fv.shape[0]}")
    H = act.H if generic else float(F.Omega)
    if upstream is None:
        Y = F.values().astype(float)
        Y = Y[np.abs(Y) <= H]
    else:
        Y = _as_values(np.asarray(upstream, dtype=float).reshape(-1), F, "upstream value")
        big = np.flatnonzero(np.abs(Y) > H)
        if big.size:
            raise TargetError(f"upstream value y = {Y[big[0]]!r} exceeds H_sigma = {H!r} of {name} on {F.name}")
    G = gradient_table(F, X, Y, gradient_table_or_callable)
    check_odd(X, Y, G)
    if generic:
        try:
            if X.shape[0] == 1:
                return _construct_generic_one(act, F, X, fv, Y, G, implementation, verify_result)
            return _construct_generic_gated(act, F, X, fv, Y, G, implementation, verify_result)
        except (ConstructionError, TargetError):
            raise
        except CondcheckError as e:          # theorem5's ConstructionError from the steps and gates
            raise ConstructionError(str(e)) from e
    G = G[:, :, 0]
    if X.shape[0] > 1:
        return _construct_gated(F, X, fv, Y, G, implementation, verify_result)
    x0, f0 = float(X[0, 0]), float(fv[0])

    # ---- the odd table on the positive values v_1 < ... < v_n up to max|y| --------------------------------
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    prefixes = threshold_prefixes(F)
    terms = _point_terms(F, Y, G[0], prefixes)

    h = compression_weight(F)
    R, n_comp = _chain_lengths(terms, prefixes, ymax, F)

    # amplification: sign(y) s -> (powers of two) -> w_1 = +-m; forward values decide the split
    plans = []
    for t in terms:
        m, K = _decompose(t.d, F)
        w1 = math.copysign(m, t.d) * t.sign
        P = mul_float(w1, x0, F)
        if P is None:
            raise ConstructionError(f"input weight {w1!r} times x = {x0!r} overflows")   # pragma: no cover
        b1, z = _smallest_positive_bias(P, F)
        amps, biases, z = _amplify(z, K, F)
        plans.append((w1, b1, amps, biases, z))
    A = max([len(p[2]) for p in plans], default=0)

    # layers (input -> output): 1 input weight, A amplification, n_comp compression, R prefix (reversed)
    L = 1 + A + n_comp + R
    if L < 2:
        L, A = 2, A + 1          # the zero table: still one hidden layer (for the constants)
    for t, (w1, b1, amps, abias, z) in zip(terms, plans):
        ws, bs = [w1], [b1]
        amps = amps + [1.0] * (A - len(amps))
        abias = abias + [0.0] * (A - len(abias))
        pre = list(prefixes[t.threshold]) + [1.0] * (R - len(prefixes[t.threshold]))
        back = pre + [h] * n_comp            # backward order after the output weight... (output first)
        fwd_rest = list(reversed(back))      # input -> output order of the remaining weights
        ws += amps
        bs += abias
        a = z
        for w in fwd_rest[:-1] if fwd_rest else []:
            P = mul_float(w, a, F)
            if P is None:
                raise ConstructionError("a relay's forward product overflows")            # pragma: no cover
            if w == 1.0 or (P > 0 and w == h):
                b, a = 0.0, P
            else:
                b, a = _smallest_positive_bias(P, F)
            ws.append(w)
            bs.append(b)
        ws.append(fwd_rest[-1] if fwd_rest else 1.0)   # the output weight (first backward factor)
        t.weights, t.biases = ws, bs
        t.last_value = a

    # constant neurons C for the absorbing output sum
    C = 2.0 ** F.e_max
    half_ulp = 2.0 ** (F.e_max - F.M - 1)
    for t in terms:
        out = mul_float(t.weights[-1], t.last_value, F)
        if out is None or abs(out) > half_ulp / 2:      # RN(C + t) = C for |t| <= ulp(C)/4 (C even)
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")

    n = len(terms)
    layers = []
    for l in range(1, L + 1):
        if l == 1:
            rows = n + (2 if L == 2 else 0)
            W = sp.lil_matrix((rows, 1))
            bias = np.zeros(rows)
            off = 1 if L == 2 else 0
            for j, t in enumerate(terms):
                W[j + off, 0] = t.weights[0]
                bias[j + off] = t.biases[0]
            if L == 2:
                bias[0] = bias[-1] = C
        elif l < L:
            rows = n + (2 if l == L - 1 else 0)
            cols = n + (2 if l - 1 == L - 1 else 0)
            W = sp.lil_matrix((rows, cols))
            bias = np.zeros(rows)
            off = 1 if l == L - 1 else 0
            for j, t in enumerate(terms):
                W[j + off, j] = t.weights[l - 1]
                bias[j + off] = t.biases[l - 1]
            if l == L - 1:
                bias[0] = bias[-1] = C
        else:
            W = sp.lil_matrix((1, n + 2))
            W[0, 0] = 1.0
            for j, t in enumerate(terms):
                W[0, j + 1] = t.weights[-1]
            W[0, n + 1] = -1.0
            bias = np.array([f0])
        layers.append(Layer(W.tocsr(), bias))
    net = Network(F, "relu", layers, implementation, 1)
    claim = Claim(7, X, fv, Y, G.reshape(1, -1, 1))
    return _finish(net, claim, {"input": 1, "amplification": A, "compression": n_comp, "threshold prefix": R},
                   verify_result)


#: claims with more points are verified in parts of this many points (``_finish``)
VERIFY_PART_POINTS = 512


def _finish(net, claim, parts: dict, verify_result: bool) -> "Theorem7Network":
    """The result record, with the paper's depth bound, verified exactly unless the caller opts out."""
    from .paper import depth_bounds
    from .verify import verify as _verify
    res = Theorem7Network(net, claim, net.depth, net.widths, depth_bounds(net.format)["theorem7"]["openreview"], parts)
    if verify_result:
        # the sparse interpreter: the dense one's numbers on the active neurons only (condcheck.sparse_ad);
        # beyond VERIFY_PART_POINTS points part by part, each on the network pruned for it (its memory
        # grows with points x upstream values: 2.9 GiB for 1,024 points x 239 y at once)
        if len(claim.points) > VERIFY_PART_POINTS:
            from .interval_pruning import verify_in_parts
            n = len(claim.points)
            vr = verify_in_parts(net, claim, [range(a, min(n, a + VERIFY_PART_POINTS))
                                              for a in range(0, n, VERIFY_PART_POINTS)])
        else:
            vr = _verify(net, claim, method="sparse")
        if not vr.ok:
            raise ConstructionError("the constructed network fails verification: " + vr.summary())
        res.verification = vr
    return res


# ---- several points: gates ---------------------------------------------------------------------------------
def _amplify(z: float, K: int, F: Format):
    """(weights, biases, last forward value): relays multiplying the backward value by 2^K in all, each
    weight the largest power of two whose product with the forward value z stays finite; each bias puts
    the pre-activation on the smallest reachable positive value."""
    amps, biases, rest = [], [], K
    while rest > 0:
        k = rest
        while k > 0 and (mul_float(2.0 ** k, z, F) is None or not F.contains(2.0 ** k)):
            k -= 1
        if k == 0:
            raise ConstructionError(f"cannot amplify past forward value {z!r}")       # pragma: no cover
        b, z = _smallest_positive_bias(mul_float(2.0 ** k, z, F), F)
        amps.append(2.0 ** k)
        biases.append(b)
        rest -= k
    return amps, biases, z


def _chain_lengths(terms, prefixes: dict, ymax: float, F: Format) -> tuple[int, int]:
    """(R, n_comp): the longest threshold chain of the terms, and the compression layers that bring the
    largest chain output (at |y| = ymax) down to the smallest subnormal."""
    R = max([len(prefixes[t.threshold]) for t in terms] + [1])
    n_comp = 0
    for t in terms:
        top = chain(np.array([ymax]), prefixes[t.threshold], F)[0]
        n_comp = max(n_comp, saturation_length(abs(top), F))
    return R, n_comp


def _point_terms(F: Format, Y: np.ndarray, Grow: np.ndarray, prefixes: dict) -> list:
    """The paired saturating-indicator terms of one point's odd table (see the module docstring)."""
    pos = positive_values(F)
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    vs = pos[pos <= ymax]
    table = {}
    for y, g in zip(Y.tolist(), Grow.tolist()):
        if y > 0:
            table[y] = g
        elif y < 0:
            table[-y] = -g
    terms = []
    for k, v in enumerate(vs.tolist()):
        d = table.get(v, 0.0)
        if d == 0:
            continue
        upper = float(vs[k + 1]) if k + 1 < len(vs) else None
        for sign, t in ((1.0, v), (-1.0, upper)):
            if t is None:
                continue
            if t not in prefixes:
                raise ConstructionError(f"no chain of products has threshold {t!r} in {F.name} (needed for the "
                                        f"point indicator of |y| = {v!r})")
            terms.append(_Term(sign, d, t))
    return terms


class _Builder:
    """Neurons layer by layer: each neuron is (inputs [(index in the previous layer, weight)], bias).
    A layer is a sequence of segments: lists of such neurons (``add``) and blocks of one-input neurons
    given as arrays (``add_block``: the relays of tens of thousands of chains), in the order added."""

    def __init__(self, L: int):
        self.L = L
        self.layers = [[] for _ in range(L)]          # per layer: segments, a list or (cols, weights, biases)
        self.count = [0] * L

    def add(self, l: int, inputs, bias: float) -> int:
        segs = self.layers[l - 1]
        if not segs or not isinstance(segs[-1], list):
            segs.append([])
        segs[-1].append((list(inputs), float(bias)))
        self.count[l - 1] += 1
        return self.count[l - 1] - 1

    def add_block(self, l: int, cols, weights, biases) -> np.ndarray:
        """Neurons k = 0, 1, ... each reading one neuron cols[k] of the previous layer with weight
        weights[k], bias biases[k] (the same neurons as ``add`` one at a time); their indices."""
        cols = np.asarray(cols, np.int64)
        weights, biases = np.asarray(weights, float), np.asarray(biases, float)
        if not (cols.shape == weights.shape == biases.shape and cols.ndim == 1):
            raise ConstructionError("internal: a block of neurons with unequal arrays")   # pragma: no cover
        start = self.count[l - 1]
        self.layers[l - 1].append((cols, weights, biases))
        self.count[l - 1] += len(cols)
        return np.arange(start, start + len(cols))

    def relay(self, l_from: int, idx: int, l_to: int) -> int:
        """Identity relays (weight 1, bias 0) from layer l_from to l_to; the index in l_to."""
        for l in range(l_from + 1, l_to + 1):
            idx = self.add(l, [(idx, 1.0)], 0.0)
        return idx

    def network(self, F: Format, implementation: str, activation: str = "relu", input_dim: int = 1) -> Network:
        """The layers as CSR matrices (built from coordinate lists: a box network has ~10^6 weights)."""
        layers = []
        prev = input_dim
        for segs, n in zip(self.layers, self.count):
            rows, cols, data, bias = [], [], [], []
            at = 0
            for seg in segs:
                if isinstance(seg, list):
                    rows.append(np.array([at + i for i, (inputs, _) in enumerate(seg) for _ in inputs], np.int64))
                    cols.append(np.array([j for inputs, _ in seg for j, _ in inputs], np.int64))
                    data.append(np.array([w for inputs, _ in seg for _, w in inputs], float))
                    bias.append(np.array([b for _, b in seg], float))
                    at += len(seg)
                else:
                    c, w, b = seg
                    rows.append(np.arange(at, at + len(c), dtype=np.int64))
                    cols.append(c)
                    data.append(w)
                    bias.append(b)
                    at += len(c)
            cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
            rows, cols, data, bias = cat(rows, np.int64), cat(cols, np.int64), cat(data, float), cat(bias, float)
            W = sp.csr_matrix((data, (rows, cols)), shape=(n, prev))
            if W.nnz != len(data):
                raise ConstructionError("internal: a neuron lists one input twice")       # pragma: no cover
            layers.append(Layer(W, bias))
            prev = n
        return Network(F, activation, layers, implementation, input_dim)


def _construct_gated(F: Format, X, fv, Y, G, implementation, verify_result) -> "Theorem7Network":
    """Several points x_1, ..., x_N (d = 1): one gated family of chains per point, one value neuron per point.

    Gradient chain of point x_i (input -> output): p = ReLU(x - pred(x_i)) and four q = ReLU(x - x_i) in
    layer 1; the gate ReLU(p - q - q - q - q + b) in layer 2 is live only at x_i (p is dead below x_i,
    p - 4q < 0 above it) and its weights are +-1, so at x_i the backward value d passes to p unchanged and
    to the dead q's without overflow.  Then a layer with the mantissa m of d, the amplification by powers
    of two, the compression by h, the threshold prefix and the signed output weight, all weights positive
    except the last: past the dead gate every forward value at another point is at most its value at x_i.
    Value of x_k: two clipped ladders (t_1 = min(t_0, T), t_(j+1) = min(2 t_j, T)) from t_0 = ReLU(+-(x - x_k)),
    dead at x_k and equal
    to T at every other point; V_k = ReLU(c_k - sum of n copies of the ladders' ends) with c_k = |f*(x_k)|
    from a constant neuron, n T >= c_k; relays carry V_k to the output with weight sign(f*(x_k)).  Backward
    through V_k only meets weights +-1 and dead ladders: zero gradient, no overflow.
    """
    from .netfile import Claim

    N = X.shape[0]
    xs = X[:, 0].tolist()
    prefixes = threshold_prefixes(F)
    h = compression_weight(F)
    Om = float(F.Omega)
    ymax = float(np.abs(Y).max()) if Y.size else 0.0

    # gradient chains
    per_point = [_point_terms(F, Y, G[i], prefixes) for i in range(N)]
    all_terms = [t for terms in per_point for t in terms]
    R, n_comp = _chain_lengths(all_terms, prefixes, ymax, F)
    plans = []
    for i, terms in enumerate(per_point):
        xi = xs[i]
        pred = float(F.next_down(xi))
        b_p = -pred
        gap = add_float(xi, b_p, F)
        for t in terms:
            m, K = _decompose(t.d, F)
            b_g, z = _smallest_positive_bias(gap, F)
            P = mul_float(m, z, F)
            b_m, z = _smallest_positive_bias(P, F)
            amps, abias, z = _amplify(z, K, F)
            plans.append((i, t, b_p, b_g, m, b_m, amps, abias, z))
    A = max([len(p[6]) for p in plans], default=0)
    chain_depth = 3 + A + n_comp + R            # layers of a gradient chain, output layer included

    # value ladders
    T = 2.0 ** math.floor(math.log2(Om / 4))
    J = 1
    for k in range(N):
        for j in range(N):
            if j != k:
                dlt = abs(add_float(xs[j], -xs[k], F))
                J = max(J, 1 + (math.ceil(math.log2(T / dlt)) if dlt < T else 0))
    value_depth = J + 3                          # t0, J stages, V, output
    L = max(chain_depth, value_depth, 4)
    pad = L - chain_depth                         # identity layers between amplification and compression

    B = _Builder(L)
    C = 2.0 ** F.e_max
    cp = B.add(L - 1, [], C)                     # the output sum runs C, chain ends, -C, value relays
    # layer 1 order: every p (pairs, point by point), then the q's, then the ladders
    p_idx = [B.add(1, [(0, 1.0)], pl[2]) for pl in plans]
    q_idx = [[B.add(1, [(0, 1.0)], -xs[pl[0]]) for _ in range(4)] for pl in plans]
    ends = []
    for (i, t, b_p, b_g, m, b_m, amps, abias, z), p, qs in zip(plans, p_idx, q_idx):
        g = B.add(2, [(p, 1.0)] + [(q, -1.0) for q in qs], b_g)
        cur = B.add(3, [(g, m)], b_m)
        l = 3
        amps = amps + [1.0] * (A - len(amps))
        abias = abias + [0.0] * (A - len(abias))
        for w, b in zip(amps, abias):
            l += 1
            cur = B.add(l, [(cur, w)], b)
        a = z
        cur = B.relay(l, cur, l + pad)
        l += pad
        pre = list(prefixes[t.threshold]) + [1.0] * (R - len(prefixes[t.threshold]))
        fwd = list(reversed(pre + [h] * n_comp))
        for w in fwd[:-1]:
            l += 1
            P = mul_float(w, a, F)
            if w == 1.0 or (P > 0 and w == h):
                b, a = 0.0, P
            else:
                b, a = _smallest_positive_bias(P, F)
            cur = B.add(l, [(cur, w)], b)
        assert l == L - 1
        sgn = math.copysign(1.0, t.d) * t.sign
        ends.append((cur, sgn * fwd[-1], mul_float(fwd[-1], a, F)))
    cm = B.add(L - 1, [], C)
    for _, _, out in ends:
        if out is None or abs(out) > 2.0 ** (F.e_max - F.M - 2):
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")

    # value neurons
    vends = []
    for k in range(N):
        c = abs(float(fv[k]))
        if c == 0:
            continue
        n = max(1, math.ceil(c / T))
        # the constant comes first in V's sum (columns are summed in index order): c - T - T ... >= -T - T
        const = B.add(J + 1, [], c)
        lad_ends = []
        for sg in (1.0, -1.0):
            t0 = B.add(1, [(0, sg)], -sg * xs[k])
            prev = [(t0, None)]
            for j in range(1, J + 1):
                copies = n if j == J else 1
                # stage 1 clips t0 (up to 2^(e_max-1)) at T; later stages double: t_j = min(2^(j-1) t0, T)
                ins = [(prev[0][0], 1.0)] if j == 1 else [(prev[0][0], 2.0), (prev[0][1], -2.0)]
                cur = []
                for _ in range(copies):
                    a_ = B.add(j + 1, ins, 0.0)
                    b_ = B.add(j + 1, ins, -T)
                    cur.append((a_, b_))
                prev = cur
            lad_ends.append(prev)
        ins = [(const, 1.0)]
        for lad in lad_ends:
            for a_, b_ in lad:
                ins += [(a_, -1.0), (b_, 1.0)]
        v = B.add(J + 2, ins, 0.0)
        v = B.relay(J + 2, v, L - 1)
        vends.append((v, math.copysign(1.0, float(fv[k]))))

    out_in = [(cp, 1.0)] + [(e, w) for e, w, _ in ends] + [(cm, -1.0)] + vends
    B.add(L, out_in, 0.0)
    net = B.network(F, implementation)
    claim = Claim(7, X, fv, Y, G.reshape(N, -1, 1))
    return _finish(net, claim, {"gate": 2, "mantissa": 1, "amplification": A, "padding": pad, "compression": n_comp,
                                "threshold prefix": R, "value ladder stages": J}, verify_result)


# =====================================================================================================
# Generic activations (everything below reads only the rounded table and Condition 1's dead tail)
# =====================================================================================================
def _is_pow2(v: float) -> bool:
    if v == 0 or not math.isfinite(v):
        return False
    return math.frexp(abs(v))[0] == 0.5


class _Act:
    """The rounded activation as the generic construction uses it.

    From the table (every value z of the format: sigma~(z), sigma~'(z)) and Condition 1's witness (the
    dead tail: sigma~ = L and sigma~' = 0 for every z <= z_dead) only; never the activation's name.
    ``d`` is the *pass derivative*: the largest power of two in (0, 1] that sigma~' takes at a live state;
    ``pass_z`` the live states with sigma~' = d, smallest |sigma~| first.
    """

    def __init__(self, activation, F: Format, implementation: str):
        from .activations import get_activation
        from .constructors.witnesses import require_conditions
        from .paper import paper_constants
        from .rounded_activation import get_rounded

        act = get_activation(activation)
        self.name, self.F, self.implementation = act.name, F, implementation
        self.witnesses = require_conditions(act, F, implementation, 7)
        self.L, self.z_dead = self.witnesses.L, self.witnesses.z_dead
        constants = paper_constants(act.name, F)
        H = constants["H_sigma"]
        Ms = constants["M_sigma"]
        if H is None or Ms is None:
            raise ConstructionError(f"the paper states no H_sigma / M_sigma for {act.name}; the Theorem 7 constructor "
                                    f"needs them (the six paper activations)")
        self.H, self.M_sigma = float(H), float(Ms)
        tab = get_rounded(act, F, implementation).table()
        ok = ~(tab.sigma_overflow | tab.dsigma_overflow) & np.isfinite(tab.sigma) & np.isfinite(tab.dsigma)
        self.z, self.t, self.dt = tab.points[ok], tab.sigma[ok], tab.dsigma[ok]
        self._T = dict(zip(self.z.tolist(), self.t.tolist()))
        self._dT = dict(zip(self.z.tolist(), self.dt.tolist()))
        live = self.z > self.z_dead
        cands = sorted({float(v) for v in self.dt[live] if 0 < v <= 1 and _is_pow2(float(v))})
        if not cands:
            raise ConstructionError(f"{act.name} on {F.name}: no live state has sigma~' a power of two in (0, 1]")
        self.d = cands[-1]
        m = live & (self.dt == self.d)
        order = np.lexsort((self.z[m], np.abs(self.t[m])))
        self.pass_z = self.z[m][order]
        self._pass_set = set(self.pass_z.tolist())
        self.values = F.values()
        self._rb = {}

    def T(self, z: float) -> float:
        return self._T[float(z)]

    def dT(self, z: float) -> float:
        return self._dT[float(z)]

    def dead(self, z) -> bool:
        return float(z) <= self.z_dead

    def relay_bias(self, P_on: float, P_off=None):
        """(b, z_on, z_off): a bias putting the pre-activation RN(P_on + b) on a pass state (sigma~' = d).

        Preferred: the off pre-activation RN(P_off + b) dead (then the neuron blocks every backward value
        at the points where its input is the off value), then the smallest |sigma~(z_on)| (small forward
        values keep the next products finite and the chain's output absorbable), then the smallest
        |sigma~'(z_off)|, then the smallest |b|.
        """
        key = (float(P_on), None if P_off is None else float(P_off))
        if key in self._rb:
            return self._rb[key]
        F, B = self.F, self.values
        Zon = rn_add(np.full_like(B, P_on), B, F)
        ok = np.isin(Zon, self.pass_z)
        Zoff = rn_add(np.full_like(B, P_off), B, F) if P_off is not None else np.zeros_like(B)
        ok &= np.isfinite(Zoff) & np.isin(Zoff, self.z)
        if not ok.any():
            raise ConstructionError(f"no bias puts the pre-activation {P_on!r} on a pass state of {self.name}")
        idx = np.flatnonzero(ok)
        ton = np.array([abs(self._T[v]) for v in Zon[idx].tolist()])
        if P_off is not None:
            alive = np.array([0 if v <= self.z_dead else 1 for v in Zoff[idx].tolist()])
            doff = np.array([abs(self._dT[v]) for v in Zoff[idx].tolist()])
            ton = np.maximum(ton, np.array([abs(self._T[v]) for v in Zoff[idx].tolist()]))
        else:
            alive = doff = np.zeros(len(idx))
        k = idx[np.lexsort((np.abs(B[idx]), doff, ton, alive))[0]]
        r = (float(B[k]), float(Zon[k]), None if P_off is None else float(Zoff[k]))
        self._rb[key] = r
        return r


def step_chain(y, steps, fmt: Format) -> np.ndarray:
    """Backward value through composite steps (w, d): u -> RN(RN(u w) d), then a final weight if a float."""
    u = np.asarray(y, float)
    for st in steps:
        if isinstance(st, tuple):
            w, d = st
            u = rn_mul(u, w, fmt)
            if d != 1.0:
                u = rn_mul(u, d, fmt)
        else:
            u = rn_mul(u, st, fmt)
    return u


def step_chain_scalar(y: float, steps, fmt: Format) -> float:
    """``step_chain`` for one value with the scalar fast path; inf where a product overflows."""
    u = float(y)
    for st in steps:
        for w in (st if isinstance(st, tuple) else (st,)):
            if w == 1.0:
                continue
            u = mul_float(u, w, fmt)
            if u is None:
                return math.inf
    return u


@lru_cache(maxsize=None)
def _generic_prefixes_cached(name: str, d: float, ymax: float, max_len: int, wide: bool) -> tuple:
    """Breadth-first over chains of composite steps u -> RN(RN(u w) d), on the positive y <= ymax."""
    fmt = get_format(name)
    allpos = positive_values(fmt)
    pos = allpos[allpos <= ymax]
    mults = allpos if wide else allpos[allpos <= 1.0 / d]
    found = _chain_bfs(fmt, pos, mults, d, max_len)
    return tuple((float(pos[i]), ch) for i, ch in sorted(found.items()))


def generic_threshold_prefixes(fmt, d: float, ymax: float, max_len: int = 4) -> dict:
    """For every positive t <= ymax reachable: weights (w_1, ..., w_r) whose composite chain (each
    step RN(RN(u w_i) d)) is nonzero exactly for |y| >= t (on |y| <= ymax).  d = 1: ``threshold_prefixes``."""
    fmt = get_format(fmt)
    found = dict(_generic_prefixes_cached(fmt.name, float(d), float(ymax), max_len, False))
    pos = positive_values(fmt)
    if len(found) < int((pos <= ymax).sum()):
        for t, ch in _generic_prefixes_cached(fmt.name, float(d), float(ymax), max_len, True):
            found.setdefault(t, ch)
    return found


@lru_cache(maxsize=None)
def generic_compression(name: str, d: float, u_max: float) -> tuple:
    """(weights, c): composite steps u -> RN(RN(u w_i) d) that take every value of (0, u_max] to one
    value c > 0.  First one weight repeated (the fewest steps, then the smallest c; for d = 1 this is
    ``compression_weight`` with c = s); where no single weight saturates (d = 1/4 on float8_e4m3: the
    integer map k -> RN(RN(k w s)/4)/s has no weight fixing 1 and lowering 2), a beam search over
    sequences of weights, keeping the images with the fewest distinct values."""
    F = get_format(name)
    pos = positive_values(F)
    u0 = pos[pos <= u_max]
    if not u0.size:
        return (), float(F.smallest_subnormal)
    cap = 4 * (F.e_max - F.e_min + F.M + 4)
    best = None
    for w in pos.tolist():
        u = u0
        for n in range(1, cap + 1):
            u = step_chain(u, [(w, d)], F)
            if not np.isfinite(u).all() or (u == 0).any():
                break
            if (u == u[0]).all():
                c = float(u[0])
                if step_chain(np.array([c]), [(w, d)], F)[0] == c and (best is None or (n, c) < (best[1], best[2])):
                    best = (w, n, c)
                break
            if best is not None and n >= best[1]:
                break
    if best is not None:
        return (best[0],) * best[1], best[2]
    beam = [(np.unique(u0), ())]
    seen = {np.unique(u0).tobytes()}
    for _ in range(cap):
        cand = []
        for u, ws in beam:
            P = rn_mul(u[None, :], pos[:, None], F)
            if d != 1.0:
                P = rn_mul(P, d, F)
            ok = np.isfinite(P).all(axis=1) & (P != 0).all(axis=1)
            for i in np.flatnonzero(ok):
                v = np.unique(P[i])
                key = v.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                if len(v) == 1:
                    return ws + (float(pos[i]),), float(v[0])
                cand.append((len(v), float(v.max()), v, ws + (float(pos[i]),)))
        if not cand:
            break
        cand.sort(key=lambda r: (r[0], r[1]))
        beam = [(v, ws) for _, _, v, ws in cand[:64]]
    raise ConstructionError(f"{F.name}: no sequence of weights w makes u -> RN(RN(u w) {d!r}) saturate every value "
                            f"up to {u_max!r} at one nonzero value")


def _absorber(act: "_Act", h_max: float):
    """(b, w, n, C): n constant neurons sigma~(b) = K (a positive power of two) with weight w each, whose
    left-to-right sum K w (+) ... (+) K w is C = 2^e_max (n a power of two, every partial sum j K w exact),
    the fewest n with |w| h_max <= Omega (each neuron's backward product stays finite).  The output row
    subtracts them again with weights -w: C - K w - ... = 0 exactly."""
    F = act.F
    consts = [(float(z), float(t)) for z, t in zip(act.z, act.t) if t > 0 and _is_pow2(float(t))]
    if not consts:
        raise ConstructionError(f"{act.name} on {F.name} takes no positive power of two (Condition 1 (c))")
    consts.sort(key=lambda bt: (abs(math.log2(bt[1])), abs(bt[0])))
    C = 2.0 ** F.e_max
    for k in range(0, F.e_max - F.e_min + 1):
        n = 2 ** k
        for b, K in consts:
            w = C / n / K
            if F.contains(w) and abs(w) * h_max <= float(F.Omega):
                return b, w, n, C
    raise ConstructionError(f"no absorbing constant fits upstream values up to {h_max!r} on {F.name}")


class _Chains:
    """Composite-step chains of one activation: thresholds, saturation, amplification (module docstring)."""

    def __init__(self, act: "_Act", ymax: float):
        self.act, self.F, self.d = act, act.F, act.d
        self.ymax = ymax
        self.g = int(round(-math.log2(self.d)))
        self.prefixes = generic_threshold_prefixes(self.F, self.d, ymax) if ymax > 0 else {}
        self.ident = 1.0 / self.d                        # RN(RN(u / d) d) = u while |u / d| <= Omega
        self._checked = set()                            # chains already checked on every y
        self._amp, self._built, self._tails = {}, {}, {}   # caches of amplify, build, the relay tails
        self._steps = {}                                    # (input on, input off, weight) -> relay_bias
        self._pending = []                                  # built chains not yet checked (check_built)

    def lengths(self, terms):
        """(R, compression weights, c): the longest threshold prefix, and the saturation of its outputs."""
        F, d = self.F, self.d
        R = max([len(self.prefixes[t.threshold]) for t in terms] + [1])
        top = 0.0
        for th in {t.threshold for t in terms}:
            top = max(top, abs(step_chain(np.array([self.ymax]), [(w, d) for w in self.prefixes[th]], F)[0]))
        comp, c = generic_compression(F.name, d, float(top)) if top > 0 else ((), float(F.smallest_subnormal))
        return R, list(comp), c

    def amplify(self, tau: float, c: float, a_on: float, a_off=None):
        """(w_1, amps, biases, z_on list, z_off list): the input weight w_1 > 0 and the amplification relays
        (forward order) with RN(...RN(RN(c 2^k_A) d)... 2^k_1) d) w_1) = |tau| exactly; the largest
        amplification first (|w_1| in [1, 2) when c is the smallest subnormal).  Cached: a box has
        tens of thousands of chains but few distinct (|tau|, gate value) pairs."""
        key = (abs(float(tau)), float(c), float(a_on), None if a_off is None else float(a_off))
        if key not in self._amp:
            try:
                self._amp[key] = self._amplify(tau, c, a_on, a_off)
            except ConstructionError as e:
                self._amp[key] = e
        r = self._amp[key]
        if isinstance(r, ConstructionError):
            raise r
        return r

    def _amplify(self, tau: float, c: float, a_on: float, a_off=None):
        F, d, act = self.F, self.d, self.act
        Kmax = int(math.floor(math.log2(abs(tau) / c))) if tau else 0
        err = None
        for K in range(Kmax, -1, -1):
            m = abs(tau) / (c * 2.0 ** K)
            if not F.contains(m):
                continue
            w1 = m              # positive: the on value stays above the off value (the sign is in the output weight)
            try:
                P = mul_float(w1, a_on, F)
                Poff = None if a_off is None else mul_float(w1, a_off, F)
                if P is None or (a_off is not None and Poff is None):
                    continue
                b, z, zo = act.relay_bias(P, Poff)
                amps, biases, zs, zos = [], [b], [z], [zo]
                cur, curo, rest = act.T(z), None if zo is None else act.T(zo), K
                while rest > 0:
                    k = rest + self.g
                    while k > self.g and (not F.contains(2.0 ** k) or mul_float(2.0 ** k, cur, F) is None
                                          or (curo is not None and mul_float(2.0 ** k, curo, F) is None)):
                        k -= 1
                    if k <= self.g:
                        raise ConstructionError(f"cannot amplify past forward value {cur!r}")
                    b, z, zo = act.relay_bias(mul_float(2.0 ** k, cur, F),
                                              None if curo is None else mul_float(2.0 ** k, curo, F))
                    amps.append(2.0 ** k)
                    biases.append(b)
                    zs.append(z)
                    zos.append(zo)
                    cur, curo = act.T(z), None if zo is None else act.T(zo)
                    rest -= k - self.g
            except ConstructionError as e:
                err = e
                continue
            back = step_chain(np.array([c]), [(w, d) for w in reversed(amps)] + [w1], F)[0]
            if back == abs(tau):
                return w1, amps, biases, zs, zos
        raise ConstructionError(f"no amplification takes the saturated value {c!r} exactly to {tau!r}"
                                + (f" ({err})" if err else ""))

    def build(self, t, tau, R, comp, c, w1, amps, biases, zs, zos, A):
        """Weights (input -> output) and biases of one chain, its forward values on and off (cached: the
        chain is a function of these arguments only; callers do not modify the lists)."""
        key = (t.threshold, float(tau), R, tuple(comp), float(c), float(w1), tuple(amps), tuple(biases),
               tuple(zs), tuple(zos), A)
        if key not in self._built:
            self._built[key] = self._build(t, tau, R, comp, c, w1, amps, biases, zs, zos, A)
        return self._built[key]

    def _build(self, t, tau, R, comp, c, w1, amps, biases, zs, zos, A):
        act = self.act
        pad = [self.ident] * (A - len(amps))
        pre = list(self.prefixes[t.threshold]) + [self.ident] * (R - len(self.prefixes[t.threshold]))
        ws = [w1] + list(amps) + pad + list(reversed(comp)) + list(reversed(pre))
        ws[-1] = math.copysign(ws[-1], tau)       # RN is odd: the output weight's sign flips the whole chain
        tb, tz, tzo = self._tail(zs[-1], zos[-1], tuple(ws[len(biases):-1]))
        bs, z_on, z_off = list(biases) + tb, list(zs) + tz, list(zos) + tzo
        dT = act._dT
        steps = tuple(zip(reversed(ws[1:]), [dT[float(z)] for z in reversed(z_on)])) + (ws[0],)
        key = (steps, t.threshold, tau)
        if key not in self._checked:
            self._checked.add(key)
            self._pending.append(key)
        return ws, bs, z_on, z_off

    def _tail(self, z_on: float, z_off, weights: tuple):
        """(biases, z_on list, z_off list) of the relays after the amplification (cached: the tail is
        a function of the last amplification states and the weights only)."""
        key = (z_on, z_off, weights)
        if key in self._tails:
            return self._tails[key]
        F, act = self.F, self.act
        bs, zl, zol = [], [], []
        cur = act.T(z_on)
        curo = None if z_off is None else act.T(z_off)
        memo = self._steps                  # one relay: a function of (its input values, its weight)
        for w in weights:
            sk = (cur, curo, w)
            if sk in memo:
                b, z, zo = memo[sk]
            else:
                P = mul_float(w, cur, F)
                Po = None if curo is None else mul_float(w, curo, F)
                if P is None or (curo is not None and Po is None):
                    raise ConstructionError("a relay's forward product overflows")
                b, z, zo = memo[sk] = act.relay_bias(P, Po)
            bs.append(b)
            zl.append(z)
            zol.append(zo)
            cur, curo = act.T(z), None if zo is None else act.T(zo)
        self._tails[key] = (bs, zl, zol)
        return self._tails[key]

    def check_built(self) -> None:
        """Every chain built so far, exactly, on every positive y: tau for y >= its threshold, 0 below.
        Every factor is positive but the output weight, and RN is monotone, so |chain(y)| is nondecreasing
        in y > 0: 0 just below t and tau at both t and max|y| decide every y.  All chains at once (they
        have one length per construction; grouped by length otherwise)."""
        F = self.F
        by_len = {}
        for key in self._pending:
            by_len.setdefault(len(key[0]), []).append(key)
        self._pending = []
        for keys in by_len.values():
            for steps, _, _ in keys:
                if any(not (w > 0 and dd > 0) for w, dd in steps[1:-1]) or steps[-1] <= 0:
                    raise ConstructionError("internal: a chain factor is not positive")   # pragma: no cover
            th = np.array([k[1] for k in keys])
            tau = np.array([k[2] for k in keys])
            ut, inv = np.unique(th, return_inverse=True)
            below = np.array([float(F.next_down(t)) for t in ut.tolist()])[inv.reshape(-1)]
            Y = np.stack([below, th, np.full(len(keys), self.ymax)], axis=1)         # (chain, 3)
            want = np.stack([np.zeros(len(keys)), tau, tau], axis=1)
            u = Y
            n = len(keys[0][0])
            WD = np.array([key[0][:-1] for key in keys], float).reshape(len(keys), n - 1, 2)   # (chain, step, w|d)
            for k in range(n - 1):
                u = rn_mul(rn_mul(u, WD[:, k, 0:1], F), WD[:, k, 1:2], F)
            u = rn_mul(u, np.array([key[0][-1] for key in keys])[:, None], F)
            bad = (u != want) & (Y > 0)
            if bad.any():
                c, j = np.argwhere(bad)[0]
                raise ConstructionError(f"internal: the chain for threshold {th[c]!r} gives {u[c, j]!r} at "
                                        f"y = {Y[c, j]!r}, not {want[c, j]!r}")


def _plan_chains(ch: "_Chains", items, c: float, a_on: float, a_off=None) -> list:
    """[(term, tau, amplification plan)] for items [(term, tau)]; a tau that no amplification reaches (the
    last product w_1 a_on would overflow, e.g. sigmoid at x = 64 with tau = Omega) becomes two chains
    carrying tau / 2 each, next to each other: their contributions meet in a left-to-right sum, tau/2
    (+) tau/2 = tau exactly, and the partial sums of the paired terms stay values of the format."""
    out = []
    for t, tau in items:
        try:
            out.append((t, tau, ch.amplify(tau, c, a_on, a_off)))
        except ConstructionError:
            half = tau / 2
            if not ch.F.contains(half) or half == 0:
                raise
            p = ch.amplify(half, c, a_on, a_off)
            out += [(t, half, p), (t, half, p)]
    return out


def _construct_generic_one(act: "_Act", F: Format, X, fv, Y, G, implementation, verify_result):
    """One point: every chain starts at its coordinate x_c (input weight w_1) and every hidden neuron sits on
    a pass state; coordinate c's chains realize the table G[0, :, c]."""
    from .netfile import Claim

    d_in = X.shape[1]
    f0 = float(fv[0])
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    ch = _Chains(act, ymax)
    terms = [(c, _point_terms(F, Y, G[0, :, c], ch.prefixes)) for c in range(d_in)]
    R, comp, c_sat = ch.lengths([t for _, ts in terms for t in ts])
    planned = [(c, t, tau, p) for c, ts in terms
               for t, tau, p in _plan_chains(ch, [(t, t.sign * t.d) for t in ts], c_sat, float(X[0, c]))]
    A = max([len(p[1]) for _, _, _, p in planned], default=0)
    built = [(c, ch.build(t, tau, R, comp, c_sat, *p, A)) for c, t, tau, p in planned]
    ch.check_built()
    n_hidden = max([len(b[1]) for _, b in built], default=1)
    L = n_hidden + 1
    bC, wC, nC, C = _absorber(act, ymax)
    quarter = 2.0 ** (math.frexp(C)[1] - 1 - F.M - 2)
    for _, (ws, bs, zon, _) in built:
        out = mul_float(ws[-1], act.T(zon[-1]), F)
        if out is None or abs(out) > quarter:
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")
    B = _Builder(L)
    cps = [(B.add(L - 1, [], bC), wC) for _ in range(nC)]
    ends = []
    for c, (ws, bs, zon, _) in built:
        cur = B.add(1, [(c, ws[0])], bs[0])
        for l in range(2, L):
            cur = B.add(l, [(cur, ws[l - 1])], bs[l - 1])
        ends.append((cur, ws[-1]))
    cms = [(B.add(L - 1, [], bC), -wC) for _ in range(nC)]
    B.add(L, cps + ends + cms, f0)
    net = B.network(F, implementation, act.name, d_in)
    claim = Claim(7, X, fv, Y, G)
    return _finish(net, claim, {"pass derivative": act.d, "amplification": A, "compression": len(comp),
                                "threshold prefix": R}, verify_result)


# ---- several points, any activation: steps and gates ------------------------------------------------------
@lru_cache(maxsize=None)
def _pass_plans_cached(name: str, implementation: str, fmt_name: str):
    act = _Act(name, get_format(fmt_name), implementation)
    return _pass_plans_uncached(act)


def _pass_plans(act: "_Act"):
    return _pass_plans_cached(act.name, act.implementation, act.F.name)


def _pass_plans_uncached(act: "_Act"):
    """Candidate pass paths (lam, a_g, a3, a2, w_s, n_src, sign), preferred first, and for each the positive
    values g of the format it carries exactly: a gate sum sign lam g (a value of the format) goes through
    sigma~'(G) = d, a_g, d, a3, d, a2, d, w_s and arrives as g / n_src at each of n_src sources.  Negative
    a2, a3 first: sigma~ is bounded below, so a negative weight keeps the pass neurons' forward values
    small at every other point of the domain (their products must stay finite there too)."""
    F, d = act.F, act.d
    pos = positive_values(F)
    Om = float(F.Omega)
    pw = [2.0 ** k for k in range(0, 5)]
    spw = [-w for w in pw] + pw
    ws_ok = [2.0 ** k for k in range(-2, 5) if 2.0 ** k * act.M_sigma <= Om and F.contains(2.0 ** k)]
    lams = sorted((2.0 ** k for k in range(-4, 5)), key=lambda v: abs(math.log2(v)))
    # every stage of the chain at once, broadcast over (lam, a_g, a3, a2, w_s, g)
    lg = rn_mul(np.array(lams)[:, None] * 0 + pos[None, :], np.array(lams)[:, None], F)        # (lam, g)
    exact_lg = np.isfinite(lg) & (lg == pos[None, :] * np.array(lams)[:, None])
    u = rn_mul(lg, d, F)[:, None, :] if d != 1.0 else lg[:, None, :]
    u = rn_mul(u, np.array(pw)[None, :, None], F)                                               # (lam, a_g, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, None, :], np.array(spw)[None, None, :, None], F)                         # (.., a3, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, :, None, :], np.array(spw)[None, None, None, :, None], F)                # (.., a2, g)
    if d != 1.0:
        u = rn_mul(u, d, F)
    u = rn_mul(u[:, :, :, :, None, :], np.array(ws_ok)[None, None, None, None, :, None], F)    # (.., w_s, g)
    plans, cover = [], []
    for n_src in (1, 2, 4):
        for il, lam in enumerate(lams):
            for ig, a_g in enumerate(pw):
                for i3, a3 in enumerate(spw):
                    for i2, a2 in enumerate(spw):
                        sign = math.copysign(1.0, a3 * a2)
                        want = sign * pos / n_src
                        for iw, w_s in enumerate(ws_ok):
                            ok = exact_lg[il] & (u[il, ig, i3, i2, iw] == want)
                            if ok.any():
                                plans.append((lam, a_g, a3, a2, w_s, n_src, sign))
                                cover.append(ok)
    return plans, np.array(cover), pos


def _value_parts(F: Format, f: float, cap: float):
    """Signed powers of two, each at most cap, summing to f left to right with every partial sum a value
    of the format (the binary digits of |f|, the ones above cap split into copies of cap); None if a
    partial sum is not a value or there would be more than 64 parts."""
    a, parts = abs(f), []
    while a > 0:
        p = 2.0 ** math.floor(math.log2(a))
        n = int(p // cap) if p > cap else 1
        parts += [min(p, cap)] * n
        a -= p
        if len(parts) > 64:
            return None
    acc = 0.0
    for p in parts:
        acc += p
        if not F.contains(acc):
            return None
    return [math.copysign(p, f) for p in parts]


def _check_value_branch(vctx, br, i: int, ymax: float, F: Format, pre=None) -> None:
    """Every product of a value branch's backward chain finite for |y| <= ymax (RN is monotone, so
    |y| = ymax decides): at its point y A, d4, a, d3, then each gating weight (the relays it reads are
    dead there); at the other points y A, d0, a (its gate is dead there).  All points at once."""
    kit = vctx.kit
    if pre is None:                  # the gate's pre-activations on every point (``_gate`` returns them)
        pre = vctx._gate_row(i, sorted(vctx.gating(i)), br.beta, None, br.gamma)
    pre = np.asarray(pre, float)
    a, c = br.post[0]
    q = kit.add(kit.mul(a, kit.T(pre)), c)
    u = step_chain(np.full(pre.shape, ymax), [br.out_weight], F)
    u = rn_mul(rn_mul(u, kit.dT(q), F), a, F)
    ok = np.isfinite(u).all()
    if ok:
        ui = step_chain(u[i:i + 1], [float(kit.dT(pre[i]))], F)[0]
        ok = np.isfinite(ui) and all(np.isfinite(step_chain(np.array([ui]), [b], F)[0]) for b in br.beta)
    if not ok:
        raise ConstructionError(f"point {i + 1}: the value branch's backward value overflows for |y| = {ymax!r}")


def _value_candidates_finite(kit, F: Format, ymax: float, A: float, a, p_on, z0: float, pre_i: float, betas,
                             others: bool) -> np.ndarray:
    """Mask of the candidates (a, p_on) of a value branch whose backward chain stays finite for |y| <=
    ymax (``_check_value_branch`` when every other point is in the dead tail: there q = z0)."""
    u0 = rn_mul(np.array([ymax]), A, F)
    ok = np.ones(len(a), bool)
    if others:
        ok &= np.isfinite(rn_mul(rn_mul(u0, kit.dT(z0), F), a, F))
    ui = rn_mul(rn_mul(rn_mul(np.full(len(a), u0[0]), np.asarray(kit.dT(p_on), float), F), a, F),
                kit.dT(pre_i), F)
    ok &= np.isfinite(ui)
    for b in betas:
        ok &= np.isfinite(rn_mul(ui, b, F))
    return ok


def _value_candidates_loop(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                           dead_same: bool):
    """The candidates (P, a, c) of ``_value_branch`` for one gate, in its order: every P, every zero z0
    of sigma~, the weights a (smallest |a| first) with c = z0 - RN(a L), RN(a L) + c = z0 (the dead value
    goes to z0) and sigma~(RN(a v) + c) = P for the live value v; at most 16 per (P, z0), after the
    finiteness screen (``_value_candidates_finite``) when the other points are all dead alike.  One
    (P, z0) at a time: the reference for ``_value_candidates``."""
    z = st.z
    v = float(kit.T(pre[i]))
    r_on, o1 = mul_array(A_all, np.full_like(A_all, v), F)
    r_off, o2 = mul_array(A_all, np.full_like(A_all, st.L), F)
    for P in pows:
        for z0 in zeros:
            c, oc = add_array(np.full_like(r_off, z0), -r_off, F)
            p_off, o3 = add_array(r_off, c, F)
            p_on, o4 = add_array(r_on, c, F)
            good = ~(o1 | o2 | oc | o3 | o4) & (p_off == z0) & np.isin(p_on, z)
            if good.any():
                good[good] = kit.T(p_on[good]) == P
            ks = np.flatnonzero(good)
            if ks.size and dead_same:
                ks = ks[_value_candidates_finite(kit, F, ymax, f / P, A_all[ks], p_on[ks], z0, float(pre[i]), betas,
                                                 len(pre) > 1)]
            for k in ks[:16]:
                yield P, float(A_all[k]), float(c[k])


def _value_candidates(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                      dead_same: bool):
    """``_value_candidates_loop``'s candidates, the same ones in the same order, computed for every
    (P, z0) at once: the maps and sigma~ of every (z0, a) once (they do not depend on P), then one
    finiteness screen over the candidates of every P (each entry is computed by the same rounded
    operations as in the loop, elementwise).  Where any of these raises (an activation value or
    derivative that overflows), the loop is replayed instead, so errors surface where it raises them."""
    try:
        blocks = _value_blocks(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same)
    except CondcheckError:
        yield from _value_candidates_loop(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same)
        return
    for P, a, c in blocks:
        for ak, ck in zip(a.tolist(), c.tolist()):
            yield P, ak, ck


def _value_blocks(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                  dead_same: bool) -> list:
    """[(P, weights a, biases c)] per (P, z0) in the loop's order (see ``_value_candidates``)."""
    v = float(kit.T(pre[i]))
    r_on, o1 = mul_array(A_all, np.full_like(A_all, v), F)
    r_off, o2 = mul_array(A_all, np.full_like(A_all, st.L), F)
    nz, nA = len(zeros), len(A_all)
    if not nz or not pows:
        return []
    Z0 = np.broadcast_to(np.asarray(zeros, r_off.dtype)[:, None], (nz, nA))
    c, oc = add_array(Z0, np.broadcast_to(-r_off[None, :], (nz, nA)), F)
    p_off, o3 = add_array(np.broadcast_to(r_off[None, :], (nz, nA)), c, F)
    p_on, o4 = add_array(np.broadcast_to(r_on[None, :], (nz, nA)), c, F)
    base = ~(o1[None, :] | o2[None, :] | oc | o3 | o4) & (p_off == Z0) & np.isin(p_on, st.z)
    Tp = np.full((nz, nA), np.nan)
    if base.any():
        Tp[base] = kit.T(p_on[base])
    blocks = [(P, zi, np.flatnonzero(base[zi] & (Tp[zi] == P))) for P in pows for zi in range(nz)]
    if dead_same:
        live = [(P, zi, ks) for P, zi, ks in blocks if ks.size]
        if live:
            A_e = np.concatenate([np.full(ks.size, f / P) for P, zi, ks in live])
            zi_e = np.concatenate([np.full(ks.size, zi) for P, zi, ks in live])
            k_e = np.concatenate([ks for P, zi, ks in live])
            ok = _value_candidates_finite_all(kit, F, ymax, A_e, A_all[k_e], p_on[zi_e, k_e],
                                              np.asarray(zeros, float)[zi_e], float(pre[i]), betas, len(pre) > 1)
            out, at = [], 0
            for P, zi, ks in blocks:
                n = ks.size
                ks = ks[ok[at:at + n]]
                at += n
                out.append((P, zi, ks))
            blocks = out
    return [(P, A_all[ks[:16]], c[zi, ks[:16]]) for P, zi, ks in blocks]


def _value_candidates_finite_all(kit, F: Format, ymax: float, A, a, p_on, z0, pre_i: float, betas,
                                 others: bool) -> np.ndarray:
    """``_value_candidates_finite`` with an output weight A and a dead-tail state z0 per candidate."""
    u0 = rn_mul(np.full(len(a), ymax), A, F)
    ok = np.ones(len(a), bool)
    if others:
        dz = {q: kit.dT(q) for q in set(np.asarray(z0).tolist())}
        ok &= np.isfinite(rn_mul(rn_mul(u0, np.array([dz[q] for q in np.asarray(z0).tolist()], float), F), a, F))
    ui = rn_mul(rn_mul(rn_mul(u0, np.asarray(kit.dT(p_on), float), F), a, F), kit.dT(pre_i), F)
    ok &= np.isfinite(ui)
    for b in betas:
        ok &= np.isfinite(rn_mul(ui, b, F))
    return ok


def _value_branch(vctx, i: int, f: float, ymax: float, F: Format):
    """A zero-gradient value branch of point i: the gate V = sigma~(sum beta relayed steps + gamma) (live at
    the point, dead elsewhere; theorem5's gate search), then V' = sigma~(a V + c) mapping the dead value L
    to a zero of sigma~ and V's live value to a power of two P, output weight A = f / P.  Candidates: a few
    gate states (far from L first: then a small |a| separates the live value from L), every P with
    f / P a value (the largest P first: a small A), every weight a (smallest |a| first); the first whose backward chain passes ``_check_value_branch`` exactly is taken."""
    from types import SimpleNamespace
    kit, st = vctx.kit, vctx.st
    z, t, dt = st.z, st.t, st.dt
    live = (z > st.z_dead) & (t != st.L)
    zm = (t == 0) & np.isfinite(dt)
    zeros = list(z[zm][np.lexsort((np.abs(z[zm]), np.abs(dt[zm])))][:4])     # T' = 0 first, then near 0
    zeros += [q for q in z[zm][np.argsort(np.abs(z[zm]), kind="stable")][:4] if q not in zeros]
    pows = sorted({float(v) for v in t[live] if v > 0 and _is_pow2(float(v)) and F.contains(f / float(v))},
                  reverse=True)
    okt = live & np.isfinite(t)
    targets = list(z[okt][np.lexsort((np.abs(dt[okt]), -np.abs(t[okt] - st.L)))])
    A_all = F.values()
    A_all = A_all[A_all != 0]
    A_all = A_all[np.argsort(np.abs(A_all), kind="stable")]
    err = "no gate"
    for _ in range(16):
        try:
            betas, gamma, pre = vctx._gate(i, None, targets, small_first=False)
        except CondcheckError as e:
            err = str(e)
            break
        targets.remove(float(pre[i]))
        # the other points sit in the dead tail (sigma~ = L there): their backward chains are all alike,
        # so the candidates can be screened at once (``_value_candidates_finite``); the chosen one is
        # still checked on every point
        dead_same = bool((np.asarray(kit.T(np.delete(pre, i)), float) == st.L).all())
        for P, a, c in _value_candidates(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same):
            br = SimpleNamespace(gating=sorted(vctx.gating(i)), beta=betas, gamma=gamma,
                                 post=[(a, c)], out_weight=f / P)
            try:
                _check_value_branch(vctx, br, i, ymax, F, pre)
            except CondcheckError as e:
                err = str(e)
                continue
            return br
    raise ConstructionError(f"point {i + 1}: no zero-gradient value branch for {f!r} ({err})")


def _value_branches(vctx, i: int, f: float, ymax: float, F: Format) -> list:
    """The value f* of point i as one or more zero-gradient value branches (theorem5's value gate and V'
    map on the relayed boosts).  Where the backward gain of one branch, |f / P| and the factors behind it,
    would overflow for |y| <= ymax, f is split into powers of two of at most half, a quarter, ... of it
    (their left-to-right sum is exact): each branch then carries a smaller output weight.  One branch
    carrying f whole is tried first (output weight f / P: one gate search instead of one per bit)."""
    err = None
    try:
        return [_value_branch(vctx, i, f, ymax, F)]
    except CondcheckError as e:
        err = e
    cap = float("inf")
    for _ in range(F.M + 6):
        parts = _value_parts(F, f, cap)
        if parts is not None:
            try:
                # the gain check with a margin of 2: each product of the backward chain is rounded,
                # and a rounding up can push a product whose exact value fits just past Omega
                return [_value_branch(vctx, i, p, ymax, F) for p in parts]
            except CondcheckError as e:
                err = e
        cap = 2.0 ** (math.floor(math.log2(abs(f))) - 1) if cap == float("inf") else cap / 2
    raise ConstructionError(f"point {i + 1}: no split of the value {f!r} into zero-gradient branches fits upstream "
                            f"values up to {ymax!r} ({err})")


class _Gating:
    """Layers 1-3 (separators, steps, boosts) built with condcheck.theorem5's machinery, and gates.

    d >= 1 coordinates: two steps per gap between consecutive values of each coordinate (as theorem5
    does); the gating steps of a point are the down-step below and the up-step above it on every
    coordinate: all dead at the point, and at every other point (it differs in some coordinate) one on."""

    def __init__(self, act: "_Act", X, implementation):
        from .theorem5 import Kit, find_states
        from .theorem5.boosts import _boost
        from .theorem5.assemble import _Constants
        from .theorem5.context import _Ctx
        from .separators import separator_chooser
        F = act.F
        self.F, self.act = F, act
        kit = Kit(act.name, F, implementation)
        st = find_states(kit, act.witnesses)
        self.kit, self.st = kit, st
        d = X.shape[1]
        self.coord_vals = [np.unique(X[:, j]) for j in range(d)]
        self.coord_idx = [np.searchsorted(self.coord_vals[j], X[:, j]) for j in range(d)]
        steps, step_pre, step_of = [], [], {}
        for j in range(d):
            vals = self.coord_vals[j]
            choose = separator_chooser(kit, vals) if len(vals) > 1 else None
            for gap in range(1, len(vals)):
                for up in (True, False):
                    step, pre = self._step(kit, st, vals, j, gap, up, choose, _boost)
                    step_of[(j, gap, up)] = len(steps)
                    steps.append(step)
                    step_pre.append(pre)
        self.steps = steps
        self.U_X = [kit.T(p)[self.coord_idx[s.coord]] for s, p in zip(steps, step_pre)]
        cv, ci = self.coord_vals, self.coord_idx

        def gating(zi):
            out = []
            for j in range(d):
                m = ci[j][zi]
                if m > 0:
                    out.append(step_of[(j, m, False)])
                if m < len(cv[j]) - 1:
                    out.append(step_of[(j, m + 1, True)])
            return out

        self.gating = gating
        self.ctx = _Ctx(kit, st, F, X, steps, self.U_X, gating)
        cz, ct = st.constants
        self.const = _Constants(F, cz, ct)
        self._boost, self._Ctx = _boost, _Ctx
        self.X = X

    @staticmethod
    def _step(kit, st, vals, j: int, gap: int, up: bool, choose, _boost):
        """(Step, boosted pre-activations on vals): the separator of the gap (theorem5's chooser), snapped
        by the rounded-sum chain into the dead tail on one side and far from it on the other, boosted."""
        from .theorem5 import Step
        from .theorem5.steps import _chains
        F = kit.fmt
        chs = choose(gap, up)
        if chs is None:
            raise ConstructionError(f"distinguishability fails: no neuron sigma~(w x_{j + 1} + b) separates the "
                                    f"values <= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
        w, b, sg, kappa = chs
        v = kit.add(kit.mul(sg, kit.T(kit.row([(w, vals)], b))), kappa)
        on = v > 0
        k0 = max(math.frexp(float(v[on].min()))[1] - 1 + F.M, F.e_min)
        # the largest K below e_max whose chain works (theorem5's chains, computed in one pass)
        chains = _chains(kit, v, k0)
        pre = None
        for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1]:
            if K not in chains:
                continue
            try:
                pre = kit.add(chains[K], st.z_dead)
                break
            except Exception:
                continue
        if pre is None or not (st.dead(pre[~on]).all() and not st.dead(pre[on]).any()):
            raise ConstructionError(f"the step at coordinate {j + 1}, gap {gap} does not split into dead and "
                                    f"live states")
        tv = kit.T(pre[on]) - st.L
        if (np.sign(tv) == 0).any() or (np.sign(tv) != np.sign(tv[0])).any():
            raise ConstructionError(f"the step at coordinate {j + 1}, gap {gap}: on values on both sides of "
                                    f"{st.L!r}")
        ba, bc = _boost(kit, st, kit.T(pre[on]))
        pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
        tv = kit.T(pre[on]) - st.L
        return Step(j, gap, up, w, b, sg, kappa, k0, K, float(np.abs(tv).min()), float(np.abs(tv).max()),
                    float(np.sign(tv[0])), ba, bc), pre

    def relayed(self, n: int):
        """n relay layers after the boosts: each keeps L dead and the on values live, on one side of L
        (theorem5's boost map).  Returns the (a, c) of every relay and a context over the last values.
        Every step of a layer at once (one row per step): the relays of the box are thousands."""
        import dataclasses
        kit, st, F = self.kit, self.st, self.F
        U = np.array(self.U_X, float).reshape(len(self.U_X), -1)
        steps = list(self.steps)
        maps = []
        for _ in range(n):
            layer = [self._boost(kit, st, u[u != st.L]) for u in U]
            a = np.array([m[0] for m in layer], float)[:, None]
            c = np.array([m[1] for m in layer], float)[:, None]
            new = kit.T(kit.add(kit.mul(a, U), np.broadcast_to(c, U.shape)))
            if ((new != st.L) != (U != st.L)).any():
                raise ConstructionError("internal: a relay of a step changed its dead points")
            U = new
            maps.append(layer)
        if n:
            for i, u in enumerate(U):
                on = u[u != st.L] - st.L
                steps[i] = dataclasses.replace(steps[i], on_min=float(np.abs(on).min()),
                                               on_max=float(np.abs(on).max()), on_sign=float(np.sign(on[0])))
        return maps, self._Ctx(kit, st, F, self.X, steps, list(U), self.gating)


def _chain_off_check(act: "_Act", ws, zon, zoff, ymax: float, quarter: float, C: float) -> float:
    """A chain's forward outputs (on and off) small enough to be absorbed by C, and its backward value
    at |y| = ymax on the off states (where its gate is dead) finite; returns that |value|."""
    F = act.F
    for z in (zon[-1], zoff[-1]):
        out = mul_float(ws[-1], act.T(z), F)
        if out is None or abs(out) > quarter:
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")
    back = step_chain_scalar(ymax, [(w, act.dT(z)) for w, z in zip(reversed(ws[1:]), reversed(zoff))]
                             + [ws[0]], F)
    if not math.isfinite(back):
        raise ConstructionError("a chain's backward value overflows at the points where its gate is dead")
    return abs(back)


def _chains_off_back(act, uniq, by_len, ymax, back):
    """back[k] = the backward value of chain k at the off states (inf where a product overflows)."""
    F = act.F
    for n, ks in by_len.items():
        W = np.array([uniq[k][0] for k in ks], float)                   # (chains, n)
        Z = np.array([uniq[k][2] for k in ks], float)                   # (chains, n - 1)
        zu, inv = np.unique(Z, return_inverse=True)
        D = np.array([act.dT(float(z)) for z in zu.tolist()], float)[inv.reshape(Z.shape)]
        u = np.full(len(ks), float(ymax))
        bad = np.zeros(len(ks), bool)
        cols = []
        for j in range(n - 1, 0, -1):                                   # ws[j], then sigma~'(zoff[j - 1])
            cols += [W[:, j], D[:, j - 1]]
        cols.append(W[:, 0])
        for col in cols:
            one = col == 1.0
            if one.all():
                continue
            r = rn_mul(u, col, F)
            r = np.where(one, u, r)
            bad |= ~np.isfinite(r)
            u = np.where(bad, 0.0, r)
        back[ks] = np.where(bad, np.inf, u)


def _chains_off_check(act: "_Act", built, ymax: float, quarter: float, C: float) -> dict:
    """``_chain_off_check`` of every chain of ``built`` [(gate, ws, bs, zon, zoff)], each distinct one once
    (chains from _Chains.build's cache share their lists): {id(ws): |backward value at the off states|}.
    The backward values of chains of one length are computed together, factor by factor (the same
    rounded products, elementwise; a factor 1 is skipped as there: RN(u 1) = u); a chain whose product
    overflows at some factor is marked, as the scalar loop stops there.  The first failing chain, in
    the order of ``built``, raises ``_chain_off_check``'s error."""
    F = act.F
    uniq, at = [], {}
    for gi, ws, bs, zon, zoff in built:
        if id(ws) not in at:
            at[id(ws)] = len(uniq)
            uniq.append((ws, zon, zoff))
    back = np.full(len(uniq), np.nan)
    by_len = {}
    for k, (ws, zon, zoff) in enumerate(uniq):
        if len(zoff) == len(ws) - 1 and all(z is not None for z in zoff):
            by_len.setdefault(len(ws), []).append(k)
    try:
        _chains_off_back(act, uniq, by_len, ymax, back)
    except (CondcheckError, KeyError):                                  # the scalar loop raises where it should
        back[:] = np.nan
    out = {}
    for k, (ws, zon, zoff) in enumerate(uniq):
        for z in (zon[-1], zoff[-1]):
            o = mul_float(ws[-1], act.T(z), F)
            if o is None or abs(o) > quarter:
                raise ConstructionError(f"a chain's forward output {o!r} is too large to be absorbed by C = {C!r}")
        b = back[k]
        if b != b:                                                      # not computed together: the scalar loop
            b = _chain_off_check(act, ws, zon, zoff, ymax, quarter, C)
        elif not math.isfinite(b):
            raise ConstructionError("a chain's backward value overflows at the points where its gate is dead")
        out[id(ws)] = abs(b)
    return out


def _construct_generic_gated(act: "_Act", F: Format, X, fv, Y, G, implementation, verify_result):
    """Several points, any activation (see the module docstring, "Several points, any activation").

    d >= 2: every gate is checked on every point (theorem5's exact gate sums, ``tuning.EXACT_GATE_POINTS``
    raised to N): the bounds theorem5 takes beyond 512 points combine each gating step's extremes over the
    whole domain, coordinate by coordinate, and on d = 2 sub-boxes of more than 512 points (a 32 x 32
    float8_e4m3 sub-box) they left a corner point without a gate."""
    from .theorem5 import tuning
    if X.shape[1] >= 2 and X.shape[0] > tuning.EXACT_GATE_POINTS:
        with tuning.overridden({"EXACT_GATE_POINTS": X.shape[0]}):
            return _construct_generic_gated_points(act, F, X, fv, Y, G, implementation, verify_result)
    return _construct_generic_gated_points(act, F, X, fv, Y, G, implementation, verify_result)


def _construct_generic_gated_points(act: "_Act", F: Format, X, fv, Y, G, implementation, verify_result):
    from .netfile import Claim

    N = X.shape[0]
    dim = X.shape[1]
    d = act.d
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    ch = _Chains(act, ymax)
    # one unit per (point, coordinate): its own gates, chains and pass paths to that coordinate
    units = [(i, cc) for i in range(N) for cc in range(dim)]
    per_unit = [_point_terms(F, Y, G[i, :, cc], ch.prefixes) for i, cc in units]
    all_terms = [t for ts in per_unit for t in ts]
    R, comp, c = ch.lengths(all_terms)
    gt = _Gating(act, X, implementation)
    kit = gt.kit
    plans, cover, pos = _pass_plans(act)
    col = {v: j for j, v in enumerate(pos.tolist())}

    # gate states: pass states far from L (the first chain neuron then tells the gate's on value from L
    # with a small weight), |sigma~| <= Omega / 4
    far = np.abs(np.array([act.T(z) for z in act.pass_z]) - act.L)
    okg = np.abs(np.array([act.T(z) for z in act.pass_z])) <= float(F.Omega) / 4
    gate_targets = [float(z) for z in act.pass_z[okg][np.argsort(-far[okg], kind="stable")]]

    # groups: each term goes to the first plan that carries its |d| exactly and keeps the gate's backward
    # value lam |d| d times the gating weights (probed: the point's gate without its pass input) below
    # Omega / 4 (at the point the gating steps are dead, but the product must stay finite)
    lams = np.array([p[0] for p in plans])

    def pass_forward(i, cc, plan):
        """The pass path of point i to coordinate cc under a plan, on every point (None where a value
        overflows)."""
        lam, a_g, a3, a2, w_s, n_src, _ = plan
        xi = float(X[i, cc])
        try:
            b_s, z_s, _ = act.relay_bias(mul_float(w_s, xi, F))
            S = kit.T(kit.row([(w_s, X[:, cc])], b_s))
            c2, z2, _ = act.relay_bias(float(kit.row([(a2, S[i:i + 1])] * n_src, 0.0)[0]))
            P2 = kit.T(kit.row([(a2, S)] * n_src, c2))
            c3, z3, _ = act.relay_bias(float(kit.mul(a3, P2[i])))
            P3 = kit.T(kit.row([(a3, P2)], c3))
            kit.row([(a_g, P3)], 0.0)
        except (ConstructionError, CondcheckError):
            return None
        return b_s, c2, c3, P3

    groups = []                                    # (point, coordinate, plan index, [terms], pass forward)
    probes = {}
    for (i, cc), ts in zip(units, per_unit):
        if i not in probes:
            try:
                probe, _, _ = gt.ctx._gate(i, None, gate_targets, small_first=False)
                probes[i] = max([abs(b) for b in probe] + [1.0])
            except CondcheckError:
                probes[i] = 1.0
        bprobe = probes[i]
        byplan, fwd, cands = {}, {}, {}
        for t in ts:
            if abs(t.d) not in cands:          # the plans for |d| (a function of |d| and the probe only)
                cands[abs(t.d)] = np.flatnonzero(cover[:, col[abs(t.d)]]
                                                 & (lams * abs(t.d) * d * bprobe <= float(F.Omega) / 4)).tolist()
            chosen = None
            for k in cands[abs(t.d)]:
                if k not in fwd:
                    fwd[k] = pass_forward(i, cc, plans[k])
                if fwd[k] is not None:
                    chosen = k
                    break
            if chosen is None:
                raise ConstructionError(f"no pass path carries the gradient {t.d!r} exactly without overflow "
                                        f"({act.name}, point {_pt(X[i])}, gating weight {bprobe!r})")
            byplan.setdefault(chosen, []).append(t)
        for k in sorted(byplan):
            groups.append((i, cc, k, byplan[k], fwd[k]))

    # pass paths and gates
    gates = []
    for i, cc, k, ts, (b_s, c2, c3, P3) in groups:
        lam, a_g, a3, a2, w_s, n_src, psign = plans[k]
        xi = _pt(X[i])
        betas, gamma, preG = gt.ctx._gate(i, (a_g, P3), gate_targets, small_first=False)
        if float(preG[i]) not in act._pass_set:
            raise ConstructionError("internal: the gate is not on a pass state")   # pragma: no cover
        gmax = max(abs(t.d) for t in ts) * lam * d
        bmax = max([abs(b) for b in betas] + [0.0])
        if gmax * bmax > float(F.Omega):
            raise ConstructionError(f"point {xi}: the gate's backward value {gmax!r} times its gating weight "
                                    f"{bmax!r} overflows")
        gates.append(dict(i=i, cc=cc, plan=plans[k], terms=ts, b_s=b_s, c2=c2, c3=c3, betas=betas, gamma=gamma,
                          Gz=float(kit.T(preG[i]))))

    # chains after each gate
    chains = []
    for gi, g in enumerate(gates):
        lam, psign = g["plan"][0], g["plan"][6]
        items = [(t, t.sign * t.d * lam * psign) for t in g["terms"]]
        chains += [[gi, t, tau, p] for t, tau, p in _plan_chains(ch, items, c, g["Gz"], act.L)]
    A = max([len(p[3][1]) for p in chains], default=0)
    built = []
    for gi, t, tau, p in chains:
        ws, bs, zon, zoff = ch.build(t, tau, R, comp, c, *p, A)
        built.append((gi, ws, bs, zon, zoff))
    ch.check_built()
    n_chain = max([len(b[2]) for b in built], default=1)
    L = 4 + n_chain + 1
    L = max(L, 7)
    bC, wC, nC, C = _absorber(act, ymax)
    quarter = 2.0 ** (math.frexp(C)[1] - 1 - F.M - 2)
    # at the other points every chain runs on its off states: finite, absorbed, and the backward sum
    # that reaches the (dead) gate finite
    off_sum = {}
    seen = _chains_off_check(act, built, ymax, quarter, C)
    for gi, ws, bs, zon, zoff in built:
        off_sum[gi] = off_sum.get(gi, 0.0) + seen[id(ws)]
    if off_sum and max(off_sum.values()) > float(F.Omega):
        raise ConstructionError("the backward sum at a dead gate may overflow")
    if any(len(b[2]) != L - 5 for b in built):
        raise ConstructionError("internal: a chain does not end in layer L-1")             # pragma: no cover

    # values: relayed boosts, value gates at L-2, V' at L-1
    n_rel = (L - 3) - 3
    maps, vctx = gt.relayed(n_rel)
    vbr = []                                       # (branch, first of its point?)
    for i in range(N):
        if fv[i] != 0:
            vbr += [(br, j == 0) for j, br in enumerate(_value_branches(vctx, i, float(fv[i]), ymax, F))]

    # ---- assemble -----------------------------------------------------------------------------------------
    B = _Builder(L)
    const, st = gt.const, gt.st
    sep = [B.add(1, [(s.coord, s.w)], s.b) for s in gt.steps]
    kap_col = {}
    for s in gt.steps:
        b, _ = const.pick(s.kappa)
        if b not in kap_col:
            kap_col[b] = B.add(1, [], b)
    levels = sorted({k for s in gt.steps for k in range(s.k0, s.K + 1)})
    chain_col = {}
    for k in levels:
        b, K = const.pick(math.ldexp(1 + 2.0 ** -F.M, k))
        chain_col[k] = (B.add(1, [], b), B.add(1, [], b), K)
    src = []
    for g in gates:
        w_s, n_src = g["plan"][4], g["plan"][5]
        src.append([B.add(1, [(g["cc"], w_s)], g["b_s"]) for _ in range(n_src)])
    # layer 2: steps (separator, kappa, chain constants in increasing k, bias z_dead), P2
    stp = []
    for i, s in enumerate(gt.steps):
        b, K = const.pick(s.kappa)
        ins = [(sep[i], s.s), (kap_col[b], s.kappa / K)]
        for k in range(s.k0, s.K + 1):
            cc = math.ldexp(1 + 2.0 ** -F.M, k)
            ins += [(chain_col[k][0], cc / chain_col[k][2]), (chain_col[k][1], -cc / chain_col[k][2])]
        stp.append(B.add(2, ins, st.z_dead))
    p2 = [B.add(2, [(j, g["plan"][3]) for j in src[gi]], g["c2"]) for gi, g in enumerate(gates)]
    # layer 3: boosts, P3
    bst = [B.add(3, [(stp[i], s.boost_a)], s.boost_c) for i, s in enumerate(gt.steps)]
    p3 = [B.add(3, [(p2[gi], g["plan"][2])], g["c3"]) for gi, g in enumerate(gates)]
    # layer 4: gates
    gcol = []
    for gi, g in enumerate(gates):
        ins = [(bst[k], b) for k, b in zip(sorted(gt.gating(g["i"])), g["betas"])] + [(p3[gi], g["plan"][1])]
        gcol.append(B.add(4, ins, g["gamma"]))
    # the output row sums layer L-1 in index order: +C neurons, chain ends, -C neurons, value outputs
    cps = [(B.add(L - 1, [], bC), wC) for _ in range(nC)]
    # chains: first neuron in layer 5, reading its gate
    # (all chains have L - 5 neurons, checked above: one block of relays per layer, in chain order, the
    # same neurons at the same indices as adding them chain by chain)
    ends = []
    if built:
        Wm = np.array([b[1] for b in built], float)          # (chain, L - 4): input weight .. output weight
        Bm = np.array([b[2] for b in built], float)          # (chain, L - 5)
        cur = B.add_block(5, [gcol[b[0]] for b in built], Wm[:, 0], Bm[:, 0])
        for l in range(6, L):
            cur = B.add_block(l, cur, Wm[:, l - 5], Bm[:, l - 5])
        ends = list(zip(cur.tolist(), Wm[:, -1].tolist()))
    # relayed boosts: layers 4 .. L-3
    rel = list(bst)
    for r, layer in enumerate(maps):
        rel = [B.add(4 + r, [(rel[i], a)], cc) for i, (a, cc) in enumerate(layer)]
    cms = [(B.add(L - 1, [], bC), -wC) for _ in range(nC)]
    vends = []
    for br, first in vbr:
        if first:
            src_rel = {k: rel[k] for k in br.gating}
        else:
            # a further part of the same value reads its own copies of the relays: at its point the
            # relays are dead and their backward sums would otherwise add up the parts' values
            src_rel = {}
            for k in br.gating:
                cur = bst[k]
                for r, layer in enumerate(maps):
                    a, cc = layer[k]
                    cur = B.add(4 + r, [(cur, a)], cc)
                src_rel[k] = cur
        v = B.add(L - 2, [(src_rel[k], b) for k, b in zip(br.gating, br.beta)], br.gamma)
        a, cc = br.post[0]
        v = B.add(L - 1, [(v, a)], cc)
        vends.append((v, br.out_weight))
    B.add(L, cps + ends + cms + vends, 0.0)
    net = B.network(F, implementation, act.name, dim)
    claim = Claim(7, X, fv, Y, G)
    return _finish(net, claim, {"pass derivative": d, "separator-step-boost": 3, "gate": 1, "amplification": A,
                                "compression": len(comp), "threshold prefix": R, "gates": len(gates)}, verify_result)
