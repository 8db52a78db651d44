"""Back-end output: the TileLang stand-in text (diffed against the request's hand-written loop), AscendC
text, TileLangBuilder over an IR-builder-style ``T``, and the TileLang path executed by the simulator."""

from __future__ import annotations

import contextlib
import re

from ascend_handwritten import PRIMED, HandIds, handwritten_simulator

from pipes.ascend import CoreType, EventIdAllocator, EventIdRules, Keying, Pipe, Sym, cross_core_pipeline
from pipes.ascend.emit import AscendCBuilder, StandInT, TileLangBuilder
from pipes.ascend.kernels.pingpong import (
    PingPongProblem,
    pingpong_gemm,
    pingpong_simulator,
    sim_tiles,
    symbolic_tiles,
)
from pipes.ascend.sim import Simulator
from pipes.ascend.sim.program import Op

# The loop body of requests/ascend-pingpong.md, flag lines only, in order.
REQUEST_FLAGS = [
    'T.wait_flag("MTE1", "MTE2", SIG_K_L1)',
    'T.set_flag("MTE2", "MTE1", SIG_K_L1)',
    'T.wait_flag("M", "MTE1", SIG_L0AB + side)',
    'T.wait_flag("MTE2", "MTE1", SIG_K_L1)',
    'T.set_flag("MTE1", "MTE2", SIG_K_L1)',
    'T.set_flag("MTE1", "M", SIG_L0AB + side)',
    'T.wait_flag("MTE1", "M", SIG_L0AB + side)',
    'T.wait_flag("FIX", "M", SIG_L0C + side)',
    'T.set_flag("M", "MTE1", SIG_L0AB + side)',
    'T.set_flag("M", "FIX", SIG_L0C + side)',
    'T.wait_flag("M", "FIX", SIG_L0C + side)',
    'T.set_flag("FIX", "M", SIG_L0C + side)',
]


def _rules() -> EventIdRules:
    return EventIdRules(framework_preset=False)


def _standin_pingpong(keying: Keying = Keying.SOURCE_PIPE) -> StandInT:
    T = StandInT()  # noqa: N806
    rules = EventIdRules(framework_preset=False, keying=keying)
    pingpong_gemm(TileLangBuilder(T), symbolic_tiles(), Sym("batch_iters"), EventIdAllocator(rules), cid=Sym("cid"))
    return T


