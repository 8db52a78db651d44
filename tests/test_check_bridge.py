"""The pipelines the CuTe test kernels declare, checked on the CPU from their own specs (pipes.check.bridge)."""

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role, SpecError
from pipes.check import ModelPipeline, Protocol, check, model_of, ordered_protocol, stream_protocol


def kernel_pipelines():
    """Every pipeline declared by the kernels in tests/cute_kernels.py (CPU PTX tests and GPU runs)."""
    ck = pytest.importorskip("cute_kernels")
    built = [
        ck.build_async(2),
        ck.build_async(4),
        ck.build_tma_load(1),
        ck.build_tma_load(4),
        ck.build_store_notify(1, 0),
        ck.build_store_notify(4, 3),
        ck.build_store_notify(2, 1, fan_out=True),
        ck.build_gemm_smoke(stages=3, lag=1, store_stages=2),
    ]
    found = []
    for b in built:
        found += list(b.pipeline) if isinstance(b.pipeline, tuple) else [b.pipeline]
    return found


def test_every_kernel_pipeline_is_proven_by_the_checker():
    pipelines = kernel_pipelines()
    kinds = {p.spec.completion for p in pipelines}
    assert kinds == {Completion.ARRIVAL, Completion.TRANSACTION_BYTES, Completion.STORE_COMPLETE}
    for decl in pipelines:
        report = check(stream_protocol(decl, items=5))
        assert report.ok and report.exhaustive and report.states > 0, (decl.spec, str(report))


def test_the_model_keeps_the_declarations_options():
    store = next(p for p in kernel_pipelines() if p.spec.completion is Completion.STORE_COMPLETE and p.lag == 3)
    model = model_of(store)
    assert model.spec is store.spec and model.store_lag == 3


def test_fan_out_agents_follow_the_spec_roles():
    fan_out = next(p for p in kernel_pipelines() if len(p.spec.consumers) == 2)
    names = [agent.name for agent in stream_protocol(fan_out).agents]
    assert names == ["epi", "reader0", "reader20"]


def test_ordered_barriers_of_the_kernels_take_turns():
    from pipes.cute import OrderSpec

    for spec in (
        OrderSpec("pingpong", groups=2, role=Role("math", ArrivalUnit.WARPGROUP)),
        OrderSpec("mma_epi", groups=2, role=Role("math", ArrivalUnit.WARPGROUP), depth=2),
        OrderSpec("three", groups=3, role=Role("math", ArrivalUnit.ELECTED_PER_WARPGROUP)),
    ):
        report = check(ordered_protocol(spec, rounds=3))
        assert report.ok and report.exhaustive, str(report)


def test_a_declaration_the_model_cannot_run_is_refused():
    class Declaration:
        spec = PipelineSpec("out", 2, Role("epi"), Role("comm"), Completion.STORE_COMPLETE)
        lag = 2  # = stages: the notify would wait for the very slot it must release

    with pytest.raises(SpecError, match="lag = 2 is invalid"):
        model_of(Declaration())
    with pytest.raises(TypeError, match="expected a PipelineSpec"):
        model_of(object())


def test_the_checker_catches_a_protocol_the_kind_forbids():
    """Same spec as a kernel's store-notify pipeline, notified on smem read: the checker must object."""
    store = next(p for p in kernel_pipelines() if p.spec.completion is Completion.STORE_COMPLETE)
    protocol = stream_protocol(store)
    broken = type(protocol)(
        protocol.name, protocol.agents, [ModelPipeline(store.spec, lag=store.lag, notify_on="smem_read")]
    )
    assert not check(broken).ok


def test_the_declarations_slot_readers_decide_the_release_fence():
    """GENERIC readers (the default) fence each release; ASYNC readers read through the async proxy."""
    ck = pytest.importorskip("cute_kernels")
    from pipes.cute import SlotReaders

    for generic, asynchronous in (
        (ck.build_tma_load(2).pipeline, ck.build_tma_load(2, readers=SlotReaders.ASYNC).pipeline),
        (ck.build_store_notify(2, 1).pipeline, ck.build_store_notify(2, 1, slot_readers=SlotReaders.ASYNC).pipeline),
    ):
        assert model_of(generic).fence_reads and not model_of(asynchronous).fence_reads
        for decl in (generic, asynchronous):
            report = check(stream_protocol(decl, items=4))
            assert report.ok and report.exhaustive, (decl.spec, str(report))
    unfenced = ck.build_tma_load(2).pipeline
    broken = Protocol("unfenced", stream_protocol(unfenced).agents, [ModelPipeline(unfenced.spec, fence_reads=False)])
    assert "was not fenced (fence.proxy.async)" in check(broken).findings[0].message
