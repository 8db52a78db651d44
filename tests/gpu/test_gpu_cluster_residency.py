"""GPU test: ``hopper_gemm.launch.resident_clusters`` is how many clusters the GPU really holds at once.

The persistent GEMM launches that many clusters and, with the staging in the ring, gives each CTA one
tile on the promise that all of them run together; a count one too high turns the launch into two waves
(twice the time) without any error. The probe: every CTA (one per SM: it asks for nearly all the shared
memory) adds 1 to a global counter and waits, up to a bound, until the counter holds every CTA of the
launch. With ``resident_clusters(size)`` clusters every CTA sees the full count; with one cluster more,
the first wave's CTAs give up (the last cluster cannot start before one of them exits), so the count is
exact, not merely safe.

The count must not depend on when it is first asked: a fresh process that asks before anything else
touched CUDA gets the same answer as one with a live context (without a context the driver said
33 clusters of 4 on an H100 that holds 30).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import cutlass
import cutlass.cute as cute
import pytest
from cutlass import Int32, Int64, Uint32

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]

#: How long a CTA waits for the others: far above a launch's spread, far below the test's patience.
WAIT_NS = 200_000_000
#: Dynamic shared memory per CTA: more than half an H100 SM's 227 KiB, so no two CTAs share an SM.
SMEM_BYTES = 200 * 1024


def build_probe(cluster: tuple[int, int]):
    """The probe's host function for clusters of shape ``cluster``: ``launch(counter, seen, total, clusters,
    stream)``."""

    @cute.kernel
    def wait_for_all(counter: cute.Tensor, seen: cute.Tensor, total: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, bz = cute.arch.block_idx()
        gx, gy, _ = cute.arch.grid_dim()
        if tidx == 0:
            ptr = counter.iterator
            cute.arch.atomic_add(ptr, Uint32(1), sem="relaxed", scope="gpu")
            start = cute.arch.globaltimer()
            got = Int32(cute.arch.load(ptr, Uint32, sem="relaxed", scope="gpu"))
            expired = cutlass.Boolean(False)
            while got < total and not expired:
                got = Int32(cute.arch.load(ptr, Uint32, sem="relaxed", scope="gpu"))
                expired = cute.arch.globaltimer() - start > Int64(WAIT_NS)
            everyone = Int32(0)
            if got >= total:
                everyone = Int32(1)
            seen[bx + gx * (by + gy * bz)] = everyone

    @cute.jit
    def launch(counter: cute.Tensor, seen: cute.Tensor, total: Int32, clusters: Int32, stream: Any):
        wait_for_all(counter, seen, total).launch(
            grid=(cluster[0], cluster[1], clusters),
            block=(32, 1, 1),
            cluster=(cluster[0], cluster[1], 1),
            smem=SMEM_BYTES,
            stream=stream,
        )

    return launch


def _probe(cluster: tuple[int, int], clusters: int) -> list[int]:
    """Launch ``clusters`` clusters of ``cluster`` CTAs; per CTA 1 if it saw every CTA arrive, else 0."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    launch = build_probe(cluster)
    ctas = cluster[0] * cluster[1] * clusters
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    seen = torch.full((ctas,), -1, dtype=torch.int32, device="cuda")
    launch(from_dlpack(counter), from_dlpack(seen), Int32(ctas), Int32(clusters), current_stream())
    torch.cuda.synchronize()
    return seen.tolist()


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (2, 2)], ids=lambda c: f"{c[0]}x{c[1]}")
def test_resident_clusters_all_run_at_once_and_one_more_does_not(cluster):
    torch = pytest.importorskip("torch")
    from hopper_gemm.launch import resident_clusters

    size = cluster[0] * cluster[1]
    resident = resident_clusters(size)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert 1 <= resident <= sms // size
    together = _probe(cluster, resident)
    assert together == [1] * len(together), (
        f"{resident} clusters of {size} (resident_clusters) did not all run at once: "
        f"{together.count(0)} of {len(together)} CTAs waited {WAIT_NS / 1e6:.0f} ms for the rest"
    )
    one_more = _probe(cluster, resident + 1)
    assert -1 not in one_more, "a CTA of the probe never ran"
    assert 0 in one_more, (
        f"{resident + 1} clusters of {size} all ran at once: resident_clusters({size}) = {resident} undercounts"
    )


def test_resident_clusters_answer_does_not_depend_on_a_live_context():
    pytest.importorskip("torch")
    from hopper_gemm.launch import resident_clusters

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from hopper_gemm.launch import resident_clusters;"
        "print(resident_clusters(4), resident_clusters(2))"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "examples")], capture_output=True, text=True, timeout=300, check=True
    )
    assert fresh.stdout.split() == [str(resident_clusters(4)), str(resident_clusters(2))], fresh.stderr[-2000:]
