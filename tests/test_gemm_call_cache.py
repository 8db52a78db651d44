"""gemm_modes.call_cache without a GPU: one prepared launch per call key, re-pointed per call."""

from __future__ import annotations

import threading

import pytest
from gemm_modes.call_cache import CachedCall, LaunchCache, call_key


class FakeTensor:
    def __init__(self, shape, strides, dtype="bf16", device="cuda:0"):
        self.shape, self._strides, self.dtype, self.device = shape, strides, dtype, device

    def stride(self):
        return self._strides


class FakeLaunch:
    def __init__(self):
        self.pointers = None
        self.launches = []

    def rebind(self, pointers):
        self.pointers = pointers

    def __call__(self, stream):
        self.launches.append((self.pointers, stream))


def _tensors(m=256, n=512, k=64, out_stride=None, dtype="bf16", bias=False):
    a, b = FakeTensor((m, k), (k, 1), dtype), FakeTensor((n, k), (k, 1), dtype)
    out = FakeTensor((m, n), (out_stride or n, 1), dtype)
    return a, b, FakeTensor((n,), (1,), dtype) if bias else None, out


VALUES = (1.0, "nk", "auto", None, None, None)


def test_the_key_holds_everything_but_the_data_pointers():
    base = call_key(_tensors(), VALUES, 7)
    assert base == call_key(_tensors(), VALUES, 7)
    different = [
        call_key(_tensors(m=128), VALUES, 7),  # a shape
        call_key(_tensors(out_stride=520), VALUES, 7),  # padded rows
        call_key(_tensors(dtype="fp16"), VALUES, 7),
        call_key(_tensors(bias=True), VALUES, 7),
        call_key(_tensors(), (0.5, *VALUES[1:]), 7),  # alpha
        call_key(_tensors(), (1, *VALUES[1:]), 7),  # alpha of another type (True would be refused)
        call_key(_tensors(), (1.0, "kn", *VALUES[2:]), 7),
        call_key(_tensors(), (*VALUES[:3], (256, 128), None, None), 7),  # a tile override
        call_key(_tensors(), VALUES, 8),  # the stream (stream-K's workspace is per stream)
        call_key(_tensors(), VALUES, (1, 7)),  # another current device, the same stream handle
        call_key(_tensors(), VALUES, (0, 7)),
    ]
    assert all(k != base for k in different) and len(set(different)) == len(different)


def test_arguments_that_are_no_tensors_or_not_hashable_get_no_key():
    a, b, bias, out = _tensors()
    assert call_key((a, object(), bias, out), VALUES, 0) is None  # no .shape / .stride()
    assert call_key((a, b, bias, out), (*VALUES[:3], [256, 128], None, None), 0) is None  # a list


def test_a_key_is_built_once_then_only_re_pointed():
    cache = LaunchCache()
    key = call_key(_tensors(), VALUES, 3)
    assert cache.get(key) is None and cache.get(None) is None
    launch = FakeLaunch()
    cache.put(key, CachedCall(launch, None))
    for pointers in ((0x1000, 0x2000, 0x3000, 0x77), (0x5000, 0x6000, 0x7000, 0x77)):
        entry = cache.get(call_key(_tensors(), VALUES, 3))
        cache.launch(entry, pointers, 3)
    assert cache.builds == 1
    assert launch.launches == [((0x1000, 0x2000, 0x3000, 0x77), 3), ((0x5000, 0x6000, 0x7000, 0x77), 3)]
    cache.put(None, CachedCall(FakeLaunch(), None))  # a call without a key is counted, not stored
    assert cache.builds == 2 and len(cache) == 1


def test_the_least_recently_used_key_is_dropped_beyond_capacity():
    cache = LaunchCache(capacity=2)
    keys = [call_key(_tensors(m=m), VALUES, 0) for m in (64, 128, 192)]
    for key in keys[:2]:
        cache.put(key, CachedCall(FakeLaunch(), None))
    assert cache.get(keys[0]) is not None  # 0 is now the most recent
    cache.put(keys[2], CachedCall(FakeLaunch(), None))  # evicts 1
    assert len(cache) == 2
    assert cache.get(keys[1]) is None and cache.get(keys[0]) is not None and cache.get(keys[2]) is not None
    cache.clear()
    assert len(cache) == 0
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="capacity = .* is invalid"):
            LaunchCache(capacity=bad)


def test_threads_sharing_a_key_never_interleave_rebind_and_launch():
    cache = LaunchCache()

    class CheckingLaunch(FakeLaunch):
        def __call__(self, stream):
            assert self.pointers[0] == stream  # the pointers written just before belong to this launch
            super().__call__(stream)

    launch = CheckingLaunch()
    entry = CachedCall(launch, None)

    def worker(tag):
        for _ in range(200):
            cache.launch(entry, (tag, 0, 0, 0), tag)

    threads = [threading.Thread(target=worker, args=(tag,)) for tag in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(launch.launches) == 800


def test_cached_call_checks_a_key_once_then_only_re_points_it(monkeypatch):
    import gemm_modes.call_cache as call_cache
    import gemm_modes.launch as launch

    class Tensor(FakeTensor):
        def __init__(self, shape, strides, ptr):
            super().__init__(shape, strides)
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

    cache, checks = LaunchCache(), []
    stand_in = Tensor((8,), (1,), 0x9000)
    monkeypatch.setattr(launch, "LAUNCHES", cache)
    monkeypatch.setattr(launch, "prepare", lambda config, ops, out, shape: CachedCall(FakeLaunch(), stand_in, shape))
    monkeypatch.setattr(call_cache, "current_device_and_stream", lambda: (0, 7))

    def checked():
        checks.append(1)
        return "config", "ops", None

    a, b = Tensor((256, 64), (64, 1), 0x1000), Tensor((512, 64), (64, 1), 0x2000)
    out = Tensor((256, 512), (512, 1), 0x3000)
    for pointer in (0x4000, 0x5000):
        a.ptr = pointer
        assert call_cache.cached_call((a, b, None, out), VALUES, checked) is out
    assert len(checks) == 1 and cache.builds == 1
    entry = cache.get(call_key((a, b, None, out), VALUES, (0, 7)))
    assert entry.launch.launches == [((0x4000, 0x2000, 0x3000, 0x9000), 7), ((0x5000, 0x2000, 0x3000, 0x9000), 7)]
    a.ptr = 0x4002  # off 16-byte alignment: the call is checked again
    call_cache.cached_call((a, b, None, out), VALUES, checked)
    assert len(checks) == 2
