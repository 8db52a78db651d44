"""PipelineSpec and Role: derived arrival counts and validation messages that name field, value and range."""

import pytest

from pipes import MAX_ARRIVALS, ArrivalUnit, Completion, PipelineSpec, Role, SpecError


def tma_spec(**overrides):
    fields = dict(
        name="ab",
        stages=4,
        producer=Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        consumers=Role("mma", ArrivalUnit.WARPGROUP, count=2),
        completion=Completion.TRANSACTION_BYTES,
        tx_bytes=32768,
    )
    fields.update(overrides)
    return PipelineSpec(**fields)


def test_arrivals_are_derived_from_roles():
    spec = tma_spec()
    assert spec.full_arrivals == 1
    assert spec.empty_arrivals == 2 * 128
    assert spec.producer.threads == 32
    assert spec.consumers[0].threads == 256


def test_multicast_peers_multiply_consumer_arrivals():
    spec = tma_spec(consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARPGROUP, count=2, peers=2))
    assert spec.empty_arrivals == 2 * 1 * 2


def test_fan_out_sums_every_consumer_role():
    spec = PipelineSpec(
        "out",
        2,
        Role("epilogue", ArrivalUnit.THREAD),
        (Role("comm", ArrivalUnit.ELECTED_PER_WARP), Role("checksum", ArrivalUnit.WARP)),
        Completion.STORE_COMPLETE,
    )
    assert spec.empty_arrivals == 1 + 32
    assert spec.consumer("checksum").unit is ArrivalUnit.WARP
    with pytest.raises(SpecError, match="one of \\['comm', 'checksum'\\]"):
        spec.consumer()


def test_single_consumer_role_is_normalised_to_a_tuple():
    spec = tma_spec()
    assert isinstance(spec.consumers, tuple) and len(spec.consumers) == 1
    assert spec.consumer() is spec.consumers[0]


def test_spec_is_immutable():
    spec = tma_spec()
    with pytest.raises(AttributeError):
        spec.stages = 3


@pytest.mark.parametrize("stages", [0, -1, 65])
def test_stages_out_of_range(stages):
    with pytest.raises(SpecError, match=rf"PipelineSpec\('ab'\)\.stages = {stages} is invalid: allowed \[1, 64\]"):
        tma_spec(stages=stages)


def test_stages_must_be_an_int():
    with pytest.raises(SpecError, match="stages = 2.0"):
        tma_spec(stages=2.0)
    with pytest.raises(SpecError, match="stages = True"):
        tma_spec(stages=True)


def test_count_below_one():
    with pytest.raises(SpecError, match=r"Role\('mma'\)\.count = 0 is invalid: allowed \[1, "):
        Role("mma", ArrivalUnit.WARPGROUP, count=0)


def test_count_above_the_mbarrier_arrival_limit_spells_out_the_arithmetic():
    with pytest.raises(SpecError) as info:
        Role("mma", ArrivalUnit.WARPGROUP, count=8192)
    message = str(info.value)
    assert "count × 128 arrivals per unit × 1 peers" in message
    assert str(MAX_ARRIVALS) in message and str(8192 * 128) in message


def test_sum_of_consumers_above_the_limit():
    big = Role("a", ArrivalUnit.THREAD, count=MAX_ARRIVALS)
    with pytest.raises(SpecError, match="consumers"):
        PipelineSpec("p", 2, Role("prod"), (big, Role("b")))


def test_tx_bytes_required_for_transaction_completion():
    with pytest.raises(SpecError, match=r"tx_bytes = 0 is invalid: allowed \[1, 1048575\]"):
        tma_spec(tx_bytes=0)


def test_tx_bytes_contradicts_arrival_completion():
    with pytest.raises(SpecError, match="tx_bytes = 128 is invalid: allowed 0 unless completion is TRANSACTION_BYTES"):
        tma_spec(completion=Completion.ARRIVAL, tx_bytes=128)


def test_roles_with_the_same_name_contradict():
    with pytest.raises(SpecError, match="distinct role names"):
        PipelineSpec("p", 2, Role("warp"), Role("warp"))


def test_flag_completion_joins_one_pipe_to_one_pipe():
    PipelineSpec("l0", 2, Role("mte1"), Role("m"), Completion.FLAG)
    with pytest.raises(SpecError, match="1 with FLAG completion"):
        PipelineSpec("l0", 2, Role("mte1", ArrivalUnit.WARP), Role("m"), Completion.FLAG)
    with pytest.raises(SpecError, match="exactly 1 consumer role with FLAG completion"):
        PipelineSpec("l0", 2, Role("mte1"), (Role("m"), Role("v")), Completion.FLAG)


def test_store_completion_is_per_cta():
    with pytest.raises(SpecError, match="producer.peers = 2"):
        PipelineSpec("out", 2, Role("epi", peers=2), Role("comm"), Completion.STORE_COMPLETE)


@pytest.mark.parametrize("name", ["", "has space", 3])
def test_names_must_be_identifiers(name):
    with pytest.raises(SpecError, match="name"):
        Role(name)


def test_unit_must_be_an_arrival_unit():
    with pytest.raises(SpecError, match=r"Role\('x'\)\.unit = 'warp' is invalid"):
        Role("x", "warp")


def test_spec_error_is_a_value_error():
    assert issubclass(SpecError, ValueError)
