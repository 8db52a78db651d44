"""Ascend pipes/pairs and the event-id allocator: legal pairs, reservations, generations, exhaustion, freeing."""

from __future__ import annotations

import pytest

from pipes import SpecError
from pipes.ascend import (
    LEGAL_PAIRS,
    CoreType,
    EventIdAllocator,
    EventIdError,
    EventIdRules,
    Generation,
    Keying,
    Pipe,
    Space,
    check_pair,
    copy_route,
)

AIC, AIV = CoreType.AIC, CoreType.AIV
P = Pipe


def test_legal_pairs_are_the_design_table() -> None:
    table = {(core.name, src.name): {d.name for d in dsts} for (core, src), dsts in LEGAL_PAIRS.items()}
    assert table == {
        ("AIC", "M"): {"MTE1", "MTE2", "FIX"},
        ("AIC", "MTE1"): {"M", "MTE2", "MTE3", "FIX"},
        ("AIC", "MTE2"): {"M", "MTE1", "MTE3"},
        ("AIC", "MTE3"): {"MTE1", "MTE2"},
        ("AIC", "FIX"): {"M", "MTE1"},
        ("AIV", "S"): {"V", "MTE2", "MTE3"},
        ("AIV", "V"): {"S", "MTE2", "MTE3"},
        ("AIV", "MTE2"): {"S", "V", "MTE3"},
        ("AIV", "MTE3"): {"S", "V", "MTE2"},
    }


@pytest.mark.parametrize(
    ("core", "src", "dst", "needle"),
    [
        (AIC, P.FIX, P.MTE2, "FIX may signal {MTE1, M}"),
        (AIC, P.M, P.V, "pipe V does not exist on the AIC core"),
        (AIV, P.MTE1, P.V, "pipe MTE1 does not exist on the AIV core"),
        (AIV, P.V, P.V, "pipe_barrier(PIPE_V)"),
    ],
)
def test_illegal_pairs_name_the_legal_destinations(core, src, dst, needle) -> None:
    with pytest.raises(SpecError, match="illegal flag pair") as err:
        check_pair(core, src, dst)
    assert needle in str(err.value)


def test_copy_routes_and_pipe_parsing() -> None:
    assert copy_route(Space.GM, Space.L1, AIC) is P.MTE2
    assert copy_route(Space.L1, Space.L0B, AIC) is P.MTE1
    assert copy_route(Space.L0C, Space.GM, AIC) is P.FIX
    assert copy_route(Space.UB, Space.GM, AIV) is P.MTE3
    with pytest.raises(SpecError, match="GM→UB \\(MTE2\\)"):
        copy_route(Space.L1, Space.UB, AIV)
    assert Pipe.parse("mte2") is P.MTE2 and Pipe.parse("PIPE_FIX") is P.FIX
    with pytest.raises(SpecError, match="pipe = 'MTE4'"):
        Pipe.parse("MTE4")


def test_reserved_ids_are_never_handed_out() -> None:
    ids = EventIdAllocator(EventIdRules(framework_preset=False))
    got = [ids.allocate(f"p{i}", AIV, P.MTE2, P.V, 1).base for i in range(6)]
    assert got == [0, 1, 2, 3, 4, 5]  # 6 and 7 are reserved
    with pytest.raises(EventIdError) as err:
        ids.allocate("p6", AIV, P.MTE2, P.V, 1)
    message = str(err.value)
    assert "6: reserved by convention" in message and "7: framework automatic sync" in message
    assert "0: pipeline 'p0' (MTE2→V on AIV)" in message and "free: none" in message


def test_framework_preset_m_to_mte1_is_avoided_unless_told_otherwise() -> None:
    with_preset = EventIdAllocator()
    assert with_preset.allocate("l0ab", AIC, P.MTE1, P.M, 2).ids == (3, 4)
    without = EventIdAllocator(EventIdRules(framework_preset=False))
    assert without.allocate("l0ab", AIC, P.MTE1, P.M, 2).ids == (0, 1)
    # The preset only concerns the cube core.
    assert EventIdAllocator().allocate("v", AIV, P.MTE2, P.V, 2).ids == (0, 1)


