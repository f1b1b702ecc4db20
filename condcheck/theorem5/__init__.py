"""Theorem 5: a network with f(x) = f*(x) and D_(f,x)(h*(x)) = g*(x) on every point of a finite domain.

The construction (condcheck's own; the paper's weights were not available) rests on Condition 1's
*dead tail*: a neuron pushed to a pre-activation z <= z_d outputs the constant L and passes no gradient.
Monotone separators become steps, steps gate one value branch and the gradient branches of each point
(live only there), and every number is chosen by exact computation and verified on every point.  How
it works: docs/theorem5.md.

Where each block lives (one module per block):

- ``tuning``: tunable constants (budgets, thresholds), read as ``tuning.NAME``
- ``errors``: the constructors' ConstructionError and the kinds the search retries on
- ``sets``: the searches' set helpers (samples, preimages, first indices without sorting)
- ``states``: the activation's states (dead tail, live states, constants) from Condition 1's witness
- ``steps``: layer 2: steps from ``condcheck.separators``' separators, quantizer chains
- ``layers``: sparse layer assembly helpers (rows as dicts or arrays, the CSR built from flat arrays)
- ``boosts``: layer 3: boosts, sharpened and padded steps
- ``step_extremes``: a step built on its separator row's four extreme values where they decide it
  (16-bit domains whose gates read the steps at their own points only)
- ``step_rounds``: the steps built (by chunk, in rounds; on the index tables all keys of a coordinate at
  once) and padded to one depth
- ``records``: ``Gate`` and ``Branch`` records
- ``gates``: layer 4: value and gradient gates, checked on every point
- ``value_branches``: layer 5: value outputs V'_z, relays and value blockers
- ``gradient_branches``: gradient branches: source, pass, gate, blockers, relays
- ``transfer``: multiplication transfer: blocker and output weights on exact sets
- ``rows``: compiled passes over whole rows of a 16-bit format (one-term rows, the transfer's last-layer
  products), tested equal to the numpy passes they replace
- ``context``: ``Context``: what one construction shares; its searches come from the four modules above
- ``sliced``: ``SlicedContext``: sliced gating for d >= 2 (slice neurons, AND gates)
- ``search``: the per-point gradient-branch search: depths, retries, budget
- ``chunks``: the per-point searches in chunks of the domain, side by side in worker processes
- ``build``: ``Build``: one construction's setup and its rounds per chunk (a worker makes its own)
- ``speculation``: how chunks of fresh contexts agree without being alive at once (``speculate``, ``agree``)
- ``spread``: 16-bit domains in such chunks, in this process or on Dask workers, then verified in parts
- ``checkpoint``: a spread construction's chunk results kept on disk, read back by a run again
- ``constants``: the constant neurons and the absorber C
- ``assemble``: the network's layers from every chunk's branches and steps
- ``construct``: ``construct_theorem5``: the construction end to end, then verification
"""
from ..constructors.kit import Kit
from ..separators import distinguishability, indistinguishable_pairs
from . import tuning  # noqa: F401  (the tunables, read as tuning.NAME)
from .errors import ConstructionError, ValueGainOverflow, SearchGaveUp, ConditionFailure, ConditionUndecided
from .states import States, find_states
from .steps import Step
from .construct import construct_theorem5

__all__ = ["construct_theorem5", "distinguishability", "indistinguishable_pairs", "ConstructionError", "ValueGainOverflow",
           "SearchGaveUp", "ConditionFailure", "ConditionUndecided", "Kit", "States", "find_states", "Step"]
