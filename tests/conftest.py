"""Shared test fixtures: seeding, and a ``torch`` fixture that skips when PyTorch is absent."""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.fixture(autouse=True)
def _seed() -> None:
    ember.manual_seed(0)
    np.random.seed(0)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")
