"""One catalogue entry: a protocol builder and what checking it must give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol import Protocol
from ..report import FindingKind


@dataclass(frozen=True)
class Entry:
    """One catalogue protocol: ``expect`` None means it must check clean (warnings included: none).

    A bad entry names the finding it must produce and words its message must contain (the barrier, slot
    or role at fault); ``twin`` names the corrected entry that must check clean.
    """

    name: str
    summary: str
    build: Callable[[], Protocol]
    expect: FindingKind | None = None
    mentions: tuple[str, ...] = ()
    alternatives: tuple[FindingKind, ...] = ()
    """Other finding kinds that are equally right (the first one found depends on the exploration order)."""
    twin: str | None = None

    @property
    def bad(self) -> bool:
        return self.expect is not None