def test_source_keying_keeps_ids_distinct_per_source_pipe() -> None:
    ids = EventIdAllocator(EventIdRules(framework_preset=False))
    k_l1 = ids.allocate("k_l1", AIC, P.MTE2, P.MTE1, 1)
    l0ab = ids.allocate("l0ab", AIC, P.MTE1, P.M, 2)
    l0c = ids.allocate("l0c", AIC, P.M, P.FIX, 2)
    assert k_l1.ids == (0,)
    assert l0ab.ids == (1, 2)  # MTE1 already sets id 0 (toward MTE2)
    assert l0c.ids == (3, 4)  # M already sets ids 1, 2 (toward MTE1)


def test_pair_keying_numbers_each_pipe_pair_from_zero() -> None:
    ids = EventIdAllocator(EventIdRules(framework_preset=False, keying=Keying.PIPE_PAIR))
    assert ids.allocate("k_l1", AIC, P.MTE2, P.MTE1, 1).ids == (0,)
    assert ids.allocate("l0ab", AIC, P.MTE1, P.M, 2).ids == (0, 1)
    assert ids.allocate("l0c", AIC, P.M, P.FIX, 2).ids == (0, 1)


def test_generations_bound_the_ids() -> None:
    first = EventIdAllocator(EventIdRules(generation=Generation.FIRST_GEN, framework_preset=False))
    assert first.allocate("a", AIV, P.MTE2, P.V, 4).ids == (0, 1, 2, 3)
    with pytest.raises(EventIdError, match=r"ids 0–3"):
        first.allocate("b", AIV, P.MTE2, P.V, 1)
    a3 = EventIdAllocator(EventIdRules(generation=Generation.ATLAS_A3, framework_preset=False))
    assert a3.allocate("a", AIV, P.MTE2, P.V, 6).ids == (0, 1, 2, 3, 4, 5)
    assert EventIdRules(generation=Generation.FIRST_GEN).id_problem(4) == (
        "event id 4 is out of range: first-generation training part has ids 0–3"
    )


def test_exhaustion_lists_every_holder_and_the_fixes() -> None:
    ids = EventIdAllocator()  # framework preset on
    ids.allocate("q_l1", AIC, P.MTE2, P.MTE1, 1)
    ids.allocate("l0ab", AIC, P.MTE1, P.M, 2)
    with pytest.raises(EventIdError) as err:
        ids.allocate("l0c", AIC, P.M, P.FIX, 2)
    message = str(err.value)
    assert "cannot allocate 2 contiguous event id(s) for pipeline 'l0c' (M→FIX on AIC)" in message
    assert "pool AIC source pipe M" in message
    assert "0–2: framework pipe object pre-set M→MTE1" in message
    assert "3–4: pipeline 'l0ab' (MTE1→M on AIC)" in message
    assert "free: 5" in message
    assert "framework_preset=False" in message and "Keying.PIPE_PAIR" in message


def test_freeing_returns_ids_and_double_free_is_an_error() -> None:
    ids = EventIdAllocator(EventIdRules(framework_preset=False))
    first = ids.allocate("a", AIV, P.MTE2, P.V, 3)
    second = ids.allocate("b", AIV, P.MTE2, P.V, 3)
    assert second.ids == (3, 4, 5)
    ids.free(first)
    assert ids.allocate("c", AIV, P.MTE2, P.V, 2).ids == (0, 1)
    with pytest.raises(EventIdError, match="freed twice"):
        ids.free(first)
    assert "pipeline 'a'" not in ids.table() and "pipeline 'b'" in ids.table()


def test_contiguous_runs_report_fragmentation() -> None:
    ids = EventIdAllocator(EventIdRules(framework_preset=False))
    held = [ids.allocate(f"p{i}", AIV, P.MTE2, P.V, 1) for i in range(6)]
    ids.free(held[1])
    ids.free(held[3])
    with pytest.raises(EventIdError, match=r"free: 1, 3"):
        ids.allocate("two", AIV, P.MTE2, P.V, 2)


def test_cross_core_pool_skips_all_core_sync_ids() -> None:
    ids = EventIdAllocator()
    got = ids.allocate_cross("scores", 11, "full")
    assert got.ids == tuple(range(11))
    assert ids.allocate_cross("more", 1, "empty").ids == (15,)
    with pytest.raises(EventIdError, match="11–14: all-core sync"):
        ids.allocate_cross("none", 1, "full")
    rules = EventIdRules()
    assert rules.cross_id_problem(12) is None  # usable: an explicit use is only a caution
    assert rules.cross_id_caution(12).startswith("cross-core flag id 12 is reserved (all-core sync)")
    assert rules.cross_id_caution(3) is None
    assert "out of range" in rules.cross_id_problem(16)
