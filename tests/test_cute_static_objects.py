"""Every public trace-time pipes object works inside @cute.jit code like a plain Python value:

* as a condition — ``x if obj else y`` and ``if cutlass.const_expr(obj):`` — evaluated at trace time
  (before: "Cannot convert Multicast(...) to Boolean"; const_expr rejected it as a run-time value);
* assigned inside a dynamic ``for`` / ``if`` / ``while`` body, carried out of it as the same object.

(A bare ``if obj:`` statement is a run-time branch in the DSL for every non-bool Python value, plain
objects included — see the last test — so conditions on configuration objects use ``const_expr``.)
"""

from __future__ import annotations

import re

import cute_kernels as ck
import cutlass
import cutlass.cute as cute
import pytest
from cutlass import Int32

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.cute import (
    AsyncPipeline,
    DebugConfig,
    Multicast,
    NamedBarrier,
    NamedBarrierAllocator,
    OrderSpec,
    RoleLayout,
    SlotReaders,
    StoreNotifyPipeline,
    TmaLoadPipeline,
    TmaStoreStaging,
    Warps,
    WarpSync,
)

ASYNC = PipelineSpec("a", 2, Role("w", ArrivalUnit.WARP), Role("r", ArrivalUnit.WARP))
TMA = PipelineSpec(
    "t",
    2,
    Role("w", ArrivalUnit.ELECTED_PER_WARP),
    Role("r", ArrivalUnit.ELECTED_PER_WARP),
    Completion.TRANSACTION_BYTES,
    1024,
)
STORE = PipelineSpec(
    "s", 2, Role("w", ArrivalUnit.ELECTED_PER_WARP), Role("r", ArrivalUnit.WARP), Completion.STORE_COMPLETE
)
STORE_NOTIFY = StoreNotifyPipeline(STORE, lag=1)

OBJECTS = {
    "Multicast": Multicast(2, 1),
    "Multicast(1,1)": Multicast(1, 1),
    "AsyncPipeline": AsyncPipeline(ASYNC),
    "TmaLoadPipeline": TmaLoadPipeline(TMA),
    "StoreNotifyPipeline": STORE_NOTIFY,
    "TmaStoreStaging": TmaStoreStaging(2, committed_by=STORE_NOTIFY),
    "WarpSync": WarpSync(),
    "NamedBarrier": NamedBarrier(1, 128, "epi"),
    "NamedBarrierAllocator": NamedBarrierAllocator(256),
    "OrderSpec": OrderSpec("pp", 2, Role("math", ArrivalUnit.WARPGROUP)),
    "RoleLayout": RoleLayout(64, {"w": Warps(0), "r": Warps(1)}),
    "Warps": Warps(0, 1),
    "DebugConfig": DebugConfig(),
    "PipelineSpec": ASYNC,
    "Role": Role("math", ArrivalUnit.WARPGROUP),
    "SlotReaders": SlotReaders.ASYNC,
    "ArrivalUnit": ArrivalUnit.WARP,
    "Completion": Completion.ARRIVAL,
}


def _stored_constants(launch) -> list[int]:
    ptx = ck.ptx_of(ck.compile_fake(launch, ck.fake_out(8), Int32(3)))
    values: list[int] = []
    for group in re.findall(r"st\.global(?:\.v\d)?\.b32\s+\[[^\]]+\], \{?([-\d, ]+)\}?;", ptx):
        values += [int(v) for v in group.split(",")]
    return values


def _conditions_kernel(obj):
    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        out[0] = 3 if obj else 4
        if cutlass.const_expr(obj):
            out[1] = 5
        else:
            out[1] = 6
        out[2] = 7 if cutlass.const_expr(obj) else 8

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

    return launch


def _carry_kernel(obj):
    @cute.kernel
    def kern(out: cute.Tensor, n: Int32):
        held = obj
        for _ in cutlass.range(n, unroll=1):
            held = obj
        if n > 1:
            held = obj
        i = Int32(0)
        while i < n:
            held = obj
            i = i + 1
        out[0] = 9 if held is obj else 10

    @cute.jit
    def launch(out: cute.Tensor, n: Int32, stream):
        kern(out, n).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

    return launch


@pytest.mark.parametrize("name", list(OBJECTS))
def test_public_objects_are_trace_time_conditions(name: str) -> None:
    obj = OBJECTS[name]
    truth = bool(obj)
    assert _stored_constants(_conditions_kernel(obj)) == ([3, 5, 7] if truth else [4, 6, 8])


@pytest.mark.parametrize("name", list(OBJECTS))
def test_public_objects_can_be_assigned_in_dynamic_control_flow(name: str) -> None:
    assert _stored_constants(_carry_kernel(OBJECTS[name])) == [9]


def test_multicast_truth_says_whether_anything_is_multicast() -> None:
    assert bool(Multicast(2, 1)) and not bool(Multicast(1, 1)) and not bool(Multicast(2, 2, a=False, b=False))


def test_a_bare_if_statement_is_a_run_time_branch_for_plain_objects_too() -> None:
    """The DSL stages every non-const_expr ``if``; a non-bool Python object cannot be its condition —
    a plain object fails exactly as a pipes object does. (The suggestion in the docs: const_expr.)"""

    class Plain:
        pass

    def kernel_for(obj):
        @cute.kernel
        def kern(out: cute.Tensor, n: Int32):
            if obj:
                out[0] = 1

        @cute.jit
        def launch(out: cute.Tensor, n: Int32, stream):
            kern(out, n).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

        return launch

    for obj in (Plain(), Multicast(2, 1)):
        with pytest.raises(Exception, match=r"(?s)Cannot convert.*to Boolean"):
            ck.compile_fake(kernel_for(obj), ck.fake_out(8), Int32(3))


def test_without_the_dsl_registry_static_objects_fall_back_to_the_empty_values_protocol(monkeypatch) -> None:
    """Another DSL version without tree_utils.register_pytree_node: still carried (as before), nothing emitted."""
    import pipes.cute.state as state

    monkeypatch.setattr(state, "register_pytree_node", None)

    class Config(state.TraceStatic):
        pass

    config = Config()
    assert config.__extract_mlir_values__() == [] and config.__new_from_mlir_values__([]) is config
