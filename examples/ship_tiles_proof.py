"""The pipes.check proof of examples/ship_tiles.py, and its report when no GPU is here.

The protocol is built from the kernel's own declarations (``ShipTiles(...).notify``, the comm role's
scope): the storing warp (staging buffer, proxy fence, TMA store, notify), the comm warp (credit, copy, flag
at the receiver's scope) and the receiver (acquire, read, grant), over two launches. ``bug`` plants one of
:data:`BUGS` to show what the checker reports.
"""

import dataclasses

from ship_tiles import STAGING, ShipTiles

from pipes.check import (
    END_OF_STREAM,
    Agent,
    ModelCounter,
    ModelCredits,
    ModelReadyFlags,
    Protocol,
    Scope,
    check,
    host_reader,
    model_of,
)
from pipes.check.staging import StagingHandle
from pipes.cute.comm import SCOPES, needed_scope
from pipes.epoch import FIRST

BUGS = ("notify_on_read", "no_proxy_fence", "narrow_scope", "no_credits")


def protocol(receiver: str = "host", bug: str | None = None, tiles: int = 3) -> Protocol:
    """The kernel's own ``tiles`` pipeline (``model_of``; one per launch) between the storing warp (staging
    buffer, proxy fence, TMA store, commit) and the comm warp (credit, copy, flag at the receiver's scope), and
    the receiver reading every tile of each launch and granting its credit. Launch i + 1's warps start once
    launch i's have ended (stream order: the ``launched`` counter). ``bug``: one of :data:`BUGS`."""
    kernel = ShipTiles(needed_scope(receiver))  # the declarations; nothing compiles
    need = Scope(SCOPES.index(kernel.shipper.spec.scope))  # the reader's: sys for host and peer, gpu for device
    scope = Scope(need - 1) if bug == "narrow_scope" else need  # the flags' release
    model = model_of(kernel.notify)
    if bug == "notify_on_read":  # the stock .read wait: the smem source was read, the global writes may not be done
        model = dataclasses.replace(model, notify_on="smem_read")
    rings = [dataclasses.replace(model, spec=dataclasses.replace(model.spec, name=f"tiles{i}")) for i in range(2)]
    flags, credits = ModelReadyFlags("ready", tiles, scope), ModelCredits("credit", tiles, need)
    epochs = [FIRST, FIRST + 1]

    def store(ctx) -> None:
        for i, epoch in enumerate(epochs):
            if i:
                ctx.wait_counter("launched", at_least=2 * i, scope=Scope.GPU)
            p = ctx.producer(rings[i].spec.name)
            st = StagingHandle(ctx, "y_staging", STAGING, None, "no_fence" if bug == "no_proxy_fence" else None)
            for t in range(tiles):
                p.acquire()  # begin_tile
                slot = st.acquire()
                st.write(slot, (t, epoch))
                st.publish()
                st.store(slot, ("Y", t))
                p.commit(t)  # end_tile: commit_group, wait_group LAG without .read, notify
                st.state.advance()  # committed_by: the staging commit only moves its cursor
            p.tail()  # finish
            st.tail()
            ctx.signal("launched", 1, scope=Scope.GPU)

    def comm(ctx) -> None:
        for i, epoch in enumerate(epochs):
            if i:
                ctx.wait_counter("launched", at_least=2 * i, scope=Scope.GPU)
            c, name = ctx.consumer(rings[i].spec.name), rings[i].spec.name
            while (t := ctx.read_meta(name, c.wait())) is not END_OF_STREAM:
                if bug != "no_credits":
                    credits.wait(ctx, t, epoch, scope=need)  # Credits.wait
                ctx.write_global(("dst", t), ctx.read_global(("Y", t)))  # TileCopy
                flags.publish(ctx, t, epoch)  # ReadyFlags.publish
                c.release()
            c.release()
            ctx.signal("launched", 1, scope=Scope.GPU)

    where = {"host": {}, "device": {"device": 0, "cluster": 1}, "peer": {"device": 1}}[receiver]
    read, want = (lambda ctx, t: ctx.read_global(("dst", t))), (lambda t, e: (t, e))
    reader = host_reader(receiver, flags, read, want, epochs=epochs, credits=credits, scope=need, **where)
    counters = (*flags.counters(), *credits.counters(), ModelCounter("launched"))
    name = f"ship_tiles_{receiver}" + (f"_{bug}" if bug else "")
    return Protocol(name, [Agent("store", store), Agent("comm", comm), reader], rings, counters=counters)


def prove(receiver: str = "host", bug: str | None = None):
    return check(protocol(receiver, bug))
