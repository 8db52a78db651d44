"""The two-GPU reduce-scatter's launch protocol over several launches, run through ``pipes.check``.

:mod:`tile_comm.protocol` proves one launch inside one GPU (the storing warp → communication warp
hand-off). This model proves what happens *between* the two GPUs and *across* launches with the copy
engine (:mod:`pipes.comm.copy_engine`, :class:`tile_comm.peer.TensorParallelGemmRS`). Per rank ``r``
(device ``r``), two agents:

* ``launch{r}`` — the launching stream and the fused kernel, in stream order: the step counters back to
  0 and the start event (:meth:`pipes.comm.CopyEngineShipper.begin`); the kernel: each band of the other rank's
  row block written to C and counted (``red.release.sys``), then each band of its own block: wait for
  the band's inbox flag (``ld.acquire.sys`` until it holds the launch's parity token,
  :func:`pipes.epoch.parity_token`; ``CommConfig.adds_received``), read the other rank's partial from
  the inbox; after the kernel, the join (the launching stream waits for its copy work), then the credit
  (``credits[0] = 1``: the other rank may overwrite this inbox).
* ``copy{r}_{k}`` — copy stream ``k`` (an agent off the SMs, reached only at system scope, placed with
  the host as in :mod:`tile_comm.protocol`): after the start event, stream 0 takes the other rank's
  credit (wait for 1, write 0) and forks the others (the graph's fork event); each stream, for its bands:
  wait until the band's count is complete, read the band of C, write it into the other rank's inbox,
  raise the band's flag there to the launch's token (a fenced ``cuStreamWriteValue32``); the others join
  stream 0, which then signals the launching stream's join. Tokens alternate between two values, so the
  model also proves they cannot be confused: a flag the owner reads holds this launch's token or the
  previous launch's, never the one before (``no_credit`` shows what happens without the credit).

The counts and flags are :class:`pipes.check.ModelStepCounters` and :class:`pipes.check.ModelReadyFlags`;
launches take the epochs :data:`pipes.epoch.FIRST`, :func:`~pipes.epoch.next_epoch` of it, … The data
carry their launch: C's band ``b`` of launch ``e`` on rank ``r`` is ``(e, r, b)``. The kernel asserts
that the inbox holds the other rank's band of *this* launch, the copy engine that C holds this launch's
band; a stale or early value, a race the checker sees, or a wait nobody satisfies is a finding.
``bug`` plants a defect (:data:`PEER_BUGS`) to show what the checker reports.
"""

from __future__ import annotations

from pipes.check import (
    HOST,
    Agent,
    Ctx,
    ModelCounter,
    ModelReadyFlags,
    ModelStepCounters,
    Protocol,
    Report,
    Scope,
    check,
)
from pipes.epoch import FIRST, next_epoch

#: ``credit_before_flags``: the credit given right after the kernel is queued, before this rank saw the
#: other's flags (a credit given before the sender's clear is lost);
#: ``no_credit``: the sender never takes a credit (it may overwrite an inbox still being read);
#: ``flag_before_data``: the flag raised before the band's data; ``no_reset``: the step counters are not
#: reset per launch (a stale count ships a band before this launch computed it); ``one_token``: every
#: launch raises the flags to the same value (the owner takes the previous launch's flag for its own);
#: ``parity_flag``: the flags hold ``epoch & 1`` (the first launch's token 0 is what a fresh flag holds);
#: ``no_fence``: the copy stream's flag write has no memory barrier before it (relaxed: it publishes nothing).
PEER_BUGS = ("credit_before_flags", "no_credit", "flag_before_data", "no_reset", "one_token", "parity_flag", "no_fence")
SYS = Scope.SYSTEM


