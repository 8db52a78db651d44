"""The configuration of a ``gemm()`` call: the measured table's (``schedule="auto"``) or the one asked for,
with the overrides applied."""

from __future__ import annotations

import functools
from typing import Any

from hopper_gemm.config import MAX_ACC_REGISTERS, WARPGROUP_THREADS, GemmConfig, Problem, Schedule

from .autotable import H100_SMS, SPLIT_K_128, best_swapped, pick, single_wave_staging, whole_tiles
from .autotable import split_k as split_k_rule
from .modes import Modes, TunedConfig

#: What ``stream_k`` takes besides None (the table's choice).
STREAM_K_CHOICES = (True, False, "remainder", "aligned")


@functools.cache
def device_sms(device_index: int) -> int:
    """The SM count of CUDA device ``device_index`` (``choose_config``'s ``sms``)."""
    import torch

    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _one_warpgroup_holds(tile: Any) -> bool:
    """Whether one warpgroup's accumulators fit ``tile`` (ping-pong's limit, ``MAX_ACC_REGISTERS``)."""
    return int(tile[0]) * int(tile[1]) // WARPGROUP_THREADS <= MAX_ACC_REGISTERS


def _wg_split(config: TunedConfig, tile: Any) -> str:
    """How a cooperative tile override's warpgroups share it: the rows where they halve into m64 blocks
    (128 or 256 rows), else the columns (``GemmConfig.wg_split``: 192 rows, e.g. cuBLAS's 192×192)."""
    return "n" if config.schedule is Schedule.COOPERATIVE and int(tile[0]) == 192 else "m"


def choose_config(
    problem: Problem,
    mnk: tuple[int, int, int],
    schedule: str,
    tile: Any,
    cluster: Any,
    stream_k: bool | str | None = None,
    *,
    sms: int | None = None,
    split_k: int | None = None,
    swap_ab: bool | None = None,
) -> TunedConfig:
    """The configuration for a call: the measured table for ``schedule="auto"``, else what was asked;
    ``stream_k`` True / False / ``"remainder"`` (only the partial wave split) / ``"aligned"`` (the partial
    wave's tiles split at one k, their later parts on the idle clusters) and ``split_k`` (parts per
    tile, 1: none) override the table's choice (None: keep it; a new tile or cluster drops the table's
    split-K, chosen for its own tile). ``sms``: the GPU's SM count (None: an H100's, what the table was
    measured on). ``swap_ab``: True computes Cᵀ = B·Aᵀ (the table's best swapped tile, or ``tile`` as
    (extent along N, extent along M); with ``split_k``, split-K's tile for Cᵀ's shape), False never; None:
    the table's choice, which swaps only without any other override."""
    if split_k is not None and (isinstance(split_k, bool) or not isinstance(split_k, int)):
        raise ValueError(f"split_k = {split_k!r} is invalid: allowed None (the table's choice) or an int")
    if swap_ab is not None and not isinstance(swap_ab, bool):
        raise ValueError(f"swap_ab = {swap_ab!r} is invalid: allowed None (the table's choice), True or False")
    if swap_ab and stream_k:
        raise ValueError("swap_ab = True runs on the plain kernel or with split-K: no stream_k with it")
    if swap_ab and (problem.bias or problem.b_major != "k"):
        why = "a bias (it adds along N, the rows of Cᵀ)" if problem.bias else "B as (K, N) (A' = B would be M-major)"
        raise ValueError(f"swap_ab = True is invalid with {why}: allowed with B as (N, K) and no bias")
    overridden = any(v is not None for v in (tile, cluster, stream_k, split_k))
    if schedule == "auto":
        if split_k is not None and split_k > 1:  # the rule's cluster where it applies (on Cᵀ's shape swapped)
            m, n, k = mnk
            config = split_k_rule((n, m, k) if swap_ab else mnk, sms or H100_SMS) or SPLIT_K_128
        elif swap_ab and tile is None:
            config = best_swapped(mnk, sms or H100_SMS)
        elif split_k is not None or stream_k is not None:  # asked for another split (or none)
            config = whole_tiles(problem, mnk, sms or H100_SMS)
        else:
            config = pick(problem, mnk, sms or H100_SMS, swap=swap_ab is None and not overridden)
    else:
        config = TunedConfig(
            GemmConfig(schedule=Schedule(schedule))
            if schedule == "cooperative"
            else GemmConfig(tile_m=128, tile_n=128, schedule=Schedule.PINGPONG)
        )
    if tile is not None:
        if schedule == "auto" and config.schedule is Schedule.COOPERATIVE and int(tile[0]) < 128:
            # A 64-row tile is ping-pong's (a warpgroup per tile): the table's cluster on that schedule.
            pingpong = GemmConfig(tile_m=128, tile_n=128, schedule=Schedule.PINGPONG)
            config = TunedConfig(pingpong).reshaped(cluster_m=config.cluster_m, cluster_n=config.cluster_n)
        elif schedule == "auto" and config.schedule is Schedule.PINGPONG and not _one_warpgroup_holds(tile):
            # A tile one warpgroup's registers cannot hold is the cooperative schedule's (two warpgroups).
            cooperative = TunedConfig(GemmConfig(schedule=Schedule.COOPERATIVE))
            config = cooperative.reshaped(cluster_m=config.cluster_m, cluster_n=config.cluster_n)
        wg_split = _wg_split(config, tile)
        if wg_split == "n":  # the plain kernel: no mode extends a tile whose warpgroups split its columns
            config = TunedConfig(config.config, Modes(swap_ab=config.swap_ab))
        config = config.reshaped(tile_m=int(tile[0]), tile_n=int(tile[1]), wg_split=wg_split)
    if cluster is not None:
        config = config.reshaped(cluster_m=int(cluster[0]), cluster_n=int(cluster[1]))
    if stream_k is not None:
        if stream_k not in STREAM_K_CHOICES or isinstance(stream_k, int) and not isinstance(stream_k, bool):
            raise ValueError(
                f"stream_k = {stream_k!r} is invalid: allowed None (the table's choice), True, False, 'remainder' "
                "or 'aligned'"
            )
        config = config.with_(
            staging_in_ring=False,
            stream_k=bool(stream_k),
            stream_k_remainder=stream_k == "remainder",
            stream_k_aligned=stream_k == "aligned",
            split_k=1,
        )
    if split_k is not None:
        config = config.with_(staging_in_ring=False, deferred_chunks=0).with_split_k(split_k)
    if swap_ab:  # the plain kernel or the split-K asked for: the table's modes were chosen unswapped
        config = TunedConfig(config.config, Modes(swap_ab=True, split_k=config.split_k if split_k else 1))
    elif swap_ab is False and config.swap_ab:
        config = config.with_(swap_ab=False)
    # After the overrides: whether every CTA owns at most one tile depends on the final tile and cluster.
    config = single_wave_staging(config, problem, mnk, sms or H100_SMS)
    config.stages(problem)  # raises if it does not fit
    return config
