"""Launching a tuned GEMM: the persistent grid its modes need, their workspace, the compile cache, and
launches whose arguments are converted once (:mod:`.prepared`, :mod:`.call_cache`)."""

from __future__ import annotations

import functools
from typing import Any

from hopper_gemm.config import Problem
from hopper_gemm.launch import clusters_to_launch as plain_clusters
from hopper_gemm.launch import resident_clusters

from .call_cache import CachedCall, LaunchCache
from .modes import TunedConfig, tuned
from .splits import SplitK


def clusters_to_launch(config: TunedConfig | Any, m: int, n: int, device_index: int = 0, k: int | None = None) -> int:
    """Persistent grid: one cluster per resident slot, never more than there are cluster-tiles, except
    where the k-loop is split: a ``stream_k_remainder`` or ``stream_k_aligned`` configuration with fewer
    cluster-tiles than resident clusters takes every resident cluster where that splits its tiles
    (:func:`stream_k_split`, which needs ``k``; the aligned split's followers are the clusters past the
    tiles); ``split_k`` = s takes one cluster per part (cluster-tiles × s) where the GPU holds
    them all at once, else every resident cluster, which walk the whole waves and then split the partial
    wave's tiles: a ``ValueError`` where those tiles × s are more clusters than it holds.

    A ``staging_in_ring`` configuration needs one cluster per cluster-tile (each CTA owns at most one
    tile): a ``ValueError`` says so when the GPU cannot hold them all at once. Without modes: the plain
    kernel's grid (:func:`hopper_gemm.launch.clusters_to_launch`)."""
    config = tuned(config)
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
    return plain_clusters(config.config, m, n, device_index)


def stream_k_split(config: TunedConfig, mnk: tuple[int, int, int], clusters: int) -> Any:
    """The split (:func:`~gemm_modes.splits.stream_k_split`) the kernel computes for ``mnk`` on ``clusters``
    clusters (host ints: the same function)."""
    from pipes.tile_order import ceil_div

    from .splits import stream_k_split as split_of

    m, n, k = mnk
    return split_of(config, config.cluster_tiles(m, n), clusters, ceil_div(k, config.tile_k))


def without_unheld_ring_staging(config: TunedConfig, m: int, n: int, device_index: int = 0) -> TunedConfig:
    """``config`` with ``staging_in_ring`` off where this GPU cannot hold one cluster per cluster-tile
    (the table's rule counts SMs / cluster size; a GPU may hold fewer clusters at once), and its A/B stage
    count back to the shared-memory budget's where the staging buffers of its own leave too little for the
    ring's (wide subtiles: ``gemm_modes.wide_subtiles``). ``m``, ``n``: C's."""
    m, n = config.launch_shape(m, n)
    if config.staging_in_ring and config.one_wave_clusters(m, n) > resident_clusters(config.cluster_size, device_index):
        own = config.with_(staging_in_ring=False)
        try:
            own.stages(Problem("bf16"))  # every dtype's C element takes 2 bytes (hopper_gemm.config.ELEMENT_BYTES)
        except ValueError:
            return own.with_(ab_stages=None)
        return own
    return config


def split_k_held(config: TunedConfig, m: int, n: int, resident: int) -> bool:
    """Whether ``resident`` clusters hold every part of ``config``'s split tiles at once: all cluster-tiles ×
    ``split_k`` in one wave, or past one wave the last wave's tiles × ``split_k``."""
    tiles = config.cluster_tiles(m, n)
    return config.one_wave_clusters(m, n) <= resident or (tiles % resident) * config.split_k <= resident


