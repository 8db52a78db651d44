"""Ordered barrier (pipes.cute.ordered): compiled for sm_90a on the CPU, PTX facts asserted.

The defect it fixes: ``cutlass.pipeline.PipelineOrder`` keeps its cursor in a frozen dataclass, so a
dynamic ``cutlass.range`` loop does not carry it and every round waits on the parity of the first
round. Both are compiled here in the same kernel shape and their loop bodies compared.
"""

from __future__ import annotations

import re
import tempfile

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import pytest
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
from cutlass.memory import SmemAllocator

from pipes import ArrivalUnit, Role, SpecError
from pipes.cute.ordered import OrderedBarrier, OrderSpec

OPTIONS = f"--gpu-arch sm_90a --keep-ptx --dump-dir={tempfile.mkdtemp(prefix='pipes-ptx-')}"
# Both wait forms: the stock one (inline asm, suspend-time hint) and ours (NVVM try_wait, no hint).
WAIT_RE = re.compile(
    r"mbarrier\.try_wait\.parity(?:\.acquire\.cta)?\.shared(?:::cta)?\.b64\s+[%\w]+,\s*\[(%r\d+)[^\]]*\],\s*(%r\d+)"
)


def compile_ptx(build) -> str:
    """PTX of a one-CTA, 256-thread kernel ``build(out, n)`` run by two warpgroups."""

    @cute.kernel
    def kernel(out: cute.Tensor, n: cutlass.Int32):
        build(out, n)

    @cute.jit
    def launch(out: cute.Tensor, n: cutlass.Int32, stream):
        kernel(out, n).launch(grid=(1, 1, 1), block=(256, 1, 1), smem=1024, stream=stream)

    out = make_fake_compact_tensor(cutlass.Int32, (4096,))
    compiled = cute.compile(launch, out, cutlass.Int32(7), make_fake_stream(), options=OPTIONS)
    return compiled.artifacts.PTX


def loop_body(ptx: str) -> str:
    """The instructions of the (single, not unrolled) dynamic loop: label to back-branch."""
    match = re.search(r"^(\$L__\w+):\s*\n\s*\.pragma \"nounroll\";(.*?)^\s*@%p\d+ bra\s+\1;", ptx, re.M | re.S)
    assert match, "no nounroll loop in the PTX"
    return match.group(2)


def assigned_in(body: str, register: str) -> bool:
    """True when an instruction in ``body`` writes ``register`` (its first operand)."""
    return re.search(rf"^\s*[a-z][\w.:]*\s+{re.escape(register)}\s*,", body, re.M) is not None


def stock_kernel(depth: int):
    @cute.jit
    def build(out: cute.Tensor, n: cutlass.Int32):
        bars = SmemAllocator().allocate_array(cutlass.Int64, 2 * depth)
        group = cute.arch.make_warp_uniform(cute.arch.warp_idx() // 4)
        order = cpipe.PipelineOrder.create(
            depth=depth,
            length=2,
            group_id=group,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 128),
            barrier_storage=bars,
        )
        for i in cutlass.range(n, unroll=1):
            order.wait()
            out[i] = group
            order.arrive()

    return build


