"""pipes.cute: the CuTe DSL backend (Hopper mbarrier pipelines; the Blackwell kinds are in :mod:`pipes.cute.sm100`).

Declare pipelines from :class:`pipes.PipelineSpec` objects (:class:`AsyncPipeline`, :class:`TmaLoadPipeline`,
:class:`StoreNotifyPipeline`), give them shared memory and initialize them once with
:func:`init_pipelines` (all threads, before role dispatch), then create producer/consumer handles
inside the role branches. Building blocks: :mod:`pipes.cute.state` (DSL-carried cursors and
handles), :mod:`pipes.cute.barriers` (mbarrier rings, debug-bounded waits), :mod:`pipes.cute.roles`
(role → warps, arrival-count checks), :mod:`pipes.cute.debug` (debug mode, trace hook).
Also here: :class:`TmaStoreStaging` (the epilogue's TMA-store staging ring: no barriers, no init),
:class:`OrderedBarrier` (ping-pong turns), :class:`NamedBarrierAllocator`, and the
trace recorder :class:`Tracer` (:mod:`pipes.cute.trace`; ``TracerProtocol`` is the hook it fills), and
:class:`TmaCacheHint` and :func:`read_once_policy` (L2 policies for TMA loads, :mod:`pipes.cute.cache_hint`).
"""

from .async_pipeline import AsyncOps, AsyncPipeline
from .barriers import MbarrierRing, WaitSite, arrive_as_unit, bounded_wait, trap
from .base import BoundPipeline, PipelineBase
from .cache_hint import TmaCacheHint, read_once_policy, tma_cache_policy
from .debug import DebugConfig, TraceEvent, resolve_debug
from .debug import Tracer as TracerProtocol
from .named_barriers import NamedBarrier, NamedBarrierAllocator
from .ordered import OrderedBarrier, OrderSpec
from .proxy import SlotReaders
from .roles import RoleLayout, Warps
from .staging import TmaStoreStaging, TmaStoreStagingProducer, WarpSync
from .state import CuteConsumer, CuteProducer, CuteState, TraceStatic, make_state, state_at
from .storage import PendingInit, init_pipelines, init_pipelines_arrive, storage_bytes, storage_words
from .store_notify import (
    StoreNotifyConsumer,
    StoreNotifyOps,
    StoreNotifyPipeline,
    StoreNotifyProducer,
    TileMeta,
    fence_before_async_forward,
    staging_wait,
)
from .tma_load import Multicast, TmaLoadOps, TmaLoadPipeline, TmaLoadProducer
from .trace import TraceLayout, TraceLog, Tracer

__all__ = [
    "AsyncOps",
    "AsyncPipeline",
    "BoundPipeline",
    "CuteConsumer",
    "CuteProducer",
    "CuteState",
    "DebugConfig",
    "MbarrierRing",
    "Multicast",
    "NamedBarrier",
    "NamedBarrierAllocator",
    "OrderSpec",
    "OrderedBarrier",
    "PendingInit",
    "PipelineBase",
    "RoleLayout",
    "SlotReaders",
    "StoreNotifyConsumer",
    "StoreNotifyOps",
    "StoreNotifyPipeline",
    "StoreNotifyProducer",
    "TileMeta",
    "TmaCacheHint",
    "TmaLoadOps",
    "TmaLoadPipeline",
    "TmaLoadProducer",
    "TmaStoreStaging",
    "TmaStoreStagingProducer",
    "TraceEvent",
    "TraceLayout",
    "TraceLog",
    "TraceStatic",
    "Tracer",
    "TracerProtocol",
    "WaitSite",
    "WarpSync",
    "Warps",
    "arrive_as_unit",
    "bounded_wait",
    "fence_before_async_forward",
    "init_pipelines",
    "init_pipelines_arrive",
    "make_state",
    "read_once_policy",
    "resolve_debug",
    "staging_wait",
    "state_at",
    "storage_bytes",
    "storage_words",
    "tma_cache_policy",
    "trap",
]