def _loop_body(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("for i in T.serial"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        body.append(line.strip())
    return body


def test_generated_tilelang_loop_has_the_requests_flags_in_the_requests_order() -> None:
    body = _loop_body(_standin_pingpong().lines)
    flags = [line for line in body if line.startswith(("T.set_flag", "T.wait_flag"))]
    assert flags == [line.replace("side", "i % 2") for line in REQUEST_FLAGS]
    assert body[1] == "T.copy(K[i * block_N:(i + 1) * block_N, :], k_l1)"
    assert body[4:6] == ["if i < 2:", "T.copy(q_l1, l0a[i % 2, :, :])"]
    assert "T.mma(l0a[i % 2, :, :], l0b[i % 2, :, :], l0c[i % 2, :, :], init=True)" in body


def test_generated_tilelang_ids_come_from_the_allocator() -> None:
    text = _standin_pingpong().text()
    assert text.startswith("block_N = 32\nSIG_Q_L1 = 0\nSIG_K_L1 = 1\nSIG_L0AB = 2\nSIG_L0C = 0\n")
    pair = _standin_pingpong(Keying.PIPE_PAIR).text()
    # Per-pair keying numbers every pipe pair from 0, as TileLang-Ascend's expert examples do by hand.
    assert "SIG_Q_L1 = 0\nSIG_K_L1 = 1\nSIG_L0AB = 0\nSIG_L0C = 0\n" in pair


def test_generated_tilelang_primes_before_and_drains_after_the_loop() -> None:
    lines = _standin_pingpong().lines
    loop = next(i for i, line in enumerate(lines) if line.startswith("for "))
    prologue = [line for line in lines[:loop] if "set_flag" in line][:6]
    assert prologue == [
        'T.set_flag("MTE1", "MTE2", SIG_Q_L1)',
        'T.set_flag("MTE1", "MTE2", SIG_K_L1)',
        'T.set_flag("M", "MTE1", SIG_L0AB)',
        'T.set_flag("M", "MTE1", SIG_L0AB + 1)',
        'T.set_flag("FIX", "M", SIG_L0C)',
        'T.set_flag("FIX", "M", SIG_L0C + 1)',
    ]
    epilogue = [line for line in lines[loop:] if not line.startswith(" ")][1:]
    assert epilogue == [
        'T.set_flag("MTE1", "MTE2", SIG_Q_L1)',
        'T.wait_flag("FIX", "M", SIG_L0C)',
        'T.wait_flag("FIX", "M", SIG_L0C + 1)',
        'T.wait_flag("M", "MTE1", SIG_L0AB)',
        'T.wait_flag("M", "MTE1", SIG_L0AB + 1)',
        'T.wait_flag("MTE1", "MTE2", SIG_K_L1)',
        'T.wait_flag("MTE1", "MTE2", SIG_Q_L1)',
    ]


def test_ascendc_text() -> None:
    builder = AscendCBuilder()
    pingpong_gemm(builder, symbolic_tiles(), Sym("batch_iters"), EventIdAllocator(_rules()), cid=Sym("cid"))
    text = builder.text()
    assert text.startswith("constexpr int32_t block_N = 32;\nconstexpr int32_t SIG_Q_L1 = 0;\n")
    assert "for (int32_t i = 0; i < batch_iters; ++i) {\n" in text
    assert "    AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(SIG_L0AB + i % 2);\n" in text
    assert "    AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(SIG_K_L1);\n" in text
    assert "    if (i < 2) {\n        AscendC::LoadData(l0a[i % 2, :, :], q_l1);  // MTE1\n    }\n" in text
    assert "AscendC::Fixpipe(workspace_1[cid, i, :, :], l0c[i % 2, :, :]);  // FIX" in text
    # Sets: 6 primes, Q's commit and release, 6 per trip. Waits: Q's acquire and wait, 6 per trip, 6 drains.
    assert len(re.findall(r"SetFlag<", text)) == 6 + 2 + 6
    assert text.count("WaitFlag<") == 2 + 6 + 6


def test_barriers_and_cross_core_calls_in_both_texts() -> None:
    ids = EventIdAllocator(_rules())
    scores = cross_core_pipeline("scores", stages=2, producer=("AIC", "FIX"), consumer=("AIV", "MTE2"), ids=ids)
    cube_c, vec_t = AscendCBuilder(CoreType.AIC), StandInT()
    vec = TileLangBuilder(vec_t, CoreType.AIV)
    with scores.producer_side(cube_c) as side:
        publish = side.producer()
        cube_c.loop(Sym("n"), lambda i: (side.seat(i), publish.acquire(), publish.commit()))
    with scores.consumer_side(vec) as side:
        take = side.consumer()
        vec.loop(Sym("n"), lambda i: (side.seat(i), take.wait(), take.release()))
    vec.pipe_barrier(Pipe.V)
    c = cube_c.text()
    assert "    AscendC::CrossCoreWaitFlag<2, PIPE_FIX>(XSIG_SCORES_EMPTY + i % 2);\n" in c
    assert "    AscendC::CrossCoreSetFlag<2, PIPE_FIX>(XSIG_SCORES_FULL + i % 2);\n" in c
    assert c.rstrip().endswith("AscendC::CrossCoreWaitFlag<2, PIPE_FIX>(XSIG_SCORES_EMPTY + 1);")
    t = vec_t.text()
    assert t.startswith("XSIG_SCORES_FULL = 0\nXSIG_SCORES_EMPTY = 2\n")
    assert 'T.set_cross_flag("MTE2", XSIG_SCORES_EMPTY)\nT.set_cross_flag("MTE2", XSIG_SCORES_EMPTY + 1)\n' in t
    assert '    T.wait_cross_flag(XSIG_SCORES_FULL + i % 2, "MTE2")\n' in t
    assert t.rstrip().endswith('T.pipe_barrier("V")')


class IRBuilderT:
    """Behaves like TileLang's T inside a prim_func: calls return IR nodes that must be evaluated; loops
    and conditions are frames."""

    def __init__(self) -> None:
        self.evaluated: list[tuple] = []
        self.frames: list[str] = []

    def evaluate(self, node):
        self.evaluated.append(node)

    def set_flag(self, src, dst, event_id):
        return ("set_flag", src, dst, event_id)

    def wait_flag(self, src, dst, event_id):
        return ("wait_flag", src, dst, event_id)

    def pipe_barrier(self, pipe):
        return ("pipe_barrier", pipe)

    def set_cross_flag(self, pipe, flag):
        return ("set_cross_flag", pipe, flag)

    def wait_cross_flag(self, flag):  # an older signature without the pipe
        return ("wait_cross_flag", flag)

    def copy(self, src, dst, transpose=False):
        return ("copy", src, dst, transpose)

    def gemm_v0(self, a, b, c, init=False):
        return ("gemm_v0", a, b, c, init)

    @contextlib.contextmanager
    def serial(self, count):
        self.frames.append(f"for {count}")
        yield "i_var"

    @contextlib.contextmanager
    def If(self, cond):  # noqa: N802
        self.frames.append(f"if {cond}")
        yield

    @contextlib.contextmanager
    def Then(self):  # noqa: N802
        self.frames.append("then")
        yield


def test_tilelang_builder_evaluates_every_call_inside_ir_frames() -> None:
    T = IRBuilderT()  # noqa: N806
    kb = TileLangBuilder(T)
    kb.loop(8, lambda i: kb.when("cond", lambda: kb.copy("a", "b", transpose=True)))
    kb.mma("a", "b", "c", init=True)  # no T.mma: falls back to gemm_v0
    kb.set_flag(Pipe.MTE2, Pipe.MTE1, "id")
    kb.set_cross_flag(Pipe.FIX, 3)
    kb.wait_cross_flag(Pipe.FIX, 3)
    kb.when(True, lambda: kb.pipe_barrier(Pipe.M))
    assert T.frames == ["for 8", "if cond", "then"]
    assert T.evaluated == [
        ("copy", "a", "b", True),
        ("gemm_v0", "a", "b", "c", True),
        ("set_flag", "MTE2", "MTE1", "id"),
        ("set_cross_flag", "FIX", 3),
        ("wait_cross_flag", 3),
        ("pipe_barrier", "M"),
    ]
    assert kb.constant("SIG", 4) == 4


def test_tilelang_path_runs_correctly_in_the_simulator() -> None:
    sim = Simulator(_rules())
    tiles = sim_tiles(sim, PingPongProblem.random(9))
    pingpong_gemm(TileLangBuilder(sim.cube().tilelang()), tiles, 9, EventIdAllocator(_rules()))
    report = sim.explore()
    assert report.ok, report.text()


def _loop_flags(sim: Simulator) -> list[tuple]:
    return [
        (i.iteration, i.op, i.src, i.dst, i.event_id)
        for i in sim.cube().instrs
        if i.op in (Op.SET, Op.WAIT) and i.iteration
    ]


def test_generated_and_hand_written_schedules_issue_identical_flags_every_iteration() -> None:
    generated = pingpong_simulator(7)
    ids = {"SIG_Q": 0, "SIG_K_L1": 1, "SIG_L0AB": 2, "SIG_L0C": 0}  # what the allocator chose
    hand = handwritten_simulator(7, PRIMED, ids=HandIds(**ids), framework_preset=False)
    assert _loop_flags(generated) == _loop_flags(hand)
    assert len(_loop_flags(generated)) == 7 * 12