def reduce_scatter_protocol(launches: int = 2, bands: int = 2, bug: str | None = None, streams: int = 1) -> Protocol:
    """The two ranks' launch protocol for ``launches`` back-to-back launches of ``bands`` bands per block,
    each rank's copy work on ``streams`` copy streams (bands dealt round-robin, as the shipper does)."""
    if bug is not None and bug not in PEER_BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {PEER_BUGS}")
    if launches < 1 or bands < 1 or streams < 1:
        raise ValueError(f"launches = {launches}, bands = {bands}, streams = {streams}: allowed at least 1 each")
    epochs = [FIRST]
    while len(epochs) < launches:
        epochs.append(next_epoch(epochs[-1]))
    holds = "epoch_bit" if bug == "parity_flag" else "parity_token"
    #: counts[r]: rank r's band counters; inbox[r]: the flags of rank r's inbox (raised by the other rank).
    counts = [ModelStepCounters(f"count{r}_", bands, 1) for r in (0, 1)]
    inbox = [ModelReadyFlags(f"flag{r}_", bands, SYS, holds=holds) for r in (0, 1)]

    def raised(e: int) -> int:
        """The epoch whose token launch ``e`` raises the flags to (``one_token``: always the first's)."""
        return FIRST if bug == "one_token" else e

    def launch(r: int):
        def run(ctx: Ctx) -> None:
            for e in epochs:
                if bug != "no_reset":
                    for b in range(bands):
                        counts[r].reset(ctx, b)  # cudaMemsetAsync before the kernel
                ctx.store_counter(f"start{r}", e, scope=SYS)  # the start event the copy work waits for
                for b in range(bands):  # the kernel: the other rank's block first (its bands are shipped)
                    ctx.write_global(("C", r, b), (e, r, b))
                    counts[r].count(ctx, b)
                if bug == "credit_before_flags":
                    ctx.store_counter(f"credit{r}", 1, scope=SYS)
                for b in range(bands):  # then its own block: each band waits for the other rank's copy
                    inbox[r].wait(ctx, b, raised(e), scope=SYS)
                    got = ctx.read_global(("inbox", r, b))
                    if got != (e, 1 - r, b):
                        why = inbox[r].confusion(raised(e))
                        raise AssertionError(
                            f"launch {e} on rank {r} added {got!r} as band {b}" + (f": {why}" if why else "")
                        )
                ctx.wait_counter(f"done{r}", e, scope=SYS)  # the join: this rank's copy work is done
                if bug != "credit_before_flags":
                    ctx.store_counter(f"credit{r}", 1, scope=SYS)  # the other rank may overwrite the inbox

        return run

    def copy(r: int, stream: int):
        """Copy stream ``stream`` of rank ``r``: stream 0 takes the credit and forks the others (``fork{r}``),
        each ships bands ``stream, stream + streams, …``, the others join stream 0 (``join{r}``)."""
        peer = 1 - r

        def run(ctx: Ctx) -> None:
            for n, e in enumerate(epochs, start=1):
                ctx.wait_counter(f"start{r}", e, scope=SYS)
                if stream == 0:
                    if bug != "no_credit":  # the binary semaphore: wait for 1, write 0
                        ctx.wait_counter(f"credit{peer}", 1, scope=SYS)
                        ctx.store_counter(f"credit{peer}", 0, scope=SYS)
                    if streams > 1:
                        ctx.store_counter(f"fork{r}", e, scope=SYS)
                else:
                    ctx.wait_counter(f"fork{r}", e, scope=SYS)
                for b in range(stream, bands, streams):
                    counts[r].wait(ctx, b)
                    data = ctx.read_global(("C", r, b))
                    assert data == (e, r, b), f"launch {e}: rank {r}'s copy engine shipped {data!r} as band {b}"
                    if bug == "flag_before_data":
                        inbox[peer].publish(ctx, b, raised(e))
                    ctx.write_global(("inbox", peer, b), data)
                    if bug != "flag_before_data":
                        inbox[peer].publish(ctx, b, raised(e), fenced=bug != "no_fence")
                if stream > 0:
                    ctx.signal(f"join{r}", 1, scope=SYS)
                    continue
                if streams > 1:
                    ctx.wait_counter(f"join{r}", n * (streams - 1), scope=SYS)  # n launches' joins so far
                ctx.store_counter(f"done{r}", e, scope=SYS)

        return run

    agents = []
    for r in (0, 1):
        agents.append(Agent(f"launch{r}", launch(r), device=r))
        agents += [Agent(f"copy{r}_{k}", copy(r, k), device=HOST) for k in range(streams)]
    counters = []
    for r in (0, 1):
        counters += [ModelCounter(f"start{r}"), ModelCounter(f"done{r}"), ModelCounter(f"credit{r}", initial=1)]
        counters += [ModelCounter(f"fork{r}"), ModelCounter(f"join{r}")]
        counters += [*counts[r].counters(), *inbox[r].counters()]
    stale = {("inbox", r, b): ("before the first launch", r, b) for r in (0, 1) for b in range(bands)}
    stale |= {("C", r, b): ("before the first launch", r, b) for r in (0, 1) for b in range(bands)}
    label = "tp_reduce_scatter" + (f"_{bug}" if bug else "")
    return Protocol(label, agents, [], counters=counters, initial=stale)


def check_reduce_scatter(
    launches: int = 2, bands: int = 2, bug: str | None = None, streams: int = 1, **limits: int
) -> Report:
    """:func:`reduce_scatter_protocol` through the checker (exhaustive within ``max_states``)."""
    return check(reduce_scatter_protocol(launches, bands, bug, streams), **limits)
