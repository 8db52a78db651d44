"""Priming and draining balance every flag for any trip count: 0, 1, k−1, k, k+1 and 2k+1 trips of a
k-stage pipeline, checked by counting sets and waits and by running every schedule in the simulator."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pipes.ascend import EventIdAllocator, EventIdRules, Keying, Space, flag_pipeline, primed, serial
from pipes.ascend.kernels.pingpong import pingpong_simulator
from pipes.ascend.sim import Kind, Simulator
from pipes.ascend.sim.program import Op

CASES = sorted({(k, n) for k in (1, 2, 3, 4) for n in (0, 1, k - 1, k, k + 1, 2 * k + 1)})


def _streaming_kernel(stages: int, trips: int) -> Simulator:
    """GM → UB (MTE2) → +1 (V) → UB → GM (MTE3), each hop a ``stages``-slot pipeline."""
    # Both hops take ids from pipe V: 2 × 4 exceeds V's 6 usable ids unless ids are keyed per pipe pair.
    keying = Keying.PIPE_PAIR if stages > 3 else Keying.SOURCE_PIPE
    rules = EventIdRules(framework_preset=False, keying=keying)
    sim = Simulator(rules, vector_cores=1)
    x = np.random.default_rng(trips).standard_normal((max(trips, 1), 16)).astype(np.float32)
    gx, gy = sim.gm("x", x), sim.gm_zeros("y", x.shape, np.float32)
    expected = x + 1 if trips else np.zeros_like(x)
    sim.expect(gy, expected, rtol=1e-6, atol=1e-6)
    vec = sim.vector(0)
    ub_in = vec.buffer("ub_in", Space.UB, (stages, 16), np.float32)
    ub_out = vec.buffer("ub_out", Space.UB, (stages, 16), np.float32)
    ids = EventIdAllocator(rules)
    load = flag_pipeline(vec, "load", stages=stages, producer="MTE2", consumer="V", ids=ids)
    store = flag_pipeline(vec, "store", stages=stages, producer="V", consumer="MTE3", ids=ids)
    put, take, make, ship = load.producer(), load.consumer(), store.producer(), store.consumer()

    def body(i: int) -> None:
        s = put.acquire()
        vec.copy(gx[i], ub_in[s])
        put.commit()
        s_in = take.wait()
        s_out = make.acquire()
        vec.vector("adds", ub_out[s_out], ub_in[s_in], 1.0)
        take.release()
        make.commit()
        s_ship = ship.wait()
        vec.copy(ub_out[s_ship], gy[i])
        ship.release()

    with primed(load, store):
        serial(vec, trips, body, load, store)
    return sim


def _set_wait_balance(sim: Simulator) -> Counter:
    balance: Counter = Counter()
    for program in sim.programs:
        for instr in program.instrs:
            if instr.op in (Op.SET, Op.WAIT):
                balance[(instr.src, instr.dst, instr.event_id)] += 1 if instr.op is Op.SET else -1
    return balance


@pytest.mark.parametrize(("stages", "trips"), CASES)
def test_every_trip_count_balances(stages: int, trips: int) -> None:
    sim = _streaming_kernel(stages, trips)
    assert all(v == 0 for v in _set_wait_balance(sim).values())
    report = sim.explore(seeds=1)
    # Per-pair ids (stages > 3) draw the expected warning about ids shared from pipe V; nothing else.
    allowed = {Kind.SHARED_SOURCE_ID} if stages > 3 else set()
    assert report.ok and report.kinds() <= allowed, report.text()


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 5])
def test_pingpong_balances_for_short_loops(trips: int) -> None:
    sim = pingpong_simulator(max(trips, 1)) if trips else _empty_pingpong()
    assert all(v == 0 for v in _set_wait_balance(sim).values())
    report = sim.explore(seeds=1)
    assert report.ok and not len(report.diagnoses), report.text()


def _empty_pingpong() -> Simulator:
    """Zero trips: only Q's load and the primes/drains remain."""
    from pipes.ascend.kernels.pingpong import PingPongProblem, pingpong_gemm, sim_tiles

    rules = EventIdRules(framework_preset=False)
    sim = Simulator(rules)
    problem = PingPongProblem.random(1)
    tiles = sim_tiles(sim, PingPongProblem(problem.q, problem.k, np.zeros_like(problem.expected)))
    pingpong_gemm(sim.cube(), tiles, 0, EventIdAllocator(rules))
    return sim
