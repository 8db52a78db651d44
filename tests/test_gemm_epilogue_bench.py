"""benchmarks/studies/gemm_epilogue.py without a GPU: every variant compiles for sm_90a, keeps all of the full
kernel's wgmmas (so none is timed as a kernel ptxas emptied), and takes away exactly what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gemm_modes.modes import tuned_config

ROOT = Path(__file__).resolve().parents[1]


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


def test_epilogue_variants_remove_only_what_they_name():
    pytest.importorskip("nvidia.cu13", reason="nvdisasm comes with the nvidia-cuda-nvdisasm wheel (dev extra)")
    import gemm_epilogue
    from gemm_modes.launch import compile_report
    from hopper_gemm.config import GemmConfig, Problem, Schedule

    config = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE)  # 8 subtiles of 128×32, 4 staging buffers
    reports = {}
    for name in gemm_epilogue.VARIANTS:
        with gemm_epilogue.variant(name):
            reports[name] = compile_report(config, Problem("bf16"))
    full = reports["full"]
    hgmma = full.sass().count("HGMMA")
    assert hgmma > 0
    for name, r in reports.items():
        assert r.spill_bytes == 0 and not r.wgmma_serialized, name
        assert r.sass().count("HGMMA") == hgmma, f"{name}: ptxas deleted wgmmas, the variant would time nothing"

    def stores(r):
        return _count(r"cp\.async\.bulk\.tensor\.2d\.global\.shared", r.ptx)

    def ring_waits(r):
        return _count(r"cp\.async\.bulk\.wait_group\.read\s+3;", r.ptx)

    def syncs(r):
        return _count(r"\bbar\.sync\b", r.ptx)

    assert (stores(full), ring_waits(full), syncs(full)) == (8, 8, 16)  # per subtile: 1 store, 1 wait, 2 syncs
    one = reports["one-subtile"]
    assert (stores(one), ring_waits(one), syncs(one)) == (1, 1, 2)
    no_wait = reports["no-read-wait"]
    assert (stores(no_wait), ring_waits(no_wait), syncs(no_wait)) == (8, 0, 16)
    assert _count(r"cp\.async\.bulk\.wait_group\.read\s+0;", no_wait.ptx) == 1  # the tail still waits
    no_sync = reports["no-barrier"]
    assert (stores(no_sync), ring_waits(no_sync), syncs(no_sync)) == (8, 8, 0)

    # Leaving the block undoes the variant: the next build is the full kernel again.
    again = compile_report(config, Problem("bf16"))
    assert (stores(again), ring_waits(again), syncs(again)) == (8, 8, 16)


def test_unknown_variant_is_refused():
    import gemm_epilogue

    refused = pytest.raises(ValueError, match=r"variant = 'fast' is invalid: allowed \['full', 'one-subtile'")
    with refused, gemm_epilogue.variant("fast"):
        pass


def test_the_bias_inline_variant_reads_the_bias_after_the_wait():
    """``--bias``'s ``bias-inline``: the same kernel with the bias reads after the tile's last wgmma wait
    (no loads between the last HGMMA and that wait); leaving the block restores the early loads."""
    pytest.importorskip("nvidia.cu13", reason="nvdisasm comes with the nvidia-cuda-nvdisasm wheel (dev extra)")
    import gemm_epilogue
    from gemm_modes.launch import compile_report
    from hopper_gemm.config import Problem, Schedule

    config = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, deferred_chunks=8)

    def loads_under_last_k_tile():
        sass = compile_report(config, Problem("bf16", bias=True)).sass()
        wait_all = sass.index("DEPBAR.LE gsb0, 0x0")
        return _count(r"\bLDG\b", sass[sass.rindex("HGMMA", 0, wait_all) : wait_all])

    with gemm_epilogue.variant("bias-inline"):
        assert loads_under_last_k_tile() == 0
    assert loads_under_last_k_tile() == config.tile_n // 8  # a word per column pair
    with pytest.raises(ValueError, match="variant = 'bias-outline' is invalid"), gemm_epilogue.variant("bias-outline"):
        pass
