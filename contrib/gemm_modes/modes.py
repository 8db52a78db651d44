"""What the performance modes change about a compiled GEMM: :class:`Modes`, and :class:`TunedConfig`, a
teaching :class:`~hopper_gemm.config.GemmConfig` with its modes (what ``gemm(schedule="auto")`` picks).

=======================  ==============================================================================
mode                     what it does
=======================  ==============================================================================
``stream_k``             (cooperative) when the cluster-tiles are not a whole number of waves, the last
                         wave and a half are split by k-tiles evenly over every cluster
                         (:class:`~gemm_modes.splits.StreamKSplit`); a split tile is summed through a
                         global-memory workspace (:mod:`gemm_modes.stream_k`)
``stream_k_remainder``   only the partial wave's tiles, when that gives every cluster at least 1 /
                         ``stream_k_partials`` of a tile (up to that many partial sums per tile); under a
                         wave, every resident cluster is launched and each tile cut in about clusters /
                         tiles parts
``stream_k_aligned``     the partial wave's tiles each split at one k-tile into a lead part, kept by its
                         own cluster, and a follow part, which the idle clusters take a few at a time
                         (:class:`~gemm_modes.splits.AlignedSplit`): every cluster walks k in step
``split_k`` s > 1        (cooperative) s clusters compute each cluster-tile, each a contiguous s-th of
                         its k-tiles, and sum it in parallel through a global workspace
                         (:mod:`gemm_modes.split_k`); past one wave only the last wave's tiles
``deferred_chunks`` n    (cooperative) a finished tile's outputs are held in registers and stored under
                         the next tile's first n k-tiles, each math warp its own 16-row pieces
                         (:mod:`gemm_modes.deferred_store`)
``staging_in_ring``      the epilogue's staging buffers borrow the first bytes of the A/B ring, which
                         leaves room for one more A/B stage; only where every CTA owns at most one tile
``swap_ab``              the launch computes Cᵀ = B·Aᵀ into C's memory, column-major
                         (:func:`hopper_gemm.api.swapped`): the tile's rows run along N and its columns
                         along M; the plain kernel or split-K (each stores through the plain kernel's
                         path), no other mode, no bias
=======================  ==============================================================================

Each is validated against the configuration it extends: a bad value is a ``ValueError`` that names the
field and the allowed values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from hopper_gemm.config import MAX_ACC_REGISTERS, GemmConfig, Problem, Schedule

#: Partial sums a stream-K tile may have in remainder mode unless asked otherwise (shares of at least half a
#: tile meet a tile at most three times), and the most a configuration may ask for (shares of ⅛ of a tile).
STREAM_K_PARTIALS = 2
STREAM_K_MOST_PARTIALS = 8
#: The most parts ``split_k`` may cut a tile's k-loop into.
SPLIT_K_MOST_PARTS = 8


def _bad(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"GemmConfig.{name} = {value!r} is invalid: allowed {allowed}")


def _flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise _bad(name, value, "True or False")


@dataclass(frozen=True)
class Modes:
    """The performance modes of one compiled GEMM (the table above); all off by default."""

    stream_k: bool = False
    stream_k_remainder: bool = False
    stream_k_partials: int = STREAM_K_PARTIALS
    stream_k_aligned: bool = False
    split_k: int = 1
    deferred_chunks: int = 0
    staging_in_ring: bool = False
    swap_ab: bool = False

    @property
    def partial_sums(self) -> bool:
        """Whether tiles are summed across clusters through a global workspace (stream-K or split-K)."""
        return self.stream_k or self.split_k > 1

    @property
    def takes_math_role(self) -> bool:
        """Whether the math warpgroups run :meth:`gemm_modes.hooks.ModeHooks.math` (a split or a deferred
        epilogue) instead of the teaching kernel's own loop."""
        return self.partial_sums or self.deferred_chunks > 0

    @property
    def plain_or_split_k(self) -> bool:
        """Whether no mode is on but ``split_k`` (and ``swap_ab``): every store goes through the plain kernel's
        ``store_tile``, so C may be column-major (a swapped launch)."""
        return replace(self, swap_ab=False, split_k=1) == Modes()

    @property
    def active(self) -> bool:
        """Whether the kernel runs with mode hooks (``swap_ab`` changes the launch, not the kernel's code)."""
        return replace(self, swap_ab=False) != Modes()

    def check(self, config: GemmConfig) -> None:
        """``ValueError`` unless these modes can run on ``config``."""
        for name in ("stream_k", "stream_k_remainder", "stream_k_aligned", "staging_in_ring", "swap_ab"):
            _flag(name, getattr(self, name))
        if self.swap_ab and not self.plain_or_split_k:
            raise _bad(
                "swap_ab",
                True,
                f"False with{self.describe().replace(' swapped (Cᵀ = B·Aᵀ)', '')} (a swapped "
                "launch stores C column by column: the plain kernel, or split-K alone)",
            )
        if self.stream_k_remainder and not self.stream_k:
            raise _bad("stream_k_remainder", True, "False, or True with stream_k = True")
        if self.stream_k_aligned and (not self.stream_k or self.stream_k_remainder):
            raise _bad("stream_k_aligned", True, "False, or True with stream_k = True and stream_k_remainder = False")
        partials = self.stream_k_partials
        if (
            isinstance(partials, bool)
            or not isinstance(partials, int)
            or not 2 <= partials <= STREAM_K_MOST_PARTIALS
            or (partials != STREAM_K_PARTIALS and not self.stream_k_remainder)
        ):
            raise _bad(
                "stream_k_partials",
                partials,
                f"an int in [2, {STREAM_K_MOST_PARTIALS}] (partial sums per split tile), other than 2 only with "
                "stream_k_remainder",
            )
        if self.stream_k and config.schedule is not Schedule.COOPERATIVE:
            raise _bad("stream_k", True, "False with ping-pong (stream-K splits cooperative tiles)")
        if config.wg_split == "n" and not self.plain_or_split_k:
            raise ValueError(
                f"modes{self.describe()} are invalid with GemmConfig.wg_split = 'n': a tile whose warpgroups split "
                "its columns runs on the plain kernel or with split-K alone (the other modes address a warpgroup's "
                "accumulators as whole rows)"
            )
        self._check_deferred(config)
        self._check_split_k(config)
        if self.staging_in_ring and (self.stream_k or self.deferred_chunks):
            busy = "stream_k" if self.stream_k else "deferred_chunks"
            raise _bad(
                "staging_in_ring", True, f"False with {busy} (its epilogue runs while loads still land in the A/B ring)"
            )

    def _check_split_k(self, config: GemmConfig) -> None:
        parts = self.split_k
        if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= SPLIT_K_MOST_PARTS:
            raise _bad("split_k", parts, f"an int in [1, {SPLIT_K_MOST_PARTS}] (1: no split-K)")
        if parts == 1:
            return
        if config.schedule is not Schedule.COOPERATIVE:
            raise _bad("split_k", parts, "1 with ping-pong (split-K splits cooperative tiles)")
        for name in ("stream_k", "deferred_chunks"):
            if getattr(self, name):
                raise _bad("split_k", parts, f"1 with {name} (each cluster computes one part of one tile)")
        if parts > config.mma_subtiles // config.epi_batch:
            whose = "a warpgroup's half's" if config.wg_split == "n" else "the tile's"
            raise _bad(
                "split_k",
                parts,
                f"at most {whose} {config.mma_subtiles} subtiles / epi_batch = {config.epi_batch}, "
                f"{config.mma_subtiles // config.epi_batch} (each part stores a share of whole batches of subtiles)",
            )

    def _check_deferred(self, config: GemmConfig) -> None:
        chunks = self.deferred_chunks
        if chunks == 0:
            return
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 0 or config.subtiles % chunks:
            allowed = f"0 (the staged epilogue) or a divisor of the tile's {config.subtiles} subtiles (a deferred one)"
            raise _bad("deferred_chunks", chunks, allowed)
        if config.schedule is not Schedule.COOPERATIVE:
            raise _bad("deferred_chunks", chunks, "0 with ping-pong (its epilogue already runs under the other's MMAs)")
        held = config.acc_registers // 2
        if config.acc_registers + held > MAX_ACC_REGISTERS:
            raise ValueError(
                f"GemmConfig.deferred_chunks = {chunks} is invalid for tile {config.tile_m}×{config.tile_n}: each math "
                f"thread would hold {config.acc_registers} fp32 accumulators + {held} registers of the previous tile's "
                f"packed outputs = {config.acc_registers + held}; allowed at most {MAX_ACC_REGISTERS}"
            )

    def describe(self) -> str:
        return (
            (" stream-K" if self.stream_k else "")
            + (" (remainder)" if self.stream_k_remainder else "")
            + (" (aligned)" if self.stream_k_aligned else "")
            + (f" up to {self.stream_k_partials} partials" if self.stream_k_partials != STREAM_K_PARTIALS else "")
            + (f" split-K in {self.split_k}" if self.split_k > 1 else "")
            + (f" deferred store in {self.deferred_chunks}" if self.deferred_chunks else "")
            + (" staging in the A/B ring" if self.staging_in_ring else "")
            + (" swapped (Cᵀ = B·Aᵀ)" if self.swap_ab else "")
        )


