"""The trainer's docstring examples run (CI runs pytest without --doctest-modules)."""

import doctest
import importlib

import pytest

MODULES = ["trainer.policy", "trainer.baselines", "trainer.episodes", "trainer.trajectory", "trainer.kernels",
           "trainer.algorithms.outcome", "trainer.algorithms.gae", "trainer.algorithms.gigpo", "trainer.config",
           "trainer.seeding", "trainer.tiny.chat_template"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
