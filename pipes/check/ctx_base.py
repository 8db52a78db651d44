"""What every part of an agent's context shares: its name, where it runs, the layout and the emit hook.

A leaf below :mod:`.context`: the pipeline views (:mod:`.pipeline`) and ordered-barrier turns
(:mod:`.ordered`) an agent's :class:`~pipes.check.context.Ctx` hands out hold a :class:`CtxBase` and emit
through it, so they need not import the context that creates them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .layout import Layout
from .scope import Place

__all__ = ["CtxBase"]


class CtxBase:
    """One agent's identity and hook to the checker; :class:`~pipes.check.context.Ctx` adds the operations."""

    def __init__(self, name: str, layout: Layout, emit: Callable[[Any], Any], place: Place | None = None) -> None:
        self.name = name
        self.layout = layout
        self.place = place if place is not None else Place()
        #: Low level: hand one operation record (pipes.check.ops) to the checker, get its result.
        self.emit = emit
        #: The pipeline roles this agent played so far: (pipeline, "producer" or consumer role, CTA).
        self.joined: set[tuple[str, str, int]] = set()
        #: The ordered-barrier groups it took turns as: (order, group).
        self.turns: set[tuple[str, int]] = set()
