"""suspend_waits on every pipes.cute kind: each wait polls or suspends as declared; defaults as measured.

A suspending wait is ``mbarrier.try_wait.parity`` with a suspend-time hint (ptxas then sleeps after a
failed try); a polling wait retries the hint-less form (benchmarks/RESULTS.md: polling wins for the
short async / TMA-load / ordered hand-offs, suspending for store-notify's TMA-store round trips).
"""

from __future__ import annotations

import re

import cute_kernels as ck
import cutlass
import cutlass.cute as cute
import pytest
from cutlass import Int32, Int64

from pipes import ArrivalUnit, Completion, PipelineSpec, Role, SpecError
from pipes.cute import (
    AsyncPipeline,
    OrderedBarrier,
    OrderSpec,
    StoreNotifyPipeline,
    TmaLoadPipeline,
    init_pipelines,
)

HINTED = re.compile(r"mbarrier\.try_wait\.parity[^\n]*, \d{5,};")
PLAIN = re.compile(r"mbarrier\.try_wait\.parity\.acquire[^\n]*;")


def _declare(kind: str, suspend_waits):
    extra = {} if suspend_waits == "default" else {"suspend_waits": suspend_waits}
    if kind == "async":
        spec = PipelineSpec("a", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP))
        return AsyncPipeline(spec, **extra)
    if kind == "tma_load":
        spec = PipelineSpec(
            "t",
            2,
            Role("w", ArrivalUnit.ELECTED_PER_WARP),
            Role("r", ArrivalUnit.ELECTED_PER_WARP),
            Completion.TRANSACTION_BYTES,
            4096,
        )
        return TmaLoadPipeline(spec, **extra)
    spec = PipelineSpec(
        "s",
        2,
        Role("w", ArrivalUnit.ELECTED_PER_WARP),
        Role("r", ArrivalUnit.ELECTED_PER_WARP),
        Completion.STORE_COMPLETE,
    )
    return StoreNotifyPipeline(spec, lag=1, meta_fields=0, **extra)


def _waits(pipe) -> tuple[int, int]:
    """(suspending, polling) waits in a kernel whose producer and consumer warps loop over ``pipe``."""

    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem)
        if cute.arch.warp_idx() == 0:
            p = pipe.producer()
            for _ in cutlass.range(n, unroll=1):
                p.acquire()
                p.commit()
        if cute.arch.warp_idx() == 1:
            c = pipe.consumer()
            for _ in cutlass.range(n, unroll=1):
                c.wait()
                c.release()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4), Int32(4)))
    return len(HINTED.findall(ptx)), len(PLAIN.findall(ptx))


@pytest.mark.parametrize(("kind", "default"), [("async", False), ("tma_load", False), ("store_notify", True)])
def test_every_kind_takes_suspend_waits_and_defaults_as_measured(kind: str, default: bool) -> None:
    assert _declare(kind, "default").suspend_waits is default
    suspending, polling = _waits(_declare(kind, True))
    assert suspending >= 2 and polling == 0, (kind, suspending, polling)
    suspending, polling = _waits(_declare(kind, False))
    assert suspending == 0 and polling >= 2, (kind, suspending, polling)


def test_suspend_waits_must_be_a_bool_or_none() -> None:
    with pytest.raises(
        SpecError,
        match=r"AsyncPipeline\.suspend_waits = 1 is invalid: allowed True, False or None "
        r"\(None: the kind's default, False\)",
    ):
        _declare("async", 1)


@pytest.mark.parametrize("suspend", [False, True])
def test_ordered_barrier_takes_suspend_waits(suspend: bool) -> None:
    spec = OrderSpec("pp", groups=2, role=Role("math", ArrivalUnit.WARPGROUP))

    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        smem = cutlass.memory.SmemAllocator()
        bars = smem.allocate_array(Int64, spec.barriers)
        order = OrderedBarrier.create(spec, bars, cute.arch.warp_idx() // 4, suspend_waits=suspend)
        for _ in cutlass.range(n, unroll=1):
            order.wait()
            order.arrive()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)

    ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4), Int32(4)))
    assert bool(HINTED.search(ptx)) is suspend and bool(PLAIN.search(ptx)) is not suspend
