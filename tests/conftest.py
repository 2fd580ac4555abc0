"""Shared test fixtures: seeding, and a ``torch`` fixture that skips when PyTorch is absent.

Every test starts from seeds that depend only on its own name, never on the tests run before it.
``EMBER_TEST_SEED=N`` (default 0) shifts them all: run the suite with a few values to find a test that
passes only by luck of its random draws.
"""

from __future__ import annotations

import os
import random
import sys
import zlib

import numpy as np
import pytest
from hypothesis import settings

import ember

# Property tests draw the same examples on every run (a CI failure reproduces; nothing fails at random),
# with no time limit per example (the machine may be busy) and no example database on disk.
settings.register_profile("ember", derandomize=True, deadline=None, database=None)
settings.load_profile("ember")

_SHIFT = int(os.environ.get("EMBER_TEST_SEED", "0"))


@pytest.fixture(autouse=True)
def _seed(request: pytest.FixtureRequest) -> None:
    """Every test starts from the same random state, whatever ran before it (order, xdist worker)."""
    module = request.module
    if isinstance(getattr(module, "rng", None), np.random.Generator):  # a test file's shared `rng`: per test
        module.rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()) + _SHIFT)
    ember.manual_seed(_SHIFT)
    np.random.seed(_SHIFT)
    random.seed(_SHIFT)
    if "torch" in sys.modules:  # torch's generator too, once some test has imported it
        sys.modules["torch"].manual_seed(_SHIFT)


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(_SHIFT)
    return torch
