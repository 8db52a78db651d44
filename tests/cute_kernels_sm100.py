"""Blackwell (sm_100a) test kernels for pipes.cute.sm100, compiled on the CPU (no Blackwell GPU is needed).

:func:`build_protocol_kernel` wires the three sm100 kinds the way a persistent Blackwell GEMM does, with
the data movement left out (no TMA copy, no MMA: the synchronization alone is what the PTX checks look
at): warp 0 = TMA producer of ``ab``, warp 1 = MMA warp (consumer of ``ab``, producer of ``acc``),
warps 2-5 = epilogue (consumer of ``acc``), warp 6 = CLC scheduler (producer of ``sched``, CTA 0), and
every role reads the CLC responses. :func:`compile_sm100` compiles any launcher for sm_100a.
"""

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402

from pipes import ArrivalUnit, Completion, PipelineSpec, Role  # noqa: E402
from pipes.cute import RoleLayout, Warps, init_pipelines, storage_words  # noqa: E402
from pipes.cute.sm100 import (  # noqa: E402
    CLC_RESPONSE_BYTES,
    ClcFetchPipeline,
    TmaUmmaPipeline,
    UmmaAccPipeline,
    UmmaCluster,
)

SM100_OPTIONS = "--gpu-arch sm_100a --keep-ptx"
EPI_WARPS = 4
STAGE_BYTES = 32768


def compile_sm100(launcher: Any, *args: Any) -> str:
    """Compile ``launcher(*args, stream)`` for sm_100a with a fake stream; returns the PTX."""
    from cutlass.cute.runtime import make_fake_stream

    ptx = cute.compile(launcher, *args, make_fake_stream(), options=SM100_OPTIONS).artifacts.PTX
    # Some DSL builds hand back the path of the kept .ptx file instead of its text.
    if isinstance(ptx, str) and not ptx.lstrip().startswith("//") and os.path.isfile(ptx.strip()):
        with open(ptx.strip()) as f:
            return f.read()
    return ptx


def fake_i32(*shape: int) -> Any:
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(Int32, shape, stride_order=tuple(range(len(shape) - 1, -1, -1)), assumed_align=16)


def protocol_specs(ab_stages: int = 4, acc_stages: int = 2, clc_stages: int = 2) -> dict[str, PipelineSpec]:
    elected = ArrivalUnit.ELECTED_PER_WARP
    return {
        "ab": PipelineSpec(
            "ab", ab_stages, Role("tma", elected), Role("mma", elected), Completion.TRANSACTION_BYTES, STAGE_BYTES
        ),
        "acc": PipelineSpec("acc", acc_stages, Role("mma", elected), Role("epi", elected, EPI_WARPS)),
        "sched": PipelineSpec(
            "sched",
            clc_stages,
            Role("clc", elected),
            (Role("tma", elected), Role("mma", elected), Role("epi", elected, EPI_WARPS), Role("clc_reader", elected)),
            Completion.TRANSACTION_BYTES,
            CLC_RESPONSE_BYTES,
        ),
    }


def build_protocol_kernel(
    cluster: UmmaCluster, *, mma_commits: bool = True, debug: Any = None
) -> tuple[Any, dict[str, Any]]:
    """The launcher ``launch(out, k_tiles, stream)`` and its declarations.

    | role         | warps | pipelines                                                     |
    |--------------|-------|---------------------------------------------------------------|
    | tma          | 0     | ``ab`` producer (k_tiles stages); ``sched`` consumer          |
    | mma          | 1     | ``ab`` consumer and ``acc`` producer (leader CTA); ``sched``  |
    | epi          | 2-5   | ``acc`` consumer (one tile); ``sched`` consumer               |
    | clc          | 6     | ``sched`` producer (CTA 0); ``sched`` consumer (clc_reader)   |

    ``mma_commits=False`` plants the defect "a missing tcgen05.commit": the MMA warp waits each stage and
    never releases it (the PTX checks must notice the missing commit). ``debug``: every declaration's debug
    mode (bounded waits that report and trap).
    """
    specs = protocol_specs()
    ab = TmaUmmaPipeline(specs["ab"], cluster=cluster, debug=debug)
    acc = UmmaAccPipeline(specs["acc"], cluster=cluster, debug=debug)
    sched = ClcFetchPipeline(specs["sched"], cluster_size=cluster.size, debug=debug)
    layout = RoleLayout(
        32 * (3 + EPI_WARPS),
        {
            "tma": Warps(0),
            "mma": Warps(1),
            "epi": Warps(2, EPI_WARPS),
            "clc": Warps(2 + EPI_WARPS),
            "clc_reader": Warps(2 + EPI_WARPS),
        },
        cluster_size=cluster.size,
    )
    words = storage_words(ab, acc, sched)

    @cute.struct
    class Storage:
        pipes: cute.struct.Align[cute.struct.MemRange[Int64, words], 16]

    def read_schedule(role: str, seen: Int32) -> Int32:
        c = sched.consumer(role)
        slot = c.wait()
        _, _, _, valid = c.response(slot)
        c.release()
        return seen + valid

    @cute.kernel
    def kernel(out: cute.Tensor, k_tiles: Int32):
        smem = cutlass.memory.SmemAllocator()
        st = smem.allocate(Storage)
        init_pipelines((ab, acc, sched), st.pipes.data_ptr(), layout=layout)
        bid, _, _ = cute.arch.block_idx()
        seen = Int32(0)
        if layout.is_role("tma"):
            p = ab.producer()
            for _ in cutlass.range(k_tiles, unroll=1):
                p.acquire()
                p.commit()
            p.tail()
            seen = read_schedule("tma", seen)
        if layout.is_role("mma"):
            if cluster.is_leader():
                c = ab.consumer()
                q = acc.producer()
                q.acquire()
                for _ in cutlass.range(k_tiles, unroll=1):
                    c.wait()
                    if cutlass.const_expr(mma_commits):
                        c.release()
                q.commit()
                q.tail()
            seen = read_schedule("mma", seen)
        if layout.is_role("epi"):
            c = acc.consumer()
            c.wait()
            c.release()
            seen = read_schedule("epi", seen)
        if layout.is_role("clc"):
            if cluster.rank() == 0:
                p = sched.producer()
                p.acquire()
                p.commit()
                p.tail()
            seen = read_schedule("clc_reader", seen)
        out[bid, cute.arch.thread_idx()[0]] = seen

    @cute.jit
    def launch(out: cute.Tensor, k_tiles: Int32, stream: Any):
        kernel(out, k_tiles).launch(
            grid=(out.shape[0], 1, 1), block=(layout.block_threads, 1, 1), cluster=(cluster.size, 1, 1), stream=stream
        )

    return launch, {"ab": ab, "acc": acc, "sched": sched, "layout": layout}


def compile_protocol(cluster: UmmaCluster, **kw: Any) -> str:
    launch, _ = build_protocol_kernel(cluster, **kw)
    return compile_sm100(launch, fake_i32(2 * cluster.size, 32 * (3 + EPI_WARPS)), Int32(8))
