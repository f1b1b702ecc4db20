"""The sparse interpreter's options: which strategy runs, and the memory bounds (no numba needed here)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import CondcheckError


@dataclass(frozen=True)
class SparseOptions:
    """The sparse interpreter's strategies and sizes (``SparseInterpreter(**fields)``).

    Strategies (the second choice of each is the simpler one, kept as the reference the tests compare with):
    ``forward``: the shared-y forward pass on defaults and exceptions ("defaults", ``shared_forward``) or
    on every point ("dense", ``classes.forward_compressed``); ``groups``: the shared-y backward groups as
    defaults and exceptions ("exceptions", ``groups``) or one group number per point and neuron
    ("classes", ``classes``); ``per_point``: per-point upstream values by tables, default backward values
    and explicit neurons ("tables", ``table_forward`` and ``explicit``) or by the active neurons of
    every point ("active", ``active``); ``sliced_rows``: narrow rows read one coordinate's inputs as
    tables; ``sparse_table``: a one-coordinate neuron's sigma~' table is kept as exceptions where at
    most 1/sparse_table of its values differ from its default (0: every table dense);
    ``narrow_row``: rows of at most this many terms are merged (``table_forward``), longer ones folded.
    Sizes (memory bounds): ``chunk_entries`` (points x neurons of the active path),
    ``class_bytes`` (per-group backward values of a layer, shared y), ``block_entries`` and
    ``table_block_entries`` (rows evaluated at once by the table forward pass), ``default_bytes``
    (default backward values held at once)."""

    forward: str = "defaults"
    groups: str = "exceptions"
    per_point: str = "tables"
    sliced_rows: bool = True
    sparse_table: int = 8
    narrow_row: int = 16
    chunk_entries: int = 1 << 22
    class_bytes: int = 1 << 27
    block_entries: int = 1 << 22
    table_block_entries: int = 1 << 22
    default_bytes: int = 1 << 26

    def __post_init__(self):
        for name, allowed in (("forward", ("defaults", "dense")), ("groups", ("exceptions", "classes")),
                              ("per_point", ("tables", "active"))):
            if getattr(self, name) not in allowed:
                raise CondcheckError(f"sparse interpreter option {name} must be one of "
                                     f"{', '.join(map(repr, allowed))}, not {getattr(self, name)!r}")
