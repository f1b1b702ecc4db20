"""``Build``: one Theorem 5 construction's setup (kit, states, domain, targets, step keys, absorber) and
its rounds per chunk of points, with what the chunks agree on between rounds; a function of its
arguments only, so that a worker process makes its own (``spread``).  ``construct`` runs it.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..constructors.kit import Kit, enumerated
from ..constructors.witnesses import require_conditions
from ..formats import get_format
from . import tuning
from .assemble import assemble_network
from .chunks import gc_paused, run_rounds
from .constants import Constants
from .context import Context
from .errors import ConditionFailure, ConstructionError
from .gates import gate_push_need
from .search import search_gradient_branches
from .sliced import SlicedContext
from .states import find_states
from .step_rounds import agree_steps, all_keys, chunk_keys, gating_keys, step_rounds


class Build:
    """What every chunk of one construction reads (the kit, states, domain, targets, step keys, absorber),
    and the chunks' rounds (``rounds``) with what the chunks agree on between them (``combine``).

    A function of its arguments only, so that a worker process can make its own from them (``spread``)."""

    def __init__(self, activation, fmt, points, values, upstream, gradients, implementation, verify_result,
                 max_post, gating, wide_boosts):
        from ..netfile import Claim
        from ..targets import as_points, validate

        F = self.F = get_format(fmt)
        kit = self.kit = Kit(activation, F, implementation)
        kit.wide_boosts = wide_boosts
        self.activation, self.implementation = activation, implementation
        self.verify_result, self.max_post = verify_result, max_post
        X = as_points(points)
        X, fv, hv, gv = self.X, self.fv, self.hv, self.gv = validate(F, kit.act.name, X, values, upstream, gradients)
        N, d = X.shape
        # (a worker makes its own from these: ``spread``)
        self.args = (activation, F, X, fv, hv, gv, implementation, verify_result, max_post, gating, wide_boosts)
        st = self.st = find_states(kit, require_conditions(kit.act, F, implementation, 5))

        # constants: constant neurons whose values are positive powers of two
        cz, ct = st.constants
        if len(cz) == 0:
            raise ConditionFailure(f"Condition 1 (constants) fails: {kit.act.name} takes no positive power of two "
                                    f"value on {F.name}")

        # ---- steps --------------------------------------------------------------------------------------
        self.coord_vals = [np.unique(X[:, j]) for j in range(d)]
        self.coord_idx = [np.searchsorted(self.coord_vals[j], X[:, j]) for j in range(d)]
        self.push_need = gate_push_need(st)
        self.keys = all_keys(self.coord_vals)
        self.step_of = {key: i for i, key in enumerate(self.keys)}
        if gating == "auto":
            gating = "slices" if d >= 2 and N > tuning.EXACT_GATE_POINTS else "points"
        self.sliced = gating == "slices" and d >= 2 and N > 1
        self.small_format = Context.is_small_format(F)
        self.ctx = None
        self.process_ctx = {}
        self.fresh_ctx = False           # every chunk its own context (``spread``)
        self.compact = False             # steps on four values, no step rows (``spread``, ``step_extremes``)
        self.h_max = float(np.max(np.abs(hv))) if N else 0.0
        self.consts = Constants(F, cz, ct)
        C = self.C = self.consts.absorber(self.h_max, kit.dT)
        # the number of layers after the gates: each extra pass layer lets a gradient branch carry a larger
        # ratio g*/h* (its forward value at z is re-centred once more); every branch gets the same depth
        self.quarter = math.ldexp(1.0, math.frexp(C)[1] - 1 - F.M - 2)
        # every branch must span the same layers: build each with at least the depth reached so far, and
        # rebuild (or pad) the ones that came out shorter than the final depth.  The points are searched in
        # chunks (``chunks.point_chunks``), side by side in worker processes where there are cores: each
        # chunk's search starts from one layer, and the chunks agree on the depth between the rounds.
        # Sliced gating searches each branch from the fewest layers (``tuning.SHORTEST_FIRST_SLICED``) only
        # where T(0) != 0 (the activations with T(0) = 0 built their branches faster from the depth
        # reached so far: relu on the float8_e5m2 box 108 s from one layer up against 61 s, elu, gelu, swish,
        # tanh on float8_e4m3 20-30 % slower; sigmoid on float8_e4m3 331 s -> 85 s)
        self.shortest = (tuning.SHORTEST_FIRST_SLICED and self.sliced and self.small_format
                         and float(kit.T(0.0)) != 0)
        self.claim = Claim(5, X, fv, hv, gv)
        self.assembled = []

    def spread_chunks(self, chunks) -> bool:
        """Whether the chunks run as ``spread`` runs them: more than one, on a format too large for the
        forked chunks' shared caches (``chunks.point_chunks``), with per-point gating."""
        return len(chunks) > 1 and not self.small_format and not self.sliced

    def for_spread(self):
        """Chunks of fresh contexts (``spread``); where the gates read the steps at their own points only
        (large domains of enumerated formats), steps on four values and no step rows (``step_extremes``)."""
        self.fresh_ctx = True
        self.compact = enumerated(self.F) and len(self.X) > tuning.EXACT_GATE_POINTS

    def prepare(self):
        """Sliced gating: every step, built here (its slices' AND gates span every coordinate)."""
        if self.sliced and self.ctx is None:
            step_map, val_map = run_rounds([self.keys], lambda k, report: self.build_steps(k), agree_steps)[0]
            steps = [step_map[key] for key in self.keys]
            self.ctx = SlicedContext(self.kit, self.st, self.F, self.X, steps, [val_map[key] for key in self.keys],
                                  self.coord_vals, self.coord_idx, self.step_of)

    def build_steps(self, chunk_step_keys):
        """The steps of the keys, in rounds (``step_rounds``)."""
        return step_rounds(self.kit, self.st, self.coord_vals, chunk_step_keys, self.push_need, self.compact)

    def point_ctx(self, step_map, val_map):
        """The per-point gating context of this process, with the steps of the chunks it ran (the others
        None: a point's gates read only its own gating steps).  The chunks one process runs share it, so
        they share its caches, as one chunk of every point would; a forked worker starts without one.
        With ``fresh_ctx`` every chunk gets a new one (its searches then depend on its points only)."""
        coord_idx, step_of, keys, coord_vals = self.coord_idx, self.step_of, self.keys, self.coord_vals
        indexed = [(step_of[key], s, None if val_map[key] is None else val_map[key][coord_idx[key[0]]])
                   for key, s in step_map.items()]
        c = None if self.fresh_ctx else self.process_ctx.get(os.getpid())
        if c is None:
            c = Context(self.kit, self.st, self.F, self.X, [None] * len(keys), [None] * len(keys),
                     lambda zi: [step_of[key] for key in gating_keys(coord_vals, coord_idx, zi)])
            c.compact, c.side_bounds = self.compact, self.fresh_ctx
            if not self.fresh_ctx:
                self.process_ctx[os.getpid()] = c
        c.add_steps(indexed)
        return c

    def rounds(self, chunk, report):
        """The chunk's part: with per-point gating, the steps its points read (``step_rounds``); its
        gradient branches (then rebuilt or padded to the depth of every chunk's deepest); once every
        chunk has counted its gradient gates per point, its points' value branches at the final depth;
        then, once the network is assembled from every chunk's branches, the verification of its
        points (None without verification)."""
        fv, hv, gv, h_max, C, max_post = self.fv, self.hv, self.gv, self.h_max, self.C, self.max_post
        shortest = self.shortest
        step_map = {}
        if self.sliced:
            c = self.ctx
        else:
            step_map, val_map = yield from self.build_steps(
                chunk_keys(self.coord_vals, self.coord_idx, sorted(set(chunk.grad_points) | set(chunk.points))))
            c = self.point_ctx(step_map, val_map)
            val_map = None
        grad_part, n_cur = [], 1
        if shortest:
            c.depth_hint, c.depth_last = {1: 0}, 1        # (``Context.depth_hint``)
        for zi, j in chunk.pairs():
            report()
            if gv[zi, j] != 0:
                brs = search_gradient_branches(c, zi, j, float(hv[zi]), float(gv[zi, j]), h_max, C, max_post,
                                         1 if shortest else n_cur)
                n_cur = max(n_cur, len(brs[0].post))
                grad_part += brs
        n_cur = (yield {"depth": n_cur})["depth"]
        _to_depth(c, grad_part, n_cur, shortest, h_max, C, self.quarter)
        gates = {}
        for br in grad_part:
            gates[br.zi] = gates.get(br.zi, 0) + 1
        every = yield {"depth": max([len(br.post) for br in grad_part] + [1]), "gates": gates}
        n_final = every["depth"]
        for br in grad_part:
            c.pad_gradient(br, n_final, h_max, self.quarter)
        # the value gates share each point's gating steps with its gradient gates, of every chunk
        # (``gradient_at``, read where gating is per point, holds this chunk's branches: all of its
        # points' there, since such chunks split the points, not the coordinates)
        c.gradient_gates = every["gates"]
        for br in grad_part:
            c.gradient_at.setdefault(br.zi, []).append(br)
        values_part = []
        for zi in chunk.points:
            report()
            if fv[zi] != 0:
                values_part += c.value_branches(zi, fv[zi], h_max, n_final, float(hv[zi]))
        # sliced gating: the indicators this chunk built (assembly reads them; a worker's are its own)
        indicators = getattr(c, "indicators", None)
        c = None             # its per-point arrays (steps x points) and caches are not needed to verify
        net = (yield {"branches": (grad_part, values_part, indicators, step_map)})["network"]
        grad_part = values_part = indicators = None
        return None if net is None else verify_points(net, self.claim, chunk.points)

    def combine(self, reports):
        """Between rounds: the steps' agreement (``agree_steps``), the branches' (``_agree``), and last
        the network, assembled from every chunk's branches (with the chunks' steps merged in key order)."""
        if "step_depth" in reports[0] or "step_failure" in reports[0]:
            return agree_steps(reports)
        if "branches" not in reports[0]:
            return _agree(reports)
        net = self.assemble([r["branches"] for r in reports])
        # the chunks verify their points only on the index tables (the sparse interpreter's compiled loops
        # already run on every core, and their OpenMP threads may not start in a process forked after
        # their use)
        return {"network": net if self.verify_result and _tables_verify(net, len(self.X)) else None}

    def assemble(self, parts):
        """The network from every chunk's branches (``rounds``' last report of each, in chunk order)."""
        # point by point, each point's coordinates in order, as one chunk of every point would list them
        grad_part = sorted((br for p in parts for br in p[0]), key=lambda br: (br.zi, br.coord, br.part))
        values_part = [br for p in parts for br in p[1]]
        if self.sliced:
            steps = self.ctx.steps
            for p in parts:
                for key, gate in p[2].items():
                    self.ctx.indicators.setdefault(key, gate)
        else:
            built = {}
            for p in parts:
                for key, s in p[3].items():
                    built.setdefault(key, s)       # (a step two chunks read: the same from each)
            steps = [built[key] for key in self.keys]
        with gc_paused():       # (sigmoid on a 64 x 64 float8_e4m3 grid: 0.41-0.52 s with collections, 0.19 s without)
            net = assemble_network(self.kit, self.st, self.F, self.X.shape[1], steps, values_part, grad_part, self.consts,
                            self.C, self.activation, self.implementation, self.ctx if self.sliced else None)
        self.ctx = None           # its per-point arrays (steps x points) and caches are not needed to verify
        self.process_ctx.clear()
        self.assembled.append(net)
        return net


