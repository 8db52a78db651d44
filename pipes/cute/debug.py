"""Debug mode (bounded waits that report and trap) and the trace hook of every pipes.cute pipeline.

Debug mode
    ``debug=True`` at pipeline creation, or ``PIPES_DEBUG=1`` in the environment when the kernel is
    traced, turns every pipeline wait into a bounded spin (``mbarrier.try_wait`` against
    ``%globaltimer``). When the bound (``PIPES_DEBUG_TIMEOUT_MS``, default 4000 ms) passes, the
    waiting thread prints::

        pipes: wait timed out: pipeline=<name> role=<role> op=<acquire|wait> slot=<i> phase=<p> block=<b> thread=<t>

    and executes ``trap``, so a hang becomes a launch error naming the culprit. With debug off no
    extra code is emitted at all: the PTX is byte-identical to a build without the option.

Trace hook
    Every pipeline takes ``tracer=None``. A tracer is any object with
    ``record(event: int, pipeline_id: int, slot) -> None`` (:class:`Tracer` below), called while
    tracing at each acquire / commit / wait / release (events :class:`TraceEvent`) by the thread(s)
    that execute that call; it emits whatever device code it wants (``pipes.cute.trace`` writes
    timestamps into a global buffer). ``pipeline_id`` is the pipeline's ``trace_id`` (given at
    creation, default 0). With ``tracer=None`` nothing is emitted.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .state import TraceStatic

__all__ = ["DebugConfig", "TraceEvent", "Tracer", "resolve_debug"]

DEFAULT_TIMEOUT_MS = 4000


class TraceEvent(enum.IntEnum):
    """What a pipeline call reports to a tracer (the ``event`` argument of ``Tracer.record``)."""

    ACQUIRE = 0
    COMMIT = 1
    WAIT = 2
    RELEASE = 3


@runtime_checkable
class Tracer(Protocol):
    """The trace hook: called at trace time, emits device code that records one event."""

    def record(self, event: int, pipeline_id: int, slot: Any) -> None: ...


@dataclass(frozen=True)
class DebugConfig(TraceStatic):
    """Bounded-wait settings. ``timeout_ns`` is the wall-clock bound of one wait."""

    timeout_ns: int = DEFAULT_TIMEOUT_MS * 1_000_000

    def __post_init__(self) -> None:
        if isinstance(self.timeout_ns, bool) or not isinstance(self.timeout_ns, int) or self.timeout_ns < 1:
            raise ValueError(f"DebugConfig.timeout_ns = {self.timeout_ns!r} is invalid: allowed an int >= 1")


def _env_flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def resolve_debug(option: bool | DebugConfig | None) -> DebugConfig | None:
    """The debug settings for one pipeline: the explicit option, else ``PIPES_DEBUG`` (None = off)."""
    if isinstance(option, DebugConfig):
        return option
    enabled = _env_flag(os.environ.get("PIPES_DEBUG")) if option is None else bool(option)
    if not enabled:
        return None
    raw = os.environ.get("PIPES_DEBUG_TIMEOUT_MS", str(DEFAULT_TIMEOUT_MS))
    try:
        timeout_ms = int(raw)
    except ValueError:
        raise ValueError(f"PIPES_DEBUG_TIMEOUT_MS = {raw!r} is invalid: allowed an int >= 1 (milliseconds)") from None
    if timeout_ms < 1:
        raise ValueError(f"PIPES_DEBUG_TIMEOUT_MS = {raw!r} is invalid: allowed an int >= 1 (milliseconds)")
    return DebugConfig(timeout_ns=timeout_ms * 1_000_000)