_MODE_FIELDS = frozenset(f.name for f in fields(Modes))
_CONFIG_FIELDS = frozenset(f.name for f in fields(GemmConfig))


@dataclass(frozen=True)
class TunedConfig:
    """A teaching :class:`GemmConfig` and the :class:`Modes` it runs with, checked together on construction.

    ``TunedConfig(tile_m=128, stream_k=True)`` takes every field of either by name; the fields and
    properties of both read as its own (``tuned.tile_m``, ``tuned.split_k``, ``tuned.subtiles``), and
    :meth:`with_` sends each change to the one that has the field."""

    config: GemmConfig
    modes: Modes

    def __init__(self, config: GemmConfig | None = None, modes: Modes | None = None, **fields_: Any) -> None:
        config = config if config is not None else GemmConfig()
        modes = modes if modes is not None else Modes()
        config_changes, mode_changes = _route(fields_)
        object.__setattr__(self, "config", config.with_(**config_changes))
        object.__setattr__(self, "modes", replace(modes, **mode_changes))
        self.modes.check(self.config)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not TunedConfig's own: the configuration's, then the modes'.
        if name.startswith("__"):
            raise AttributeError(name)
        config = object.__getattribute__(self, "config")
        if hasattr(config, name):
            return getattr(config, name)
        return getattr(object.__getattribute__(self, "modes"), name)

    def with_(self, **changes: Any) -> TunedConfig:
        return TunedConfig(self.config, self.modes, **changes)

    def reshaped(self, **changes: Any) -> TunedConfig:
        """``with_(**changes)`` for a new tile, cluster or schedule, keeping the epilogue's choices where the new
        shape allows them: ``epi_batch`` and ``deferred_chunks`` become their largest values at most the old
        ones that the new tile's subtiles, staging buffers, schedule and registers accept (else 1 / 0);
        ``staging_in_ring`` goes off (whether each CTA owns one tile depends on the shape:
        :func:`~gemm_modes.autotable.single_wave_staging` decides again, and the stage count it set goes back
        to the smem budget's), and so does ``split_k`` (its parts were counted for the old tile's grid)."""
        stages = None if self.modes.staging_in_ring else self.config.ab_stages
        config = self.config.with_(ab_stages=stages, epi_batch=1, **changes)
        base = TunedConfig(config, replace(self.modes, deferred_chunks=0, staging_in_ring=False, split_k=1))
        batch = _largest_accepted(self.config.epi_batch, lambda b: base.with_(epi_batch=b)) or base
        return _largest_accepted(self.modes.deferred_chunks, lambda d: batch.with_(deferred_chunks=d)) or batch

    def with_split_k(self, parts: int) -> TunedConfig:
        """``with_(split_k=parts)``, the staged subtile narrowed (``epi_n`` 32 → 16 → 8) where the tile's
        subtiles are fewer than the parts: each part stores a share of whole subtiles (128×64 in 8 parts:
        eight subtiles of 8 columns). A part count no subtile width serves raises as ``with_`` does."""
        config = self.with_(split_k=1)
        for epi_n in (16, 8):
            if config.mma_subtiles // config.epi_batch >= parts:
                break
            if epi_n < config.epi_n and config.mma_tile[1] % epi_n == 0:
                config = config.with_(epi_n=epi_n)
        return config.with_(split_k=parts)

    @property
    def partial_sums(self) -> bool:
        return self.modes.partial_sums

    def launch_shape(self, m: int, n: int) -> tuple[int, int]:
        """The output this configuration's launch computes for an M×N C: N × M for a swapped one (Cᵀ = B·Aᵀ),
        else M × N; its tiles' rows run along the first."""
        return (n, m) if self.swap_ab else (m, n)

    def launch_tiles(self, m: int, n: int) -> int:
        """The tiles of this configuration's launch on an M×N C (on Cᵀ where swapped: :meth:`launch_shape`),
        times its split-K parts: the units its CTAs share out, whether clusters pad them or not."""
        rows, cols = self.launch_shape(m, n)
        return -(-rows // self.tile_m) * -(-cols // self.tile_n) * self.modes.split_k

    def one_wave_clusters(self, m: int, n: int) -> int:
        """The clusters that give each CTA of an M×N output one tile, or with ``split_k`` one part of one
        (:meth:`gemm_modes.splits.SplitK.clusters`: cluster-tiles × parts)."""
        return self.config.cluster_tiles(m, n) * self.modes.split_k

    def stages(self, problem: Problem) -> tuple[int, int]:
        """:meth:`GemmConfig.stages`, with the staging buffers in the A ring where ``staging_in_ring`` (which
        must then hold them)."""
        config, ring = self.config, self.modes.staging_in_ring
        ab, epi = config.stages(problem, own_staging=not ring)
        a_ring = ab * config.tile_m * config.tile_k * problem.element_bytes
        if ring and epi * config.staging_bytes(problem) > a_ring:
            raise ValueError(
                f"GemmConfig.staging_in_ring = True is invalid here: {epi} staging buffers × "
                f"{config.staging_bytes(problem)} B do not fit in the A ring's {ab} × {config.tile_m}×{config.tile_k} "
                f"elements = {a_ring} B"
            )
        return ab, epi

    def describe(self) -> str:
        return self.config.with_(pdl=False).describe() + self.modes.describe() + (" PDL" if self.config.pdl else "")


def _largest_accepted(most: int, build: Any) -> TunedConfig | None:
    """``build(v)`` for the largest v in [1, most] it accepts (raises no ValueError for); None if none."""
    for value in range(most, 0, -1):
        try:
            return build(value)
        except ValueError:
            continue
    return None


def _route(changes: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split field changes into the configuration's and the modes'; an unknown name is a ``TypeError``."""
    unknown = set(changes) - _MODE_FIELDS - _CONFIG_FIELDS
    if unknown:
        raise TypeError(f"TunedConfig has no field {sorted(unknown)}: allowed {sorted(_CONFIG_FIELDS | _MODE_FIELDS)}")
    return (
        {k: v for k, v in changes.items() if k in _CONFIG_FIELDS},
        {k: v for k, v in changes.items() if k in _MODE_FIELDS},
    )


def tuned_config(*args: Any, **fields_: Any) -> TunedConfig:
    """``GemmConfig(*args)`` with every field of either by name: ``tuned_config(128, 256, 2, 1, stream_k=True)``."""
    config_changes, mode_changes = _route(fields_)
    return TunedConfig(GemmConfig(*args, **config_changes), **mode_changes)


def tuned(config: GemmConfig | TunedConfig) -> TunedConfig:
    """``config`` as a :class:`TunedConfig` (a plain configuration: no modes)."""
    return config if isinstance(config, TunedConfig) else TunedConfig(config)