def _tables_verify(net, n_points) -> bool:
    """Whether the construction verifies its network on the RN index tables (``interpreters.tables``):
    small networks on 8-bit formats (the d = 1 float8 boxes), where that costs less (half of a d = 1
    box: 0.1 s, against 0.2 s by rounding) than loading the compiled kernels of the sparse one (0.4-0.6
    CPU s)."""
    return net.format.bits <= 8 and n_points * net.nonzero_parameters <= tuning.TABLES_VERIFY_WORK


def verify_points(net, claim, points):
    """The exact verification of the claim on the points (a range): on the index tables where
    ``_tables_verify``, else by the sparse interpreter (the same numbers, computed on the neurons live at
    each point) where it applies, else the dense one."""
    from ..netfile import Claim
    from ..verify import verify as _verify

    part = Claim(5, claim.points[points], claim.values[points], claim.upstream[points], claim.gradients[points])
    return _verify(net, part, method="tables" if _tables_verify(net, len(claim.points)) else "sparse")


def _to_depth(ctx, grad_part, n_cur, shortest, h_max, C, quarter):
    """Round 2 of a chunk: each gradient branch shorter than n_cur padded with relays (the shortest-first
    search), else rebuilt at n_cur with the gate targets it was found with, else left for pad_gradient."""
    for i, br in enumerate(grad_part):
        if shortest and len(br.post) < n_cur:
            # padded with relays on a copy of its layers (the branch stays as it was where padding fails)
            post, ow = br.post, br.out_weight
            br.post = list(post)
            try:
                ctx.pad_gradient(br, n_cur, h_max, quarter)
                continue
            except ConstructionError:
                br.post, br.out_weight = post, ow
        if len(br.post) < n_cur:
            # with the gate targets the branch was found with, and a budget (SearchGaveUp: padded too)
            ctx.near_one = getattr(br, "near_one", False)
            ctx.transfer_budget = ctx.budget()
            try:
                grad_part[i] = ctx.gradient_branch(br.zi, br.coord, br.y, br.g, h_max, C, n_cur)
                grad_part[i].part = br.part
            except ConstructionError:
                pass                                   # pad_gradient appends exact relays instead
            finally:
                ctx.near_one, ctx.transfer_budget = False, None


def _agree(reports):
    """What the chunks agree on between rounds: the deepest branch of any chunk, and each point's number
    of gradient gates over every chunk."""
    out = {"depth": max(r["depth"] for r in reports)}
    if "gates" in reports[0]:
        gates = {}
        for r in reports:
            for zi, k in r["gates"].items():
                gates[zi] = gates.get(zi, 0) + k
        out["gates"] = gates
    return out
