"""The user's hand-written ping-pong schedule from ``requests/ascend-pingpong.md``, run as written.

Example material, not library code: examples/ascend_gemm_pingpong.py runs it in the simulator beside the
schedule pipes generates, so a reader sees which ways of priming and draining the hand-written loop work.

The loop body below is the request's sketch verbatim (only indentation and the argument plumbing are
ours), so the simulator judges exactly what the user wrote. The sketch shows neither how Q reaches L1
nor the priming and draining "outside the loop"; :class:`HandVariant` supplies the usual ways of
writing them, so the report can say which of them work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipes.ascend.events import EventIdRules, Keying
from pipes.ascend.kernels.pingpong import DEFAULT_SHAPE, PingPongProblem, PingPongShape, PingPongTiles, sim_tiles


@dataclass(frozen=True)
class HandIds:
    """The user's signal constants. The request gives no values; the defaults number ids per pipe pair
    from 0, as TileLang-Ascend's expert-mode examples do (``SIG_L0AB_0 = 0``, ``SIG_L0C_0 = 0``, …)."""

    SIG_K_L1: int = 1
    SIG_L0AB: int = 0
    SIG_L0C: int = 0
    SIG_Q: int = 0


#: Every signal numbered once across the kernel instead (no id reused between pipe pairs).
SEQUENTIAL_IDS = HandIds(SIG_K_L1=0, SIG_L0AB=1, SIG_L0C=3, SIG_Q=5)


@dataclass(frozen=True)
class HandVariant:
    """How the code around the loop is written."""

    name: str
    prime: bool = True
    """Set each empty flag once before the loop (K_L1 once, L0AB and L0C per side)."""
    drain: bool = True
    """Wait each empty flag once after the loop."""
    prime_l0ab: bool = True
    """Also prime/drain M→MTE1 L0AB (False: rely on the framework pipe object's pre-set M→MTE1 ids)."""
    q_signal: str = "own"
    """How MTE1 learns that Q has landed in L1: ``"own"`` (set/wait SIG_Q after the copy), ``"k_l1"``
    (set/wait SIG_K_L1 after the copy, reusing the K tile's flag) or ``"loop"`` (no signal of its own: the
    first K tile's MTE2→MTE1 flag is set after Q's copy too, MTE2 being in order)."""


AS_WRITTEN = HandVariant("as written (no priming, no draining)", prime=False, drain=False)
PRIMED = HandVariant("primed before the loop and drained after it")
PRESET_L0AB = HandVariant("primed/drained except L0AB, relying on the framework's pre-set M→MTE1 ids", prime_l0ab=False)
Q_ON_K_L1 = HandVariant("primed/drained, Q load signalled on SIG_K_L1", q_signal="k_l1")
Q_VIA_LOOP = HandVariant("primed/drained, Q load covered by the first K tile's flag", q_signal="loop")
VARIANTS = (AS_WRITTEN, PRIMED, PRESET_L0AB, Q_ON_K_L1, Q_VIA_LOOP)


def handwritten_pingpong(
    T: Any,
    t: PingPongTiles,
    batch_iters: int,
    ids: HandIds,
    variant: HandVariant,
    *,
    block_N: int = 32,
    cid: int = 0,
    k: int = 0,
    num_stages: int = 2,
) -> None:  # noqa: N803
    """The request's schedule on a TileLang-style ``T`` (the simulator's shim runs it)."""
    K, k_l1, q_l1, l0a, l0b, l0c, workspace_1 = t.K, t.k_l1, t.q_l1, t.l0a, t.l0b, t.l0c, t.workspace  # noqa: N806
    SIG_K_L1, SIG_L0AB, SIG_L0C = ids.SIG_K_L1, ids.SIG_L0AB, ids.SIG_L0C  # noqa: N806
    sig_q = ids.SIG_K_L1 if variant.q_signal == "k_l1" else ids.SIG_Q

    if variant.prime:
        T.set_flag("MTE1", "MTE2", SIG_K_L1)
        if variant.prime_l0ab:
            T.set_flag("M", "MTE1", SIG_L0AB + 0)
            T.set_flag("M", "MTE1", SIG_L0AB + 1)
        T.set_flag("FIX", "M", SIG_L0C + 0)
        T.set_flag("FIX", "M", SIG_L0C + 1)
    # Q → L1 once (not shown in the request)
    T.copy(t.Q, q_l1)
    if variant.q_signal != "loop":
        T.set_flag("MTE2", "MTE1", sig_q)
        T.wait_flag("MTE2", "MTE1", sig_q)

    # ---- the request, verbatim ----
    for i in T.serial(batch_iters):
        side = i % 2  # current slot (0 or 1)
        idx = k * num_stages + i

        # 1: load K into L1 (overlaps the previous compute)
        T.wait_flag("MTE1", "MTE2", SIG_K_L1)
        T.copy(K[..., idx * block_N : (idx + 1) * block_N, :], k_l1)
        T.set_flag("MTE2", "MTE1", SIG_K_L1)

        # 2: load Q into L0A
        T.wait_flag("M", "MTE1", SIG_L0AB + side)
        if i < 2:
            T.copy(q_l1, l0a[side, :, :])

        # 3: load K into L0B (transposed)
        T.wait_flag("MTE2", "MTE1", SIG_K_L1)
        T.copy(k_l1, l0b[side, :, :], transpose=True)
        T.set_flag("MTE1", "MTE2", SIG_K_L1)
        T.set_flag("MTE1", "M", SIG_L0AB + side)

        # 4: MMA
        T.wait_flag("MTE1", "M", SIG_L0AB + side)
        T.wait_flag("FIX", "M", SIG_L0C + side)
        T.mma(l0a[side, :, :], l0b[side, :, :], l0c[side, :, :], init=True)
        T.set_flag("M", "MTE1", SIG_L0AB + side)
        T.set_flag("M", "FIX", SIG_L0C + side)

        # 5: write back to workspace
        T.wait_flag("M", "FIX", SIG_L0C + side)
        T.copy(l0c[side, :, :], workspace_1[cid, i, :, :])
        T.set_flag("FIX", "M", SIG_L0C + side)
    # ---- end of the request ----

    if variant.drain:
        T.wait_flag("MTE1", "MTE2", SIG_K_L1)
        if variant.prime_l0ab:
            T.wait_flag("M", "MTE1", SIG_L0AB + 0)
            T.wait_flag("M", "MTE1", SIG_L0AB + 1)
        T.wait_flag("FIX", "M", SIG_L0C + 0)
        T.wait_flag("FIX", "M", SIG_L0C + 1)


def handwritten_simulator(
    batch_iters: int,
    variant: HandVariant,
    *,
    ids: HandIds = HandIds(),
    framework_preset: bool = True,
    flag_keying: Keying = Keying.PIPE_PAIR,
    shape: PingPongShape = DEFAULT_SHAPE,
    seed: int = 0,
) -> Any:
    """A simulator with the hand-written schedule recorded on its cube core."""
    from pipes.ascend.sim import Simulator

    sim = Simulator(EventIdRules(framework_preset=framework_preset, keying=flag_keying))
    tiles = sim_tiles(sim, PingPongProblem.random(batch_iters, shape, seed), shape)
    handwritten_pingpong(sim.cube().tilelang(), tiles, batch_iters, ids, variant, block_N=shape.block_n)
    return sim
