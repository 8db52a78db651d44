"""The reduce-scatter's launch protocol over ``ranks`` GPUs and several launches, run through ``pipes.check``.

:mod:`tile_comm.protocol` proves one launch inside one GPU (the storing warp → communication warp
hand-off). This model proves what happens *between* the GPUs and *across* launches with the copy
engine (:mod:`pipes.comm.copy_engine`, :class:`tile_comm.peer.TensorParallelGemmRS`). Rank ``r`` of
``W = ranks`` computes C's row blocks in :func:`tile_comm.peer.block_order`: ranks ``r+1, r+2, …`` (mod
``W``), its own last; block position ``p < W − 1`` goes to rank :func:`shipped_to` ``(r, p) = (r+p+1) % W``,
into slot ``p`` of that rank's inbox (:func:`tile_comm.role.inbox_slot`), and slot ``p`` of rank ``r``'s
inbox comes from :func:`sender_of` ``(r, p) = (r−p−1) % W``. Every slot has its own flags (one per band)
and its own binary credit word ``credits[p]`` in the receiver's memory. Per rank ``r`` (device ``r``):

* ``launch{r}`` — the launching stream and the fused kernel, in stream order: the step counters back to
  0 and the start event (:meth:`pipes.comm.CopyEngineShipper.begin`); the kernel: each band of every
  other rank's row block (position by position) written to C and counted (``red.release.sys``), then each
  band of its own block: for every slot, wait for the band's flag (``ld.acquire.sys`` until it holds the
  launch's parity token, :func:`pipes.epoch.parity_token`; ``CommConfig.adds_received``) and read that
  sender's partial from the inbox; after the kernel, the join (the launching stream waits for its copy
  work), then the credits (``credits[p] = 1`` for every slot: the senders may overwrite this inbox).
* ``copy{r}_{k}`` — copy stream ``k`` (an agent off the SMs, reached only at system scope, placed with the
  host as in :mod:`tile_comm.protocol`): after the start event, stream 0 forks the others (the graph's fork
  event); the stream of a receiver's first step takes its credit right before it (wait for 1, write 0;
  :func:`pipes.comm.credit_takes`) and the other streams with steps for it wait for that take
  (``taken{r}_{p}``, the graph's event); the (block, band) steps in walk order are dealt over the streams by
  the shipper's own rule (:func:`pipes.comm.streams_of_steps`: round-robin, or a group of streams per
  receiver); each: wait until the step's count is complete, read the band of C, write it into the receiver's
  inbox slot, raise the slot's band flag there to the launch's token (a fenced ``cuStreamWriteValue32``); the
  others join stream 0, which then signals the launching stream's join. Tokens alternate between two values,
  so the model also proves they cannot be confused: a flag the owner reads holds this launch's token or the
  previous launch's, never the one before (``no_credit`` shows what happens without the credit).

Double-buffered (``buffers = 2``, ``TensorParallelGemmRS(inbox_buffers=2)``): every rank has two inboxes,
each with its own flags and credits, and launch ``e`` uses inbox ``e % 2``: it takes the credit its receiver
gave after launch ``e − 2``. After the join the receiver sets the flags of the inbox it consumed back to 0,
then gives its credits: the launch two later raises them to the same parity token (``no_clear`` shows the
stale flag that otherwise passes its wait).

The counts and flags are :class:`pipes.check.ModelStepCounters` and :class:`pipes.check.ModelReadyFlags`;
launches take the epochs :data:`pipes.epoch.FIRST`, :func:`~pipes.epoch.next_epoch` of it, … The data
carry their launch: C's band ``b`` of launch ``e`` on rank ``r`` is ``(e, r, b)``. The kernel asserts
that each inbox slot holds its sender's band of *this* launch, the copy engine that C holds this launch's
band; a stale or early value, a race the checker sees, or a wait nobody satisfies is a finding.
``bug`` plants a defect (:data:`PEER_BUGS`) to show what the checker reports.

With ``ranks = 2`` (the default) the names are the two-GPU model's: ``credit{r}``, flags ``flag{r}_{b}``,
memory ``("inbox", r, b)`` and ``("C", r, b)``, label ``tp_reduce_scatter``; with more ranks the slot (or
block position) ``p`` joins them: ``credit{r}_{p}``, ``flag{r}_{p}_{b}``, ``("inbox", r, p, b)``,
``("C", r, p, b)``, label ``tp_reduce_scatter_{ranks}ranks``. The state space grows fast with ranks:
three ranks, one band, one copy stream take ~85,000 states for one launch and ~145,000 for two.
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
from pipes.comm import Step, credit_takes, streams_of_steps
from pipes.epoch import FIRST, FRESH, next_epoch

#: ``credit_before_flags``: the credits given right after the kernel is queued, before this rank saw the
#: senders' flags (a credit given before the sender's clear is lost);
#: ``no_credit``: the sender never takes a credit (it may overwrite an inbox still being read);
#: ``flag_before_data``: the flag raised before the band's data; ``no_reset``: the step counters are not
#: reset per launch (a stale count ships a band before this launch computed it); ``one_token``: every
#: launch raises the flags to the same value (the owner takes the previous launch's flag for its own);
#: ``parity_flag``: the flags hold ``epoch & 1`` (the first launch's token 0 is what a fresh flag holds);
#: ``no_fence``: the copy stream's flag write has no memory barrier before it (relaxed: it publishes nothing).
PEER_BUGS = ("credit_before_flags", "no_credit", "flag_before_data", "no_reset", "one_token", "parity_flag", "no_fence")
#: Defects of the double-buffered inbox (``buffers = 2``) only: ``no_clear``: the receiver gives an inbox's
#: credits without setting its flags back to 0.
DOUBLE_BUFFER_BUGS = ("no_clear",)
SYS = Scope.SYSTEM


def shipped_to(rank: int, position: int, ranks: int = 2) -> int:
    """The rank that block ``position`` of ``rank``'s rotated rows belongs to (and is shipped to)."""
    return (rank + position + 1) % ranks


