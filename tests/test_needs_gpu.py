"""benchmarks/needs_gpu.py: a GPU benchmark without torch, or without a GPU, says so in one line (each
benchmark's own main: tests/test_benchmark_cli.py)."""

from __future__ import annotations

import sys
import types


def test_without_torch_a_benchmark_says_it_needs_a_gpu(monkeypatch, capsys):
    from needs_gpu import cuda_torch

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert cuda_torch("studies/gemm_waves.py", "tests/test_gemm_schedule.py checks the rules") is None
    out = capsys.readouterr().out
    want = "no CUDA GPU: benchmarks/studies/gemm_waves.py needs one (tests/test_gemm_schedule.py checks the rules)\n"
    assert out == want


def test_the_device_line_names_the_gpu_and_its_sms():
    from needs_gpu import device_with_sms

    props = types.SimpleNamespace(multi_processor_count=132)
    cuda = types.SimpleNamespace(get_device_properties=lambda i: props, get_device_name=lambda: "NVIDIA H100 80GB HBM3")
    fake = types.SimpleNamespace(cuda=cuda)
    assert device_with_sms(fake) == ("NVIDIA H100 80GB HBM3 (132 SMs)", 132)
