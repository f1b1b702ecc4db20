"""Theorem 7: one network whose AD output D_(f,x)(y) is an arbitrary odd function g*(x, y) of the upstream
value y, at every point x of a finite domain in the box, for every |y| <= H_sigma (enumerable formats of
at most 16 bits).  The nonlinearity in y comes from the subnormal range: chains of rounded products
saturate into exact indicators of |y| >= t.  relu has its own construction; every activation satisfying
Conditions 1-3 has the generic one, which reads only the rounded table and Condition 1's dead tail.
How both work: docs/theorem7.md.

- ``chains``: rounded product chains, threshold and saturation searches, the indicator terms of a table
- ``relu``: relu's own construction (one point; several behind two-sided gates)
- ``activation``: the rounded table as the generic construction reads it (pass states, relay biases)
- ``gating``: layers 1-3 from theorem5's steps and boosts, the gates' pass plans
- ``value_branches``: zero-gradient value branches of the generic construction
- ``generic``: the generic construction, one point and several
- ``assemble``: the network from its neurons, the result record, exact verification
- ``construct``: ``construct_theorem7``
"""
from ..constructors.errors import ConstructionError, TargetError
from ..targets import check_odd, gradient_table
from .assemble import Theorem7Network
from .chains import (chain, compression_weight, generic_compression, generic_threshold_prefixes, positive_values,
                     rn_add, rn_mul, saturating_indicator, saturation_length, step_chain, step_chain_scalar,
                     subnormal_quantizer, threshold_prefixes, underflow_threshold)
from .construct import construct_theorem7

__all__ = ["ConstructionError", "TargetError", "Theorem7Network", "chain", "check_odd", "compression_weight",
           "construct_theorem7", "generic_compression", "generic_threshold_prefixes", "gradient_table",
           "positive_values", "rn_add", "rn_mul", "saturating_indicator", "saturation_length", "step_chain",
           "step_chain_scalar", "subnormal_quantizer", "threshold_prefixes", "underflow_threshold"]
