"""``design_release(data, variables, **settings)`` is typed by :class:`pramkit.release.plan.PlanSettings`:
its keys and types are exactly the keyword settings of :func:`pramkit.plan_release`, read from that function's
own signature, so that a setting added to the plan is a setting a type checker knows."""

from __future__ import annotations

import inspect
import typing

import pandas as pd
import pytest

from pramkit.errors import ParameterError
from pramkit.release.pipeline import design_release
from pramkit.release.plan import PlanSettings, plan_release


def _text(annotation: object) -> str:
    text = annotation.__forward_arg__ if isinstance(annotation, typing.ForwardRef) else str(annotation)
    return " ".join(text.split())


def test_the_settings_type_is_the_plans_signature() -> None:
    keywords = {name: _text(p.annotation) for name, p in inspect.signature(plan_release).parameters.items()
                if p.kind is p.KEYWORD_ONLY}
    typed = {name: _text(a) for name, a in PlanSettings.__annotations__.items()}
    assert typed == keywords
    assert PlanSettings.__total__ is False  # every setting may be left out


def test_a_misspelt_setting_is_one_line_at_run_time() -> None:
    data = pd.DataFrame({"sex": ["f", "m"] * 10})
    with pytest.raises(ParameterError, match="design_release does not take epsilom"):
        design_release(data, ["sex"], epsilom=3.0)  # type: ignore[call-arg]  # what a type checker refuses
