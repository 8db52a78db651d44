"""The GEMM's fused activation and its rotated reads of A, on the CPU: what the problem accepts, what the
kernel refuses with a clear error, and what the sm_90a PTX holds (GELU's ``tanh.approx``, the rotation's
remainder in the load warp only where asked)."""

from __future__ import annotations

import re

import pytest
from gemm_modes.modes import tuned_config
from hopper_gemm.config import GemmConfig, Problem, Schedule

COOP = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)


def _ptx(problem: Problem, config=COOP) -> str:
    from compiled_gemm import gemm_report

    return gemm_report(config, problem).ptx


def test_the_problem_names_what_it_accepts():
    assert Problem("bf16", activation="gelu_tanh").activation == "gelu_tanh"
    allowed = r"allowed one of \[None, 'gelu_tanh'\]"
    with pytest.raises(ValueError, match=r"Problem.activation = 'relu' is invalid: " + allowed):
        Problem("bf16", activation="relu")
    with pytest.raises(ValueError, match=r"Problem.a_rows_rotated_by = -128 is invalid: allowed an int ≥ 0"):
        Problem("bf16", a_rows_rotated_by=-128)


def test_the_kernel_refuses_a_rotation_it_cannot_load():
    from gemm_modes.launch import hooks_for
    from hopper_gemm.kernel import GemmKernel

    with pytest.raises(ValueError, match="a_rows_rotated_by = 64 is not a multiple of tile_m = 128"):
        GemmKernel(GemmConfig(), Problem("bf16", a_rows_rotated_by=64))
    split = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE).with_(split_k=2)
    with pytest.raises(ValueError, match="a_rows_rotated_by runs without a gate, stream-K, split-K"):
        GemmKernel(split.config, Problem("bf16", a_rows_rotated_by=256), modes=hooks_for(split))


def test_a_term_before_other_ranks_partials_are_added_is_refused():
    from hopper_gemm.config import check_terms_before_partials

    check_terms_before_partials(Problem("bf16", activation="gelu_tanh"), adds_partials=False)
    check_terms_before_partials(Problem("bf16"), adds_partials=True)
    with pytest.raises(ValueError, match=r"activation \('gelu_tanh'\) with a comm role that adds other ranks"):
        check_terms_before_partials(Problem("bf16", activation="gelu_tanh"), adds_partials=True)


def test_gelu_is_one_tanh_approx_per_accumulator_value_in_the_epilogue():
    plain = _ptx(Problem("bf16"))
    gelu = _ptx(Problem("bf16", activation="gelu_tanh"))
    assert "tanh.approx.f32" not in plain
    # 128×256 fp32 accumulators over the two math warpgroups' 256 threads: 128 values per thread
    assert gelu.count("tanh.approx.f32") >= 128


def test_gelu_composes_with_the_scale_and_the_bias():
    ptx = _ptx(Problem("bf16", bias=True, scaled=True, activation="gelu_tanh"))
    assert ptx.count("tanh.approx.f32") >= 128 and "ld.global" in ptx


def test_the_rotation_is_a_remainder_in_the_load_warp_only_where_asked():
    def remainders(ptx: str) -> int:
        return len(re.findall(r"\brem\.[su]32\b", ptx))

    assert remainders(_ptx(Problem("bf16", a_rows_rotated_by=1024))) == remainders(_ptx(Problem("bf16"))) + 1


def test_the_mlp_s_two_kernels_compile_without_spills():
    """The all-gather GEMM with GELU in its deferred epilogue (the MLP's first half) and the GEMM +
    reduce-scatter reading its A rotated (the second): both fit their registers."""
    from gemm_modes.launch import hooks_for
    from kernel_tools.report import compile_report
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig, Engine, Transport
    from tile_comm.peer import copy_engine_config

    from pipes.chunks import ChunkPlan
    from pipes.cute.comm import GateSpec

    up = tuned_config(128, 256, 2, 1, "cooperative", deferred_chunks=8)
    gate = GateSpec(ChunkPlan(rows=8192, world=4, chunk_rows=1024), tile_m=128)
    first = compile_report(up.config, Problem("bf16", activation="gelu_tanh"), hooks_for(up), gate)
    assert first.spill_bytes == 0 and first.ptx.count("tanh.approx.f32") >= 128
    comm = CommConfig(Transport.PEER, ship_blocks=4, engine=Engine.COPY, adds_received=True, step_rows=4)
    second = fused_resources(copy_engine_config(8192), Problem("bf16", a_rows_rotated_by=2048), comm)
    assert second.spill_bytes == 0


def test_gemm_names_an_unknown_activation_before_touching_a_tensor():
    from hopper_gemm.api import validate

    with pytest.raises(ValueError, match=r"activation = 'gelu' is invalid: allowed one of \[None, 'gelu_tanh'\]"):
        validate(None, None, activation="gelu")
