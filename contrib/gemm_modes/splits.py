"""The GEMM's work split beyond the tile order: stream-K, the aligned split and split-K.

The persistent tile order itself (:class:`~pipes.tile_order.TileOrder`: grouped rasterization, and the
*steps* a copy engine ships) is the library's. Every function here is plain
``+ - * //`` and ``min``, so the same code runs on Python ints (the CPU tests, the checker's models) and
on CuTe DSL integers inside the kernel: the load warp and the math warpgroups agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipes.tile_order import ceil_div
from pipes.tile_order import minimum as _min

from .modes import STREAM_K_PARTIALS


def _max(a: Any, b: Any) -> Any:
    return a + b - _min(a, b)


@dataclass(frozen=True)
class StreamKSplit:
    """Which cluster computes which k-tiles of which cluster-tile, with stream-K after whole waves.

    With ``T`` cluster-tiles on ``C`` clusters and ``T mod C = R > 0``, the last wave runs ``R`` of ``C``
    clusters while the others idle: 3.88 waves at 4096³ (256×128 tiles, 66 clusters), 8.73 at 6144³.
    The first tiles are walked whole (data-parallel, as without stream-K); the last ones are laid end to
    end as one stream of k-tiles cut into ``C`` equal shares, cluster ``c`` taking k-tiles
    ``[c·share, (c+1)·share)``:

    * ``remainder=False`` (the default): the last ``C + R`` tiles (needs ``T > C``); a share is at least a
      tile (⌈(C + R)·k_tiles / C⌉), so a tile spans at most two shares;
    * ``remainder=True``: only the last ``R`` tiles, when that makes shares of at least ``1 / partials`` of
      a tile (``partials·⌈R·k_tiles / C⌉ ≥ k_tiles``; otherwise as ``False``), so a tile spans at most
      ``partials + 1`` shares. Fewer k-tiles run in the split phase, where clusters work at k offsets no
      other shares. With fewer tiles than clusters (``T < C``, no whole wave) every tile is cut into about
      ``C / T`` parts, when the launch has every resident cluster
      (:func:`~gemm_modes.launch.clusters_to_launch`), and summed by one unit each; :class:`SplitK` sums
      such parts in parallel (measured faster).

    A tile's unit with k-tile 0 (``kb == 0``) comes last in its cluster's share; the others come first in
    theirs, so they post their partials (slot ``part - 1``, :meth:`part`) before the first one adds them
    (:meth:`partials` of them) and stores the tile. Every wait is for other clusters' first units, which
    wait for nothing: no cycle.

    Plain ``+ - * //`` and ``min`` on ints or CuTe DSL integers, like :class:`TileOrder`: the load warp,
    the math warpgroups and the CPU tests run the same code.
    """

    dp_tiles: Any  # cluster-tiles walked whole, first
    sk_tiles: Any  # cluster-tiles split, after them
    share: Any  # k-tiles per cluster in the split phase (0: no split)

    @staticmethod
    def slots(remainder: bool, partials: int = STREAM_K_PARTIALS) -> int:
        """Partial slots per split tile: ``partials`` with ``remainder``, else 1 (shares of at least a whole
        tile meet a tile at most twice)."""
        return partials if remainder else 1

    @classmethod
    def of(
        cls, cluster_tiles: Any, clusters: Any, k_tiles: Any, remainder: bool = False, partials: int = STREAM_K_PARTIALS
    ) -> StreamKSplit:
        full = cluster_tiles // clusters
        rem = cluster_tiles - full * clusters
        partial_wave = _min(rem, 1)  # 1 when the waves are not whole
        alone = 0
        if remainder:  # the partial wave alone, when its shares are at least 1 / partials of a tile
            alone = partial_wave * _min(1, partials * ceil_div(rem * k_tiles, clusters) // k_tiles)
        with_wave = partial_wave * (1 - alone) * _min(full, 1)  # one whole wave too (needs one)
        sk_tiles = alone * rem + with_wave * (clusters + rem)
        share = ceil_div(sk_tiles * k_tiles, clusters)
        return cls(cluster_tiles - sk_tiles, sk_tiles, share)

    def stream(self, cluster_id: Any, k_tiles: Any) -> tuple[Any, Any]:
        """``[begin, end)`` of this cluster's k-tiles in the split phase's stream (empty without a split)."""
        begin = cluster_id * self.share
        return begin, _min(self.sk_tiles * k_tiles, begin + self.share)

    @staticmethod
    def unit(at: Any, end: Any, k_tiles: Any) -> tuple[Any, Any, Any]:
        """The unit starting at stream position ``at`` (< ``end``): (split tile, first k-tile, end k-tile)."""
        tile = at // k_tiles
        kb = at - tile * k_tiles
        return tile, kb, _min(k_tiles, kb + end - at)

    def partials(self, tile: Any, k_tiles: Any) -> Any:
        """How many partial sums the storing unit of split ``tile`` adds (one per other share it spans)."""
        first = tile * k_tiles
        return (first + k_tiles - 1) // self.share - first // self.share

    def part(self, at: Any, tile: Any, k_tiles: Any) -> Any:
        """Which part of split ``tile`` the unit starting at stream position ``at`` is: 0 for the one with
        k-tile 0 (it stores the tile), 1 … :meth:`partials` for the others (each posts partial slot part−1)."""
        return at // self.share - (tile * k_tiles) // self.share


#: The aligned split's fix-up in k-tiles of a cooperative 128×256 tile (H100: a k-tile 0.69 µs, posting a
#: partial 3.4 µs, adding one 4.1 µs; ``RESULTS.md``, stream-K's split phase timed from inside): what
#: :meth:`AlignedSplit.of` balances a lead's k-tiles against its followers'.
ALIGNED_POST_K_TILES = 5
ALIGNED_ADD_K_TILES = 6


@dataclass(frozen=True)
class AlignedSplit:
    """Stream-K with every cluster at the same k (``GemmConfig.stream_k_aligned``): the partial wave's ``R``
    cluster-tiles are split at one k-tile ``lead`` into a *lead* part (k-tiles ``[0, lead)``, its own cluster,
    which adds the other part and stores the tile) and a *follow* part (``[lead, K)``); the ``C − R``
    clusters the partial wave leaves idle take the follow parts ``per_follower`` tiles at a time, one
    after another. Under a wave (no whole tile before), every tile is split so::

        clusters 0 … R−1     lead of tile c:          k 0 ──────────────────▶ lead   add, store
        clusters R, R+1, …   follow of tiles q·j …:   k lead ──▶ K │ lead ──▶ K │ …  (post each)

    :class:`StreamKSplit`'s shares start wherever the stream cuts them: each cluster loads k-tiles no other
    is at, and where the operands outgrow the L2 they come from DRAM again (3072×1024×8192, 48 tiles on
    66 clusters: 0.60 of torch, the unsplit tile 0.81). Here the leads walk k in step as whole tiles
    do, and so do the followers among themselves. ``lead`` balances a lead plus one addition against
    ``per_follower`` follow parts, each followed by its post (:data:`ALIGNED_POST_K_TILES`,
    :data:`ALIGNED_ADD_K_TILES`); where that leaves no follow part (a short K, many tiles per follower) the
    tiles stay whole (``sk_tiles`` 0). Leads wait only for followers, which wait for nothing: no cycle.

    The same interface as :class:`StreamKSplit` (``dp_tiles``, ``sk_tiles``, :meth:`stream`, :meth:`unit`,
    :meth:`partials`, :meth:`part`), on the stream of the leads end to end followed by the follow parts
    end to end; plain ``+ - * //`` and ``min`` on ints or CuTe DSL integers.
    """

    dp_tiles: Any  # cluster-tiles walked whole, first
    sk_tiles: Any  # cluster-tiles split, after them (R)
    lead: Any  # k-tiles of each split tile's lead part
    per_follower: Any  # follow parts per idle cluster (q)

    @staticmethod
    def slots() -> int:
        """Partial slots per split tile: its one follow part."""
        return 1

    @classmethod
    def of(cls, cluster_tiles: Any, clusters: Any, k_tiles: Any) -> AlignedSplit:
        """The split of ``cluster_tiles`` tiles of ``k_tiles`` k-tiles on ``clusters`` clusters."""
        full = cluster_tiles // clusters
        rem = cluster_tiles - full * clusters
        per_follower = ceil_div(rem, _max(clusters - rem, 1))
        # lead + add = q · (K − lead + post), rounded up; at least 1, at most K (then nothing follows)
        balanced = ceil_div(per_follower * (k_tiles + ALIGNED_POST_K_TILES) - ALIGNED_ADD_K_TILES, per_follower + 1)
        lead = _min(k_tiles, _max(balanced, 1))
        split = rem * _min(k_tiles - lead, 1)  # nothing follows a lead of every k-tile: no split
        return cls(cluster_tiles - split, split, lead, per_follower)

    def follow(self, k_tiles: Any) -> Any:
        """k-tiles of each split tile's follow part (0: the split tiles stay whole)."""
        return k_tiles - self.lead

    def stream(self, cluster_id: Any, k_tiles: Any) -> tuple[Any, Any]:
        """``[begin, end)`` of this cluster's positions: its lead, or its run of follow parts (empty for
        the clusters past the followers needed, and for all without a split)."""
        leads, follow = self.sk_tiles * self.lead, self.follow(k_tiles)
        follower = _min(cluster_id // _max(self.sk_tiles, 1), 1)  # 0 for a lead's cluster
        first = follower * (cluster_id - self.sk_tiles) * self.per_follower
        begin = (1 - follower) * cluster_id * self.lead + follower * (leads + first * follow)
        end_follow = leads + _min(self.sk_tiles, first + self.per_follower) * follow
        end = (1 - follower) * (cluster_id + 1) * self.lead + follower * end_follow
        return begin, _min(end, leads + self.sk_tiles * follow)

    def unit(self, at: Any, end: Any, k_tiles: Any) -> tuple[Any, Any, Any]:
        """The unit at stream position ``at`` (< ``end``): (split tile, first k-tile, end k-tile)."""
        leads, follow = self.sk_tiles * self.lead, self.follow(k_tiles)
        following = self.part(at, None, k_tiles)
        lead_tile = at // self.lead
        off = following * (at - leads)
        follow_tile = off // _max(follow, 1)
        tile = (1 - following) * lead_tile + following * follow_tile
        kb = (1 - following) * (at - lead_tile * self.lead) + following * (self.lead + off - follow_tile * follow)
        limit = (1 - following) * self.lead + following * k_tiles
        return tile, kb, _min(limit, kb + end - at)

    def partials(self, tile: Any, k_tiles: Any) -> Any:
        """Partial sums the lead of split ``tile`` adds: 1, or 0 where nothing follows."""
        return _min(self.follow(k_tiles), 1)

    def part(self, at: Any, tile: Any, k_tiles: Any) -> Any:
        """0 for a lead, 1 for a follow part (it posts slot 0): whether ``at`` is past the leads."""
        return _min(at // _max(self.sk_tiles * self.lead, 1), 1)


def stream_k_split(config: Any, cluster_tiles: Any, clusters: Any, k_tiles: Any) -> Any:
    """The split a ``stream_k`` configuration walks: :class:`AlignedSplit` with ``stream_k_aligned``, else
    :class:`StreamKSplit` (``stream_k_remainder``, ``stream_k_partials``). The kernel, the launch and
    the CPU model all call it."""
    if config.stream_k_aligned:
        return AlignedSplit.of(cluster_tiles, clusters, k_tiles)
    return StreamKSplit.of(
        cluster_tiles, clusters, k_tiles, remainder=config.stream_k_remainder, partials=config.stream_k_partials
    )


@dataclass(frozen=True)
class SplitK:
    """Split-K on the last wave: the cluster-tiles of the whole waves are walked whole first (none where
    the tiles are fewer than the clusters: all are split, one wave); then cluster ``c`` computes part
    ``c mod parts`` of split tile ``c // parts`` (cluster-tile :meth:`first_split` + that), the k-tiles
    ``[part·K / parts, (part+1)·K / parts)`` (floors: the parts differ by at most one k-tile; a part is
    empty only when K has fewer k-tiles than parts). The load warp, the math warpgroups, the fix-up's flag
    counts and the CPU model all call these methods.

    The fix-up (:mod:`gemm_modes.split_k`) counts on one flag per CTA tile: every part adds 1 when its
    partial is posted, so :meth:`posted` means all are; every part but 0 adds 1 more once it has seen
    that, so part 0 puts the flag back to 0 at :meth:`seen` (no part still polls it)."""

    parts: int

    def clusters(self, cluster_tiles: Any) -> Any:
        """Clusters a one-wave launch needs: one per part of every cluster-tile."""
        return cluster_tiles * self.parts

    @staticmethod
    def first_split(cluster_tiles: Any, clusters: Any) -> Any:
        """The cluster-tiles walked whole before the split ones: the whole waves of ``clusters`` (0 in a
        one-wave launch of :meth:`clusters`; all of them where the clusters divide the tiles)."""
        return cluster_tiles // clusters * clusters

    def unit(self, cluster_id: Any, k_tiles: Any) -> tuple[Any, Any, Any, Any]:
        """(cluster-tile, part, first k-tile, end k-tile) of cluster ``cluster_id``."""
        tile = cluster_id // self.parts
        part = cluster_id - tile * self.parts
        return tile, part, part * k_tiles // self.parts, (part + 1) * k_tiles // self.parts

    def share(self, part: int, subtiles: int, batch: int = 1) -> tuple[int, int]:
        """(first, end) of the subtiles, in store order, that ``part`` adds up and stores: whole batches of
        ``batch`` subtiles (one staging acquire each), spread as evenly as they go (10 subtiles in 7 parts:
        1, 1, 2, 1, 2, 1, 2). ``Modes`` refuses more parts than batches, so every part stores a share."""
        batches = subtiles // batch
        return part * batches // self.parts * batch, (part + 1) * batches // self.parts * batch

    def posted(self) -> int:
        """The flag's count once every part has posted its partial."""
        return self.parts

    def seen(self) -> int:
        """The flag's count once parts 1 … parts−1 have also seen :meth:`posted`: part 0 then resets it."""
        return 2 * self.parts - 1
