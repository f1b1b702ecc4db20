"""Assembling the network: its layers from every chunk's branches and steps (in the calling process,
after the searches).
"""
from __future__ import annotations

import math

import numpy as np

from ..network import Network
from .layers import Cols, one_term_layer


def _branch_keys(br, sliced):
    """Keys of a gradient branch's source and passes (and of its relays, a list): shared by the branches
    of a slice (sliced gating: equal rows; a slice gate is live, and gets a backward value, only on its
    slice), else None."""
    if sliced is None:
        return None, None, None, [None] * len(br.relays)
    k = (br.coord, br.w_g, br.b_g, br.part)
    p3 = ("p3", br.a2, br.c2, br.a2b, br.c3)
    return ("s",) + k, ("p2", br.a2, br.c2) + k, p3 + k, [("r",) + p3 + br.relays[:i + 1] + k
                                                          for i in range(len(br.relays))]


def assemble_network(kit, st, F, d, steps, values_part, grad_part, const, C, activation, implementation, sliced=None):
    M = F.M
    keys = [_branch_keys(br, sliced) for br in grad_part]

    def constants(cols, group):
        """The constants the step rows of ``group`` read (they sit in the next layer): kappa constants
        (one per constant state used), then chain constants."""
        kap_col = {}
        for s in group:
            b, _ = const.pick(s.kappa)
            if b not in kap_col:
                kap_col[b] = cols.add({}, b)
        chain_col = {}
        for k in sorted({k for s in group for k in range(s.k0, s.K + 1)}):
            b, K = const.pick(math.ldexp(1 + 2.0 ** -M, k))
            chain_col[k] = (cols.add({}, b), cols.add({}, b), K)
        return kap_col, chain_col

    def step_row(s, col, consts):
        """The step row: separator (or its last sharpening layer), kappa, then the chain in increasing
        k (the row's summation order), bias z_d; as (columns, weights) arrays, every column a different
        neuron: the step rows hold most of a network's weights (on bfloat16 a chain has up to ~250 k)."""
        kap_col, chain_col = consts
        b, K = const.pick(s.kappa)
        n = 2 + 2 * (s.K + 1 - s.k0)
        cols, ws = np.empty(n, np.int64), np.empty(n, np.float64)
        cols[0], ws[0], cols[1], ws[1] = col, s.s, kap_col[b], s.kappa / K
        for j, k in enumerate(range(s.k0, s.K + 1), start=1):
            c = math.ldexp(1 + 2.0 ** -M, k)
            plus, minus, Kc = chain_col[k]
            cols[2 * j], ws[2 * j], cols[2 * j + 1], ws[2 * j + 1] = plus, c / Kc, minus, -c / Kc
        return (cols, ws), st.z_dead

    # layer 1: separators, sources, the constants of the step rows in layer 2
    l1 = Cols()
    cur = [l1.add({s.coord: s.w}, s.b) for s in steps]          # each step's column in the last layer
    src = [l1.add({br.coord: br.w_g}, br.b_g, key=keys[i][0]) for i, br in enumerate(grad_part)]
    consts = constants(l1, [s for s in steps if not s.sharpen])
    layers, n_prev = [l1.layer(d, F)], len(l1.rows)
    # then, per step, its sharpening layers, the step row, the boost (the gates read the boosts) and its
    # re-boosts, all steps in step order; beside them each gradient branch's first and second pass and
    # its relays; last the constants of the step rows of the next layer.  Without sharpening: layer 2
    # steps and first passes, layer 3 boosts and second passes
    grad = src
    n_extra = max([len(s.sharpen) + len(s.reboost) for s in steps] + [0])
    for k in range(n_extra + 2):
        lk = Cols()
        for i, s in enumerate(steps):
            m = len(s.sharpen)
            if k < m:
                cur[i] = lk.add({cur[i]: s.sharpen[k][0]}, s.sharpen[k][1])
            elif k == m:
                cur[i] = lk.add(*step_row(s, cur[i], consts))
            elif k == m + 1:
                cur[i] = lk.add({cur[i]: s.boost_a}, s.boost_c)
            else:
                a, c = s.reboost[k - m - 2]
                cur[i] = lk.add({cur[i]: a}, c)
        if k == 0:
            grad = [lk.add({grad[i]: br.a2}, br.c2, key=keys[i][1]) for i, br in enumerate(grad_part)]
        elif k == 1:
            grad = [lk.add({grad[i]: br.a2b}, br.c3, key=keys[i][2]) for i, br in enumerate(grad_part)]
        else:
            grad = [lk.add({grad[i]: br.relays[k - 2][0]}, br.relays[k - 2][1], key=keys[i][3][k - 2])
                    for i, br in enumerate(grad_part)]
        consts = constants(lk, [s for s in steps if len(s.sharpen) == k + 1])
        layers.append(lk.layer(n_prev, F))
        n_prev = len(lk.rows)
    boosted, pas3 = cur, grad
    below = boosted        # the columns gates (sliced: slice neurons) read for their step inputs
    if sliced is not None:
        # layer 4 (sliced gating): indicators, ordered by (coordinate, value) so that an AND gate's sum
        # runs over its inputs in the order _and computed it, then the slice gates (read last)
        ls = Cols()
        col = {}
        for key in sorted({k for br in values_part + grad_part for k in br.gate.inputs if k[0] == "I"}):
            g = sliced.indicator(key[1], key[2])
            col[key] = ls.add({boosted[i]: b for i, b in zip(g.inputs, g.betas)}, g.gamma)
        for i, br in enumerate(grad_part):
            sg = br.slice_gate
            terms = {boosted[k]: b for k, b in zip(sg.inputs, sg.betas)}
            terms[pas3[i]] = br.a3
            col[(br.gate.inputs[-1], br.part)] = ls.add(terms, sg.gamma, key=(br.gate.inputs[-1], br.part))
        layers.append(ls.layer(n_prev, F))
        below = {k: c for k, c in col.items() if k[0] == "I"}
        n_below = len(ls.rows)
    else:
        n_below = n_prev
    # gates: values, then gradients
    l3 = Cols()
    vcol = [l3.add({below[i]: b for i, b in zip(br.gate.inputs, br.gate.betas)}, br.gate.gamma) for br in values_part]
    gcol = []
    for i, br in enumerate(grad_part):
        if sliced is not None:
            ins = br.gate.inputs
            terms = {below[k]: b for k, b in zip(ins[:-1], br.gate.betas[:-1])}
            terms[col[(ins[-1], br.part)]] = br.gate.betas[-1]
        else:
            terms = {boosted[k]: b for k, b in zip(br.gate.inputs, br.gate.betas)}
            terms[pas3[i]] = br.a3
        gcol.append(l3.add(terms, br.gate.gamma))
    # layers after the gates: passes (gradient) and V' / relays (value); the last one also holds +C and -C
    n_post = len((grad_part or values_part)[0].post) if (grad_part or values_part) else 1
    layers.append(l3.layer(n_below, F))
    prev_g, prev_v, prev_n = gcol, vcol, len(l3.rows)
    b_C, K_C = const.absorbing
    if n_post >= 1 and all(len(br.post) == n_post for br in grad_part + values_part):
        # the same rows as the Cols loop below, as arrays (``one_term_layer``): each row reads one column
        ng, nv = len(grad_part), len(values_part)
        pg = np.array([br.post for br in grad_part], np.float64).reshape(ng, n_post, 2)
        pv = np.array([br.post for br in values_part], np.float64).reshape(nv, n_post, 2)
        cg, cv = np.asarray(prev_g, np.int64), np.asarray(prev_v, np.int64)
        for k in range(n_post):
            last = k == n_post - 1
            const_row = [([-1], [0.0], [b_C])] if last else []
            layers.append(one_term_layer(const_row + [(cg, pg[:, k, 0], pg[:, k, 1])] + const_row
                                          + [(cv, pv[:, k, 0], pv[:, k, 1])], prev_n, F))
            first = 1 if last else 0            # +C first, -C between the gradient and the value rows
            cg = first + np.arange(ng)
            cv = 2 * first + ng + np.arange(nv)
            prev_n = ng + nv + 2 * first
        cpos, cneg = 0, ng + 1
        prev_g, prev_v, n_post = cg.tolist(), cv.tolist(), 0
    for k in range(n_post):
        lk = Cols()
        last = k == n_post - 1
        cpos = lk.add({}, b_C) if last else None
        g_k = [lk.add({prev_g[i]: br.post[k][0]}, br.post[k][1]) for i, br in enumerate(grad_part)]
        cneg = lk.add({}, b_C) if last else None
        v_k = [lk.add({prev_v[i]: br.post[k][0]}, br.post[k][1]) for i, br in enumerate(values_part)]
        layers.append(lk.layer(prev_n, F))
        prev_g, prev_v, prev_n = g_k, v_k, len(lk.rows)
    # output: C, absorbed gradient terms, -C, value terms
    out = {cpos: C / K_C, cneg: -C / K_C}
    for i, br in enumerate(grad_part):
        out[prev_g[i]] = br.out_weight
    for i, br in enumerate(values_part):
        out[prev_v[i]] = br.out_weight
    lo = Cols()
    lo.add(out, 0.0)
    layers.append(lo.layer(prev_n, F))
    return Network(F, kit.act.name, layers, implementation, d)
