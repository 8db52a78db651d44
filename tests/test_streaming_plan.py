"""The streaming kernels' plans (examples/streaming/plan.py): geometry, budgets, errors. Pure Python."""

import pytest
from streaming.plan import (
    SMEM_PER_CTA,
    SMEM_PER_SM,
    SMEM_RESERVED_PER_CTA,
    Op,
    Store,
    StreamConfig,
    make_plan,
    max_n,
    with_stages,
)


@pytest.mark.parametrize("n", [1024, 4096, 8192, 32768])
def test_bandwidth_shapes_keep_a_deep_ring_per_sm(n):
    """Little's law: ~2.65 TB/s × ~1 µs / 132 SMs ≈ 20 KB must be in flight per SM; plan ≥ 3× that."""
    plan = make_plan(Op.RMSNORM, "bf16", n)
    assert plan.bytes_in_flight * plan.ctas_per_sm >= 64 * 1024
    assert plan.ctas_per_sm * (plan.smem_bytes + SMEM_RESERVED_PER_CTA) <= SMEM_PER_SM
    assert plan.smem_bytes <= SMEM_PER_CTA
    # One TMA box per tile: the box never exceeds 256 elements in any dimension.
    assert plan.box_inner <= 256 and plan.box_groups <= 256 and plan.rows <= 256
    assert plan.chunk % (plan.vec * plan.threads_per_row) == 0


def test_rows_longer_than_a_stage_are_held_in_a_deeper_ring():
    plan = make_plan(Op.RMSNORM, "bf16", 32768)
    assert (plan.rows, plan.chunk, plan.chunks) == (1, 8192, 4)
    assert plan.stages == plan.chunks + 4  # a whole row held, the next one loading
    assert plan.ctas_per_sm == 1
    # axpby never holds a tile: the default ring stays at 4 stages whatever the row length.
    assert make_plan(Op.AXPBY, "bf16", 32768).stages == 4


@pytest.mark.parametrize(
    ("n", "rows", "warps_per_row", "rows_per_warp"),
    [(256, 32, 1, 4), (1024, 8, 1, 1), (2048, 4, 2, 1), (4096, 2, 4, 1), (8192, 1, 8, 1)],
)
def test_threads_of_a_row(n, rows, warps_per_row, rows_per_warp):
    plan = make_plan(Op.RMSNORM, "bf16", n)
    assert (plan.rows, plan.warps_per_row, plan.rows_per_warp) == (rows, warps_per_row, rows_per_warp)
    assert plan.rows * plan.chunk * 2 == 16384


def test_n_without_a_wide_power_of_two_factor_pads_the_tile():
    plan = make_plan(Op.RMSNORM, "fp16", 1000)  # 1000 = 8 × 125: boxes of 8 columns
    assert plan.box_inner == 8 and plan.chunk == 1024 and plan.box_groups == 128
    assert plan.vectors * plan.vec * plan.threads_per_row == plan.chunk


def test_weight_stays_in_registers_up_to_32_of_them():
    assert make_plan(Op.RMSNORM, "bf16", 16384).weight_registers == 32
    assert make_plan(Op.RMSNORM, "bf16", 16384).weight_resident
    assert make_plan(Op.RMSNORM, "bf16", 8192).weight_registers == 16
    assert not make_plan(Op.RMSNORM, "bf16", 32768).weight_resident  # streamed from L2, a chunk ahead
    assert not make_plan(Op.RMSNORM, "fp32", 16384).weight_resident


def test_largest_n():
    assert max_n(Op.RMSNORM, "bf16") == 65536
    assert max_n(Op.RMSNORM, "fp16") == 65536
    assert max_n(Op.RMSNORM, "fp32") == 32768


def test_register_limit_counts_whole_warpgroups():
    plan = make_plan(Op.RMSNORM, "bf16", 8192)  # 288 threads count as 384; 2 CTAs per SM
    assert plan.block_threads == 288 and plan.ctas_per_sm == 2
    assert plan.register_limit == 65536 // (384 * 2) // 8 * 8 == 80
    assert make_plan(Op.RMSNORM, "bf16", 32768).register_limit == 168


def test_grid_is_persistent_and_never_idle():
    plan = make_plan(Op.RMSNORM, "bf16", 8192)
    assert plan.grid(1, 132) == 1
    assert plan.grid(64, 132) == 64
    assert plan.grid(1 << 20, 132) == 264
    axpby = make_plan(Op.AXPBY, "bf16", 8192)  # two chunks per row: twice the work items
    assert axpby.grid(1, 132) == 2


def test_stages_sweep_changes_only_the_depth():
    plan = make_plan(Op.RMSNORM, "bf16", 8192)
    deeper = with_stages(plan, 6)
    assert deeper.stages == 6 and deeper.chunk == plan.chunk and deeper.rows == plan.rows


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rmsnorm", "fp64", 8192), "plan.dtype = 'fp64' is invalid"),
        (("layernorm", "bf16", 8192), "plan.op = 'layernorm' is invalid"),
        (("rmsnorm", "bf16", 128), "allowed an int >= 256"),
        (("rmsnorm", "bf16", 1001), "a multiple of 8 for bf16"),
        (("rmsnorm", "fp32", 258), "a multiple of 4 for fp32"),
        (("rmsnorm", "bf16", 1 << 17), "at most 65536 for bf16"),
        (("rmsnorm", "bf16", 98304), "at most 65536 for bf16"),
        (("rmsnorm", "fp32", 65536), "at most 32768 for fp32"),
    ],
)
def test_bad_shapes_are_value_errors(args, message):
    with pytest.raises(ValueError, match=message):
        make_plan(*args)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (dict(stages=0), r"StreamConfig.stages = 0 is invalid: allowed an int in \[1, 32\]"),
        (dict(stage_bytes=3000), "a power of two"),
        (dict(consumer_warps=6), "whole warpgroups"),
        (dict(store="smem"), "StreamConfig.store = 'smem' is invalid"),
        (dict(ctas_per_sm=5), r"allowed an int in \[1, 4\]"),
    ],
)
def test_bad_configs_are_value_errors(config, message):
    with pytest.raises(ValueError, match=message):
        StreamConfig(**config)


def test_configs_that_do_not_fit_name_the_limit():
    with pytest.raises(ValueError, match="StreamConfig.stages = 3 is invalid: allowed >= 4 for N=32768"):
        make_plan(Op.RMSNORM, "bf16", 32768, StreamConfig(stages=3))
    with pytest.raises(ValueError, match="StreamConfig.stages = 20 is invalid: allowed at most 12"):
        make_plan(Op.RMSNORM, "bf16", 8192, StreamConfig(stages=20))
    with pytest.raises(ValueError, match="StreamConfig.ctas_per_sm = 2 is invalid: allowed at most 1"):
        make_plan(Op.RMSNORM, "bf16", 8192, StreamConfig(stages=8, ctas_per_sm=2))


def test_st_global_store_drops_the_staging_buffers():
    tma = make_plan(Op.RMSNORM, "bf16", 8192)
    plain = make_plan(Op.RMSNORM, "bf16", 8192, StreamConfig(store=Store.ST_GLOBAL))
    assert plain.store_stages == 0 and plain.smem_bytes == tma.smem_bytes - 2 * tma.tile_bytes
    assert plain.key() != tma.key()
