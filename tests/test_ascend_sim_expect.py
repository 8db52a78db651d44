"""``Simulator.expect`` by name: an unknown name is refused with the names that exist."""

from __future__ import annotations

import numpy as np
import pytest

from pipes.ascend.sim import Simulator
from pipes.errors import SpecError


def test_expect_by_an_unknown_name_names_it_and_the_declared_tensors():
    sim = Simulator()
    sim.gm_zeros("x", (4,))
    sim.gm_zeros("y", (4,))
    with pytest.raises(SpecError) as caught:
        sim.expect("z", np.zeros(4))
    assert str(caught.value) == "expect: no GM tensor named 'z'; the GM tensors declared: 'x', 'y'"


def test_expect_by_name_before_any_tensor_says_none_is_declared():
    with pytest.raises(SpecError, match="no GM tensor named 'out'; the GM tensors declared: none"):
        Simulator().expect("out", np.zeros(4))


def test_expect_by_a_known_name_records_the_expectation():
    sim = Simulator()
    sim.gm_zeros("x", (4,))
    sim.expect("x", np.ones(4))
    assert [e.tensor.name for e in sim.expectations] == ["x"]
