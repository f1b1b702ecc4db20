"""The construction context ``Context``: the domain, steps and states one construction shares, with
the gate, value-branch, gradient-branch and transfer searches (one module each) as its parts.
"""
from __future__ import annotations

import numpy as np

from ..constructors.kit import enumerated, is_pow2
from ..rounding import round_array
from . import tuning
from .gates import Gates, live_pass
from .gradient_branches import GradientBranches
from .transfer import Transfers
from .value_branches import ValueBranches


class Context(Gates, ValueBranches, GradientBranches, Transfers):
    """What one construction shares (format, states, domain, steps) and its searches, one part per
    module (gates, value branches, gradient branches, transfer)."""
    SLICED = False          # overridden by SlicedContext
    NEAR_ONE = True         # _gradient_gates reads _gradient_targets (the retry on gates near 1 applies)
    #: _gate_indexed chooses by the compiled kernel (``kernels.gate_pick``): set on sliced gating's slices
    compiled_gates = False
    #: id -> (target list, name) of lists never edited after they are made, beside gate_targets (sliced
    #: gating: its own, shared with its slices): ``_fixed_targets`` keeps their sort and ranks
    fixed_lists = None
    #: the sliced small-format search from the fewest layers (``tuning.SHORTEST_FIRST_SLICED``, set by
    #: construct): how many branches were built with each number of layers after the gate, None when off
    depth_hint = None
    depth_last = 1          # and the number of layers of the branch built last

    def __init__(self, kit, st, F, X, steps, U_X, gating):
        self.kit, self.st, self.F, self.X, self.steps, self.U_X, self.gating = kit, st, F, X, steps, U_X, gating
        self.relays = self._relays()
        z, t, dt = st.z, st.t, st.dt
        live = z > st.z_dead
        self.zero_states = z[(t == 0)]
        self.pass_z, self.pass_t, self.pass_d = live_pass(st)
        o = np.argsort(self.pass_z, kind="stable")
        self._pass_keys, self._pass_ranks = self.pass_z[o], o          # sorted states, their ranks
        self.pow2_values = sorted({float(v) for v in t[live] if is_pow2(v) and v > 0})
        # gate states of gradient branches: pass states whose value differs from L by at least
        # 2 |z_d| / Omega first (a weight below Omega/2 can then separate them from the dead tail)
        # (gate states whose derivative is within a factor 4 of the largest: the gate should not eat the
        # gain the blocker layers after it provide)
        far = np.abs(self.pass_t - st.L) >= 2 * abs(st.z_dead) / float(F.max_float)
        strong = np.abs(self.pass_d) * 4 >= np.max(np.abs(self.pass_d)) if len(self.pass_d) else far
        self.gate_targets = list(self.pass_z[far & strong])
        self.small_format = self.is_small_format(F)
        self.tables = kit.tables            # grids of RN sums and products as lookups (8-bit formats)
        if not self.small_format:
            # large formats: a gate's sum at its point can be coarse (RN(at_z + gamma) lands only on
            # multiples of at_z's spacing), so strong states whose T' is not a power of two come next
            # (the transfer's preimage sets handle any T')
            ok = (z > st.z_dead) & (dt != 0) & (np.abs(t - st.L) >= 2 * abs(st.z_dead) / float(F.max_float))
            ok &= np.abs(dt) * 4 >= np.max(np.abs(dt[ok])) if ok.any() else ok
            ok &= ~np.isin(z, self.pass_z)
            self.gate_targets += list(z[ok][np.argsort(-np.abs(dt[ok]), kind="stable")])
        # every nonzero value where the format is enumerated (None beyond: candidates instead)
        V = F.values() if enumerated(F) else None
        self.nonzero_values = None if V is None else V[V != 0]
        # blocker layers: weights (every nonzero value, or the values with one or two significant bits
        # when the format is large) and target states (live, T' != 0; at most 4,096, evenly spread)
        if V is not None and len(V) <= 2048:
            self.block_weights = self.nonzero_values
        else:
            m = np.ldexp(np.array([1.0, 1.5])[None, :], np.arange(F.e_min - F.M, F.e_max + 1)[:, None]).ravel()
            r, over = round_array(m, F)
            m = np.unique(r[~over & (r == m)])
            self.block_weights = np.concatenate([-m[::-1], m])
        tgt = (z > st.z_dead) & (dt != 0) & np.isfinite(t) & np.isfinite(dt)
        idx = np.nonzero(tgt)[0]
        n_tgt = 4096 if self.small_format else 1024
        if len(idx) > n_tgt:
            idx = idx[np.linspace(0, len(idx) - 1, n_tgt).astype(int)]
        if not self.small_format:       # and the strongest states (largest |T'|): the most gain per weight
            idx = np.union1d(idx, np.nonzero(tgt)[0][np.argsort(-np.abs(dt[tgt]), kind="stable")[:256]])
        self.block_targets, self.block_t, self.block_d = z[idx], t[idx], dt[idx]
        self.push_min = 2 * abs(st.z_dead) / float(F.max_float)
        self._bmax = {}
        # the gates of one point (its value gate and up to two gradient gates per coordinate) all read
        # that point's gating steps: their backward contributions beta (x) delta meet in one sum there,
        # so each is kept below Omega / share
        self.share = 1 + 2 * X.shape[1]
        self.gradient_gates = {}        # point -> its number of gradient gates (set once they are built)
        self.gradient_at = {}           # point -> its gradient branches (set once they are built)
        self._memo = {}                 # cached
        self._last_maps = {}            # _last_layer_tables: blocker index maps by on value (at most 64)
        self.transfer_why = ""          # why the last _transfer_search found nothing
        self.beam = False               # _transfer_search may try _transfer_beam (set by search_gradient_branches)
        self.join = False               # _last_join and the greedy chain aimed at it (set by search_gradient_branches)
        self.zero_end = False           # the transfer ends in an L-state layer and a zero layer (_zero_end)
        self.offset_gates = False       # gates may try per-step weight sizes (_offset_rows; set by search_gradient_branches)
        self.near_one = False           # gradient gates on targets with |T - L| nearest 1 first (_gradient_targets)
        self.least_gates = False        # gates try every size, the smallest largest weight first (_least_rows)
        self.transfer_budget = None     # transfer searches left to this gradient search (None: no limit)
        self.unbudgeted = False         # the last, unlimited search of search_gradient_branches (UNBUDGETED_LAST)

    def _relays(self) -> int:
        """The layers a step spends on sharpening (and the boosts that pad it): each gradient branch
        relays its pass through as many layers, so that its gate sits in the same layer as the others.
        (Every step spans the same layers; a chunk's context holds only its points' steps, None
        elsewhere.)"""
        return max([len(s.sharpen) + len(s.reboost) for s in self.steps if s is not None] + [0])

    def add_steps(self, indexed):
        """Add steps that another chunk run in this process built: (index, Step, its values at the
        points) each.  The chunks of one process share its context, so its caches (pure functions of
        their keys) serve them all."""
        for i, step, u in indexed:
            self.steps[i], self.U_X[i] = step, u
        self.relays = self._relays()
        self.__dict__.pop("_gate_bases", None)        # (``Gates._gate_base``: sums of the steps' fields)

    @staticmethod
    def is_small_format(F) -> bool:
        """Whether the searches may try every value of F (at most 4,096 finite values)."""
        return F.enumerable and F.count_finite() <= 4096

    #: the flags search_gradient_branches sets for a retry of a point's search (each one at most once)
    RETRY_FLAGS = ("beam", "join", "zero_end", "offset_gates", "near_one", "least_gates")

    @property
    def retrying(self) -> bool:
        """Whether this search is a retry (a flag of RETRY_FLAGS set): the retries that try every flag
        in turn start only from the first, plain search."""
        return any(getattr(self, f) for f in self.RETRY_FLAGS)

    def budget(self):
        """The transfer budget of one gradient search: TRANSFER_BUDGET on formats with many values (one
        transfer search costs up to a second there), None (no limit) on small formats and in the last,
        unbudgeted search."""
        return None if (self.small_format or self.unbudgeted) else tuning.TRANSFER_BUDGET

    def cached(self, key, fn):
        """fn() once per key: the searches that branches sharing a source, a slice or a gradient repeat."""
        try:
            return self._memo[key]
        except KeyError:
            r = self._memo[key] = fn()
            return r

    def _cached_at(self, vi, key, fn):
        """``cached`` for the arrays of one value index vi (a source row and its passes on every point):
        here vi is a point, whose branches are built one after the other, so only the last point's are
        kept (4,096 bfloat16 points x ~20 arrays of 4,096 values each would be gigabytes).  A point asked
        again (a branch rebuilt at the final depth) recomputes them: the same values."""
        if getattr(self, "_point_memo_at", None) != vi:
            self._point_memo, self._point_memo_at = {}, vi
        try:
            return self._point_memo[key]
        except KeyError:
            r = self._point_memo[key] = fn()
            return r

    def coord_values(self, j):
        """The values of x_j a first-layer row reading x_j is evaluated on (every point's)."""
        return self.X[:, j]

    def _coord_index(self, zi, j):
        """Point zi's index in ``coord_values(j)``."""
        return zi