def without_unheld_split_k(config: TunedConfig, m: int, n: int, device_index: int = 0) -> TunedConfig:
    """``config`` with ``split_k`` halved until this GPU holds every part at once (:func:`split_k_held`;
    the table's rules count SMs / cluster size, and a GPU may hold fewer clusters at once), 1 at the least.
    ``m``, ``n``: C's (a swapped launch tiles Cᵀ, N × M)."""
    m, n = config.launch_shape(m, n)
    resident = resident_clusters(config.cluster_size, device_index)
    while config.split_k > 1 and not split_k_held(config, m, n, resident):
        config = config.with_(split_k=config.split_k // 2)
    return config


_WORKSPACES: dict[tuple, list[tuple[Any, Any]]] = {}


def stream_k_workspace(config: TunedConfig, device: Any, split_tiles: int = 0) -> tuple[Any, Any]:
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


def stream_k_pointers(config: TunedConfig, device: Any, split_tiles: int) -> tuple[Any, Any]:
    """The workspace of :func:`stream_k_workspace` as the kernel's (flags, partials) pointers."""
    import cutlass
    from cutlass.cute import AddressSpace
    from cutlass.cute.runtime import make_ptr

    flags, partials = stream_k_workspace(config, device, split_tiles)
    return (
        make_ptr(cutlass.Uint32, flags.data_ptr(), AddressSpace.gmem, assumed_align=4),
        make_ptr(cutlass.Float32, partials.data_ptr(), AddressSpace.gmem, assumed_align=16),
    )


COMPILE_OPTIONS = "--gpu-arch sm_90a"


@functools.cache
def compiled(config: TunedConfig, problem: Any, options: str = COMPILE_OPTIONS) -> Any:
    """The kernel of one (configuration, problem kind), compiled once for every shape."""
    import cutlass.cute as cute

    from .entry import compile_entry

    config = tuned(config)
    _, entry, args = compile_entry(config.config, problem, hooks_for(config))
    return cute.compile(entry, *args, options=options)


def hooks_for(config: TunedConfig) -> Any:
    """The kernel hooks of ``config``'s modes (:class:`~gemm_modes.hooks.ModeHooks`), None where none is on."""
    from .hooks import ModeHooks

    return ModeHooks(config) if config.modes.active else None


def compile_report(config: Any, problem: Any) -> Any:
    """:func:`kernel_tools.report.compile_report` of a configuration with its modes."""
    from kernel_tools.report import compile_report as report

    config = tuned(config)
    return report(config.config, problem, hooks_for(config))


def kernel_arguments(config: TunedConfig, ops: Any, out: Any, bias_stand_in: Any = None) -> tuple:
    """The compiled kernel's arguments for ``ops`` (``hopper_gemm.api.Operands``) into ``out``, all but the
    stream (``bias_stand_in``: the tensor passed for a call without bias; None: a fresh one)."""
    import cutlass
    from hopper_gemm.launch import cute_operands

    m, n, k = ops.mnk
    clusters = clusters_to_launch(config, m, n, out.device.index or 0, k=k)
    bias = ops.bias if ops.bias is not None else bias_stand_in
    head = (*cute_operands(ops.a, ops.b_nk, out, bias), cutlass.Float32(ops.alpha), cutlass.Int32(clusters))
    if config.partial_sums:  # room for every tile split (split-K: the last wave's)
        tiles = config.cluster_tiles(m, n)
        if config.stream_k:
            split_tiles = stream_k_split(config, ops.mnk, clusters).sk_tiles
        else:
            split_tiles = tiles - SplitK.first_split(tiles, clusters)
        head = (*head, *stream_k_pointers(config, out.device, split_tiles))
    return head


def launcher(config: Any, ops: Any, out: Any, *, kernel: Any = None) -> Any:
    """A no-argument callable that launches ``config``'s kernel (a ``GemmConfig`` or :class:`TunedConfig`)
    for ``ops`` into ``out`` on the current stream (compiled once per configuration; arguments converted
    once, :class:`~.prepared.PreparedLaunch`: a call costs ~5 µs of host time instead of the DSL's 40–66 µs of
    per-call conversion; stream-K's workspace attached). ``kernel``: a compiled variant of ``config``'s
    kernel to launch instead (a benchmark's experiment, ``benchmarks/studies/gemm_ceiling.py``); None:
    :func:`compiled`'s. With ``stream_k``, call it on the stream that was current when it was built: the
    workspace belongs to that stream, so launches on another stream could race with that stream's own
    stream-K launches."""
    from hopper_gemm.launch import current_stream

    from .call_cache import current_stream_handle
    from .prepared import PreparedLaunch

    config = tuned(config)
    ops, out = launched_operands(config, ops, out)
    if kernel is None:
        kernel = compiled(config, ops.problem)
    head = kernel_arguments(config, ops, out)
    prepared = PreparedLaunch.build(kernel, head, current_stream())
    if prepared is None:  # a DSL whose argument list this does not know: its own (slower) call
        return lambda: kernel(*head, current_stream())
    return lambda: prepared(current_stream_handle())


#: ``gemm()``'s prepared launches, one per call key (:mod:`gemm_modes.call_cache`).
LAUNCHES = LaunchCache()


def prepare(config: TunedConfig, ops: Any, out: Any, result_shape: tuple[int, int, int] | None) -> Any:
    """A :class:`~.call_cache.CachedCall` for ``ops`` into ``out`` (None: the DSL's argument list is not one
    :class:`~.prepared.PreparedLaunch` can re-point)."""
    from hopper_gemm.launch import current_stream

    from .prepared import PreparedLaunch

    config = tuned(config)
    ops, out = launched_operands(config, ops, out)
    stand_in = out.new_zeros(8)  # the bias operand of a call without bias (never read)
    head = kernel_arguments(config, ops, out, stand_in)
    bias = ops.bias if ops.bias is not None else stand_in
    pointers = (ops.a.data_ptr(), ops.b_nk.data_ptr(), out.data_ptr(), bias.data_ptr())
    prepared = PreparedLaunch.build(compiled(config, ops.problem), head, current_stream(), pointers=pointers)
    return None if prepared is None else CachedCall(prepared, stand_in, result_shape, swapped=config.swap_ab)


def launched_operands(config: TunedConfig, ops: Any, out: Any) -> tuple[Any, Any]:
    """The operands and output the kernel takes: ``(ops, out)`` as they are, or for a ``swap_ab``
    configuration the swapped call (:func:`hopper_gemm.api.swapped`: Cᵀ = B·Aᵀ, ``out`` read as Cᵀ)."""
    if not config.swap_ab or ops.problem.c_major == "m":
        return ops, out
    from dataclasses import replace

    from hopper_gemm.api import swapped

    turned = swapped(replace(ops, out=out))
    return turned, turned.out