def sender_of(rank: int, slot: int, ranks: int = 2) -> int:
    """The rank that writes slot ``slot`` of ``rank``'s inbox (its block ``slot`` is ``rank``'s)."""
    return (rank - slot - 1) % ranks


def reduce_scatter_protocol(
    launches: int = 2,
    bands: int = 2,
    bug: str | None = None,
    streams: int = 1,
    *,
    ranks: int = 2,
    spread: str = "steps",
    buffers: int = 1,
) -> Protocol:
    """The ``ranks`` ranks' launch protocol for ``launches`` back-to-back launches of ``bands`` bands per
    row block, each rank's copy work on ``streams`` copy streams (its (block, band) steps in walk order dealt
    as the shipper deals them with ``spread``), into ``buffers`` inboxes per rank (1, or 2: double-buffered).
    ``ranks = 2`` with one inbox is the two-GPU model (its names and labels as ever)."""
    if bug is not None and bug not in PEER_BUGS + DOUBLE_BUFFER_BUGS:
        raise ValueError(f"bug = {bug!r} is invalid: allowed None or one of {PEER_BUGS + DOUBLE_BUFFER_BUGS}")
    if buffers not in (1, 2) or isinstance(buffers, bool):
        raise ValueError(f"buffers = {buffers!r} is invalid: allowed 1 or 2")
    if bug == "no_clear" and buffers != 2:
        raise ValueError("bug = 'no_clear' needs buffers = 2: one inbox's flags alternate tokens launch by launch")
    if launches < 1 or bands < 1 or streams < 1:
        raise ValueError(f"launches = {launches}, bands = {bands}, streams = {streams}: allowed at least 1 each")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 2:
        raise ValueError(f"ranks = {ranks!r} is invalid: allowed an int of at least 2")
    epochs = [FIRST]
    while len(epochs) < launches:
        epochs.append(next_epoch(epochs[-1]))
    holds = "epoch_bit" if bug == "parity_flag" else "parity_token"
    world, slots = range(ranks), range(ranks - 1)
    two = ranks == 2  # the two-GPU model keeps its names: one slot, not numbered

    double = buffers == 2

    def slot_name(name: str, r: int, p: int, box: int = 0) -> str:
        """Rank ``r``'s word ``name`` of inbox slot ``p`` (``name{r}`` with two ranks, else ``name{r}_{p}``;
        double-buffered, ``_in{box}`` follows)."""
        return (f"{name}{r}" if two else f"{name}{r}_{p}") + (f"_in{box}" if double else "")

    def inbox_key(r: int, p: int, b: int, box: int = 0) -> tuple:
        key = ("inbox", r, b) if two else ("inbox", r, p, b)
        return (*key, box) if double else key

    def c_key(r: int, p: int, b: int) -> tuple:
        return ("C", r, b) if two else ("C", r, p, b)

    #: counts[r]: rank r's step counters, step p·bands + b for band b of block position p;
    #: inbox[r][box][p]: the flags of slot p of rank r's inbox ``box`` (raised by rank r − p − 1).
    counts = [ModelStepCounters(f"count{r}_", (ranks - 1) * bands, 1) for r in world]
    boxes = range(buffers)
    inbox = [
        [[ModelReadyFlags(slot_name("flag", r, p, box) + "_", bands, SYS, holds=holds) for p in slots] for box in boxes]
        for r in world
    ]

    def box_of(e: int) -> int:
        """The inbox launch ``e`` uses: ``e % 2`` double-buffered (TensorParallelGemmRS._inbox), else 0."""
        return e & 1 if double else 0

    def raised(e: int) -> int:
        """The epoch whose token launch ``e`` raises the flags to (``one_token``: always the first's)."""
        return FIRST if bug == "one_token" else e

    def give_credits(ctx: Ctx, r: int, box: int) -> None:
        """Rank ``r`` consumed its inbox ``box``: every slot's sender may overwrite its slot (``credits[p] =
        1``); double-buffered, after the inbox's flags are set back to 0 (``flags.zero_()``)."""
        if double and bug != "no_clear":
            for p in slots:
                for b in range(bands):
                    ctx.store_counter(inbox[r][box][p].flag(b), FRESH, scope=SYS)
        for p in slots:
            ctx.store_counter(slot_name("credit", r, p, box), 1, scope=SYS)

    def launch(r: int):
        def run(ctx: Ctx) -> None:
            for e in epochs:
                if bug != "no_reset":
                    for s in range(counts[r].steps):
                        counts[r].reset(ctx, s)  # cudaMemsetAsync before the kernel
                ctx.store_counter(f"start{r}", e, scope=SYS)  # the start event the copy work waits for
                for p in slots:  # the kernel: the other ranks' blocks first, in block_order (they are shipped)
                    for b in range(bands):
                        ctx.write_global(c_key(r, p, b), (e, r, b))
                        counts[r].count(ctx, p * bands + b)
                box = box_of(e)
                if bug == "credit_before_flags":
                    give_credits(ctx, r, box)
                for b in range(bands):  # then its own block: each band waits for every other rank's copy
                    for p in slots:
                        sender = sender_of(r, p, ranks)
                        flags = inbox[r][box][p]
                        flags.wait(ctx, b, raised(e), scope=SYS)
                        got = ctx.read_global(inbox_key(r, p, b, box))
                        if got != (e, sender, b):
                            why = flags.confusion(raised(e))
                            if double and bug == "no_clear":
                                why = f"inbox {box}'s flags still hold launch {e - 2}'s token, the same as launch {e}'s"
                            where = "" if two else f" from slot {p} (rank {sender})"
                            raise AssertionError(
                                f"launch {e} on rank {r} added {got!r} as band {b}{where}" + (f": {why}" if why else "")
                            )
                ctx.wait_counter(f"done{r}", e, scope=SYS)  # the join: this rank's copy work is done
                if bug != "credit_before_flags":
                    give_credits(ctx, r, box)  # the other ranks may overwrite the inbox

        return run

    #: The copy steps of a rank in walk order: (block position p, band b), p major; each copy stream's
    #: share, dealt by the shipper's own rule (pipes.comm.streams_of_steps with ``spread``).
    walk = [(p, b) for p in slots for b in range(bands)]
    dealt = streams_of_steps([Step(i, (), 0, 0, 0, 0, target=p) for i, (p, _) in enumerate(walk)], streams, spread)
    shares = [
        [(i, step) for i, (step, k) in enumerate(zip(walk, dealt, strict=True)) if k == stream]
        for stream in range(streams)
    ]
    #: Each receiver's credit, taken right before its first step by the shipper's own rule
    #: (pipes.comm.credit_takes); a stream whose first step for it comes later waits for that take.
    takes = credit_takes([p for p, _ in walk], dealt)
    take_at = {(t.stream, t.step): t.target for t in takes}
    wait_at = {(k, i): t.target for t in takes for k, i in t.waits.items()}

    def copy(r: int, stream: int):
        """Copy stream ``stream`` of rank ``r``: stream 0 forks the others (``fork{r}``), each ships its
        share of the walk (block p to rank r + p + 1, into its slot p), taking a receiver's credit right
        before the first step for it (or waiting for the stream that took it: ``taken{r}_{p}``), the others
        join stream 0 (``join{r}``)."""

        def run(ctx: Ctx) -> None:
            for n, e in enumerate(epochs, start=1):
                ctx.wait_counter(f"start{r}", e, scope=SYS)
                if stream == 0:
                    if streams > 1:
                        ctx.store_counter(f"fork{r}", e, scope=SYS)
                else:
                    ctx.wait_counter(f"fork{r}", e, scope=SYS)
                box = box_of(e)
                for i, (p, b) in shares[stream]:
                    peer = shipped_to(r, p, ranks)
                    if (stream, i) in take_at and bug != "no_credit":  # the binary semaphore: wait for 1, write 0
                        credit = slot_name("credit", peer, p, box)
                        ctx.wait_counter(credit, 1, scope=SYS)
                        ctx.store_counter(credit, 0, scope=SYS)
                        ctx.store_counter(f"taken{r}_{p}", e, scope=SYS)
                    elif (stream, i) in wait_at and bug != "no_credit":
                        ctx.wait_counter(f"taken{r}_{p}", e, scope=SYS)
                    counts[r].wait(ctx, p * bands + b)
                    data = ctx.read_global(c_key(r, p, b))
                    where = "" if two else f" for rank {peer}"
                    assert data == (e, r, b), f"launch {e}: rank {r}'s copy engine shipped {data!r} as band {b}{where}"
                    flags = inbox[peer][box][p]
                    if bug == "flag_before_data":
                        flags.publish(ctx, b, raised(e))
                    ctx.write_global(inbox_key(peer, p, b, box), data)
                    if bug != "flag_before_data":
                        flags.publish(ctx, b, raised(e), fenced=bug != "no_fence")
                if stream > 0:
                    ctx.signal(f"join{r}", 1, scope=SYS)
                    continue
                if streams > 1:
                    ctx.wait_counter(f"join{r}", n * (streams - 1), scope=SYS)  # n launches' joins so far
                ctx.store_counter(f"done{r}", e, scope=SYS)

        return run

    agents = []
    for r in world:
        agents.append(Agent(f"launch{r}", launch(r), device=r))
        agents += [Agent(f"copy{r}_{k}", copy(r, k), device=HOST) for k in range(streams)]
    counters = []
    for r in world:
        counters += [ModelCounter(f"start{r}"), ModelCounter(f"done{r}")]
        counters += [ModelCounter(slot_name("credit", r, p, box), initial=1) for box in boxes for p in slots]
        counters += [ModelCounter(f"fork{r}"), ModelCounter(f"join{r}")]
        counters += [ModelCounter(f"taken{r}_{p}") for p in slots]
        counters += [*counts[r].counters(), *(c for box in inbox[r] for flags in box for c in flags.counters())]
    cells = [(r, p, b) for r in world for p in slots for b in range(bands)]
    stale = {inbox_key(r, p, b, box): ("before the first launch", r, b) for r, p, b in cells for box in boxes}
    stale |= {c_key(r, p, b): ("before the first launch", r, b) for r, p, b in cells}
    shape = ("" if two else f"_{ranks}ranks") + ("_double" if double else "")
    label = "tp_reduce_scatter" + shape + (f"_{bug}" if bug else "")
    return Protocol(label, agents, [], counters=counters, initial=stale)


def check_reduce_scatter(
    launches: int = 2,
    bands: int = 2,
    bug: str | None = None,
    streams: int = 1,
    *,
    ranks: int = 2,
    spread: str = "steps",
    buffers: int = 1,
    **limits: int,
) -> Report:
    """:func:`reduce_scatter_protocol` through the checker (exhaustive within ``max_states``)."""
    protocol = reduce_scatter_protocol(launches, bands, bug, streams, ranks=ranks, spread=spread, buffers=buffers)
    return check(protocol, **limits)
