"""Theorem 5: a network with f(x) = f*(x) and D_(f,x)(h*(x)) = g*(x) on every point of a finite domain.

The construction (condcheck's own; the paper's weights were not available) rests on one property of
the rounded activation T = sigma~, the *dead tail* of Condition 1: pre-activations z <= z_d where
T(z) = L and T'(z) = 0 exactly.  A neuron pushed into the dead tail outputs the constant L and passes
no gradient at all, whatever its upstream.  Layers (d = input dimension):

1. separators, sources, constants.  For every coordinate j and every gap between consecutive
   coordinate values of the domain, a neuron n = T(w x_j + b) whose values on one side of the gap are
   all below (or all above) its values on the other side (a *monotone separator*, found by search
   over (w, b)).  For every gradient branch (point z, coordinate j) a *source* T(w_g x_j + b_g) whose
   pre-activation at z is a state with T' != 0 (Condition 3).  Constant neurons (zero weights) give
   the constants the next row needs.
2. steps and passes.  A *step* row v = s*n (+) kappa (+) c_k0 (+) (-c_k0) (+) ... (+) c_K (+) (-c_K)
   (+) z_d.  kappa puts the gap at 0: v <= 0 on the *dead side*, v >= g > 0 on the *on side*.  The
   chain of constants c_k = succ(2^k) (rounding to nearest, ties to even) snaps any v >= g up to at
   least 2^(K-M) and keeps v <= 0 at most 0, so the step's pre-activation is <= z_d (dead) on one side
   and far from the tail on the other.  Two steps per gap: "x_j >= upper value" and
   "x_j <= lower value".  The *pass* neuron of a gradient branch carries its source on (states
   with T' != 0 at z).
3. boosts.  B = T(a U + c) of each step U keeps L dead and moves the on value as far from L as a
   power-of-two weight allows (the chain ends at 2^(K-M), which can leave the on value near L, e.g.
   swish~(-2) = -0.23 on float8_e4m3; a gate would then need large weights, and a gate's weights
   multiply its backward value).  A second pass beside them relays each gradient branch.  Boost
   weights are powers of two; where a value gate's backward gain overflows (upstream values near
   Omega) the construction is retried with *wide boosts*: any weight, every step boosted twice, on
   values next to Omega (``_boost_weights``).
4. gates.  For point z the gating steps are the down-step of the gap below z_j and the up-step of the
   gap above z_j, for each j: all of them are dead exactly at x = z, and at any other point of the
   domain at least one is on.  The value neuron V_z = T(beta * sum(boosts) + gamma) and the gradient
   gate G_z = T(beta * sum(boosts) + a3 * pass + gamma) are in a live state at z and pushed into the
   dead tail elsewhere.  At z the steps they read are dead, so no gradient reaches the separators
   through them; elsewhere V_z and G_z are dead.  So the value path has AD gradient exactly 0 on the
   whole domain, and a gradient branch is nonzero only at its own point.  The backward values that
   a point's gates send into its shared gating steps meet in one sum, so each is kept below
   Omega / (1 + 2d).
5. value outputs.  V'_z = T(a_v V_z + c_v) maps L to a zero of T and the on value of V_z to a power
   of two P_z, so that the output weight f*(z)/P_z is exact.  A value branch shorter than the gradient
   branches is padded with relays after V'_z (0 -> a zero of T, P_z -> P_z) or, when their weights
   would overflow the backward value at the other points (tanh~'(0) = 1), with blockers between V_z
   and V'_z, through which L stays dead.  Two constant neurons give +C and -C.
   Gradient branches get *blocker* layers B_k = T(a_k B_(k-1) + c_k) (B_0 = G_z): at z the
   pre-activation is a state with T' != 0, at every other point (input L) it is dead.  So at the
   other points the backward value stops right after the output weight, whatever the weights a_k,
   and the a_k carry the ratio g*/h* (up to about Omega per layer) where only z sees them.
6. output: C (+) A_1 B_1 (+) ... (-C) (+) f_1 V'_1 (+) ...  Every gradient-branch term is 0 or below a
   quarter ulp of C, so it is absorbed: the partial sum stays C, then C - C = 0, and the value terms
   (exactly one nonzero at each domain point) give f*(x).  C is the largest power of two whose constant
   neurons keep every upstream value finite (``_Constants.absorber``).  AD still sees the weights A: the backward
   chain y (x) A (x) T'(b_n) (x) a_n ... (x) T'(b_1) (x) a_1 (x) T'(gate) (x) a3 (x) T'(p2) (x) a2 (x)
   T'(s0) (x) w_g equals g*_j(z) exactly.  Exactness is decided on sets (every value of the format
   tried): the values the fixed factors map to g*, their preimages through each blocker layer, and an
   A with RN(y A) in the last set.  Every suffix product of the chain must keep the backward value a
   finite value of the format, which is why the weights before the gate are chosen by size; when the
   source cannot (|g*| / (|w_g| |T'(s0)|) > Omega, e.g. sigmoid with T' <= 1/4), two branches carry
   g*/2 each and their contributions meet exactly in x_j's sum.

Sharpened steps (8-bit formats with a narrow range, only where a step fails as above): on
float8_e4m3b11fnuz (Omega = 30, dead tails from -5 to -13) a separator's gap is far below |z_d| and the
chain lifts on values to at most 2^(e_max - M) = 2, so the step row stays next to the tail.  Such a step
reads *sharpening* layers T(w n + b) (``_sharpen_layer``: exhaustive over F x F on the RN tables) that
pull the two sides into far-apart clusters, and its row may be scaled up.  Every step then spans the
same layers (the others are boosted again, or sharpened to the same depth), and every gradient branch
relays its second pass through as many pass layers (weight -1, a pass state at its point), whose
derivatives join the backward chain.

Domains with d >= 2 and more than EXACT_GATE_POINTS points use *sliced gating* (``_SlicedCtx``): the
gates of layer 4 are built per coordinate value (an indicator per slice x_j = v, and a slice gate per
gradient source), and each point gets AND gates of those in a fifth layer.  A point's gates then read d
neurons that are dead off two slices, instead of 2d steps that vary over the whole domain, so building
and verifying them costs about N (not N^2) rounded sums, and every AND gate's pre-activation takes at
most 2^d values on the whole domain, all checked exactly.

Formats too large to enumerate (float32, float64): the activation is known on sampled states only
(``find_states``: short significands of every binade, the preimages of powers of two, nothing inside
the dead tail), separators are evaluated on demand (``separators._SampledAct``), and every set above
(S_0, preimages, weights, biases) is a candidate set around the solution of its equation, kept only
where the exact test holds.  A coarse candidate set can make a search fail, never make it wrong.

Every number is chosen by exact computation on the domain and the network is verified exactly on
every point before it is returned.  A failure of any requirement raises ConstructionError naming it.

On the small formats the per-point searches run in a fixed number of chunks of the domain, side by
side in forked worker processes where there are cores (``chunks``; ``jobs=1`` runs them one after the
other here).  With per-point gating each chunk also builds the steps its points read (``step_rounds``)
and, on the small networks that numpy verifies, verifies its points.  The chunks are a function of the
domain, and every cache holds a pure function of its key, so the network does not depend on the number
of workers.

Where each block lives (one module per block):

- ``tuning``: tunable constants (budgets, thresholds), read as ``tuning.NAME``
- ``errors``: ConstructionError and its kinds
- ``kit``: ``Kit``: exact rounded arithmetic and T, T' on arrays; shared set helpers
- ``states``: the activation's states (dead tail, live states, constants) from the witnesses
- ``steps``: layers 1-2: separators, steps, quantizer chains
- ``layers``: sparse layer assembly helpers
- ``boosts``: layer 3: boosts, sharpened and padded steps
- ``step_rounds``: the steps built (by chunk, in rounds; on the index tables all keys of a coordinate at
  once) and padded to one depth
- ``records``: ``Gate`` and ``_Branch`` records
- ``gates``: layer 4: value and gradient gates, checked on every point
- ``value_branches``: layer 5: value outputs V'_z, relays and value blockers
- ``gradient_branches``: gradient branches: source, pass, gate, blockers, relays
- ``transfer``: multiplication transfer: blocker and output weights on exact sets
- ``context``: ``_Ctx``: what one construction shares; its searches come from the four modules above
- ``sliced``: ``_SlicedCtx``: sliced gating for d >= 2 (slice neurons, AND gates)
- ``search``: the per-point gradient-branch search: depths, retries, budget
- ``chunks``: the per-point searches in chunks of the domain, side by side in worker processes
- ``assemble``: the absorber constants and the network's layers from the branches
- ``construct``: ``construct_theorem5``: the construction end to end, then verification
- ``distinguish``: distinguishability of a domain's points
"""
from ..constructors.kit import Kit
from . import tuning  # noqa: F401  (the tunables, read as tuning.NAME)
from .errors import ConstructionError, ValueGainOverflow, SearchGaveUp, ConditionFailure, ConditionUndecided
from .states import States, find_states
from .steps import Step
from .construct import construct_theorem5
from ..separators import distinguishability, indistinguishable_pairs

__all__ = ["construct_theorem5", "distinguishability", "indistinguishable_pairs", "ConstructionError", "ValueGainOverflow",
           "SearchGaveUp", "ConditionFailure", "ConditionUndecided", "Kit", "States", "find_states", "Step"]
