"""hopper_gemm.call_cache without a GPU: one prepared launch per call signature, re-pointed per call."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from hopper_gemm.call_cache import CachedCall, CallSignature, LaunchCache, call_pointers  # noqa: E402
from hopper_gemm.config import GemmConfig, Problem  # noqa: E402


class FakeTensor:
    def __init__(self, shape, strides, pointer, device=0):
        self.shape, self._strides, self._pointer = shape, strides, pointer
        self.device = SimpleNamespace(index=device)

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._pointer


class FakeLaunch:
    def __init__(self):
        self.pointers = None
        self.launches = []

    def rebind(self, pointers):
        self.pointers = pointers

    def __call__(self, stream):
        self.launches.append((self.pointers, stream))


def _ops(m=256, n=512, k=64, pointer=0x1000, bias=None, alpha=1.0):
    a = FakeTensor((m, k), (k, 1), pointer)
    b = FakeTensor((n, k), (k, 1), pointer + 0x100000)
    return SimpleNamespace(a=a, b_nk=b, bias=bias, alpha=alpha, problem=Problem(bias=bias is not None))


def _out(m=256, n=512, pointer=0x9000):
    return FakeTensor((m, n), (n, 1), pointer)


CONFIG = GemmConfig()


def test_the_signature_holds_what_the_conversion_depends_on_and_not_the_pointers():
    ops = _ops()
    base = CallSignature.of(CONFIG, ops, _out(), stream=7)
    assert base == CallSignature.of(CONFIG, _ops(pointer=0x5000), _out(pointer=0xA000), stream=8)  # pointers, stream
    assert base != CallSignature.of(CONFIG, _ops(m=128), _out(m=128), stream=7)  # a shape
    assert base != CallSignature.of(CONFIG, ops, FakeTensor((256, 512), (520, 1), 0x9000), stream=7)  # padded rows
    assert base != CallSignature.of(CONFIG, _ops(alpha=0.5), _out(), stream=7)
    other = CONFIG.with_(tile_m=256, tile_n=128, cluster_m=1, cluster_n=2)
    assert base != CallSignature.of(other, ops, _out(), stream=7)
    stream_k = CONFIG.with_(stream_k=True)
    # stream-K's workspace is per stream: the stream joins the signature
    assert CallSignature.of(stream_k, ops, _out(), 7) != CallSignature.of(stream_k, ops, _out(), 8)


def test_a_signature_is_built_once_then_only_re_pointed():
    cache, launches = LaunchCache(), []

    def build():
        launches.append(FakeLaunch())
        return CachedCall(launches[-1], FakeTensor((8,), (1,), 0x77))

    for pointer in (0x1000, 0x2000):
        ops, out = _ops(pointer=pointer), _out(pointer=pointer + 0x10)
        signature = CallSignature.of(CONFIG, ops, out, 3)
        assert cache.run(signature, build, lambda e, ops=ops, out=out: call_pointers(ops, out, e.bias_stand_in), 3)
    assert cache.builds == 1 and len(launches) == 1
    assert launches[0].launches == [
        ((0x1000, 0x101000, 0x1010, 0x77), 3),  # no bias: the stand-in's pointer
        ((0x2000, 0x102000, 0x2010, 0x77), 3),
    ]


def test_a_signature_that_cannot_be_prepared_is_not_built_again():
    cache = LaunchCache()
    signature = CallSignature.of(CONFIG, _ops(), _out(), 0)
    builds = []
    for _ in range(3):
        assert not cache.run(signature, lambda: builds.append(1), lambda e: (), 0)
    assert len(builds) == 1


def test_the_least_recently_used_signature_is_dropped_beyond_capacity():
    cache = LaunchCache(capacity=2)
    signatures = [CallSignature.of(CONFIG, _ops(m=m), _out(m=m), 0) for m in (64, 128, 192)]

    def run(signature):
        cache.run(signature, lambda: CachedCall(FakeLaunch(), None), lambda e: (), 0)

    run(signatures[0])
    run(signatures[1])
    run(signatures[0])  # 0 is now the most recent
    run(signatures[2])  # evicts 1
    assert len(cache) == 2 and cache.builds == 3
    run(signatures[0])
    assert cache.builds == 3
    run(signatures[1])
    assert cache.builds == 4
    with pytest.raises(ValueError, match="capacity = 0 is invalid"):
        LaunchCache(capacity=0)


def test_threads_sharing_a_signature_never_interleave_rebind_and_launch():
    cache = LaunchCache()

    class CheckingLaunch(FakeLaunch):
        def __call__(self, stream):
            assert self.pointers[0] == stream  # the pointers written just before belong to this launch
            super().__call__(stream)

    launch = CheckingLaunch()
    signature = CallSignature.of(CONFIG, _ops(), _out(), 0)

    def worker(tag):
        for _ in range(200):
            cache.run(signature, lambda: CachedCall(launch, None), lambda e: (tag, 0, 0, 0), tag)

    threads = [threading.Thread(target=worker, args=(tag,)) for tag in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(launch.launches) == 800
