"""The numbering of a protocol's barriers, flags and counters, which every agent context reads.

A leaf of :mod:`pipes.check`: :func:`pipes.check.protocol.compile_layout` fills a :class:`Layout` from a
protocol; the contexts (:mod:`.context`, :mod:`.ctx_data`, :mod:`.ctx_sync`, :mod:`.pipeline`) and the agent
trees read it without importing the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec import Completion
from .declarations import ModelCounter, ModelOrder, ModelPipeline
from .scope import Place

__all__ = ["Layout"]


@dataclass
class Layout:
    """The numbering of every barrier and flag of a protocol, and how pipelines map onto them."""

    barrier_names: list[str] = field(default_factory=list)
    barrier_expected: list[int] = field(default_factory=list)
    barrier_places: list[Place] = field(default_factory=list)
    flag_names: list[str] = field(default_factory=list)
    flag_initially_set: list[bool] = field(default_factory=list)
    pipelines: dict[str, ModelPipeline] = field(default_factory=dict)
    full: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    """Per (pipeline, CTA), per slot: the full barrier id (the flag id for FLAG pipelines)."""
    empty: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    orders: dict[str, tuple[ModelOrder, tuple[int, ...]]] = field(default_factory=dict)
    barrier_ids: dict[str, int] = field(default_factory=dict)
    flag_ids: dict[str, int] = field(default_factory=dict)
    counters: list[ModelCounter] = field(default_factory=list)
    counter_ids: dict[str, int] = field(default_factory=dict)
    places: list[Place] = field(default_factory=list)
    """Per agent: where it runs."""
    grids: list[int] = field(default_factory=list)
    """Per agent: its launch (0 first; a later grid depends on the earlier ones)."""

    def add_barrier(self, name: str, expected: int, place: Place | None = None) -> int:
        self.barrier_ids[name] = len(self.barrier_names)
        self.barrier_names.append(name)
        self.barrier_expected.append(expected)
        self.barrier_places.append(place if place is not None else Place())
        return self.barrier_ids[name]

    def add_flag(self, name: str, initially_set: bool) -> int:
        self.flag_ids[name] = len(self.flag_names)
        self.flag_names.append(name)
        self.flag_initially_set.append(initially_set)
        return self.flag_ids[name]

    def is_flag_pipeline(self, pipe: str) -> bool:
        return self.pipelines[pipe].spec.completion is Completion.FLAG
