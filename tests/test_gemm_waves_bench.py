"""benchmarks/studies/gemm_waves.py without a GPU: every pick of its shapes is a contender (its command line:
tests/test_benchmark_cli.py)."""

from __future__ import annotations


def test_every_pick_of_the_two_rules_is_a_contender():
    import gemm_waves
    from gemm_modes.autotable import SHORT_K, fill, split_k, stream_k_pays

    picks = set()
    for m, n, k, bias in gemm_waves.SHAPES:
        mnk = (m, n, k)
        assert split_k(mnk) is None and fill(mnk, bias=bias) is None and min(m, n) > 512, mnk  # past the fills
        picks.add(name := gemm_waves.name_of_pick(mnk, bias, 132))
        assert name in gemm_waves.candidates_for(mnk, bias), (mnk, name)
        assert (name == gemm_waves.COOP_SK) == stream_k_pays(mnk)
        assert (gemm_waves.COOP_SK in gemm_waves.candidates_for(mnk, bias)) == (k > SHORT_K)
        assert not (bias and gemm_waves.BIAS_SPILLS & set(gemm_waves.candidates_for(mnk, bias)))
    # the table holds each kind of pick: both tiles, the 1×2 cluster, stream-K, the aligned split and the
    # cooperative tiles (128×208 at 2560²×8192 and 3072×1024×4096, 192×192 at 1536×3072×8192), the
    # ping-pong widths between 128 and 192 (128×160 at 2048×5120×2048, 128×144 at 1536×3072×2048) and a
    # swapped 256-row tile (256×120 at 1536×2560×8192)
    expected = {"coop", "coop-sk", "coop-aligned", "coop-tail", "pp192c21", "pp128c21", "pp128c12", "coop208"}
    assert picks == expected | {"coop192x192n", "pp128x160c21", "pp128x144c21", "swap256x120"}
    # the aligned split where it splits: under a wave and after whole waves; not where the waves are whole
    candidates = gemm_waves.candidates_for
    assert "coop-aligned" in candidates((3072, 1024, 8192), False) and "coop-aligned" in candidates((4096,) * 3, False)
    assert "coop-aligned" not in candidates((256 * 33, 256 * 8, 4096), False)
    assert gemm_waves.candidates_for((1536, 3072, 8192), False)["coop-tail"].split_k == 8
    assert all(c.pdl for c in gemm_waves.candidates_for((4096, 4096, 4096), False).values())
    assert gemm_waves.waves((4096, 4096, 4096), 132) == "3 + 58/66"
