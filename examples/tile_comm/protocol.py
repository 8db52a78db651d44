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
  to the receiver, releases the tile's ready flag (``store_counter``: an ``st.release`` of the epoch),
  ``release``; ends on end-of-stream.
* ``host`` — the receiver: waits for each ready flag (an acquire), then reads the tile.

Sizes are cut down (``tiles`` tiles of ``subtiles`` subtiles) so the exploration is exhaustive; the
counts, depths and lag are the kernel's. ``bug`` plants a defect to show what the checker reports.
Memory scopes: where ``pipes.check`` models them (issue 10), the receiver runs where the transport's
receiver is (``sys``: on the host; ``gpu``: in another CTA of the device) and the flag is released and
acquired at the transport's scope; ``bug="narrow_scope"`` releases it one scope narrower.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from pipes.check import END_OF_STREAM, Agent, Ctx, ModelBarrier, Protocol, Report, check, model_of
from pipes.check.staging import StagingHandle

BUGS = ("flag_before_data", "notify_on_read", "no_proxy_fence", "narrow_scope")
#: ``narrow_scope``: the flag released one scope narrower than the receiver needs (host: ``.gpu``; a
#: receiver elsewhere on the device: ``.cta``).
NARROWER = {"sys": "gpu", "gpu": "cta"}
WRITERS = ("store", "epi")
EPOCH = 1


def scopes_modelled() -> bool:
    """Whether this ``pipes.check`` places agents (host vs device) and scopes flag releases."""
    from pipes.check import ModelCounter  # noqa: F401 - ready flags need counters

    has_place = "device" in {f.name for f in dataclasses.fields(Agent)}
    return has_place and "scope" in inspect.signature(Ctx.store_counter).parameters


def comm_protocol(
    decl: Any, scope: str | None = "sys", tiles: int = 3, subtiles: int = 2, bug: str | None = None
) -> Protocol:
    """The protocol of a fused kernel's declarations ``decl`` (``hopper_gemm.kernel.Declarations`` with
    ``notify``); ``scope``: the transport's flag scope (None: ``none``, nothing is shipped)."""
    from pipes.check import ModelCounter

    if decl.notify is None:
        raise ValueError("comm_protocol needs the declarations of a kernel with comm (declare(..., comm=...))")
    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {BUGS}")
    if bug == "narrow_scope" and not scopes_modelled():
        raise ValueError("bug='narrow_scope' needs memory scopes in pipes.check (issue 10, item 10)")
    notify = model_of(decl.notify)
    if bug == "notify_on_read":
        notify = dataclasses.replace(notify, notify_on="smem_read")
    pipe = notify.name
    staging = decl.staging
    sync = f"{staging.name}_sync"
    scoped = scopes_modelled()
    flag_scope = NARROWER.get(scope) if bug == "narrow_scope" else scope

    def expected(tile: int) -> tuple:
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

    def comm(ctx: Ctx) -> None:
        c = ctx.consumer(pipe)
        while (tile := ctx.read_meta(pipe, c.wait())) is not END_OF_STREAM:
            if scope is not None:
                parts = tuple(
                    ctx.read_global((("C", tile, sub), w)) for sub in range(subtiles) for w in range(len(WRITERS))
                )
                if bug == "flag_before_data":
                    _release_flag(ctx, tile, flag_scope, scoped)
                    ctx.write_global(("dst", tile), parts)
                else:
                    ctx.write_global(("dst", tile), parts)
                    _release_flag(ctx, tile, flag_scope, scoped)
            c.release()
        c.release()

    def receiver(ctx: Ctx) -> None:
        for tile in range(tiles):
            if scoped:
                ctx.wait_counter(f"ready{tile}", EPOCH, scope=_scope(scope))
            else:
                ctx.wait_counter(f"ready{tile}", EPOCH)
            got = ctx.read_global(("dst", tile))
            assert got == expected(tile), f"{ctx.name}: tile {tile} arrived as {got!r}"

    agents = [Agent(name, writer(w)) for w, name in enumerate(WRITERS)]
    agents.append(Agent("comm", comm))
    counters = []
    if scope is not None:
        agents.append(_receiver_agent(receiver, scope, scoped))
        counters = [ModelCounter(f"ready{t}") for t in range(tiles)]
    label = "epilogue_comm" + (f"_{bug}" if bug else "")
    return Protocol(label, agents, [notify], barriers=[ModelBarrier(sync, len(WRITERS))], counters=counters)


def _scope(name: str) -> Any:
    from pipes.check.scope import Scope

    return {"cta": Scope.CTA, "cluster": Scope.CLUSTER, "gpu": Scope.GPU, "sys": Scope.SYSTEM}[name]


def _receiver_agent(fn: Any, scope: str, scoped: bool) -> Agent:
    """``host`` on the host for a system-scope transport; ``peer`` in another cluster of the device for ``gpu``."""
    if not scoped:
        return Agent("host" if scope == "sys" else "receiver", fn)
    if scope == "sys":
        return Agent("host", fn, device="host")
    return Agent("receiver", fn, cluster=1)


def _release_flag(ctx: Ctx, tile: int, scope: str | None, scoped: bool) -> None:
    if scoped:
        ctx.store_counter(f"ready{tile}", EPOCH, scope=_scope(scope))
    else:
        ctx.store_counter(f"ready{tile}", EPOCH)


def check_declarations(decl: Any, scope: str | None, **options: Any) -> Report:
    """Run :func:`comm_protocol` through the checker (exhaustive within ``max_states``)."""
    limits = {k: options.pop(k) for k in ("max_states", "random_runs") if k in options}
    return check(comm_protocol(decl, scope, **options), **limits)
