"""Shared test fixtures: seeding, and a ``torch`` fixture that skips when PyTorch is absent."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from hypothesis import settings

import ember

# Property tests draw the same examples on every run (a CI failure reproduces; nothing fails at random),
# with no time limit per example (the machine may be busy) and no example database on disk.
settings.register_profile("ember", derandomize=True, deadline=None, database=None)
settings.load_profile("ember")


@pytest.fixture(autouse=True)
def _seed() -> None:
    """Every test starts from the same random state, whatever ran before it (order, xdist worker)."""
    ember.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    if "torch" in sys.modules:  # torch's generator too, once some test has imported it
        sys.modules["torch"].manual_seed(0)


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch
