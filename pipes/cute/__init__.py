"""pipes.cute: the CuTe DSL backend (Hopper mbarrier pipelines).

Building blocks: :mod:`pipes.cute.state` (DSL-carried cursors and handles),
:mod:`pipes.cute.barriers` (mbarrier rings, debug-bounded waits), :mod:`pipes.cute.debug`
(debug mode and the trace hook).
"""

from .barriers import MbarrierRing, WaitSite, arrive_as_unit, bounded_wait, trap
from .debug import DebugConfig, TraceEvent, Tracer, resolve_debug
from .state import CuteConsumer, CuteProducer, CuteState, make_state, state_at

__all__ = [
    "CuteConsumer",
    "CuteProducer",
    "CuteState",
    "DebugConfig",
    "MbarrierRing",
    "TraceEvent",
    "Tracer",
    "WaitSite",
    "arrive_as_unit",
    "bounded_wait",
    "make_state",
    "resolve_debug",
    "state_at",
    "trap",
]
