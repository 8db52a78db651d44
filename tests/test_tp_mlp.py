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
