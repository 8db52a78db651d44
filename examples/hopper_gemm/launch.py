"""Turning operands into what the compiled kernel takes: CuTe tensors, the stream, the persistent grid.

Shapes and strides are dynamic (one compile serves every M, N, K of a problem kind): on a GPU the
torch tensors are wrapped with ``from_dlpack(...).mark_layout_dynamic``; without one, symbolic fake
tensors of the same kind let the kernel compile for sm_90a.
"""

from __future__ import annotations

from typing import Any

from .config import GemmConfig, Problem

_ALIGN = 16


def _cutlass_dtype(name: str) -> Any:
    import cutlass

    return {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}[name]


def fake_operands(problem: Problem) -> tuple[Any, Any, Any, Any]:
    """``(a, b_nk, c, bias)`` as symbolic fake tensors: dynamic extents and row strides."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor

    dt = _cutlass_dtype(problem.dtype)
    m, n, k = cute.sym_int32(), cute.sym_int32(), cute.sym_int32()

    def matrix(rows: Any, cols: Any, contiguous_cols: bool) -> Any:
        stride = (cute.sym_int64(), 1) if contiguous_cols else (1, cute.sym_int64())
        return make_fake_tensor(dt, (rows, cols), stride, assumed_align=_ALIGN)

    a = matrix(m, k, True)
    b = matrix(n, k, problem.b_major == "k")
    c = matrix(m, n, True)
    bias = make_fake_tensor(dt, (n,), (1,), assumed_align=_ALIGN)
    return a, b, c, bias


def compile_entry(config: GemmConfig, problem: Problem) -> tuple[Any, Any, tuple]:
    """(the kernel object, its host function to compile, fake arguments of that function's signature):
    ``__call__``, or ``with_workspace`` with its two workspace pointers for a stream-K or split-K configuration."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    from .kernel import GemmKernel

    kernel = GemmKernel(config, problem)
    head = (*fake_operands(problem), cutlass.Float32(1.0), cutlass.Int32(1))
    if config.partial_sums:
        flags = make_ptr(cutlass.Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=4)
        partials = make_ptr(cutlass.Float32, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
        return kernel, kernel.with_workspace, (*head, flags, partials, make_fake_stream())
    return kernel, kernel, (*head, make_fake_stream())


def cute_operands(a: Any, b_nk: Any, c: Any, bias: Any) -> tuple[Any, Any, Any, Any]:
    """The torch tensors as dynamic-layout CuTe tensors (``bias`` None: a 1-element stand-in)."""
    from cutlass.cute.runtime import from_dlpack

    def wrap(t: Any, leading: int) -> Any:
        return from_dlpack(t, assumed_align=_ALIGN).mark_layout_dynamic(leading_dim=leading)

    b_leading = 1 if b_nk.stride(1) == 1 else 0
    if bias is None:
        bias = c.new_zeros(8)
    return wrap(a, 1), wrap(b_nk, b_leading), wrap(c, 1), wrap(bias, 0)


def clusters_to_launch(config: GemmConfig, m: int, n: int, device_index: int = 0, k: int | None = None) -> int:
    """Persistent grid: one cluster per resident slot, never more than there are cluster-tiles, except
    where the k-loop is split: a ``stream_k_remainder`` or ``stream_k_aligned`` configuration with fewer
    cluster-tiles than resident clusters takes every resident cluster where that splits its tiles
    (:func:`stream_k_split`, which needs ``k``; the aligned split's followers are the clusters past the
    tiles); ``split_k`` = s takes one cluster per part (cluster-tiles × s) where the GPU holds
    them all at once, else every resident cluster, which walk the whole waves and then split the partial
    wave's tiles: a ``ValueError`` where those tiles × s are more clusters than it holds.

    A ``staging_in_ring`` configuration needs one cluster per cluster-tile (each CTA owns at most one
    tile): a ``ValueError`` says so when the GPU cannot hold them all at once."""
    tiles, resident = config.cluster_tiles(m, n), resident_clusters(config.cluster_size, device_index)
    if config.staging_in_ring and tiles > resident:
        raise ValueError(
            f"GemmConfig.staging_in_ring = True is invalid for M×N = {m}×{n}: tiles of {config.tile_m}×"
            f"{config.tile_n} in clusters of {config.cluster_m}×{config.cluster_n} make {tiles} cluster-tiles, "
            f"more than the {resident} clusters this GPU holds at once, so a CTA would own a second tile while "
            "its staging buffers borrow the ring that tile loads into"
        )
    if config.split_k > 1:
        needed = config.one_wave_clusters(m, n)
        if needed <= resident:
            return needed
        partial = tiles % resident
        if not split_k_held(config, m, n, resident):
            raise ValueError(
                f"GemmConfig.split_k = {config.split_k} is invalid for M×N = {m}×{n}: tiles of {config.tile_m}×"
                f"{config.tile_n} in clusters of {config.cluster_m}×{config.cluster_n} make {tiles} cluster-tiles, "
                f"{tiles // resident} whole waves of the {resident} clusters this GPU holds at once and {partial} "
                f"in the last, × {config.split_k} parts = {partial * config.split_k} clusters, more than it holds "
                "(every part of a tile waits for the others: all must be resident)"
            )
        return resident
    under_a_wave = (config.stream_k_remainder or config.stream_k_aligned) and k is not None and tiles < resident
    if under_a_wave and stream_k_split(config, (m, n, k), resident).sk_tiles:
        return resident
    return max(1, min(tiles, resident))


def stream_k_split(config: GemmConfig, mnk: tuple[int, int, int], clusters: int) -> Any:
    """The split (:func:`~hopper_gemm.schedule.stream_k_split`) the kernel computes for ``mnk`` on ``clusters``
    clusters (host ints: the same function)."""
    from .schedule import ceil_div
    from .schedule import stream_k_split as split_of

    m, n, k = mnk
    return split_of(config, config.cluster_tiles(m, n), clusters, ceil_div(k, config.tile_k))


def without_unheld_ring_staging(config: GemmConfig, m: int, n: int, device_index: int = 0) -> GemmConfig:
    """``config`` with ``staging_in_ring`` off where this GPU cannot hold one cluster per cluster-tile
    (the table's rule counts SMs / cluster size; a GPU may hold fewer clusters at once)."""
    if config.staging_in_ring and config.one_wave_clusters(m, n) > resident_clusters(config.cluster_size, device_index):
        return config.with_(staging_in_ring=False)
    return config


def split_k_held(config: GemmConfig, m: int, n: int, resident: int) -> bool:
    """Whether ``resident`` clusters hold every part of ``config``'s split tiles at once: all cluster-tiles ×
    ``split_k`` in one wave, or past one wave the last wave's tiles × ``split_k``."""
    tiles = config.cluster_tiles(m, n)
    return config.one_wave_clusters(m, n) <= resident or (tiles % resident) * config.split_k <= resident


def without_unheld_split_k(config: GemmConfig, m: int, n: int, device_index: int = 0) -> GemmConfig:
    """``config`` with ``split_k`` halved until this GPU holds every part at once (:func:`split_k_held`;
    the table's rules count SMs / cluster size, and a GPU may hold fewer clusters at once), 1 at the least."""
    resident = resident_clusters(config.cluster_size, device_index)
    while config.split_k > 1 and not split_k_held(config, m, n, resident):
        config = config.with_(split_k=config.split_k // 2)
    return config


_RESIDENT: dict[tuple[int, int], int] = {}


def resident_clusters(cluster_size: int, device_index: int = 0) -> int:
    """Clusters of ``cluster_size`` CTAs (one per SM) the GPU keeps resident at once: the driver's occupancy
    answer, which counts how clusters pack into GPCs (the H100s of the GPU runner, 132 SMs, hold 66 clusters
    of 2 but 30 of 4). ``tests/gpu/test_gpu_cluster_residency.py`` checks it with a kernel whose CTAs wait
    for one another."""
    key = (cluster_size, device_index)
    if key not in _RESIDENT:
        import torch
        from cutlass.utils import HardwareInfo

        with torch.cuda.device(device_index):
            # CUDA must be initialized and this device's context current: before, a first call ahead of any
            # CUDA work failed inside the query (CUDA_ERROR_NOT_INITIALIZED) and fell back to SMs / cluster
            # size, 33 clusters of 4 on an H100 that holds 30; a launch of 32 then ran as two waves.
            torch.cuda.synchronize()
            count = HardwareInfo(device_index).get_max_active_clusters(cluster_size)
        _RESIDENT[key] = max(1, int(count))
    return _RESIDENT[key]


_WORKSPACES: dict[tuple, list[tuple[Any, Any]]] = {}


def stream_k_workspace(config: GemmConfig, device: Any, split_tiles: int = 0) -> tuple[Any, Any]:
    """The (flags, partials) of a stream-K or split-K ``config`` on ``device`` and the current stream, with
    room for ``split_tiles`` split cluster-tiles: the largest allocated so far, or a new one at least twice as
    large (the smaller ones stay alive: launches prepared with them keep their pointers). Flags are zero
    (each launch leaves them zero). One per stream: two streams' launches must not share partials."""
    import torch

    from .stream_k import workspace_words

    index = device.index or 0
    stream = torch.cuda.current_stream(device).cuda_stream
    per_tile = workspace_words(1, config)  # configurations with the same layout may share one
    key = (per_tile, config.cluster_size, index, stream)
    held = _WORKSPACES.setdefault(key, [])
    if not held or held[-1][0].numel() < workspace_words(split_tiles, config)[0]:
        had = held[-1][0].numel() // config.cluster_size if held else 0
        flag_words, values = workspace_words(max(split_tiles, 2 * had, 1), config)
        flags = torch.zeros(flag_words, dtype=torch.int32, device=device)
        held.append((flags, torch.empty(values, dtype=torch.float32, device=device)))
    return held[-1]


def stream_k_pointers(config: GemmConfig, device: Any, split_tiles: int) -> tuple[Any, Any]:
    """The workspace of :func:`stream_k_workspace` as the kernel's (flags, partials) pointers."""
    import cutlass
    from cutlass.cute import AddressSpace
    from cutlass.cute.runtime import make_ptr

    flags, partials = stream_k_workspace(config, device, split_tiles)
    return (
        make_ptr(cutlass.Uint32, flags.data_ptr(), AddressSpace.gmem, assumed_align=4),
        make_ptr(cutlass.Float32, partials.data_ptr(), AddressSpace.gmem, assumed_align=16),
    )


def current_device_and_stream() -> tuple[int, int]:
    """(current CUDA device index, its current torch stream as an integer handle), through torch's raw
    getters where it has them: ~0.3 µs of host time against ~4 for ``torch.cuda.current_stream()``."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    get_device = getattr(torch._C, "_cuda_getDevice", None)
    if raw is None or get_device is None:
        return torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream
    device = get_device()
    return device, raw(device)


def current_stream_handle() -> int:
    """The current device's current torch stream as an integer handle (see :func:`current_device_and_stream`)."""
    return current_device_and_stream()[1]


def current_stream() -> Any:
    import cuda.bindings.driver as cuda
    import torch

    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)
