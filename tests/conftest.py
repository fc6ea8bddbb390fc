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


def assert_refused(folder: Path, args: list, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``pramkit ARGS`` exits 2 with one line on stderr holding ``message``, leaves every file under
    ``folder`` as it was and writes nothing there (no temporary left behind either)."""
    import hashlib

    from pramkit.cli import main

    def digests() -> dict[str, str]:
        return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file()}

    before = digests()
    capsys.readouterr()
    code = main([str(a) for a in args])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (args, err)
    assert len(lines) == 1 and "Traceback" not in err, (args, err)
    assert message in lines[0], (args, lines[0])
    assert digests() == before, (args, "an input changed or a file was written")
    assert not any(p.name.startswith(".") for p in folder.iterdir()), (args, "a temporary file was left behind")
