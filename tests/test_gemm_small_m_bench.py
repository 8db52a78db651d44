"""benchmarks/studies/gemm_small_m.py without a GPU: its candidates are the rule's (its command line:
tests/test_benchmark_cli.py)."""

from __future__ import annotations


def test_every_pick_of_the_rules_is_a_candidate():
    import gemm_small_m
    from gemm_modes.autotable import SMALL_M, SMALL_M_TILES, small_m, split_k, table_decision, whole_tiles
    from hopper_gemm.config import Problem

    for shape in gemm_small_m.SHAPES:  # the rule's ping-pong tile, or it steps aside (split or cooperative)
        assert shape[0] <= SMALL_M
        picked = small_m(shape)
        if picked is None or picked.stream_k:
            assert shape == (512, 8192, 8192)  # the cooperative 128×256 tile streams no more
        else:
            assert gemm_small_m.name_of(picked) in gemm_small_m.CANDIDATES
    assert gemm_small_m.OLD in gemm_small_m.CANDIDATES and len(gemm_small_m.CANDIDATES) == 2 * (len(SMALL_M_TILES) + 1)

    def pick(problem, shape):  # the rules this study measures: before clusters_of_four widens a cluster
        return table_decision(problem, shape).config

    for shape in gemm_small_m.SMALL_N_SHAPES:  # auto's pick, turned rule or cooperative, is a candidate
        assert shape[0] > SMALL_M >= shape[1]
        assert gemm_small_m.name_of(pick(Problem("bf16"), shape)) in gemm_small_m.N_CANDIDATES
    for shape in gemm_small_m.MID_SHAPES:
        assert min(shape[:2]) > SMALL_M
        assert gemm_small_m.name_of(pick(Problem("bf16"), shape)) in gemm_small_m.candidates_for(shape)
    # split-K's shapes: its pick is a candidate, beside the whole-tile pick; one shape sits below the ratio
    below = [shape for shape in gemm_small_m.SPLIT_K_SHAPES if split_k(shape) is None]
    assert below == [(2048, 512, 4096)]
    for shape in gemm_small_m.SPLIT_K_SHAPES:
        candidates = gemm_small_m.candidates_for(shape)
        assert candidates[gemm_small_m.WHOLE] == whole_tiles(Problem("bf16"), shape).with_(staging_in_ring=False)
        if shape not in below:
            assert gemm_small_m.name_of(pick(Problem("bf16"), shape)) in candidates
