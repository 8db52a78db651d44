"""Catalogue protocols for TMA as kernels write it: several loads completing one stage, and hand-written
mbarrier + TMA code (raw barrier arrays, ``arrive.expect_tx``, TMA loads and a TMA-store epilogue)."""

from __future__ import annotations

from collections.abc import Callable

from ...spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..context import Ctx
from ..declarations import ModelBarrier, ModelPipeline
from ..protocol import Agent, Protocol
from ..report import FindingKind
from .entry import Entry

A_BYTES = 16384
B_BYTES = 8192


def _mainloop(stages: int, tx_bytes: int) -> PipelineSpec:
    """A GEMM's TMA-load ring: the load warp's elected lane arms each stage, one math warpgroup reads it."""
    return PipelineSpec(
        "mainloop",
        stages,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.WARPGROUP),
        Completion.TRANSACTION_BYTES,
        tx_bytes,
    )


def two_operand_loads(stages: int = 2, k_blocks: int = 4, expect_tx: int = A_BYTES + B_BYTES) -> Protocol:
    """A GEMM mainloop whose stage holds an A and a B tile, each brought by its own TMA load into its own
    ``part`` of the slot; the stage completes when both have landed (``expect_tx`` = A + B bytes).
    ``expect_tx=A_BYTES``: the producer arms only A's bytes, so the stage completes before B lands."""
    spec = _mainloop(stages, expect_tx)

    def loads(ctx: Ctx) -> None:
        p = ctx.producer("mainloop")
        for k in range(k_blocks):
            slot = p.acquire()
            ctx.load("mainloop", slot, ("A", k), nbytes=A_BYTES, part="A")
            ctx.load("mainloop", slot, ("B", k), nbytes=B_BYTES, part="B")
            p.commit()
        p.tail()

    def mma(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop")
        for k in range(k_blocks):
            slot = c.wait()
            a = ctx.read("mainloop", slot, part="A", proxy="async")  # wgmma operands: async proxy
            b = ctx.read("mainloop", slot, part="B", proxy="async")
            assert (a, b) == (("A", k), ("B", k)), f"mma read {a!r}, {b!r} for k block {k}"
            c.release()

    name = "two_operand_loads" if expect_tx == A_BYTES + B_BYTES else "two_operand_loads_short_expect"
    return Protocol(name, [Agent("tma", loads), Agent("mma", mma)], [ModelPipeline(spec, fence_reads=False)])


def peeking_mainloop(
    stages: int = 2,
    tiles: int = 2,
    k_tiles: int = 2,
    dangling: bool = False,
    peeks: Callable[[int, int], bool] | None = None,
) -> Protocol:
    """The Hopper GEMM's k-loop as it peeks: after each k-tile's wgmmas the math warpgroup polls the next
    slot (``try_wait``) and later waits on the token. ``dangling``: it also peeks after the tile's last
    k-tile — for the CTA's last tile at a slot no load will ever fill (a peek that blocks until
    ``mbarrier.try_wait``'s time limit, ~4 µs per launch on an H100). ``peeks(k, k_tiles)``: a kernel's own
    rule for peeking after k-tile k instead (``hopper_gemm.mainloop.peeks_after``)."""
    if peeks is None:
        peeks = (lambda k, n: True) if dangling else (lambda k, n: k + 1 < n)
    spec = _mainloop(stages, A_BYTES)

    def loads(ctx: Ctx) -> None:
        p = ctx.producer("mainloop")
        for item in range(tiles * k_tiles):
            slot = p.acquire()
            ctx.load("mainloop", slot, item, nbytes=A_BYTES)
            p.commit()
        p.tail()

    def mma(ctx: Ctx) -> None:
        c = ctx.consumer("mainloop")
        for tile in range(tiles):
            token = c.try_wait()
            for k in range(k_tiles):
                slot = c.wait(token)
                assert ctx.read("mainloop", slot, proxy="async") == tile * k_tiles + k
                c.release()
                if peeks(k, k_tiles):
                    token = c.try_wait()

    name = "peeking_mainloop" + ("_dangling" if dangling else "")
    return Protocol(name, [Agent("tma", loads), Agent("mma", mma)], [ModelPipeline(spec, fence_reads=False)])


def hand_written_tma(stages: int = 2, k_blocks: int = 4, wait_store: str = "read") -> Protocol:
    """A kernel written the way most are, without pipeline objects: ``full[s]``/``empty[s]`` mbarrier
    arrays, a producer thread that waits ``empty[s]``, arms ``full[s]`` with ``arrive.expect_tx`` and
    issues the TMA load; a math warpgroup that waits ``full[s]``, feeds wgmma (async-proxy reads) and
    arrives on ``empty[s]``; then an epilogue that stages C in shared memory, fences it and TMA-stores it.

    ``wait_store``: how the epilogue ends — ``"read"``: ``cp.async.bulk.wait_group.read 0`` as CUTLASS
    does (the kernel's completion publishes the global write); ``"none"``: it exits with the store still
    reading shared memory.
    """
    tile = 16384

    def producer(ctx: Ctx) -> None:
        for k in range(k_blocks):
            s, phase = k % stages, k // stages
            ctx.wait(f"empty[{s}]", (phase & 1) ^ 1, completion=phase - 1)
            ctx.arrive(f"full[{s}]", 1, completion=phase, tx=tile)
            ctx.tma_load(f"a{s}", ("A", k), f"full[{s}]", tile, completion=phase)

    def math(ctx: Ctx) -> None:
        acc = 0
        for k in range(k_blocks):
            s, phase = k % stages, k // stages
            ctx.wait(f"full[{s}]", phase & 1, completion=phase)
            assert ctx.read_shared(f"a{s}", proxy="async") == ("A", k)
            acc += 1
            ctx.arrive(f"empty[{s}]", 1, completion=phase)
        ctx.write_shared("c", acc)
        ctx.fence_proxy_async()
        ctx.tma_store("c", ("C", 0))
        ctx.bulk_commit_group()
        if wait_store == "read":
            ctx.bulk_wait_group(0, read=True)

    barriers = [
        *ModelBarrier.array("full", stages, 1, arrivers=("producer",)),
        *ModelBarrier.array("empty", stages, 1, arrivers=("math",)),
    ]
    name = "hand_written_tma" + ("" if wait_store == "read" else "_store_not_waited")
    return Protocol(name, [Agent("producer", producer), Agent("math", math)], barriers=barriers)


GOOD = [
    Entry("two_operand_loads", "A and B TMA loads complete one stage (load parts)", two_operand_loads),
    Entry("peeking_mainloop", "a k-loop that peeks (try_wait) at the next k-tile of its tile only", peeking_mainloop),
    Entry(
        "hand_written_tma",
        "raw mbarrier arrays + TMA loads + a TMA-store epilogue ending in wait_group.read 0",
        hand_written_tma,
    ),
]

BAD = [
    Entry(
        "peeking_mainloop_dangling",
        "the k-loop peeks after its last k-tile too: the last tile's peek waits on a slot nothing will fill",
        lambda: peeking_mainloop(dangling=True),
        FindingKind.PEEK_NEVER_COMPLETES,
        ("mainloop.full[0]", "never completes before exit", "if k + 1 < k_tiles"),
        twin="peeking_mainloop",
    ),
    Entry(
        "two_operand_loads_short_expect",
        "the producer arms only the A tile's bytes: the stage completes before the B tile lands",
        lambda: two_operand_loads(expect_tx=A_BYTES),
        FindingKind.READ_UNCOMMITTED,
        ("mainloop.slot[0].B", "mma"),
        (FindingKind.OVER_ARRIVAL,),
        twin="two_operand_loads",
    ),
    Entry(
        "hand_written_tma_store_not_waited",
        "the epilogue exits while its TMA store may still read shared memory",
        lambda: hand_written_tma(wait_store="none"),
        FindingKind.UNBALANCED_EXIT,
        (
            "math exits with 1 TMA store(s) whose shared-memory source may still be read (smem['c'])",
            "wait_group.read 0",
        ),
        twin="hand_written_tma",
    ),
]
