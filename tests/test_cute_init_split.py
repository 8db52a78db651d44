"""init_pipelines_arrive / PendingInit.wait: barrier init and cluster arrive now, the wait after the
prologue (as cutlass' pipeline_init_arrive / pipeline_init_wait); using a pipeline before the wait fails
at trace time."""

from __future__ import annotations

import cute_kernels as ck
import cutlass
import cutlass.cute as cute
import pytest
from ptx_check import kernel_body

from pipes import ArrivalUnit, Completion, PipelineSpec, ProtocolError, Role
from pipes.cute import Multicast, TmaLoadPipeline, init_pipelines, init_pipelines_arrive

PROLOGUE = 7  # a global store the prologue makes between the arrive and the wait


def _pipe(cluster: int) -> TmaLoadPipeline:
    spec = PipelineSpec(
        "ml",
        2,
        Role("load", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP),
        Completion.TRANSACTION_BYTES,
        1024,
    )
    return TmaLoadPipeline(spec, multicast=Multicast(cluster, 1))


def _compile(body, cluster: int) -> str:
    @cute.kernel
    def kern(out: cute.Tensor):
        body(out)

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(cluster, 1, 1), block=(64, 1, 1), cluster=(cluster, 1, 1), stream=stream)

    return ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4)))


def _split_kernel(pipe, *, use_before_wait: bool = False, wait_twice: bool = False, wait_in_branch: bool = False):
    @cute.jit
    def body(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        pending = init_pipelines_arrive((pipe,), allocator=smem)
        if cutlass.const_expr(use_before_wait):
            pipe.consumer()
        out[1] = PROLOGUE  # the prologue: work that needs no pipeline
        if cutlass.const_expr(wait_in_branch):
            if cute.arch.warp_idx() == 0:
                pending.wait()
        else:
            (ops,) = pending.wait()
            if cutlass.const_expr(wait_twice):
                pending.wait()
            if cute.arch.warp_idx() == 1:
                c = ops.consumer()
                c.wait()
                c.release()
        out[0] = 1

    return body


def _position(body: list[str], predicate) -> int:
    return next(i for i, ins in enumerate(body) if predicate(ins))


@pytest.mark.parametrize("cluster", [1, 2])
def test_the_prologue_runs_between_the_arrive_and_the_wait(cluster: int) -> None:
    body = kernel_body(_compile(_split_kernel(_pipe(cluster)), cluster))
    fence = _position(body, lambda i: i.startswith("fence.mbarrier_init"))
    prologue = _position(body, lambda i: i.startswith("st.global") and i.endswith(f", {PROLOGUE};"))
    if cluster > 1:
        arrive = _position(body, lambda i: i.startswith("barrier.cluster.arrive.relaxed"))
        wait = _position(body, lambda i: i.startswith("barrier.cluster.wait"))
        assert fence < arrive < prologue < wait
        assert not any(i.startswith("bar.sync") for i in body)
    else:
        wait = _position(body, lambda i: i.startswith(("bar.sync", "barrier.sync")))
        assert fence < prologue < wait
        assert not any("barrier.cluster" in i for i in body)


@pytest.mark.parametrize("cluster", [1, 2])
def test_init_pipelines_is_arrive_then_wait(cluster: int) -> None:
    def one_shot(out):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((_pipe(cluster),), allocator=smem)
        out[0] = 1

    def split(out):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines_arrive((_pipe(cluster),), allocator=smem).wait()
        out[0] = 1

    assert kernel_body(_compile(one_shot, cluster)) == kernel_body(_compile(split, cluster))


def test_a_pipeline_used_before_the_wait_fails_at_trace_time() -> None:
    with pytest.raises(
        ProtocolError,
        match=r"TmaLoadPipeline 'ml' is used before the barrier-init wait: "
        r"init_pipelines_arrive\(\['ml'\]\) was traced, but not its \.wait\(\)",
    ):
        _compile(_split_kernel(_pipe(2), use_before_wait=True), 2)


def test_a_second_wait_or_a_wait_in_a_branch_fails() -> None:
    with pytest.raises(ProtocolError, match=r"\.wait\(\) is traced twice"):
        _compile(_split_kernel(_pipe(2), wait_twice=True), 2)
    with pytest.raises(ProtocolError, match=r"\.wait\(\) is traced inside scf\.if"):
        _compile(_split_kernel(_pipe(2), wait_in_branch=True), 2)
