"""The fused kernel's synchronization, run through ``pipes.check`` (a CPU proof, bounded in size).

The protocol is built from the kernel's own declarations (``hopper_gemm.kernel.declare(...,
comm=CommRole(...))``): its ``tiles`` StoreNotifyPipeline (slots, lag, readers) and its epilogue
``TmaStoreStaging`` ring (stages). Agents, as in the kernel:

* ``store`` — the storing warp: per tile, ``acquire`` a notify slot, then per subtile the staging
  ring's ``acquire`` (``wait_group.read``, epilogue barrier), its part of the buffer, ``publish``
  (``fence.proxy.async``, barrier), the TMA store of the whole buffer, ``commit`` (``commit_group``);
  after the tile's last subtile, ``commit(tile)`` (``commit_group``, ``wait_group lag``, arrive);
  ``tail()`` at the end. Its bulk engine is one: the staging groups and the notify groups mix, as on
  the GPU, so the lag arithmetic next to the staging ring is checked, not assumed.
* ``epi`` — another epilogue warp: the staging calls and its part of every buffer.
* ``comm`` — the communication warp: ``wait``, ``meta``, reads the tile from global memory, writes it
  to the receiver, releases the tile's ready flag at the transport's scope (``store_counter``: an
  ``st.release`` of the epoch), ``release``; ends on end-of-stream.
* the receiver — ``host`` on the host (``sys``), or ``receiver`` in another cluster of the device
  (``gpu``): acquires each ready flag at that scope, then reads the tile
  (:func:`pipes.check.host_reader`; the flags are :class:`pipes.check.ModelReadyFlags`).

With ``engine="copy"`` (the copy engine ships; ``host``, or ``local`` whose readers then acquire at ``sys``)
the last two change:

* ``comm`` adds 1 to its tile's *step* counter with a system-scope release (``red.release.sys``) and
  moves nothing;
* ``copy`` — the copy engine's stream (:func:`pipes.check.copy_stream`): per step, waits until the step's
  counter holds all its tiles (``cuStreamWaitValue32``, an acquire), reads the step's tiles of C, writes
  them to the receiver, then raises the step's ready flag to the launch's parity token
  (``cuStreamWriteValue32`` with its memory barrier: a release). The copy engine is outside the PTX memory
  model; it is modelled where only system-scope operations reach it (an agent off the SMs, placed with
  the host), which is what the kernel assumes by counting at ``.sys``;
* the host acquires each step's flag, then reads the step's tiles.

Sizes are cut down (``tiles`` tiles of ``subtiles`` subtiles) so the exploration is exhaustive; the
counts, depths and lag are the kernel's. ``bug`` plants a defect to show what the checker reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from pipes.check import (
    END_OF_STREAM,
    Agent,
    Ctx,
    ModelBarrier,
    ModelReadyFlags,
    ModelStepCounters,
    Protocol,
    Report,
    Scope,
    check,
    copy_stream,
    host_reader,
    model_of,
)
from pipes.check.staging import StagingHandle
from pipes.epoch import FIRST

#: Planted defects. ``narrow_scope``: the flag released one scope narrower than the receiver needs;
#: ``no_fence``: no fence between the tile's data and its flag (engine ``copy``: no memory barrier before
#: the copy stream's flag write) — a relaxed flag write, which publishes nothing.
BUGS = ("flag_before_data", "notify_on_read", "no_proxy_fence", "narrow_scope", "no_fence")
SCOPES = {"cta": Scope.CTA, "gpu": Scope.GPU, "sys": Scope.SYSTEM}
NARROWER = {"sys": "gpu", "gpu": "cta"}
WRITERS = ("store", "epi")
#: The launch the model ships (one launch: the first epoch of a sequence).
EPOCH = FIRST


#: Tiles per step in the copy engine's model (the kernel's steps hold a raster band's row of tiles).
STEP_TILES = 2


def comm_protocol(
    decl: Any,
    scope: str | None = "sys",
    tiles: int = 4,
    subtiles: int = 3,
    bug: str | None = None,
    engine: str = "sm",
) -> Protocol:
    """The protocol of a fused kernel's declarations ``decl`` (``hopper_gemm.kernel.Declarations`` with
    ``notify``); ``scope``: the transport's flag scope (None: ``none``, nothing is shipped); ``engine``:
    ``sm`` (the comm warp copies) or ``copy`` (the copy engine ships steps of :data:`STEP_TILES` tiles)."""
    if engine not in ("sm", "copy"):
        raise ValueError(f"engine = {engine!r} is invalid: allowed 'sm' or 'copy'")
    if engine == "copy" and (scope != "sys" or tiles % STEP_TILES):
        raise ValueError(f"the copy engine's model ships to the host (scope 'sys') in steps of {STEP_TILES} tiles")
    if decl.notify is None:
        raise ValueError("comm_protocol needs the declarations of a kernel with comm (declare(..., comm=...))")
    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {BUGS}")
    if scope is not None and scope not in NARROWER:
        raise ValueError(f"scope = {scope!r} is invalid: allowed 'sys', 'gpu' or None")
    notify = model_of(decl.notify)
    if bug == "notify_on_read":
        notify = dataclasses.replace(notify, notify_on="smem_read")
    pipe = notify.name
    staging = decl.staging
    sync = f"{staging.name}_sync"
    flag_scope = NARROWER.get(scope) if bug == "narrow_scope" else scope
    fenced = bug != "no_fence"

    def expected(tile: int, epoch: int = EPOCH) -> tuple:
        return tuple((tile, sub, w) for sub in range(subtiles) for w in range(len(WRITERS)))

    def writer(w: int):
        def run(ctx: Ctx) -> None:
            st = StagingHandle(ctx, staging.name, staging.stages, sync, "no_fence" if bug == "no_proxy_fence" else None)
            p = ctx.producer(pipe) if w == 0 else None
            for tile in range(tiles):
                if p is not None:
                    p.acquire()  # before the tile's first TMA store
                for sub in range(subtiles):
                    slot = st.acquire()
                    st.write(slot, (tile, sub, w), part=w)
                    st.publish()
                    if p is not None:
                        st.store(slot, ("C", tile, sub), parts=tuple(range(len(WRITERS))))
                    st.commit()
                if p is not None:
                    p.commit(tile)  # after the tile's last staging commit
            if p is not None:
                p.tail()
            st.tail()

        return run

    def tile_parts(ctx: Ctx, tile: int) -> tuple:
        return tuple(ctx.read_global((("C", tile, sub), w)) for sub in range(subtiles) for w in range(len(WRITERS)))

    def ship(ctx: Ctx, tile: int, parts: tuple) -> None:
        ctx.write_global(("dst", tile), parts)

    def received(ctx: Ctx, tile: int) -> tuple:
        return ctx.read_global(("dst", tile))

    def notified(ctx: Ctx) -> Iterator[int]:  # the comm warp's tiles: wait, meta, …, release; end of stream
        c = ctx.consumer(pipe)
        while (tile := ctx.read_meta(pipe, c.wait())) is not END_OF_STREAM:
            yield tile
            c.release()
        c.release()

    agents = [Agent(name, writer(w)) for w, name in enumerate(WRITERS)]
    barriers = [ModelBarrier(sync, len(WRITERS))]
    if engine == "copy":
        steps = ModelStepCounters("step", tiles // STEP_TILES, STEP_TILES, scope=SCOPES[flag_scope])
        ready = ModelReadyFlags("ready", steps.steps, Scope.SYSTEM, holds="parity_token")

        def count(ctx: Ctx) -> None:  # the comm warp counts each tile into its step
            for tile in notified(ctx):
                steps.count(ctx, tile // STEP_TILES)

        copy = copy_stream(
            "copy", steps, ready, tile_parts, ship, epoch=EPOCH, barrier=fenced, flag_first=bug == "flag_before_data"
        )
        host = host_reader("host", ready, received, expected, tiles_per_flag=STEP_TILES, epochs=(EPOCH,))
        agents += [Agent("comm", count), copy, host]
        label = "epilogue_comm_copy" + (f"_{bug}" if bug else "")
        counters = (*steps.counters(), *ready.counters())
        return Protocol(label, agents, [notify], barriers=barriers, counters=counters)

    label = "epilogue_comm" + (f"_{bug}" if bug else "")
    if scope is None:  # nothing is shipped: the comm warp only drains the notifications

        def drain(ctx: Ctx) -> None:
            for _ in notified(ctx):
                pass

        return Protocol(label, [*agents, Agent("comm", drain)], [notify], barriers=barriers)
    ready = ModelReadyFlags("ready", tiles, SCOPES[flag_scope])

    def comm(ctx: Ctx) -> None:
        for tile in notified(ctx):
            parts = tile_parts(ctx, tile)
            if bug == "flag_before_data":
                ready.publish(ctx, tile, EPOCH)
            ship(ctx, tile, parts)
            if bug != "flag_before_data":
                ready.publish(ctx, tile, EPOCH, fenced=fenced)

    # The host for a system-scope transport; another CTA's kernel (another cluster) for a GPU-scope one.
    if scope == "sys":
        receiver = host_reader("host", ready, received, expected, epochs=(EPOCH,))
    else:
        receiver = host_reader(
            "receiver", ready, received, expected, epochs=(EPOCH,), scope=SCOPES[scope], device=0, cluster=1
        )
    agents += [Agent("comm", comm), receiver]
    return Protocol(label, agents, [notify], barriers=barriers, counters=ready.counters())


def check_declarations(decl: Any, scope: str | None, **options: Any) -> Report:
    """Run :func:`comm_protocol` through the checker (exhaustive within ``max_states``)."""
    limits = {k: options.pop(k) for k in ("max_states", "random_runs") if k in options}
    return check(comm_protocol(decl, scope, **options), **limits)