def pipes_kernel(spec: OrderSpec):
    @cute.jit
    def build(out: cute.Tensor, n: cutlass.Int32):
        bars = SmemAllocator().allocate_array(cutlass.Int64, spec.barriers)
        group = cute.arch.make_warp_uniform(cute.arch.warp_idx() // 4)
        order = OrderedBarrier.create(spec, bars, group)
        for i in cutlass.range(n, unroll=1):
            order.wait()
            out[i] = group
            order.arrive()

    return build


PINGPONG = OrderSpec("pingpong", groups=2, role=Role("math", ArrivalUnit.WARPGROUP))


def test_stock_pipeline_order_waits_on_a_loop_invariant_parity():
    body = loop_body(compile_ptx(stock_kernel(depth=1)))
    waits = WAIT_RE.findall(body)
    assert len(waits) == 1
    _, parity = waits[0]
    # The defect: nothing in the loop writes the parity register, so round 2 waits like round 1.
    assert not assigned_in(body, parity)


def test_ordered_barrier_flips_its_phase_inside_the_dynamic_loop():
    body = loop_body(compile_ptx(pipes_kernel(PINGPONG)))
    waits = set(WAIT_RE.findall(body))  # a first try and the retry loop: one barrier, one parity
    assert len(waits) == 1
    ((_, parity),) = waits
    assert assigned_in(body, parity), "the parity must be loop-carried"
    assert re.search(rf"xor\.b32\s+{re.escape(parity)},\s*{re.escape(parity)},\s*1;", body), "one flip per round"
    # Handing on the turn: one arrive per round, by every thread (WARPGROUP unit).
    assert body.count("mbarrier.arrive.shared.b64") == 1
    assert "elect.sync" not in body


def test_depth_two_walks_the_sections_and_flips_once_per_round():
    spec = OrderSpec("mma_epi", groups=2, role=Role("math", ArrivalUnit.WARPGROUP), depth=2)
    body = loop_body(compile_ptx(pipes_kernel(spec)))
    ((barrier, parity),) = set(WAIT_RE.findall(body))
    assert assigned_in(body, parity)
    # The section index is carried too: the waited barrier's address is computed in the loop.
    assert assigned_in(body, barrier)


@pytest.mark.parametrize(
    ("unit", "count", "arrivals", "elected"),
    [
        (ArrivalUnit.WARPGROUP, 1, 128, False),
        (ArrivalUnit.ELECTED_PER_WARP, 4, 4, True),
        (ArrivalUnit.WARP, 2, 64, False),
    ],
)
def test_arrival_count_comes_from_the_role(unit, count, arrivals, elected):
    spec = OrderSpec("order", groups=2, role=Role("math", unit, count))
    ptx = compile_ptx(pipes_kernel(spec))
    inits = re.findall(r"mov\.b32\s+(%r\d+),\s*(\d+);\s*\n\s*mbarrier\.init\.shared\.b64\s+\[%r\d+\],\s*\1;", ptx)
    assert inits and {int(v) for _, v in inits} == {arrivals}
    assert ptx.count("mbarrier.init.shared.b64") == spec.barriers
    assert ("elect.sync" in loop_body(ptx)) is elected


def test_spec_errors_name_the_field_and_range():
    role = Role("math", ArrivalUnit.WARPGROUP)
    with pytest.raises(SpecError, match=r"groups = 1 is invalid: allowed an int in \[2, 16\]"):
        OrderSpec("o", groups=1, role=role)
    with pytest.raises(SpecError, match=r"depth = 0 is invalid"):
        OrderSpec("o", groups=2, role=role, depth=0)
    with pytest.raises(SpecError, match=r"role.peers = 2 is invalid: allowed 1"):
        OrderSpec("o", groups=2, role=Role("math", ArrivalUnit.WARPGROUP, peers=2))
    spec = OrderSpec("o", groups=3, role=role, depth=2)
    assert (spec.barriers, spec.smem_bytes, spec.arrivals, spec.block_threads) == (6, 48, 128, 384)


def test_a_static_group_id_out_of_range_fails_at_trace_time():
    @cute.jit
    def build(out: cute.Tensor, n: cutlass.Int32):
        bars = SmemAllocator().allocate_array(cutlass.Int64, PINGPONG.barriers)
        OrderedBarrier.create(PINGPONG, bars, 2)

    with pytest.raises(Exception, match=r"group_id = 2 is invalid: allowed an int in \[0, 1\]"):
        compile_ptx(build)


def test_debug_mode_bounds_the_turn_wait_and_names_the_barrier():
    @cute.jit
    def build(out: cute.Tensor, n: cutlass.Int32):
        bars = SmemAllocator().allocate_array(cutlass.Int64, PINGPONG.barriers)
        group = cute.arch.make_warp_uniform(cute.arch.warp_idx() // 4)
        order = OrderedBarrier.create(PINGPONG, bars, group, debug=True)
        for i in cutlass.range(n, unroll=1):
            order.wait()
            out[i] = group
            order.arrive()

    ptx = compile_ptx(build)
    assert "trap;" in ptx and "%globaltimer" in ptx
    assert "pipeline=pingpong role=math op=turn" in ptx_strings(ptx)
    assert "trap;" not in compile_ptx(pipes_kernel(PINGPONG))


def test_the_turn_wait_retries_without_a_suspend_time_hint():
    body = loop_body(compile_ptx(pipes_kernel(PINGPONG)))
    assert "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64" in body
    assert "10000000" not in body, "cute.arch.mbarrier_wait's hint makes ptxas sleep (NANOSLEEP.SYNCS) on a miss"
    stock = loop_body(compile_ptx(stock_kernel(depth=1)))
    assert re.search(r"try_wait\.parity\.shared\.b64 P1, \[%r\d+\], %r\d+, 10000000;", stock)


def ptx_strings(ptx: str) -> str:
    """The PTX's global byte-array constants (printf formats) decoded to text."""
    text = []
    for body in re.findall(r"\.global \.align \d+ \.b8 \w+\[\d+\] = \{([^}]*)\}", ptx):
        text.append(bytes(int(b) for b in body.split(",")).decode("latin-1"))
    return "\n".join(text)
