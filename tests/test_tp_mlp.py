"""examples/tp_mlp.py on the CPU: without two GPUs it says so and runs nothing (its halves compile and prove
their protocols in tests/test_tp_ag_gemm.py and tests/test_epilogue_comm.py; the block runs in --check)."""

from __future__ import annotations


def test_without_two_gpus_the_block_exits_with_a_clear_message(capsys, torch_without_gpu):
    import tp_mlp

    assert tp_mlp.main(["--tokens", "4096"]) == 2
    err = capsys.readouterr().err
    assert "the tensor-parallel MLP needs 2 GPUs" in err and "nothing run" in err


def test_the_block_is_parsed_with_the_model_s_shapes_by_default():
    import tp_mlp

    args = tp_mlp.parse([])
    assert (args.hidden, args.intermediate, args.tokens) == (8192, 28672, None)
    assert tp_mlp.TOKENS == (4096, 8192, 16384)
