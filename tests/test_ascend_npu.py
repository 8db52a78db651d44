"""On an Ascend NPU: the generated kernels compiled by tilelang-ascend and run with torch_npu.

These need an A2/A3 device with CANN, torch_npu and tilelang-ascend (aarch64); elsewhere the ``npu``
marker skips them with the reason (tests/conftest.py). The kernel bodies are the same ones the CPU tests
run in the simulator, emitted through :class:`~pipes.ascend.emit.TileLangBuilder` on the real ``T``.
"""

from __future__ import annotations

import pytest

from pipes.ascend import EventIdAllocator, EventIdRules, Keying, cross_core_pipeline
from pipes.ascend.emit import TileLangBuilder
from pipes.ascend.kernels.attention import AttentionTiles, VectorTiles, attention_cube, attention_vector
from pipes.ascend.kernels.pingpong import PingPongShape, PingPongTiles, pingpong_gemm

pytestmark = pytest.mark.npu

# TileLang-Ascend kernels run without the AscendC framework pipe object's pre-set flags; ids are numbered
# per pipe pair, as its own expert-mode examples do.
RULES = EventIdRules(framework_preset=False, keying=Keying.PIPE_PAIR)


def _pingpong_kernel(iters: int, shape: PingPongShape):
    import tilelang
    import tilelang.language as T  # noqa: N812

    m, d, bn = shape.m, shape.d, shape.block_n

    @tilelang.jit(out_idx=[-1])
    def build():
        @T.prim_func
        def main(
            Q: T.Tensor((m, d), "float16"),  # noqa: N803
            K: T.Tensor((iters * bn, d), "float16"),  # noqa: N803
            workspace: T.Tensor((1, iters, m, bn), "float16"),
        ):
            with T.Kernel(1, is_npu=True) as (cid, _):
                tiles = PingPongTiles(
                    Q=Q,
                    K=K,
                    workspace=workspace,
                    q_l1=T.alloc_L1((m, d), "float16"),
                    k_l1=T.alloc_L1((bn, d), "float16"),
                    l0a=T.alloc_L0A((2, m, d), "float16"),
                    l0b=T.alloc_L0B((2, d, bn), "float16"),
                    l0c=T.alloc_L0C((2, m, bn), "float"),
                )
                with T.Scope("C"):
                    pingpong_gemm(TileLangBuilder(T), tiles, iters, EventIdAllocator(RULES), shape=shape, cid=cid)

        return main

    return build()


@pytest.mark.parametrize("iters", [1, 2, 3, 64])
def test_pingpong_gemm_matches_torch(iters: int) -> None:
    import torch
    import torch_npu  # noqa: F401

    shape = PingPongShape()
    kernel = _pingpong_kernel(iters, shape)
    torch.manual_seed(0)
    q = torch.randn(shape.m, shape.d, dtype=torch.float16).npu()
    k = torch.randn(iters * shape.block_n, shape.d, dtype=torch.float16).npu()
    workspace = kernel(q, k)
    torch.npu.synchronize()
    scores = q.float() @ k.float().T
    expected = scores.reshape(shape.m, iters, shape.block_n).permute(1, 0, 2).unsqueeze(0)
    torch.testing.assert_close(workspace.float(), expected, rtol=2e-2, atol=2e-2)


def _attention_kernel(iters: int, shape: PingPongShape, scale: float, slots: int = 2):
    import tilelang
    import tilelang.language as T  # noqa: N812

    m, d, bn, half = shape.m, shape.d, shape.block_n, shape.m // 2

    @tilelang.jit(out_idx=[-1])
    def build():
        @T.prim_func
        def main(
            Q: T.Tensor((m, d), "float16"),  # noqa: N803
            K: T.Tensor((iters * bn, d), "float16"),  # noqa: N803
            workspace: T.Tensor((slots, m, bn), "float"),
            out: T.Tensor((m, iters * bn), "float"),
        ):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                cube_ids = EventIdAllocator(RULES)
                scores = cross_core_pipeline(
                    "scores", stages=slots, producer=("AIC", "FIX"), consumer=("AIV", "MTE2"), ids=cube_ids
                )
                cube = AttentionTiles(
                    Q=Q,
                    K=K,
                    out=out,
                    workspace=workspace,
                    q_l1=T.alloc_L1((m, d), "float16"),
                    k_l1=T.alloc_L1((bn, d), "float16"),
                    l0a=T.alloc_L0A((2, m, d), "float16"),
                    l0b=T.alloc_L0B((2, d, bn), "float16"),
                    l0c=T.alloc_L0C((2, m, bn), "float"),
                )
                vec = VectorTiles(
                    workspace=workspace,
                    out=out,
                    ub_in=T.alloc_ub((2, half, bn), "float"),
                    ub_out=T.alloc_ub((2, half, bn), "float"),
                )
                with T.Scope("C"):
                    attention_cube(TileLangBuilder(T, "AIC"), cube, iters, cube_ids, scores, shape=shape)
                with T.Scope("V"):
                    rows = slice(vid * half, (vid + 1) * half)
                    builder = TileLangBuilder(T, "AIV")
                    attention_vector(
                        builder, vec, iters, EventIdAllocator(RULES), scores, shape=shape, rows=rows, scale=scale
                    )

        return main

    return build()


@pytest.mark.parametrize("iters", [1, 3, 16])
def test_cube_to_vector_through_gm_matches_torch(iters: int) -> None:
    import torch
    import torch_npu  # noqa: F401

    shape, scale = PingPongShape(), 0.125
    kernel = _attention_kernel(iters, shape, scale)
    torch.manual_seed(1)
    q = torch.randn(shape.m, shape.d, dtype=torch.float16).npu()
    k = torch.randn(iters * shape.block_n, shape.d, dtype=torch.float16).npu()
    workspace = torch.zeros(2, shape.m, shape.block_n, dtype=torch.float32).npu()
    out = kernel(q, k, workspace)
    torch.npu.synchronize()
    torch.testing.assert_close(out, scale * (q.float() @ k.float().T), rtol=1e-3, atol=1e-3)
