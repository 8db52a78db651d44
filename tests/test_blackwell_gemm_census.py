"""The pipes port of NVIDIA's Blackwell persistent dense GEMM synchronizes exactly like the stock kernel.

Both kernels (examples/blackwell_gemm.py and the stock CuTe DSL example kept verbatim in tests/reference/)
are compiled for sm_100a on the CPU, in a single-CTA and in a 2-CTA (``cta_group::2``, cluster 2×1)
configuration, and their synchronization instructions are counted by kind (tests/sync_census.py): mbarrier
ops, ``tcgen05.commit`` forms, TMEM allocation, fences, ``elect.sync``, CTA and cluster barriers, bulk
groups. Loop by loop the censuses are equal, apart from two documented differences in the epilogue's tile
loop:

* ``bar.warp.sync`` +1: pipes' elected release (``ArrivalUnit.ELECTED_PER_WARP``) synchronizes the warp
  before its one lane arrives, so every lane's accumulator reads are ordered before the arrival that hands
  the TMEM stage back to the MMA warp;
* with ``cta_group::2``, the follower's release on the leader's barrier is ``.release.cluster`` where the
  stock kernel's is the default ``.release.cta`` (pipes/cute/sm100/release.py says why): the same
  instruction, another scope.

Outside the loops the port initializes every barrier from one elected thread (``init_pipelines``) where the
stock kernel elects once per barrier array: ``elect.sync`` −3.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from sync_census import census, difference, loop_censuses

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

STOCK_PATH = Path(__file__).parent / "reference" / "cutlass_dense_gemm_persistent.py"
MNKL = (1024, 1024, 512, 1)
CONFIGS = {"cta1": ((128, 128), (1, 1), 1), "cta2_cluster2x1": ((256, 128), (2, 1), 2)}

ADDED = "bar.warp.sync"
SCOPED = {"mbarrier.arrive.release.cluster (remote)": "mbarrier.arrive (remote)"}  # pipes' form: the stock form


def documented_total(config: str) -> dict[str, int]:
    """What the port adds, drops or writes in another form, kernel-wide; nothing else may differ."""
    total = {ADDED: 1, "elect.sync": -3}
    if CONFIGS[config][2] == 2:
        total.update({"mbarrier.arrive (remote)": -1, "mbarrier.arrive.release.cluster (remote)": 1})
    return dict(sorted(total.items()))


def _text(compiled: object) -> str:
    ptx = compiled.artifacts.PTX
    if not ptx.lstrip().startswith("//") and os.path.isfile(ptx.strip()):
        return Path(ptx.strip()).read_text()
    return ptx


def _fake_operands() -> tuple:
    from cutlass.cute.runtime import make_fake_compact_tensor

    m, n, k, batch = MNKL
    return tuple(
        make_fake_compact_tensor(cutlass.Float16, shape, stride_order=(1, 0, 2), assumed_align=16)
        for shape in ((m, k, batch), (n, k, batch), (m, n, batch))
    )


def compile_stock(tiler: tuple[int, int], cluster: tuple[int, int], cta_group: int) -> str:
    from cutlass.cute.runtime import make_fake_stream

    spec = importlib.util.spec_from_file_location("cutlass_dense_gemm_persistent", STOCK_PATH)
    stock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stock)
    gemm = stock.PersistentDenseGemmKernel(cutlass.Float32, cta_group == 2, tiler, cluster, True)
    a, b, c = _fake_operands()
    options = "--gpu-arch sm_100a --keep-ptx"
    return _text(cute.compile(gemm, a, b, c, 148, make_fake_stream(), lambda x: x, options=options))


def compile_port(tiler: tuple[int, int], cluster: tuple[int, int], cta_group: int) -> str:
    import blackwell_gemm

    return _text(blackwell_gemm.compile_gemm(blackwell_gemm.GemmConfig(tiler, cluster, cta_group), MNKL))


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def kernels(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    config = CONFIGS[request.param]
    return compile_stock(*config), compile_port(*config), request.param


def test_both_compile_for_sm100a_with_the_same_tcgen05_work(kernels: tuple[str, str, str]) -> None:
    stock, port, _ = kernels
    for ptx in (stock, port):
        assert re.search(r"^\.target sm_100a", ptx, re.M)
    # The same MMAs and TMEM loads: the census compares like with like.
    for op in (r"tcgen05\.mma\.cta_group::\d", r"tcgen05\.ld\.sync"):
        assert len(re.findall(op, stock)) == len(re.findall(op, port)) > 0


def test_kernel_census_equals_the_stock_kernels_but_for_the_documented_lines(kernels: tuple[str, str, str]) -> None:
    stock, port, config = kernels
    assert len(census(stock)) >= 12  # the stock kernel's census is not empty: the comparison means something
    assert difference(census(port), census(stock)) == documented_total(config)


def as_stock(loop: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """A port loop's census with the documented differences undone."""
    counts: Counter = Counter()
    for kind, n in loop:
        if kind != ADDED:
            counts[SCOPED.get(kind, kind)] += n
    return tuple(sorted(counts.items()))


def test_every_loop_synchronizes_as_in_the_stock_kernel(kernels: tuple[str, str, str]) -> None:
    stock, port, config = kernels
    stock_loops = loop_censuses(stock)
    port_loops = loop_censuses(port)
    added = [dict(loop)[ADDED] for loop in port_loops if ADDED in dict(loop)]
    assert added == [1], "one bar.warp.sync in one loop: the epilogue's elected release"
    scoped = [loop for loop in port_loops if any(kind in SCOPED for kind, _ in loop)]
    assert len(scoped) == (1 if CONFIGS[config][2] == 2 else 0), "the pair's remote release, in the epilogue loop"
    assert sorted(as_stock(loop) for loop in port_loops) == stock_loops
    # Every role's loop is there: TMA (expect_tx), MMA (tcgen05.commit), epilogue (bulk groups).
    kinds = Counter(k for loop in stock_loops for k, _ in loop)
    assert kinds["mbarrier.arrive.expect_tx"] and kinds["cp.async.bulk.commit_group"]
    assert any(k.startswith("tcgen05.commit") for k in kinds)


def test_the_census_sees_a_lost_commit(kernels: tuple[str, str, str]) -> None:
    """A port that dropped one tcgen05.commit (or one fence) would fail the comparison."""
    stock, port, config = kernels
    for pattern in (r"\n\s*tcgen05\.commit[^\n]*", r"\n\s*fence\.proxy\.async\.shared::cta;"):
        broken = re.sub(pattern, "", port, count=1)
        assert broken != port
        assert difference(census(broken), census(stock)) != documented_total(config)
