"""DesignChoices is the design command's flags: parsing its command line gives it back, field for field."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import design as design_cli
from pramkit.cli import main
from pramkit.release.choices import DesignChoices


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pramkit")
    design_cli.register(parser.add_subparsers(dest="command"))
    return parser


PARSER = _parser()


def _parsed(choices: DesignChoices) -> DesignChoices:
    args = PARSER.parse_args(["design", "data.csv", "--vars", "age,sex", *choices.to_args()])
    return DesignChoices.from_namespace(args)


def test_every_field_is_a_flag_with_the_same_default() -> None:
    args = PARSER.parse_args(["design", "data.csv", "--vars", "age"])
    for f in dataclasses.fields(DesignChoices):
        assert hasattr(args, f.name), f"--{f.name.replace('_', '-')} is not a flag of pramkit design"
        assert getattr(args, f.name) == f.default, f.name
    assert _parsed(DesignChoices()) == DesignChoices()


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                max_size=12).filter(lambda t: not t.startswith("-") and t.strip() == t and "," not in t)
numbers = st.floats(min_value=1e-9, max_value=1e6, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["dp", "rr", "keep", "kanon", "metric", "tridiagonal", "bistochastic-beta"]),
    "epsilon": numbers, "design_epsilon": numbers, "exact_frequencies": st.booleans(),
    "keep": numbers, "k": st.integers(1, 50), "gamma": numbers, "seed": st.integers(0, 2**31),
    "family": st.sampled_from(["diagonal", "general"]), "truthful": st.booleans(),
    "objective": st.sampled_from(["information", "variance", "distance"]),
    "distances": st.sampled_from(["ordinal", "areas.csv"]), "metric_epsilon": numbers,
    "mechanism": st.sampled_from(["exponential", "geometric", "optimal"]),
    "forbid": st.just(Path("rules.csv")), "prior": st.just(Path("prior.csv")), "categories": texts,
    "strata": texts, "keep_codes": texts.map(lambda t: f"age={t}"), "household": texts,
    "household_vars": texts, "rule_breaking": st.sampled_from(["error", "keep"]),
    "missing": st.sampled_from(["keep", "category"]), "split": st.sampled_from(["optimal", "equal", "joint"]),
    "epsilon_per_variable": st.just("age=1,sex=0.5"), "recognition": numbers,
    "na_values": st.lists(texts, max_size=3).map(tuple), "derive_from": st.just(Path("suf.json")),
    "sampling": st.sampled_from(["srswor:500/100000", "poisson:0.05", "stratified:0.01,0.05"]),
    "population": st.integers(1, 10**9),
}))
def test_the_command_line_of_any_choices_parses_back_to_them(fields: dict) -> None:
    choices = DesignChoices(**fields)
    assert _parsed(choices) == choices


def test_the_command_and_the_library_refuse_the_same_flags(capsys) -> None:
    """A family's flag with another family: the command's one-line error is the library's message."""
    choices = DesignChoices(method="rr", epsilon=1.0, objective="variance")
    try:
        choices.options()
    except ValueError as exc:
        message = str(exc)
    code = main(["design", "--probs", "0.5,0.5", *choices.to_args()])
    assert code == 2 and capsys.readouterr().err.strip() == f"pramkit design: error: {message}"


def test_optimal_split_with_the_variance_objective_is_refused_before_any_data() -> None:
    """The rule used to fire only after the data were counted; the plan refuses it."""
    import pramkit
    from pramkit.errors import ParameterError

    with pytest.raises(ParameterError, match="split 'optimal' maximises information"):
        pramkit.plan_release(["sex", "age"], epsilon=2.0, split="optimal", options={"objective": "variance"})
