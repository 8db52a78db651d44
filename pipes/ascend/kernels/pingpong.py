"""The requested ping-pong cube loop (``requests/ascend-pingpong.md``), written with pipes objects.

Q stays resident in L1; K tiles stream GM→L1 (MTE2→MTE1, one stage); Q and the transposed K tile go
L1→L0A/L0B (MTE1→M, two stages: Q is loaded into each L0A slot only on that slot's first use); the
score tile Q·K_iᵀ accumulates in L0C (M→FIX, two stages) and FIX writes it to ``workspace[cid, i]``.
The body is back-end neutral: it prints as TileLang or AscendC and runs in the simulator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..events import EventIdAllocator, EventIdRules
from ..pairs import Pipe, Space
from ..pipeline import flag_pipeline, primed, serial
from ..sym import SymBuffer


@dataclass(frozen=True)
class PingPongShape:
    """Tile sizes: Q is ``m × d``; each K tile is ``block_n × d``; each score tile ``m × block_n``."""

    m: int = 32
    d: int = 32
    block_n: int = 32


DEFAULT_SHAPE = PingPongShape()


@dataclass(frozen=True)
class PingPongTiles:
    """The buffers the body touches, as the back-end represents them (sim tensors or symbols)."""

    Q: Any
    K: Any
    workspace: Any
    q_l1: Any
    k_l1: Any
    l0a: Any
    l0b: Any
    l0c: Any


class PingPongBug(enum.Enum):
    """Mistakes to plant, to see the simulator's diagnosis."""

    NONE = "none"
    RELEASE_L0_BEFORE_MMA = "the L0A/L0B slot is released before the mma that reads it"
    HARD_CODED_RELEASE = "the L0A/L0B release uses a hard-coded id (slot 0) instead of the slot's"


def pingpong_gemm(
    kb: Any,
    t: PingPongTiles,
    iters: Any,
    ids: EventIdAllocator,
    *,
    shape: PingPongShape = DEFAULT_SHAPE,
    cid: Any = 0,
    bug: PingPongBug = PingPongBug.NONE,
) -> None:
    """Record / emit the ping-pong loop on builder ``kb`` for ``iters`` K tiles."""
    block_n = kb.constant("block_N", shape.block_n)
    q_l1 = flag_pipeline(kb, "q_l1", stages=1, producer=Pipe.MTE2, consumer=Pipe.MTE1, ids=ids)
    k_l1 = flag_pipeline(kb, "k_l1", stages=1, producer=Pipe.MTE2, consumer=Pipe.MTE1, ids=ids)
    l0ab = flag_pipeline(kb, "l0ab", stages=2, producer=Pipe.MTE1, consumer=Pipe.M, ids=ids)
    l0c = flag_pipeline(kb, "l0c", stages=2, producer=Pipe.M, consumer=Pipe.FIX, ids=ids)
    load_q, use_q = q_l1.producer(), q_l1.consumer()
    load_k, use_k = k_l1.producer(), k_l1.consumer()
    fill_ab, mma_ab = l0ab.producer(), l0ab.consumer()
    mma_c, fix_c = l0c.producer(), l0c.consumer()

    def release_ab() -> None:
        if bug is PingPongBug.HARD_CODED_RELEASE:
            kb.set_flag(Pipe.M, Pipe.MTE1, l0ab.event_ids.base)  # always slot 0's id
        else:
            mma_ab.release()

    def iteration(i: Any) -> None:
        # 1: load K into L1 (overlaps the previous compute)
        load_k.acquire()
        kb.copy(t.K[i * block_n : (i + 1) * block_n, :], t.k_l1)
        load_k.commit()
        # 2: load Q into L0A (each slot keeps it after its first use)
        side = fill_ab.acquire()
        kb.when(i < l0ab.stages, lambda: kb.copy(t.q_l1, t.l0a[side, :, :]))
        # 3: load K into L0B (transposed)
        use_k.wait()
        kb.copy(t.k_l1, t.l0b[side, :, :], transpose=True)
        use_k.release()
        fill_ab.commit()
        # 4: MMA
        mma_ab.wait()
        acc = mma_c.acquire()
        if bug is PingPongBug.RELEASE_L0_BEFORE_MMA:
            release_ab()
        kb.mma(t.l0a[side, :, :], t.l0b[side, :, :], t.l0c[acc, :, :], init=True)
        if bug is not PingPongBug.RELEASE_L0_BEFORE_MMA:
            release_ab()
        mma_c.commit()
        # 5: write back to workspace
        out = fix_c.wait()
        kb.copy(t.l0c[out, :, :], t.workspace[cid, i, :, :])
        fix_c.release()

    with primed(q_l1, k_l1, l0ab, l0c):
        load_q.acquire()
        kb.copy(t.Q, t.q_l1)
        load_q.commit()
        use_q.wait()
        serial(kb, iters, iteration, k_l1, l0ab, l0c)
        use_q.release()


