"""examples/tp_mlp.py on the CPU: without the GPUs it asks for it says so and runs nothing (its halves compile and prove
their protocols in tests/test_tp_ag_gemm.py and tests/test_epilogue_comm.py; the block runs in --check)."""

from __future__ import annotations


def test_without_two_gpus_the_block_exits_with_a_clear_message(capsys, torch_without_gpu):
    import tp_mlp

    assert tp_mlp.main(["--tokens", "4096"]) == 2
    err = capsys.readouterr().err
    assert "the tensor-parallel MLP needs --world ≥ 2 GPUs (2 asked)" in err and "nothing run" in err
    assert tp_mlp.main(["--world", "4"]) == 2
    assert "(4 asked)" in capsys.readouterr().err
    assert tp_mlp.main(["--world", "1"]) == 2
    assert "(1 asked)" in capsys.readouterr().err


def test_the_block_is_parsed_with_the_model_s_shapes_by_default():
    import tp_mlp

    args = tp_mlp.parse([])
    assert (args.hidden, args.intermediate, args.tokens, args.world) == (8192, 28672, None, 2)
    assert tp_mlp.TOKENS == (4096, 8192, 16384)


def test_the_report_says_which_half_falls_short(capsys, monkeypatch):
    """Beside the block's table, each row's halves alone and torch's compute alone, from the same rounds."""
    import tp_mlp

    monkeypatch.delenv("OUT", raising=False)
    us = {
        "torch_sequential": 1631.1,
        "torch_async_tp": 1463.4,
        "ours": 1419.8,
        "ours_up": 681.0,
        "ours_down": 640.2,
        "torch_compute": 1255.0,
        "all_gather": 190.0,
        "reduce_scatter": 186.0,
    }
    row = {"tokens": 4096, "hidden": 8192, "intermediate": 28672, "device": "GPU", "world": 4, "us": us}
    row |= {"rel_err": 4.3e-3, "bitwise_repeat": True, "vs_sequential": 1.15, "ideal": 1.30, "vs_async_tp": 1.03}
    tp_mlp.report([row])
    out = capsys.readouterr().out
    assert "   4096      1631.1      1463.4    1419.8   1.15   1.30   1.03  4.3e-03 True" in out
    assert (
        "T = 4096: our halves alone, all-gather GEMM 681.0 + GEMM + reduce-scatter 640.2 µs; "
        "torch's compute alone (matmul, GELU, matmul) 1255.0 µs"
    ) in out
