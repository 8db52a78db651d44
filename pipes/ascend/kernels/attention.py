"""Cube → vector through a GM workspace with cross-core flags: the attention score hand-off.

The cube core computes score tiles S_i = Q·K_iᵀ (the ping-pong loop) and FIX writes each into a slot
of a GM workspace ring (a :class:`~pipes.ascend.crosscore.CrossCorePipeline`); each of the two vector
cores copies its half of the rows to UB (MTE2), scales them (V) and stores them to the output (MTE3),
handing the workspace slot back as soon as its copy has landed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..crosscore import CrossCorePipeline, cross_core_pipeline
from ..events import EventIdAllocator, EventIdRules
from ..pairs import Pipe, Space
from ..pipeline import flag_pipeline, primed, serial
from .pingpong import DEFAULT_SHAPE, PingPongShape


class AttentionBug(enum.Enum):
    NONE = "none"
    CUBE_SKIPS_ACQUIRE = "the cube writes a workspace slot without waiting for the vector cores to hand it back"
    VECTOR_RELEASES_EARLY = "a vector core hands the slot back before its copy out of GM"


@dataclass(frozen=True)
class AttentionTiles:
    Q: Any
    K: Any
    out: Any
    workspace: Any
    q_l1: Any
    k_l1: Any
    l0a: Any
    l0b: Any
    l0c: Any


@dataclass(frozen=True)
class VectorTiles:
    workspace: Any
    out: Any
    ub_in: Any
    ub_out: Any


def attention_cube(
    kb: Any,
    t: AttentionTiles,
    iters: int,
    ids: EventIdAllocator,
    scores: CrossCorePipeline,
    *,
    shape: PingPongShape,
    bug: AttentionBug = AttentionBug.NONE,
) -> None:
    """The cube side: the ping-pong loop, with FIX writing into the cross-core workspace ring."""
    bn = shape.block_n
    q_l1 = flag_pipeline(kb, "q_l1", stages=1, producer=Pipe.MTE2, consumer=Pipe.MTE1, ids=ids)
    k_l1 = flag_pipeline(kb, "k_l1", stages=1, producer=Pipe.MTE2, consumer=Pipe.MTE1, ids=ids)
    l0ab = flag_pipeline(kb, "l0ab", stages=2, producer=Pipe.MTE1, consumer=Pipe.M, ids=ids)
    l0c = flag_pipeline(kb, "l0c", stages=2, producer=Pipe.M, consumer=Pipe.FIX, ids=ids)
    workspace = scores.producer_side(kb)
    load_q, use_q = q_l1.producer(), q_l1.consumer()
    load_k, use_k = k_l1.producer(), k_l1.consumer()
    fill_ab, mma_ab = l0ab.producer(), l0ab.consumer()
    mma_c, fix_c = l0c.producer(), l0c.consumer()
    publish = workspace.producer()

    def iteration(i: int) -> None:
        load_k.acquire()
        kb.copy(t.K[i * bn : (i + 1) * bn, :], t.k_l1)
        load_k.commit()
        side = fill_ab.acquire()
        kb.when(i < l0ab.stages, lambda: kb.copy(t.q_l1, t.l0a[side, :, :]))
        use_k.wait()
        kb.copy(t.k_l1, t.l0b[side, :, :], transpose=True)
        use_k.release()
        fill_ab.commit()
        mma_ab.wait()
        acc = mma_c.acquire()
        kb.mma(t.l0a[side, :, :], t.l0b[side, :, :], t.l0c[acc, :, :], init=True)
        mma_ab.release()
        mma_c.commit()
        out = fix_c.wait()
        slot = publish.commit_state.index if bug is AttentionBug.CUBE_SKIPS_ACQUIRE else publish.acquire()
        kb.copy(t.l0c[out, :, :], t.workspace[slot, :, :])
        publish.commit()
        fix_c.release()

    with workspace, primed(q_l1, k_l1, l0ab, l0c):
        load_q.acquire()
        kb.copy(t.Q, t.q_l1)
        load_q.commit()
        use_q.wait()
        serial(kb, iters, iteration, k_l1, l0ab, l0c, workspace)
        use_q.release()


def attention_vector(
    kb: Any,
    t: VectorTiles,
    iters: int,
    ids: EventIdAllocator,
    scores: CrossCorePipeline,
    *,
    shape: PingPongShape,
    rows: slice,
    scale: float,
    bug: AttentionBug = AttentionBug.NONE,
) -> None:
    """One vector core's side: take its rows of each score tile, scale them, store them."""
    bn = shape.block_n
    workspace = scores.consumer_side(kb)
    ub_in = flag_pipeline(kb, "ub_in", stages=2, producer=Pipe.MTE2, consumer=Pipe.V, ids=ids)
    ub_out = flag_pipeline(kb, "ub_out", stages=2, producer=Pipe.V, consumer=Pipe.MTE3, ids=ids)
    take = workspace.consumer()
    load, compute = ub_in.producer(), ub_in.consumer()
    produce, store = ub_out.producer(), ub_out.consumer()

    def iteration(i: int) -> None:
        slot = take.wait()
        s_in = load.acquire()
        if bug is AttentionBug.VECTOR_RELEASES_EARLY:
            take.release()
        kb.copy(t.workspace[slot, rows, :], t.ub_in[s_in, :, :])
        load.commit()
        if bug is not AttentionBug.VECTOR_RELEASES_EARLY:
            take.release()
        compute.wait()
        s_out = produce.acquire()
        kb.vector("muls", t.ub_out[s_out, :, :], t.ub_in[s_in, :, :], scale)
        compute.release()
        produce.commit()
        store.wait()
        kb.copy(t.ub_out[s_out, :, :], t.out[rows, i * bn : (i + 1) * bn])
        store.release()

    with workspace, primed(ub_in, ub_out):
        serial(kb, iters, iteration, ub_in, ub_out, workspace)