def symbolic_tiles() -> PingPongTiles:
    """Named buffers for printing code."""
    return PingPongTiles(
        Q=SymBuffer("Q", Space.GM, 2),
        K=SymBuffer("K", Space.GM, 2),
        workspace=SymBuffer("workspace_1", Space.GM, 4),
        q_l1=SymBuffer("q_l1", Space.L1, 2),
        k_l1=SymBuffer("k_l1", Space.L1, 2),
        l0a=SymBuffer("l0a", Space.L0A, 3),
        l0b=SymBuffer("l0b", Space.L0B, 3),
        l0c=SymBuffer("l0c", Space.L0C, 3),
    )


@dataclass(frozen=True)
class PingPongProblem:
    """Random fp16 inputs and the expected workspace (numpy matmul in fp32)."""

    q: np.ndarray
    k: np.ndarray
    expected: np.ndarray

    @classmethod
    def random(cls, iters: int, shape: PingPongShape = DEFAULT_SHAPE, seed: int = 0) -> PingPongProblem:
        rng = np.random.default_rng(seed)
        q = rng.standard_normal((shape.m, shape.d)).astype(np.float16)
        k = rng.standard_normal((iters * shape.block_n, shape.d)).astype(np.float16)
        scores = q.astype(np.float32) @ k.astype(np.float32).T
        tiles = scores.reshape(shape.m, iters, shape.block_n).transpose(1, 0, 2)[None]
        return cls(q, k, tiles.astype(np.float16).reshape(1, iters, shape.m, shape.block_n))


def sim_tiles(sim: Any, problem: PingPongProblem, shape: PingPongShape = DEFAULT_SHAPE) -> PingPongTiles:
    """Declare the ping-pong's GM tensors and cube buffers in a simulator; expect the matmul in GM."""
    iters = problem.k.shape[0] // shape.block_n
    cube = sim.cube()
    workspace = sim.gm_zeros("workspace", (1, iters, shape.m, shape.block_n), np.float16)
    sim.expect(workspace, problem.expected, rtol=2e-2, atol=2e-2)
    return PingPongTiles(
        Q=sim.gm("Q", problem.q),
        K=sim.gm("K", problem.k),
        workspace=workspace,
        q_l1=cube.buffer("q_l1", Space.L1, (shape.m, shape.d)),
        k_l1=cube.buffer("k_l1", Space.L1, (shape.block_n, shape.d)),
        l0a=cube.buffer("l0a", Space.L0A, (2, shape.m, shape.d)),
        l0b=cube.buffer("l0b", Space.L0B, (2, shape.d, shape.block_n)),
        l0c=cube.buffer("l0c", Space.L0C, (2, shape.m, shape.block_n), np.float32),
    )


def pingpong_simulator(
    iters: int,
    *,
    rules: EventIdRules | None = None,
    bug: PingPongBug = PingPongBug.NONE,
    shape: PingPongShape = DEFAULT_SHAPE,
    seed: int = 0,
    **sim_options: Any,
) -> Any:
    """A simulator with the ping-pong recorded on its cube core (random inputs, expected result set)."""
    from ..sim import Simulator

    rules = rules if rules is not None else EventIdRules(framework_preset=False)
    sim = Simulator(rules, **sim_options)
    tiles = sim_tiles(sim, PingPongProblem.random(iters, shape, seed), shape)
    pingpong_gemm(sim.cube(), tiles, iters, EventIdAllocator(rules), shape=shape, bug=bug)
    return sim
