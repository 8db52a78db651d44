"""benchmarks/studies/checked_launch.py on the CPU: a contender that leaves a tile unwritten, or computes the wrong
values, stops the benchmark by name; a right one comes back launched once (torch stood in by numpy)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest


class _Tensor:
    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)
        self.shape = self.values.shape
        self.dtype = "bf16"

    def float(self):
        return self

    def abs(self):
        return _Tensor(np.abs(self.values))

    def max(self):
        return _Tensor(self.values.max())

    def item(self):
        return float(self.values)

    def __sub__(self, other):
        return _Tensor(self.values - other.values)

    def __truediv__(self, other):
        return _Tensor(self.values / other.values)


def _fake_torch():
    cuda = types.SimpleNamespace(synchronize=lambda: None)
    return types.SimpleNamespace(full=lambda shape, value, **_: _Tensor(np.full(shape, value)), cuda=cuda)


@pytest.mark.parametrize(("writes", "ok"), [("right", True), ("nothing", False), ("wrong", False)])
def test_a_contender_is_checked_once_against_torch(writes, ok, monkeypatch):
    import checked_launch
    from gemm_modes import launch as modes_launch
    from hopper_gemm import api

    a, w = _Tensor(np.ones((4, 3))), _Tensor(np.ones((5, 3)))
    ref = _Tensor(np.full((4, 5), 3.0))
    launches = []

    def launcher(config, ops, out):
        def launch():
            launches.append(config)
            if writes != "nothing":
                out.values[:] = 3.0 if writes == "right" else 2.0

        return launch

    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    monkeypatch.setattr(modes_launch, "launcher", launcher)
    monkeypatch.setattr(api, "validate", lambda a, w, bias=None, out=None: (a, w, bias, out))
    if ok:
        launch = checked_launch.checked_launcher("cfg", (a, w, None), ref, "cfg at 4×5×3")
        assert launches == ["cfg"] and callable(launch)
    else:
        with pytest.raises(SystemExit, match=r"cfg at 4×5×3: relative error (nan|0\.33)"):
            checked_launch.checked_launcher("cfg", (a, w, None), ref, "cfg at 4×5×3")
