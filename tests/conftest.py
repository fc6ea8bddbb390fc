"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from pramkit.engine.rng import SecretKey

#: Real microdata files shipped beside the project (absent in a user's clone).
SDC_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro"


@pytest.fixture
def sdc_data() -> Path:
    """Folder of the sdcMicro test files; the test is skipped when it is absent."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    return SDC_DATA


@pytest.fixture
def key() -> SecretKey:
    """A fixed key: reproducible draws in tests."""
    return SecretKey(bytes(range(32)), "test key")
