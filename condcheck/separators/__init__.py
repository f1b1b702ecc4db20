"""First-layer separators: for every gap between consecutive values of a coordinate, a neuron
T(w x_j + b) whose values on one side all lie above (or all below) its values on the other.

- ``exhaustive``: every (w, b) in F x F, the smallest spread (the reference, formats small enough);
- ``restricted``: ``find_separators``, a search over powers of two and anchor states (16-bit formats and up);
- ``choice``: ``separator_chooser`` (one of the two per format), ``distinguishability`` of a domain.
"""
from .exhaustive import chosen_steps
from .restricted import find_separators
from .choice import distinguishability, indistinguishable_pairs, separator_chooser

__all__ = ["chosen_steps", "distinguishability", "find_separators", "indistinguishable_pairs", "separator_chooser"]
