"""Shared memory and one-time initialization for all of a kernel's pipelines.

Use::

    load = TmaLoadPipeline(load_spec)
    out = StoreNotifyPipeline(store_spec, lag=1)

    @cute.struct
    class Storage:
        pipes: cute.struct.MemRange[cutlass.Int64, storage_words(load, out)]
        ...

    # in the kernel, in EVERY thread, before role dispatch:
    load_ops, out_ops = init_pipelines((load, out), storage.pipes.data_ptr(), layout=layout)
    # or: init_pipelines((load, out), allocator=smem)   (allocates the words itself)
    if layout.is_role("load"):
        producer = load_ops.producer()       # or load.producer(): no sync, no init here

``init_pipelines`` lays the pipelines out one after another, checks each spec against the role
layout (arrival counts), then: warp 0 (one elected thread) initializes every barrier,
``fence.mbarrier_init``, and one CTA barrier (``bar.sync 0``) or, for clusters, one cluster
arrive/wait. Handles created later, inside role branches, emit no synchronization, so nothing can
deadlock on a branch that only some warps enter. Calling it inside a dynamic branch or loop is a
:class:`~pipes.errors.ProtocolError` at trace time.

Arrive now, wait later (what ``pipeline_init_arrive`` / ``pipeline_init_wait`` do for the stock
pipelines): the cluster barrier's latency can hide under the kernel's prologue::

    pending = init_pipelines_arrive((load, out), storage.pipes.data_ptr(), layout=layout)
    ...partition tensors, build TMA views, compute tile coordinates (no pipeline use)...
    load_ops, out_ops = pending.wait()      # every thread, before role dispatch

``init_pipelines_arrive`` initializes, fences and (for clusters) arrives on the cluster barrier;
``wait()`` waits on it (``bar.sync 0`` without a cluster). Until ``wait()`` has been traced the
declarations refuse to hand out handles: a kernel that uses a pipeline before the wait — a remote
arrival could reach a peer CTA whose barriers are not initialized yet — fails at trace time with a
:class:`~pipes.errors.ProtocolError` that names the missing call; so does a second ``wait()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ..errors import ProtocolError
from .barriers import MBARRIER_BYTES, warp_uniform_index
from .base import BoundPipeline, PipelineBase, current_kernel_key, enclosing_region_ops
from .roles import RoleLayout
from .state import TraceStatic

__all__ = ["PendingInit", "init_pipelines", "init_pipelines_arrive", "storage_bytes", "storage_words"]


def storage_words(*pipelines: PipelineBase) -> int:
    """8-byte words of shared memory all ``pipelines`` need together (for a ``MemRange[Int64, n]``)."""
    return sum(p.smem_words for p in _flatten(pipelines))


def storage_bytes(*pipelines: PipelineBase) -> int:
    return storage_words(*pipelines) * MBARRIER_BYTES


def _flatten(pipelines: Sequence[Any]) -> list[PipelineBase]:
    flat: list[PipelineBase] = []
    for item in pipelines:
        if isinstance(item, (list, tuple)):
            flat.extend(_flatten(item))
        elif isinstance(item, PipelineBase):
            flat.append(item)
        else:
            raise ProtocolError(f"init_pipelines: {item!r} is not a pipes.cute pipeline declaration")
    return flat


def init_pipelines(
    pipelines: Sequence[PipelineBase],
    storage: cute.Pointer | None = None,
    *,
    allocator: Any = None,
    layout: RoleLayout | None = None,
    cluster_size: int | None = None,
) -> tuple[BoundPipeline, ...]:
    """Bind and initialize every pipeline of the kernel. Call once, in all threads, before role dispatch.

    ``storage``: a shared-memory pointer to :func:`storage_words` Int64 words (e.g. a struct field's
    ``data_ptr()``), or pass ``allocator`` (a ``cutlass`` SmemAllocator) to allocate them here.
    ``layout``: checked against every spec (arrival counts; raises ProtocolError with the sums).
    ``cluster_size``: CTAs per cluster (default ``layout.cluster_size`` or 1); above 1 the final
    synchronization is a cluster barrier, as remote arrivals need initialized peers.

    The same as ``init_pipelines_arrive(...).wait()``.
    """
    return init_pipelines_arrive(
        pipelines, storage, allocator=allocator, layout=layout, cluster_size=cluster_size
    ).wait()


class PendingInit(TraceStatic):
    """Pipelines whose barriers are initialized and announced, not yet known initialized everywhere.

    Returned by :func:`init_pipelines_arrive`; :meth:`wait` (once, in every thread, before role
    dispatch) completes the CTA or cluster synchronization and returns the bound pipelines.
    """

    def __init__(self, bound: tuple[BoundPipeline, ...], cluster_size: int, key: int) -> None:
        self.bound = bound
        self.cluster_size = cluster_size
        self.key = key
        self.waited = False

    @property
    def names(self) -> list[str]:
        return [ops.decl.name for ops in self.bound]

    def wait(self) -> tuple[BoundPipeline, ...]:
        """``barrier.cluster.wait`` (clusters) or ``bar.sync 0``; then the pipelines may be used."""
        if self.waited:
            raise ProtocolError(f"init_pipelines_arrive({self.names}).wait() is traced twice: call it once")
        if current_kernel_key() != self.key:
            raise ProtocolError(f"init_pipelines_arrive({self.names}).wait() is traced outside the kernel that arrived")
        nested = enclosing_region_ops()
        if nested:
            raise ProtocolError(
                f"init_pipelines_arrive({self.names}).wait() is traced inside {' inside '.join(nested)}: it must "
                "run in every thread of the CTA before role dispatch (a CTA/cluster barrier in a branch deadlocks)"
            )
        if self.cluster_size > 1:
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()
        self.waited = True
        for ops in self.bound:
            ops.decl._register(self.key, ops)
        return self.bound


def init_pipelines_arrive(
    pipelines: Sequence[PipelineBase],
    storage: cute.Pointer | None = None,
    *,
    allocator: Any = None,
    layout: RoleLayout | None = None,
    cluster_size: int | None = None,
) -> PendingInit:
    """The first half of :func:`init_pipelines`: bind, initialize, fence and (clusters) arrive.

    Arguments as for :func:`init_pipelines`. Call :meth:`PendingInit.wait` later, in every thread and
    before role dispatch; until then the pipelines refuse to hand out handles.
    """
    decls = _flatten(pipelines)
    if not decls:
        raise ProtocolError("init_pipelines: no pipelines given")
    names = [d.name for d in decls]
    if len(set(map(id, decls))) != len(decls):
        raise ProtocolError(f"init_pipelines: a pipeline is listed twice in {names}")
    key = current_kernel_key()
    if key is None:
        raise ProtocolError("init_pipelines must be called inside a @cute.kernel (no kernel is being traced)")
    nested = enclosing_region_ops()
    if nested:
        raise ProtocolError(
            f"init_pipelines({names}) is traced inside {' inside '.join(nested)}: it must run in every thread "
            "of the CTA before role dispatch (it ends with a CTA/cluster barrier that a branch would deadlock)"
        )
    if layout is not None:
        for decl in decls:
            layout.check(decl.spec)
    if cluster_size is None:
        cluster_size = max([layout.cluster_size if layout is not None else 1, *(d.cluster_size for d in decls)])
    for decl in decls:
        if decl.cluster_size > cluster_size:
            raise ProtocolError(
                f"{decl.kind} {decl.name!r} signals across {decl.cluster_size} CTAs but cluster_size={cluster_size}"
            )
    for decl in decls:
        peers = max(r.peers for r in (decl.spec.producer, *decl.spec.consumers))
        if peers > cluster_size:
            raise ProtocolError(
                f"{decl.kind} {decl.name!r}: a role has peers={peers} but cluster_size={cluster_size}; "
                "pass init_pipelines(..., cluster_size=N) or RoleLayout(cluster_size=N)"
            )

    words = storage_words(*decls)
    if storage is None:
        if allocator is None:
            raise ProtocolError("init_pipelines: pass the storage pointer or allocator=SmemAllocator()")
        storage = allocator.allocate_array(Int64, words, byte_alignment=MBARRIER_BYTES)
    elif allocator is not None:
        raise ProtocolError("init_pipelines: pass either storage or allocator, not both")
    if not isinstance(storage, cute.Pointer):
        raise ProtocolError(f"init_pipelines: storage = {storage!r} is not a cute.Pointer to shared memory")
    if storage.dtype is not Int64:
        storage = cute.recast_ptr(storage, dtype=Int64)

    bound: list[BoundPipeline] = []
    offset = 0
    pending = PendingInit((), cluster_size, key)
    for decl in decls:
        ops = decl.bind(storage + offset)
        decl._register_pending(key, pending)
        bound.append(ops)
        offset += decl.smem_words
    pending.bound = tuple(bound)

    _init_barriers(pending.bound)
    cute.arch.mbarrier_init_fence()
    if cluster_size > 1:
        # Relaxed: the fence above already orders the inits; the wait (PendingInit.wait) acquires them.
        cute.arch.cluster_arrive_relaxed()
    return pending


@cute.jit
def _init_barriers(bound: cutlass.Constexpr) -> None:
    if warp_uniform_index() == 0:
        with cute.arch.elect_one():
            for ops in cutlass.range_constexpr(len(bound)):
                bound[ops].init_barriers()
