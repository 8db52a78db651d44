"""What one compiled GEMM kernel is: the problem's static facts and the kernel's shape choices.

:class:`Problem` holds what the caller's tensors fix (dtypes, B's layout, which epilogue terms are
on); :class:`GemmConfig` holds the kernel's choices (tile, cluster, schedule, rasterization, stage
counts). Both are frozen and validated on construction: a bad value is a ``ValueError`` that names the
field and the allowed values. The stage counts come from the shared-memory budget here, not from
guesses in the kernel.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace

#: Hopper's opt-in shared memory per CTA (sm_90: 227 KiB).
SMEM_CAPACITY = 232_448
#: Bytes the kernel keeps for barriers and alignment padding besides the A/B ring and the staging buffers.
SMEM_RESERVED = 2_048
WARPGROUP_THREADS = 128
ELEMENT_BYTES = {"fp16": 2, "bf16": 2}
#: The most A/B stages a default stage count takes. Small tiles stream better the deeper the ring:
#: ping-pong 64×64 at 128×4096² ran 17.5 / 16.6 / 16.2 / 15.7 / 15.9 µs with 8 / 9 / 10 / 12 / 13 stages,
#: 128×64 at 256×4096×8192 38.0 / 36.9 with 8 / 9 (H100, 2026-11-26; the cap was 8 before).
MAX_AB_STAGES = 16
#: The largest fp32 accumulator fragment per thread that still leaves room for the epilogue under 232 registers.
MAX_ACC_REGISTERS = 192


class Schedule(str, enum.Enum):
    """How the two math warpgroups share the work."""

    COOPERATIVE = "cooperative"
    """Both warpgroups compute one tile (each half of its rows), then both run its epilogue."""
    PINGPONG = "pingpong"
    """Each warpgroup owns every other tile; an ordered barrier alternates MMA and epilogue turns, so
    one warpgroup's epilogue runs under the other's MMAs."""


#: Partial sums a stream-K tile may have in remainder mode unless asked otherwise (shares of at least half a
#: tile meet a tile at most three times), and the most a configuration may ask for (shares of ⅛ of a tile).
STREAM_K_PARTIALS = 2
STREAM_K_MOST_PARTIALS = 8
#: The most parts ``GemmConfig.split_k`` may cut a tile's k-loop into.
SPLIT_K_MOST_PARTS = 8


def _bad(owner: str, name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{owner}.{name} = {value!r} is invalid: allowed {allowed}")


@dataclass(frozen=True)
class Problem:
    """The static facts of a call that change the compiled code.

    ``b_major``: ``"k"`` when B is given as (N, K) row-major (``x @ W.T``, ``nn.Linear``'s weight),
    ``"n"`` when B is (K, N) row-major. ``bias``: a per-column vector is added; ``scaled``: the
    accumulator is multiplied by a run-time ``alpha`` (off when alpha == 1, so no multiply is emitted).
    """

    dtype: str = "bf16"
    b_major: str = "k"
    out_dtype: str | None = None
    bias: bool = False
    scaled: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in ELEMENT_BYTES:
            raise _bad("Problem", "dtype", self.dtype, f"one of {sorted(ELEMENT_BYTES)}")
        if self.b_major not in ("k", "n"):
            raise _bad("Problem", "b_major", self.b_major, "'k' (B is (N, K)) or 'n' (B is (K, N))")
        if self.out_dtype is None:
            object.__setattr__(self, "out_dtype", self.dtype)
        if self.out_dtype not in ELEMENT_BYTES:
            raise _bad("Problem", "out_dtype", self.out_dtype, f"one of {sorted(ELEMENT_BYTES)}")

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def out_bytes(self) -> int:
        return ELEMENT_BYTES[self.out_dtype]


@dataclass(frozen=True)
class GemmConfig:
    """The kernel's shape: CTA tile, cluster, schedule, tile order and pipeline depths.

    ``raster``: which way consecutive tiles walk, ``"m"`` (down a band of ``group`` cluster columns) or ``"n"`` (along a
    band of ``group`` cluster rows). ``ab_stages`` / ``epi_stages``: None = as many A/B stages as shared memory holds
    next to ``epi_stages`` staging buffers, at most :data:`MAX_AB_STAGES` (default 4 for cooperative, 2 per warpgroup
    turn for ping-pong). ``stream_k`` (cooperative): when the cluster-tiles are not a whole number of waves, the last
    wave and a half are split by k-tiles evenly over every cluster (:class:`~hopper_gemm.schedule.StreamKSplit`); a
    split tile is summed through a global-memory workspace (:mod:`hopper_gemm.stream_k`). ``stream_k_remainder``: split
    only the partial wave's tiles when that gives every cluster at least half a tile (``StreamKSplit(remainder=True)``);
    ``stream_k_partials`` p (with it): at least 1/p of a tile instead, up to p partial sums per tile. Where the tiles
    are fewer than the clusters, that is split-K: the launch takes every resident cluster and each tile is cut into
    about clusters / tiles parts. ``stream_k_aligned`` (with ``stream_k``, not ``stream_k_remainder``): the partial
    wave's tiles are each split at one k-tile into a lead part, kept by its own cluster, and a follow part, which
    the clusters that wave leaves idle take a few at a time (:class:`~hopper_gemm.schedule.AlignedSplit`): every
    cluster then walks k in step, as whole tiles do; under a wave the launch takes every resident cluster too.
    ``split_k`` s > 1 (cooperative): s clusters compute each cluster-tile, each a
    contiguous s-th of its k-tiles, and sum it in parallel through a global workspace: every part posts its fp32
    partial, waits for the tile's others, adds their values of its own s-th of the subtiles and stores those
    (:mod:`hopper_gemm.split_k`). With more cluster-tiles than that fits, the whole waves are walked whole and only
    the last wave's tiles are split (its tiles × s must fit the resident clusters). ``epi_batch``: output
    subtiles staged per ``acquire`` of the staging ring (one wait and one barrier pair for that many buffers,
    :meth:`pipes.cute.TmaStoreStagingProducer.acquire`); it divides :attr:`subtiles` and is at most the staging buffers.
    ``deferred_chunks`` (cooperative): 0 for the staged epilogue; n > 0 holds a finished tile's outputs in registers and
    stores them under the next tile's first n k-tiles, each math warp its own 16-row pieces
    (:mod:`hopper_gemm.deferred_store`); it divides :attr:`subtiles`, and the held registers (half the accumulators')
    must fit beside them. ``staging_in_ring``: the epilogue's staging buffers borrow the first bytes of the A/B ring
    instead of memory of their own, which leaves room for one more A/B stage (128×128: 7 instead of 6). Only for a
    launch in which every CTA owns at most one tile (cluster-tiles ≤ resident clusters, which
    :func:`~hopper_gemm.launch.clusters_to_launch` checks): then no load lands in the ring after the tile's last k-tile.
    Not with ``stream_k`` or ``deferred_chunks`` (both keep the ring busy under an epilogue).

    ``pdl``: programmatic dependent launch. The kernel is launched with programmatic stream serialization
    allowed; every thread waits for the previous grid (``griddepcontrol.wait``) after the shared-memory
    barriers are set up and before its first global-memory access, and each CTA then lets the next grid
    launch (``griddepcontrol.launch_dependents``). Back-to-back launches overlap one kernel's set-up with
    the previous one's tail; after a kernel launched without it, nothing changes. ``gemm()`` turns it on.
    """

    tile_m: int = 128
    tile_n: int = 256
    cluster_m: int = 2
    cluster_n: int = 1
    schedule: Schedule = Schedule.COOPERATIVE
    raster: str = "m"
    group: int = 8
    tile_k: int = 64
    ab_stages: int | None = None
    epi_stages: int | None = None
    epi_n: int = 32
    stream_k: bool = False
    stream_k_remainder: bool = False
    stream_k_partials: int = STREAM_K_PARTIALS
    stream_k_aligned: bool = False
    split_k: int = 1
    epi_batch: int = 1
    deferred_chunks: int = 0
    staging_in_ring: bool = False
    pdl: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "schedule", _schedule(self.schedule))
        owner = "GemmConfig"
        if self.tile_k != 64:
            raise _bad(owner, "tile_k", self.tile_k, "64 (four 16-deep wgmma k-blocks per stage)")
        if self.tile_n not in (64, 128, 192, 256):
            raise _bad(owner, "tile_n", self.tile_n, "64, 128, 192 or 256 (a wgmma N extent)")
        if self.schedule is Schedule.COOPERATIVE and self.tile_m not in (128, 256):
            raise _bad(
                owner,
                "tile_m",
                self.tile_m,
                "128 or 256 with the cooperative schedule (two warpgroups, 64 or 128 rows each)",
            )
        if self.schedule is Schedule.PINGPONG and self.tile_m not in (64, 128):
            raise _bad(owner, "tile_m", self.tile_m, "64 or 128 with ping-pong (one warpgroup owns the tile)")
        if self.acc_registers > MAX_ACC_REGISTERS:
            raise ValueError(
                f"GemmConfig tile {self.tile_m}×{self.tile_n} with {self.schedule.value} is invalid: each math thread "
                f"would hold {self.tile_m}×{self.tile_n} / ({self.warpgroups_per_tile} warpgroup(s) × 128 threads) = "
                f"{self.acc_registers} fp32 accumulators; allowed at most {MAX_ACC_REGISTERS} (registers for the "
                "epilogue and addresses must fit under setmaxnreg 232)"
            )
        for name in ("cluster_m", "cluster_n"):
            value = getattr(self, name)
            if value not in (1, 2):
                raise _bad(owner, name, value, "1 or 2 (clusters 1×1, 2×1, 1×2, 2×2)")
        if self.raster not in ("m", "n"):
            raise _bad(owner, "raster", self.raster, "'m' or 'n'")
        if isinstance(self.group, bool) or not isinstance(self.group, int) or not 1 <= self.group <= 64:
            raise _bad(owner, "group", self.group, "an int in [1, 64] (cluster rows/columns per raster band)")
        if self.epi_n not in (32, 64) or self.tile_n % self.epi_n:
            raise _bad(owner, "epi_n", self.epi_n, f"32 or 64, dividing tile_n = {self.tile_n} (columns per TMA store)")
        if not isinstance(self.stream_k, bool):
            raise _bad(owner, "stream_k", self.stream_k, "True or False")
        if not isinstance(self.stream_k_remainder, bool) or (self.stream_k_remainder and not self.stream_k):
            raise _bad(owner, "stream_k_remainder", self.stream_k_remainder, "False, or True with stream_k = True")
        aligned = self.stream_k_aligned
        if not isinstance(aligned, bool) or (aligned and (not self.stream_k or self.stream_k_remainder)):
            raise _bad(
                owner, "stream_k_aligned", aligned, "False, or True with stream_k = True and stream_k_remainder = False"
            )
        most, partials = STREAM_K_MOST_PARTIALS, self.stream_k_partials
        if (
            isinstance(partials, bool)
            or not isinstance(partials, int)
            or not 2 <= partials <= most
            or (partials != STREAM_K_PARTIALS and not self.stream_k_remainder)
        ):
            raise _bad(
                owner,
                "stream_k_partials",
                partials,
                f"an int in [2, {most}] (partial sums per split tile), other than 2 only with stream_k_remainder",
            )
        if self.stream_k and self.schedule is not Schedule.COOPERATIVE:
            raise _bad(owner, "stream_k", self.stream_k, "False with ping-pong (stream-K splits cooperative tiles)")
        for name in ("ab_stages", "epi_stages"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 16):
                raise _bad(owner, name, value, f"None (from the smem budget) or an int in [1, {MAX_AB_STAGES}]")
        buffers = self.staging_buffers
        if (
            isinstance(self.epi_batch, bool)
            or not isinstance(self.epi_batch, int)
            or not 1 <= self.epi_batch <= buffers
            or self.subtiles % self.epi_batch
        ):
            allowed = f"an int in [1, {buffers}] (the staging buffers) dividing the tile's {self.subtiles} subtiles"
            raise _bad(owner, "epi_batch", self.epi_batch, allowed)
        self._check_deferred(owner)
        self._check_split_k(owner)
        if not isinstance(self.pdl, bool):
            raise _bad(owner, "pdl", self.pdl, "True or False")
        if not isinstance(self.staging_in_ring, bool):
            raise _bad(owner, "staging_in_ring", self.staging_in_ring, "True or False")
        if self.staging_in_ring and (self.stream_k or self.deferred_chunks):
            busy = "stream_k" if self.stream_k else "deferred_chunks"
            raise _bad(
                owner,
                "staging_in_ring",
                True,
                f"False with {busy} (its epilogue runs while loads still land in the A/B ring)",
            )

    def _check_split_k(self, owner: str) -> None:
        parts = self.split_k
        if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= SPLIT_K_MOST_PARTS:
            raise _bad(owner, "split_k", parts, f"an int in [1, {SPLIT_K_MOST_PARTS}] (1: no split-K)")
        if parts == 1:
            return
        if self.schedule is not Schedule.COOPERATIVE:
            raise _bad(owner, "split_k", parts, "1 with ping-pong (split-K splits cooperative tiles)")
        for name in ("stream_k", "deferred_chunks"):
            if getattr(self, name):
                raise _bad(owner, "split_k", parts, f"1 with {name} (each cluster computes one part of one tile)")
        if self.subtiles % parts or (self.subtiles // parts) % self.epi_batch:
            raise _bad(
                owner,
                "split_k",
                parts,
                f"a divisor of the tile's {self.subtiles} subtiles whose share is a multiple of epi_batch = "
                f"{self.epi_batch} (each part stores its share of the subtiles)",
            )

    def _check_deferred(self, owner: str) -> None:
        chunks = self.deferred_chunks
        if chunks == 0:
            return
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 0 or self.subtiles % chunks:
            allowed = f"0 (the staged epilogue) or a divisor of the tile's {self.subtiles} subtiles (a deferred one)"
            raise _bad(owner, "deferred_chunks", chunks, allowed)
        if self.schedule is not Schedule.COOPERATIVE:
            raise _bad(
                owner, "deferred_chunks", chunks, "0 with ping-pong (its epilogue already runs under the other's MMAs)"
            )
        held = self.acc_registers // 2
        if self.acc_registers + held > MAX_ACC_REGISTERS:
            raise ValueError(
                f"GemmConfig.deferred_chunks = {chunks} is invalid for tile {self.tile_m}×{self.tile_n}: each math "
                f"thread would hold {self.acc_registers} fp32 accumulators + {held} registers of the previous tile's "
                f"packed outputs = {self.acc_registers + held}; allowed at most {MAX_ACC_REGISTERS}"
            )

    # --- derived shape -------------------------------------------------------------------------
    @property
    def warpgroups_per_tile(self) -> int:
        return 2 if self.schedule is Schedule.COOPERATIVE else 1

    @property
    def acc_registers(self) -> int:
        return self.tile_m * self.tile_n // (self.warpgroups_per_tile * WARPGROUP_THREADS)

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def epi_tile(self) -> tuple[int, int]:
        """The (rows, columns) of one staged output subtile: one TMA store."""
        rows = 64 * self.warpgroups_per_tile
        return (min(rows, self.tile_m), self.epi_n)

    @property
    def subtiles(self) -> int:
        rows, cols = self.epi_tile
        return (self.tile_m // rows) * (self.tile_n // cols)

    @property
    def partial_sums(self) -> bool:
        """Whether tiles are summed across clusters through a global workspace (stream-K or split-K)."""
        return self.stream_k or self.split_k > 1

    def cluster_grid(self, m: int, n: int) -> tuple[int, int]:
        """(cluster rows, cluster columns) of an M×N output, as
        :meth:`hopper_gemm.schedule.TileOrder.cluster_grid` counts them (a cluster may hang over the edge)."""
        rows, cols = -(-m // self.tile_m), -(-n // self.tile_n)
        return -(-rows // self.cluster_m), -(-cols // self.cluster_n)

    def cluster_tiles(self, m: int, n: int) -> int:
        """The cluster-tiles of an M×N output, what the persistent clusters walk."""
        rows, cols = self.cluster_grid(m, n)
        return rows * cols

    def one_wave_clusters(self, m: int, n: int) -> int:
        """The clusters that give each CTA of an M×N output one tile, or with ``split_k`` one part of one
        (:meth:`hopper_gemm.schedule.SplitK.clusters`: cluster-tiles × parts)."""
        return self.cluster_tiles(m, n) * self.split_k

    def stage_bytes(self, problem: Problem) -> int:
        """Shared memory of one A/B stage."""
        return (self.tile_m + self.tile_n) * self.tile_k * problem.element_bytes

    def staging_bytes(self, problem: Problem) -> int:
        """Shared memory of one output staging buffer."""
        rows, cols = self.epi_tile
        return rows * cols * problem.out_bytes

    @property
    def staging_buffers(self) -> int:
        """The epilogue's staging buffers: ``epi_stages``, or 4 (cooperative) / 2 (ping-pong)."""
        return self.epi_stages if self.epi_stages is not None else 4 if self.schedule is Schedule.COOPERATIVE else 2

    def stages(self, problem: Problem) -> tuple[int, int]:
        """``(ab_stages, epi_stages)``: the given ones, or what fits the shared-memory budget."""
        epi = self.staging_buffers
        staging = 0 if self.staging_in_ring else epi * self.staging_bytes(problem)
        budget = SMEM_CAPACITY - SMEM_RESERVED - staging
        fit = budget // self.stage_bytes(problem)
        ab = self.ab_stages if self.ab_stages is not None else min(fit, MAX_AB_STAGES)
        if ab < 2 or ab > fit:
            raise ValueError(
                f"GemmConfig {self.tile_m}×{self.tile_n}×{self.tile_k} ({problem.dtype}): ab_stages = {ab} is invalid: "
                f"shared memory holds ({SMEM_CAPACITY} - {SMEM_RESERVED} reserved - {staging} B of staging) "
                f"// {self.stage_bytes(problem)} B per stage = {fit} stages; "
                f"allowed 2..{fit}"
            )
        a_ring = ab * self.tile_m * self.tile_k * problem.element_bytes
        if self.staging_in_ring and epi * self.staging_bytes(problem) > a_ring:
            raise ValueError(
                f"GemmConfig.staging_in_ring = True is invalid here: {epi} staging buffers × "
                f"{self.staging_bytes(problem)} B do not fit in the A ring's {ab} × {self.tile_m}×{self.tile_k} "
                f"elements = {a_ring} B"
            )
        return ab, epi

    def with_(self, **changes: object) -> GemmConfig:
        return replace(self, **changes)

    def reshaped(self, **changes: object) -> GemmConfig:
        """``with_(**changes)`` for a new tile, cluster or schedule, keeping the epilogue's choices where the
        new shape allows them: ``epi_batch`` and ``deferred_chunks`` become their largest values at most the
        old ones that the new tile's subtiles, staging buffers, schedule and registers accept (else 1 / 0);
        ``staging_in_ring`` goes off (whether each CTA owns one tile depends on the shape: the caller's
        rule, :func:`~hopper_gemm.autotable.single_wave_staging`, decides again, and the stage count it
        set goes back to the smem budget's), and so does ``split_k`` (its parts were counted for the old
        tile's grid)."""
        # A ring pick's stage count is the ring rule's (single_wave_staging), counted for the old tile.
        stages = None if self.staging_in_ring else self.ab_stages
        base = replace(
            self, epi_batch=1, deferred_chunks=0, staging_in_ring=False, split_k=1, ab_stages=stages, **changes
        )
        batch = _largest_accepted(self.epi_batch, lambda b: base.with_(epi_batch=b)) or base
        chunks = _largest_accepted(self.deferred_chunks, lambda d: batch.with_(deferred_chunks=d))
        return chunks or batch

    def describe(self) -> str:
        return (
            f"{self.schedule.value} tile {self.tile_m}×{self.tile_n}×{self.tile_k} cluster {self.cluster_m}×"
            f"{self.cluster_n} raster {self.raster}/{self.group}"
            + (f" epilogue {self.epi_tile[0]}×{self.epi_n}" if self.epi_n != 32 else "")
            + (" stream-K" if self.stream_k else "")
            + (" (remainder)" if self.stream_k_remainder else "")
            + (" (aligned)" if self.stream_k_aligned else "")
            + (f" up to {self.stream_k_partials} partials" if self.stream_k_partials != STREAM_K_PARTIALS else "")
            + (f" split-K in {self.split_k}" if self.split_k > 1 else "")
            + (f" {self.epi_batch} subtiles per acquire" if self.epi_batch > 1 else "")
            + (f" deferred store in {self.deferred_chunks}" if self.deferred_chunks else "")
            + (" staging in the A/B ring" if self.staging_in_ring else "")
            + (" PDL" if self.pdl else "")
        )


def _largest_accepted(most: int, build: Callable[[int], GemmConfig]) -> GemmConfig | None:
    """``build(v)`` for the largest v in [1, most] it accepts (raises no ValueError for); None if none."""
    for value in range(most, 0, -1):
        try:
            return build(value)
        except ValueError:
            continue
    return None


def _schedule(value: object) -> Schedule:
    try:
        return Schedule(value)
    except ValueError:
        raise _bad("GemmConfig", "schedule", value, f"one of {[s.value for s in Schedule]}") from None