def attention_simulator(
    iters: int,
    *,
    slots: int = 2,
    bug: AttentionBug = AttentionBug.NONE,
    shape: PingPongShape = DEFAULT_SHAPE,
    scale: float = 0.125,
    seed: int = 0,
    rules: EventIdRules | None = None,
) -> Any:
    """A simulator with the cube side on the cube core and the vector side on both vector cores."""
    from ..sim import Simulator

    rules = rules if rules is not None else EventIdRules(framework_preset=False)
    sim = Simulator(rules, vector_cores=2)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((shape.m, shape.d)).astype(np.float16)
    k = rng.standard_normal((iters * shape.block_n, shape.d)).astype(np.float16)
    expected = scale * (q.astype(np.float32) @ k.astype(np.float32).T)
    cube = sim.cube()
    out = sim.gm_zeros("out", expected.shape, np.float32)
    sim.expect(out, expected, rtol=1e-3, atol=1e-3)
    workspace = sim.gm_zeros("workspace", (slots, shape.m, shape.block_n), np.float32)
    tiles = AttentionTiles(
        Q=sim.gm("Q", q),
        K=sim.gm("K", k),
        out=out,
        workspace=workspace,
        q_l1=cube.buffer("q_l1", Space.L1, (shape.m, shape.d)),
        k_l1=cube.buffer("k_l1", Space.L1, (shape.block_n, shape.d)),
        l0a=cube.buffer("l0a", Space.L0A, (2, shape.m, shape.d)),
        l0b=cube.buffer("l0b", Space.L0B, (2, shape.d, shape.block_n)),
        l0c=cube.buffer("l0c", Space.L0C, (2, shape.m, shape.block_n), np.float32),
    )
    cube_ids = EventIdAllocator(rules)
    scores = cross_core_pipeline(
        "scores", stages=slots, producer=("AIC", "FIX"), consumer=("AIV", "MTE2"), ids=cube_ids
    )
    half = shape.m // len(sim.vector_programs)
    for vec in sim.vector_programs:
        rows = slice(vec.subblock_id * half, (vec.subblock_id + 1) * half)
        vtiles = VectorTiles(
            workspace=workspace,
            out=out,
            ub_in=vec.buffer("ub_in", Space.UB, (2, half, shape.block_n), np.float32),
            ub_out=vec.buffer("ub_out", Space.UB, (2, half, shape.block_n), np.float32),
        )
        # Each vector core runs the same code, so each gets the same ids from its own allocator.
        attention_vector(
            vec, vtiles, iters, EventIdAllocator(rules), scores, shape=shape, rows=rows, scale=scale, bug=bug
        )
    attention_cube(cube, tiles, iters, cube_ids, scores, shape=shape, bug=bug)
    return sim
