"""The comm library's host objects on a GPU machine: receivers validate their memory when made."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_receivers_check_their_memory_and_scope():
    torch = pytest.importorskip("torch")
    from pipes.comm import Receiver

    host = Receiver.host((4, 64, 128), torch.bfloat16, flags=4, credits=4)
    assert host.scope == "sys" and host.data.is_pinned() and host.device.index is not None
    device = Receiver.on_device((4, 64, 128), torch.bfloat16, flags=4)  # "cuda": the current device, by index
    assert device.scope == "gpu" and device.device == torch.device("cuda", torch.cuda.current_device())
    with pytest.raises(ValueError, match="scope = 'gpu' is too narrow for a host receiver.*allowed 'sys'"):
        host.check_scope("gpu")
    device.check_scope("sys")  # wider than needed is correct
    words = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(ValueError, match="must be page-locked host memory.*got a pageable CPU tensor"):
        Receiver("host", torch.zeros(4, 64, 128, dtype=torch.bfloat16), words, words, "cuda")
    with pytest.raises(ValueError, match="a device receiver's data must be on cuda:0.*got a tensor on cpu"):
        Receiver("device", torch.zeros(4), device.flags, device.credits, "cuda:0")
    if torch.cuda.device_count() > 1:
        other = torch.zeros(4, device="cuda:1")
        with pytest.raises(ValueError, match="must be on cuda:0.*got a tensor on cuda:1"):
            Receiver("device", other, device.flags, device.credits, "cuda:0")
    with pytest.raises(ValueError, match="flags must be int32 words"):
        Receiver("device", device.data, device.flags.float(), device.credits, "cuda")
    assert all(address > 0 for address in host.addresses())  # the pinned buffers' device-mapped addresses
    host.grant([1, 2], 0xFFFFFFFF)
    assert host.credits.tolist() == [0, -1, -1, 0]
