"""The simulator's configuration: the hardware assumptions one run of a recorded program is made under.

A leaf of :mod:`pipes.ascend.sim`: the builder (:class:`~pipes.ascend.sim.simulator.Simulator`), the recorded
program (:class:`~pipes.ascend.sim.program.Recording`) and the machine that executes it all read one
:class:`SimConfig` instead of each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import SpecError
from ..events import EventIdRules, Keying
from ..pairs import Pipe
from ..targets import ATLAS_A2_A3

#: A2/A3's pipes whose consecutive instructions may overlap, so a same-pipe dependency needs ``pipe_barrier``
#: (``ATLAS_A2_A3.overlapping``). Which pipes overlap is a fact of the target: by default the simulator takes
#: ``rules.target.overlapping``; an explicit ``overlap`` overrides it.
DEFAULT_OVERLAP = ATLAS_A2_A3.overlapping


@dataclass(frozen=True)
class SimConfig:
    """What the simulator assumes about the hardware: the id rules (keying, cross-core capacity, presets, and
    the target whose facts it runs by), which pipes overlap and how deep, and how many vector cores the group
    has. ``overlap`` None (the default) is the target's (``rules.target.overlapping``: the pipes it does not
    run in order), resolved at construction."""

    rules: EventIdRules = dataclasses.field(default_factory=EventIdRules)
    overlap: frozenset[Pipe] | None = None
    overlap_depth: int = 2
    vector_cores: int = 2

    def __post_init__(self) -> None:
        if self.vector_cores not in (1, 2):
            raise SpecError(f"Simulator.vector_cores = {self.vector_cores!r} is invalid: allowed 1 or 2")
        if self.overlap is None:
            object.__setattr__(self, "overlap", self.rules.target.overlapping)
        else:
            object.__setattr__(self, "overlap", frozenset(Pipe.parse(p) for p in self.overlap))

    @classmethod
    def build(
        cls,
        rules: EventIdRules | None = None,
        *,
        vector_cores: int = 2,
        overlap: Iterable[Pipe] | None = None,
        overlap_depth: int = 2,
        flag_keying: Keying | None = None,
        cross_core_capacity: int | None = None,
    ) -> SimConfig:
        """The configuration from :class:`~pipes.ascend.sim.simulator.Simulator`'s arguments."""
        rules = rules if rules is not None else EventIdRules()
        # The rules are the one place hardware assumptions live (the allocator reads them too): an override
        # here is folded into them, so every part of the simulator sees the same assumption.
        if flag_keying is not None:
            rules = dataclasses.replace(rules, keying=flag_keying)
        if cross_core_capacity is not None:
            rules = dataclasses.replace(rules, cross_core_capacity=cross_core_capacity)
        return cls(rules, None if overlap is None else frozenset(overlap), overlap_depth, vector_cores)

    @property
    def in_order(self) -> frozenset[Pipe]:
        """The pipes run in order (a same-pipe dependency needs no ``pipe_barrier``): those not in ``overlap``."""
        return frozenset(p for p in Pipe if p is not Pipe.ALL) - self.overlap

    @property
    def keying(self) -> Keying:
        """How flags are keyed when executing (``rules.keying``): SOURCE_PIPE (src, id) or PIPE_PAIR (src, dst, id)."""
        return self.rules.keying

    @property
    def cross_core_capacity(self) -> int:
        """How many untaken sets a cross-core flag id counts (``rules.cross_core_capacity``)."""
        return self.rules.cross_core_capacity


__all__ = ["DEFAULT_OVERLAP", "SimConfig"]
