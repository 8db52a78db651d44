"""The TileLang back-end on real TVM IR (apache-tvm, CPU): the ping-pong body traced through TVM's IR
builder, with stage ids as TIR expressions of the loop variable. Skipped when apache-tvm is absent.

TileLang-Ascend's ``T.set_flag`` is ``T.call_extern("handle", "AscendC::SetFlag<…>", id)``; the stand-in
``T`` below does the same on stock TVM, so what is checked here is everything but TileLang's own lowering.
"""

from __future__ import annotations

import pytest

from pipes.ascend import EventIdAllocator, EventIdRules
from pipes.ascend.emit import TileLangBuilder
from pipes.ascend.kernels.pingpong import PingPongTiles, pingpong_gemm

tvm = pytest.importorskip("tvm")
ir_builder = pytest.importorskip("tvm.script.ir_builder")
try:  # apache-tvm >= 0.22 calls the TIR namespace tirx; TileLang's TVM still calls it tir
    from tvm import tirx as tir
    from tvm.script.ir_builder import tirx as tb
except ImportError:  # pragma: no cover - depends on the installed TVM
    from tvm import tir
    from tvm.script.ir_builder import tir as tb


class TvmAscendT:
    """The TileLang-Ascend calls the builder uses, producing TIR like tilelang.language.ascend does."""

    evaluate = staticmethod(tb.evaluate)
    serial = staticmethod(tb.serial)
    If = staticmethod(tb.If)
    Then = staticmethod(tb.Then)

    @staticmethod
    def set_flag(src, dst, event_id):
        return tir.call_extern("handle", f"AscendC::SetFlag<AscendC::HardEvent::{src}_{dst}>", event_id)

    @staticmethod
    def wait_flag(src, dst, event_id):
        return tir.call_extern("handle", f"AscendC::WaitFlag<AscendC::HardEvent::{src}_{dst}>", event_id)

    @staticmethod
    def copy(src, dst, transpose=False):
        return tir.call_extern("handle", "copy", str(src), str(dst))

    @staticmethod
    def mma(a, b, c, init=False):
        return tir.call_extern("handle", "mma", str(a), str(b), str(c))


def _buffer(name, shape, dtype="float16"):
    return tir.decl_buffer(shape, dtype, name=name)


def _pingpong_script() -> str:
    with ir_builder.IRBuilder() as builder, tb.prim_func():
        tb.func_name("pingpong")
        trips = tb.arg("batch_iters", tir.Var("batch_iters", "int32"))
        tiles = PingPongTiles(
            Q=_buffer("Q", (32, 32)),
            K=_buffer("K", (64 * 32, 32)),
            workspace=_buffer("workspace_1", (1, 64, 32, 32)),
            q_l1=_buffer("q_l1", (32, 32)),
            k_l1=_buffer("k_l1", (32, 32)),
            l0a=_buffer("l0a", (2, 32, 32)),
            l0b=_buffer("l0b", (2, 32, 32)),
            l0c=_buffer("l0c", (2, 32, 32), "float32"),
        )
        rules = EventIdRules(framework_preset=False)
        pingpong_gemm(TileLangBuilder(TvmAscendT), tiles, trips, EventIdAllocator(rules))
    return builder.get().script()


def test_pingpong_traces_into_tir_with_ids_as_loop_expressions() -> None:
    script = _pingpong_script()
    loop = script.split("for v in range(batch_iters):")[1].split("\n    T.")[0]
    calls = [line.strip() for line in loop.splitlines() if "AscendC::" in line]
    flags = [c.split('"AscendC::')[1].replace("AscendC::HardEvent::", "").rstrip(")") for c in calls]
    assert flags == [
        'WaitFlag<MTE1_MTE2>", 1',
        'SetFlag<MTE2_MTE1>", 1',
        'WaitFlag<M_MTE1>", 2 + v % 2',
        'WaitFlag<MTE2_MTE1>", 1',
        'SetFlag<MTE1_MTE2>", 1',
        'SetFlag<MTE1_M>", 2 + v % 2',
        'WaitFlag<MTE1_M>", 2 + v % 2',
        'WaitFlag<FIX_M>", v % 2',
        'SetFlag<M_MTE1>", 2 + v % 2',
        'SetFlag<M_FIX>", v % 2',
        'WaitFlag<M_FIX>", v % 2',
        'SetFlag<FIX_M>", v % 2',
    ]
    assert 'if v < 2:\n            T.call_extern(T.handle().ty, "copy", "q_l1", "l0a[v % 2, 0:32, 0:32]")' in loop
    assert '"K[v * 32:v * 32 + 32, 0:32]"' in loop


def test_pingpong_primes_and_drains_outside_the_tir_loop() -> None:
    script = _pingpong_script()
    before, after = script.split("for v in range(batch_iters):")
    assert before.count("SetFlag") == 6 + 1 and before.count("WaitFlag") == 2
    tail = [line for line in after.splitlines() if line.startswith("    T.call_extern")]
    assert len(tail) == 1 + 6  # Q's release, then the six drains
    assert all("WaitFlag" in line for line in tail[1:])
