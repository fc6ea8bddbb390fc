"""Comparing manifests made by two runs of the same release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: What differs between two runs of the same release: when the manifest was made and how long its steps took.
RUN_FIELDS = ("created", "seconds")


def comparable(manifest: Path) -> Any:
    """A manifest's JSON without :data:`RUN_FIELDS`, at any depth."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in RUN_FIELDS}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return strip(json.loads(manifest.read_text(encoding="utf-8")))
