"""The workflows' specifications (pramkit.release.spec, pramkit.estimate.spec): the command line made from them
keeps every flag users' scripts rely on, and each setting's failing value is refused with one message by the
library, the command line and the application's validator."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from conftest import assert_refused  # the command line's refusal: exit 2, one line, nothing written

from pramkit.cli import build_parser
from pramkit.errors import PramkitError
from pramkit.estimate.spec import EstimateSpec
from pramkit.release.apply_spec import ApplySpec
from pramkit.release.risk_spec import RiskSpec
from pramkit.release.spec import GIVEN, ReleaseSpec, methods_of
from pramkit.release.swap_spec import SwapSpec
from pramkit.settings import Setting, from_texts, invalid_value, settings

#: ``pramkit design``'s options before its parser was made from the specification: option strings, default,
#: whether a switch, the type's name, the destination (users' scripts rely on every one).
DESIGN_OPTIONS = [
    (('data',), None, False, 'Path', 'data'),
    (('--vars', '--keys'), None, False, None, 'vars'),
    (('--probs',), None, False, None, 'probs'),
    (('--counts',), None, False, None, 'counts'),
    (('--categories',), None, False, None, 'categories'),
    (('--method',), 'dp', False, None, 'method'),
    (('--epsilon',), None, False, 'float', 'epsilon'),
    (('--epsilon-per-variable',), None, False, None, 'epsilon_per_variable'),
    (('--design-epsilon',), None, False, 'float', 'design_epsilon'),
    (('--prior',), None, False, 'Path', 'prior'),
    (('--exact-frequencies',), False, True, None, 'exact_frequencies'),
    (('--beta',), None, False, 'float', 'beta'),
    (('--keep',), None, False, 'float', 'keep'),
    (('--bandwidth',), None, False, 'int', 'bandwidth'),
    (('--pd',), None, False, 'float', 'pd'),
    (('--alpha',), None, False, 'float', 'alpha'),
    (('--diagonal',), None, False, None, 'diagonal'),
    (('--seed',), None, False, 'int', 'seed'),
    (('--k',), None, False, 'int', 'k'),
    (('--gamma',), None, False, 'float', 'gamma'),
    (('--off-diagonal',), None, False, 'float', 'off_diagonal'),
    (('--beta-family',), None, False, None, 'beta_family'),
    (('--family',), 'diagonal', False, None, 'family'),
    (('--truthful',), False, True, None, 'truthful'),
    (('--objective',), None, False, None, 'objective'),
    (('--distances',), None, False, None, 'distances'),
    (('--metric-epsilon',), None, False, 'float', 'metric_epsilon'),
    (('--mechanism',), None, False, None, 'mechanism'),
    (('--dilation',), None, False, 'float', 'dilation'),
    (('--distance-weights',), None, False, None, 'distance_weights'),
    (('--invariant',), False, True, None, 'invariant'),
    (('--forbid',), None, False, 'Path', 'forbid'),
    (('--strata',), None, False, None, 'strata'),
    (('--keep-codes',), None, False, None, 'keep_codes'),
    (('--household',), None, False, None, 'household'),
    (('--household-vars',), None, False, None, 'household_vars'),
    (('--rule-breaking',), 'error', False, None, 'rule_breaking'),
    (('--weights',), None, False, None, 'weights'),
    (('--missing',), 'keep', False, None, 'missing'),
    (('--split',), 'equal', False, None, 'split'),
    (('--recognition',), None, False, 'float', 'recognition'),
    (('--combinations',), '3', False, None, 'combinations'),
    (('--recognition-gamma',), None, False, 'float', 'recognition_gamma'),
    (('--recognition-method',), 'restricted', False, None, 'recognition_method'),
    (('--derive-from',), None, False, 'Path', 'derive_from'),
    (('--out',), None, False, 'Path', 'out'),
    (('--design-record',), None, False, 'Path', 'design_record'),
    (('--key-file',), None, False, 'Path', 'key_file'),
    (('--force',), False, True, None, 'force'),
    (('--sampling',), None, False, None, 'sampling'),
    (('--population',), None, False, 'int', 'population'),
    (('--target',), None, False, None, 'target'),
    (('--target-keys',), None, False, None, 'target_keys'),
    (('--recoded-by',), None, False, 'Path', 'recoded_by'),
    (('--json',), False, True, None, 'json'),
    (('--na-values',), ('NA',), False, '_markers', 'na_values'),
    (('--sep',), ',', False, None, 'sep'),
    (('--encoding',), 'utf-8', False, None, 'encoding'),
    (('--quiet', '-q'), False, True, None, 'quiet'),
]

#: ``pramkit estimate``'s options before its parser was made from the specification.
ESTIMATE_OPTIONS = [
    (('released',), None, False, 'Path', 'released'),
    (('--manifest',), None, False, 'Path', 'manifest'),
    (('--vars',), None, False, None, 'vars'),
    (('--by',), None, False, None, 'by'),
    (('--method',), None, False, None, 'method'),
    (('--estimator',), None, False, None, 'estimator'),
    (('--variance',), 'multinomial', False, None, 'variance'),
    (('--confidence',), 0.95, False, 'float', 'confidence'),
    (('--weights',), None, False, None, 'weights'),
    (('--strata',), None, False, None, 'strata'),
    (('--psu',), None, False, None, 'psu'),
    (('--fpc',), None, False, None, 'fpc'),
    (('--single-psu',), 'error', False, None, 'single_psu'),
    (('--replicate-weights',), None, False, None, 'replicate_weights'),
    (('--replicate-method',), None, False, None, 'replicate_method'),
    (('--fay-rho',), None, False, 'float', 'fay_rho'),
    (('--replicate-scales',), None, False, None, 'replicate_scales'),
    (('--na-values',), ('NA',), False, '_markers', 'na_values'),
    (('--sep',), ',', False, None, 'sep'),
    (('--encoding',), 'utf-8', False, None, 'encoding'),
    (('--json',), False, True, None, 'json'),
    (('--emit-r',), None, False, 'Path', 'emit_r'),
    (('--emit',), None, False, None, 'emit'),
    (('--emit-out',), None, False, 'Path', 'emit_out'),
    (('--force',), False, True, None, 'force'),
    (('--regress',), None, False, None, 'regress'),
    (('--family',), None, False, None, 'family'),
]


#: The flags of how a command reads its data, shared by apply, swap and risk (each list below, as before).
CSV_FLAGS = [
    (('--na-values',), ('NA',), False, 'markers', 'na_values'),
    (('--sep',), ',', False, None, 'sep'),
    (('--encoding',), 'utf-8', False, None, 'encoding'),
    (('--decimal',), '.', False, None, 'decimal'),
]
ENGINE_FLAGS = [
    (('--engine',), 'local', False, None, 'engine'),
    (('--spark-master',), 'local[2]', False, None, 'spark_master'),
]
#: ``pramkit apply``'s options before its parser was made from the specification (as DESIGN_OPTIONS).
APPLY_OPTIONS = [
    (('data',), None, False, 'Path', 'data'),
    (('--manifest',), None, False, 'Path', 'manifest'),
    (('--out',), None, False, 'Path', 'out'),
    (('--key-file',), None, False, 'Path', 'key_file'),
    (('--force',), False, True, None, 'force'),
    (('--chunk-rows',), 1048576, False, 'int', 'chunk_rows'),
    *CSV_FLAGS,
    (('--threads',), None, False, 'int', 'threads'),
    *ENGINE_FLAGS,
    (('--shuffle',), False, True, None, 'shuffle'),
    (('--public-columns',), '', False, None, 'public_columns'),
    (('--release',), None, False, None, 'release'),
    (('--json',), False, True, None, 'json'),
    (('--quiet', '-q'), False, True, None, 'quiet'),
]
#: The help and placeholder of ``pramkit apply``'s flags made from ApplySpec, as they were written by hand.
APPLY_HELP = {
    '--chunk-rows': ('rows per chunk (memory bound; default %(default)s)', None),
    '--threads': ('threads that perturb a chunk (default: every core; the release is the same for any number)', None),
    '--shuffle': ('write the rows in an order drawn from the key (same release for any chunk size or '
        "engine); the summary and the receipt then state the file's central (epsilon, delta)", None),
    '--public-columns': ('comma-separated unperturbed columns that the shuffled guarantee treats as public', None),
    '--release': ('a public label that tells this release apart from others made with the same key and '
        "manifest (a panel's next wave, a corrected file): each label draws anew; the receipt "
        'records it, and the release is made again only with it', 'LABEL'),
}


#: ``pramkit swap``'s options before its parser was made from the specification (as DESIGN_OPTIONS).
SWAP_OPTIONS = [
    (('data',), None, False, 'Path', 'data'),
    (('--hid',), None, False, None, 'hid'),
    (('--geo',), None, False, None, 'geo'),
    (('--risk-vars',), '', False, None, 'risk_vars'),
    (('--similar',), [], False, None, 'similar'),
    (('--rate',), 0.05, False, 'float', 'rate'),
    (('--k',), 3, False, 'int', 'k'),
    (('--donors',), 'same-parent', False, None, 'donors'),
    (('--out',), None, False, 'Path', 'out'),
    (('--manifest',), None, False, 'Path', 'manifest'),
    (('--partners',), None, False, 'Path', 'partners'),
    (('--key-file',), None, False, 'Path', 'key_file'),
    (('--force',), False, True, None, 'force'),
    (('--chunk-rows',), 1048576, False, 'int', 'chunk_rows'),
    *CSV_FLAGS,
    *ENGINE_FLAGS,
    (('--json',), False, True, None, 'json'),
]
#: The help and placeholder of ``pramkit swap``'s flags made from SwapSpec, as they were written by hand.
SWAP_HELP = {
    '--rate': ('share of households swapped, in [0, 1] (default 0.05)', None),
    '--k': ('k-anonymity threshold, at least 1 (default 3)', None),
    '--donors': ('donor rule: same-parent (default): donors in another area under the same area above, '
        "households selected at a level never each other's donors; any-area: donors in any other "
        "area of the level swapped across, risky donors first (sdcMicro recordSwap's donor pool; each donor "
        "a fresh keyed draw, not recordSwap's scan of one priority order with the areas in code order)", None),
    '--chunk-rows': ('rows per chunk (memory bound; the release is the same for any value; default %(default)s)', None),
}


#: ``pramkit risk``'s options before its parser was made from the specification (as DESIGN_OPTIONS).
RISK_OPTIONS = [
    (('data',), None, False, 'Path', 'data'),
    (('--keys',), None, False, None, 'keys'),
    (('--sampling-fraction',), None, False, 'float', 'sampling_fraction'),
    (('--weights',), None, False, None, 'weights'),
    (('--fractions',), 'cell', False, None, 'fractions'),
    (('--model',), '2way', False, None, 'model'),
    (('--manifest',), None, False, 'Path', 'manifest'),
    (('--original',), None, False, 'Path', 'original'),
    (('--household',), None, False, None, 'household'),
    (('--missing',), 'category', False, None, 'missing'),
    (('--suda',), False, True, None, 'suda'),
    (('--contributions',), False, True, None, 'contributions'),
    (('--max-size',), None, False, 'int', 'max_size'),
    (('--max-steps',), None, False, 'float', 'max_steps'),
    (('--replicates',), 20, False, 'int', 'replicates'),
    # the records and cells below k and the l-diversity (issue 66), added since
    (('--k-anonymity',), None, False, 'int', 'k_anonymity'),
    (('--max-dim',), None, False, 'int', 'max_dim'),
    (('--l-diversity',), None, False, None, 'l_diversity'),
    (('--l',), 2, False, 'int', 'l_threshold'),
    (('--missing-rule',), 'own', False, None, 'missing_rule'),
    (('--plot',), None, False, 'Path', 'plot'),
    (('--force',), False, True, None, 'force'),
    *CSV_FLAGS,
    *ENGINE_FLAGS,
    (('--json',), False, True, None, 'json'),
]
#: The help and placeholder of ``pramkit risk``'s flags made from RiskSpec, as they were written by hand.
RISK_HELP = {
    '--sampling-fraction': ('the sampling fraction pi in (0, 1]', None),
    '--weights': ('survey weight column (per-cell pi = f / sum of weights, see --fractions)', None),
    '--fractions': ('with --weights: per-cell sampling fractions where the weights determine them (default) or '
        'one fraction n / sum of weights for every cell', None),
    '--model': ("independence, 2way (default) or a formula such as 'a*b + c'", None),
    '--household': ("household id column: report the household-level risk 1 - prod(1 - r) over the members' "
        "per-record risks r, as sdcMicro's hierarchical risk; with --manifest, the risks after "
        'PRAM (not with --original, --model, --fractions or --plot)', 'COL'),
    '--missing': ('missing key values: a category of their own (default) or records excluded', None),
    '--suda': ("the SUDA2 special uniques instead: minimal sample uniques, SUDA scores (Elliot's "
        "weights), DIS-SUDA with --sampling-fraction, and the variables' and levels' contributions", None),
    '--contributions': ('what each key variable and level contributes to SUDA, tau1, tau2 and the individual risk '
        '(left out, merged); with --manifest and --original, before and after PRAM and the share '
        'of the record epsilon each variable spends', None),
    '--max-size': ('with --suda or --contributions: the largest MSU size (default: the number of keys)', None),
    '--max-steps': ('with --suda or --contributions: the most steps the SUDA search may take, estimated before '
        'it starts (default 2e10); a larger estimate is refused with the figure', None),
    '--replicates': ('with --contributions and --manifest: perturbations drawn to estimate the expected SUDA '
        'contributions when they cannot be enumerated exactly (default 20)', None),
}


def options_of(command: str) -> dict[tuple[str, ...], tuple]:
    parser = build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for a in sub.choices[command]._actions:
        if not isinstance(a, argparse._HelpAction):
            kind = a.type.__name__ if a.type is not None else None
            out[tuple(a.option_strings) or (a.dest,)] = (a.default, a.nargs == 0, kind, a.dest)
    return out


@pytest.mark.parametrize("command, before", [("design", DESIGN_OPTIONS), ("estimate", ESTIMATE_OPTIONS),
                                             ("apply", APPLY_OPTIONS), ("swap", SWAP_OPTIONS),
                                             ("risk", RISK_OPTIONS)])
def test_every_flag_is_kept(command: str, before: list[tuple]) -> None:
    """Every option string, default, switch, type and destination of before (options added since are allowed)."""
    now = options_of(command)
    for strings, default, switch, kind, dest in before:
        assert strings in now, strings
        got_default, got_switch, got_kind, got_dest = now[strings]
        assert (got_default, got_switch, got_dest) == (default, switch, dest), strings
        # the --na-values parser moved with its name; every other type is the same
        assert got_kind == kind or (kind == "_markers" and got_kind == "markers"), strings


# ---- every setting's failing value: one refusal, one message, from the library, the command line and the form


def text(value: object) -> str:
    """A value as the command line and the form write it."""
    return repr(value) if isinstance(value, float) else str(value)


def release_context(s: Setting) -> dict[str, object]:
    """The other settings under which ``s`` applies: its family, the setting it needs."""
    context: dict[str, object] = {}
    if s.option is not None:
        context["method"] = methods_of(s)[0]
    if s.needs is not None and s.needs[1] is not None:
        name, value = s.needs
        context[name] = {"recognition": 0.5, "target": "matched=5%"}[name] if value == GIVEN else value
    return context


RELEASE_CASES = [s for s in settings(ReleaseSpec) if invalid_value(s) is not None
                 or (s.option is not None and s.kind in (int, float, str))]
ESTIMATE_CASES = [s for s in settings(EstimateSpec) if invalid_value(s) is not None]


def release_bad(s: Setting) -> object:
    """The failing value of a release setting: its own rule's, or its family's rule's for that option."""
    from pramkit.design.registry import FAMILIES

    if s.option is None:
        return invalid_value(s)
    return FAMILIES[methods_of(s)[0]].options[s.option].invalid()


def test_the_cases_cover_every_setting_that_a_command_line_can_get_wrong() -> None:
    """Every setting that a typed text can get wrong is fed one (switches, paths and free texts are checked
    where they are read: a file, a column)."""
    names = {s.name for s in RELEASE_CASES}
    assert {"method", "epsilon", "design_epsilon", "split", "missing", "rule_breaking", "recognition", "k",
            "keep", "alpha", "beta", "objective", "family", "sep", "encoding", "sampling", "target"} <= names
    assert {s.name for s in ESTIMATE_CASES} >= {"method", "estimator", "variance", "confidence", "fay_rho",
                                                "single_psu", "replicate_method", "sep", "encoding"}


@pytest.mark.parametrize("s", [s for s in RELEASE_CASES if release_bad(s) is not None], ids=lambda s: s.name)
def test_a_release_setting_is_refused_alike(s: Setting, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    bad, context = release_bad(s), release_context(s)
    with pytest.raises(PramkitError) as library:
        ReleaseSpec(**context, **{s.name: bad}).check()
    message = str(library.value)
    assert "\n" not in message
    with pytest.raises(PramkitError) as planned:      # the library's workflow refuses it before any data is read
        ReleaseSpec(**context, **{s.name: bad}).release("absent.csv", ["region"])
    assert str(planned.value) == message
    with pytest.raises(PramkitError) as form:         # the application's validator
        from_texts(ReleaseSpec, {k: text(v) for k, v in {**context, s.name: bad}.items()})
    assert str(form.value) == message
    data = tmp_path / "data.csv"
    pd.DataFrame({"region": [1, 2, 3] * 10, "sex": ["f", "m", "m"] * 10}).to_csv(data, index=False)
    flags = [x for k, v in {**context, s.name: bad}.items()
             for x in (next(t.flag for t in settings(ReleaseSpec) if t.name == k), text(v))]
    assert_refused(tmp_path, ["design", data, "--vars", "region", *flags, "--out", tmp_path / "m.json"],
                   f"pramkit design: error: {message}", capsys)


@pytest.mark.parametrize("s", ESTIMATE_CASES, ids=lambda s: s.name)
def test_an_estimate_setting_is_refused_alike(s: Setting, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    from pramkit.design.classic import randomized_response
    from pramkit.estimate import estimate_table
    from pramkit.manifest import Manifest

    bad = invalid_value(s)
    with pytest.raises(PramkitError) as library:
        EstimateSpec(**{s.name: bad}).check()
    message = str(library.value)
    assert "\n" not in message
    released, manifest = tmp_path / "released.csv", Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    pd.DataFrame({"sex": ["f", "m", "m"] * 10}).to_csv(released, index=False)
    manifest.write(tmp_path / "m.json")
    with pytest.raises(PramkitError) as table:
        estimate_table(released, manifest, "sex", spec=EstimateSpec(**{s.name: bad}))
    assert str(table.value) == message
    if s.name in ("method", "estimator", "variance", "confidence"):   # estimate_table's own keywords
        with pytest.raises(PramkitError) as keyword:
            estimate_table(released, manifest, "sex", **{s.name: bad})
        assert str(keyword.value) == message
    with pytest.raises(PramkitError) as form:
        from_texts(EstimateSpec, {s.name: text(bad)})
    assert str(form.value) == message
    assert_refused(tmp_path, ["estimate", released, "--manifest", tmp_path / "m.json", "--vars", "sex", s.flag,
                              text(bad)], f"pramkit estimate: error: {message}", capsys)


def _applied(spec: ApplySpec, folder: Path) -> object:
    return spec.apply(folder / "absent.csv", folder / "absent.json", folder / "out.csv")


def _swapped(spec: SwapSpec, folder: Path) -> object:
    spec.plan("hid", ["area"])
    return spec.swap(folder / "absent.csv", SwapSpec().plan("hid", ["area"]), folder / "o.csv")


def _assessed(spec: RiskSpec, folder: Path) -> object:
    from pramkit.risk.identification import identification_risk

    return identification_risk(folder / "absent.csv", ["region"], spec=spec)


#: The workflows whose specification this change made: the command, its arguments besides the setting, the
#: library's use of a specification on files that do not exist, and the settings every failing value covers.
WORKFLOWS = {
    ApplySpec: ("apply", ["absent.csv", "--manifest", "absent.json", "--out", "out.csv"], _applied,
                {"chunk_rows", "threads", "release", "sep", "encoding", "engine"}),
    SwapSpec: ("swap", ["absent.csv", "--hid", "hid", "--geo", "area", "--out", "o.csv"], _swapped,
               {"rate", "k", "donors", "chunk_rows", "sep", "encoding", "engine"}),
    RiskSpec: ("risk", ["absent.csv", "--keys", "region"], _assessed,
               {"sampling_fraction", "fractions", "missing", "max_steps", "sep", "encoding", "engine"}),
}
WORKFLOW_CASES = [(spec, s) for spec in WORKFLOWS for s in settings(spec) if invalid_value(s) is not None]


@pytest.mark.parametrize("spec", list(WORKFLOWS), ids=lambda c: c.__name__)
def test_the_cases_cover_the_workflows_settings(spec: type) -> None:
    assert {s.name for t, s in WORKFLOW_CASES if t is spec} >= WORKFLOWS[spec][3]


@pytest.mark.parametrize("spec, s", WORKFLOW_CASES, ids=[f"{t.__name__}-{s.name}" for t, s in WORKFLOW_CASES])
def test_a_workflow_setting_is_refused_alike(spec: type, s: Setting, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The specification's check, the library's use of it before any file is read (the files do not exist),
    the form's validator and the command (exit 2, one line, nothing written) refuse a failing value with one
    message; a flag whose parser refuses a value outside its choices itself keeps argparse's message."""
    command, argv, library, _ = WORKFLOWS[spec]
    bad = invalid_value(s)
    with pytest.raises(PramkitError) as checked:
        spec(**{s.name: bad}).check()
    message = str(checked.value)
    assert "\n" not in message
    with pytest.raises(PramkitError) as used:
        library(spec(**{s.name: bad}), tmp_path)
    with pytest.raises(PramkitError) as form:
        from_texts(spec, {s.name: text(bad)})
    assert str(used.value) == str(form.value) == message
    said = f"argument {s.flag}: invalid choice: {bad!r}" if s.parse_choices else message
    args = [tmp_path / a if a.startswith(("absent", "o")) else a for a in argv]
    assert_refused(tmp_path, [command, *args, s.flag, text(bad)], f"pramkit {command}: error: {said}", capsys)


@pytest.mark.parametrize("command, helps, before", [("apply", APPLY_HELP, APPLY_OPTIONS),
                                                    ("swap", SWAP_HELP, SWAP_OPTIONS),
                                                    ("risk", RISK_HELP, RISK_OPTIONS)])
def test_help_is_the_one_written_by_hand(command: str, helps: dict, before: list) -> None:
    """The flags made from a specification have the help and placeholders they had, in their order
    (``--help`` lists them so)."""
    parser = build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = sub.choices[command]._actions
    assert {a.option_strings[0]: (a.help, a.metavar) for a in actions
            if a.option_strings and a.option_strings[0] in helps} == helps
    assert list(options_of(command)) == [strings for strings, *_ in before]


def test_sampling_fraction_and_weights_still_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        build_parser(["risk"]).parse_args(["risk", "d.csv", "--keys", "a", "--sampling-fraction", "0.1",
                                           "--weights", "w"])


def test_identification_risk_with_a_spec_is_the_same_as_with_keywords() -> None:
    import pandas as pd

    from pramkit.risk.identification import identification_risk

    data = pd.DataFrame({"region": [1, 2, 3, 1] * 25, "sex": list("mf") * 50, "w": [20.0] * 100})
    a = identification_risk(data, ["region", "sex"], weights="w", fractions="file", model="independence")
    b = identification_risk(data, ["region", "sex"], spec=RiskSpec(weights="w", fractions="file",
                                                                    model="independence"))
    assert (a.tau1, a.tau2, a.sampling_fraction) == (b.tau1, b.tau2, b.sampling_fraction)


def test_apply_spec_releases_what_apply_file_releases(tmp_path: Path) -> None:
    """Settings given to ApplySpec or as apply_file's keywords: the same file, byte for byte."""
    import pandas as pd

    from pramkit import apply_file
    from pramkit.design.classic import randomized_response
    from pramkit.manifest import Manifest

    data = tmp_path / "data.csv"
    pd.DataFrame({"region": ["north", "south", "east", "west"] * 50, "x": range(200)}).to_csv(data, index=False)
    manifest = Manifest.of({"region": randomized_response(["east", "north", "south", "west"], 1.0)})
    manifest.write(tmp_path / "m.json")
    spec = ApplySpec(chunk_rows=33, threads=1, shuffle=True, public_columns="x", release="wave 2")
    a = spec.apply(data, tmp_path / "m.json", tmp_path / "a.csv", key=bytes(32))
    b = apply_file(data, tmp_path / "m.json", tmp_path / "b.csv", key=bytes(32), chunk_rows=33, threads=1,
                   shuffle=True, public_columns=("x",), release="wave 2", quiet=True)
    assert Path(a.output).read_bytes() == Path(b.output).read_bytes()


def _apply_file_with(spec: ApplySpec, folder: Path) -> object:
    from pramkit import apply_file

    return apply_file(folder / "absent.csv", folder / "absent.json", folder / "out.csv", spec=spec)


def _swap_file_with(spec: SwapSpec, folder: Path) -> object:
    from pramkit.swap import plan_swap, swap_file

    return swap_file(folder / "absent.csv", plan_swap("hid", ["area"]), folder / "o.csv", spec=spec)


#: The workflow functions that take a specification as ``spec=`` besides their keywords.
SPEC_KEYWORD = {ApplySpec: _apply_file_with, SwapSpec: _swap_file_with}
SPEC_KEYWORD_CASES = [(spec, s) for spec, s in WORKFLOW_CASES if spec in SPEC_KEYWORD]


@pytest.mark.parametrize("spec, s", SPEC_KEYWORD_CASES, ids=[f"{t.__name__}-{s.name}" for t, s in SPEC_KEYWORD_CASES])
def test_a_setting_given_as_spec_to_the_workflow_function_is_refused_alike(spec: type, s: Setting,
                                                                          tmp_path: Path) -> None:
    """apply_file(spec=...) and swap_file(spec=...) refuse a failing value with the message of the
    specification's check, before any file is read (the files do not exist), and write nothing."""
    bad = invalid_value(s)
    with pytest.raises(PramkitError) as checked:
        spec(**{s.name: bad}).check()
    with pytest.raises(PramkitError) as used:
        SPEC_KEYWORD[spec](spec(**{s.name: bad}), tmp_path)
    assert str(used.value) == str(checked.value)
    assert list(tmp_path.iterdir()) == []


def test_settings_as_a_spec_and_as_keywords_are_refused(tmp_path: Path) -> None:
    from pramkit import apply_file
    from pramkit.errors import ParameterError
    from pramkit.swap import plan_swap, swap_file

    cases = [
        (lambda: apply_file("d.csv", "m.json", tmp_path / "o.csv", chunk_rows=5, shuffle=True, spec=ApplySpec()),
         "give the settings as an ApplySpec or as keywords, not both (chunk_rows, shuffle)"),
        (lambda: apply_file("d.csv", "m.json", tmp_path / "o.csv", spec=ApplySpec(engine="spark")),
         "apply_file applies on this machine, not with engine 'spark': call spec.apply(data, manifest, out, "
         "key=...) to run the spec's engine"),
        (lambda: swap_file("d.csv", plan_swap("hid", ["area"]), tmp_path / "o.csv", sep=";", spec=SwapSpec()),
         "give the settings as a SwapSpec or as keywords, not both (sep)"),
        (lambda: swap_file("d.csv", plan_swap("hid", ["area"], k=2), tmp_path / "o.csv", spec=SwapSpec()),
         "the plan was not made with the spec's k 3 (it has 2): make it with spec.plan(...)"),
        (lambda: swap_file("d.csv", plan_swap("hid", ["area"]), tmp_path / "o.csv", spec=SwapSpec(engine="spark")),
         "swap_file swaps on this machine, not with engine 'spark': call spec.swap(data, plan, out, key=...) to "
         "run the spec's engine"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError) as refused:
            call()
        assert str(refused.value) == message
    assert list(tmp_path.iterdir()) == []


def test_apply_file_with_a_spec_releases_what_its_keywords_release(tmp_path: Path) -> None:
    """apply_file(spec=ApplySpec(...)) and apply_file(...keywords): the same file and receipt, byte for byte;
    the data given as its opened Source too."""
    import pandas as pd

    from pramkit import apply_file
    from pramkit.design.classic import randomized_response
    from pramkit.manifest import Manifest
    from pramkit.source import Source

    data = tmp_path / "data.csv"
    pd.DataFrame({"region": ["north", "south", "NA", "west ", "Süd"] * 40, "x": range(200)}).to_csv(
        data, index=False, sep=";")
    manifest = Manifest.of({"region": randomized_response(["Süd", "north", "south", "west "], 1.0)})
    spec = ApplySpec(chunk_rows=33, threads=1, shuffle=True, public_columns="x", release="wave 2", sep=";")
    a = apply_file(data, manifest, tmp_path / "a.csv", key=bytes(32), spec=spec)
    b = apply_file(data, manifest, tmp_path / "b.csv", key=bytes(32), chunk_rows=33, threads=1, shuffle=True,
                   public_columns=("x",), release="wave 2", sep=";")
    c = apply_file(Source.open(data, sep=";"), manifest, tmp_path / "c.csv", key=bytes(32), chunk_rows=33,
                   threads=1, shuffle=True, public_columns=("x",), release="wave 2")
    assert Path(a.output).read_bytes() == Path(b.output).read_bytes() == Path(c.output).read_bytes()
    receipts = {Path(r.receipt).read_text(encoding="utf-8").replace(Path(r.output).name, "OUT") for r in (a, b, c)}
    assert len(receipts) == 1


def test_apply_file_refuses_a_frame_in_one_line(tmp_path: Path) -> None:
    import pandas as pd

    from pramkit import apply_file
    from pramkit.design.classic import randomized_response
    from pramkit.errors import ParameterError
    from pramkit.manifest import Manifest

    manifest = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    with pytest.raises(ParameterError) as refused:
        apply_file(pd.DataFrame({"sex": ["f"]}), manifest, tmp_path / "o.csv", key=bytes(32))
    assert str(refused.value) == ("apply_file reads a file or a folder of part files, not a DataFrame in memory; "
                                  "perturb a frame in memory with perturb_frame")
    assert list(tmp_path.iterdir()) == []


def test_swap_file_with_a_spec_swaps_what_its_keywords_swap(tmp_path: Path) -> None:
    from pramkit.swap import swap_file

    data = tmp_path / "data.csv"
    data.write_text("hid;region;area;size\n" + "".join(
        f"{i};{'NS'[i % 2]};{'NS'[i % 2]}{i % 3};{1 + i % 4}\n" for i in range(60)), encoding="utf-8")
    spec = SwapSpec(rate=0.3, k=2, chunk_rows=7, sep=";")
    plan = spec.plan("hid", ["region", "area"], risk_vars=["size"])
    a = swap_file(data, plan, tmp_path / "a.csv", key=bytes(32), spec=spec, manifest=None)
    b = swap_file(data, plan, tmp_path / "b.csv", key=bytes(32), chunk_rows=7, sep=";")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert a.swapped_households == b.swapped_households


def test_variance_bogus_is_refused_with_a_survey_design_as_the_command_line_refuses_it(tmp_path: Path) -> None:
    """The library used to be able to accept a variance the command line refuses; now one rule refuses it."""
    import pandas as pd

    from pramkit.design.classic import randomized_response
    from pramkit.estimate import estimate_table
    from pramkit.estimate.survey import SurveyDesign
    from pramkit.manifest import Manifest

    frame = pd.DataFrame({"sex": ["f", "m", "m"] * 10, "w": [1.5] * 30})
    manifest = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    with pytest.raises(PramkitError, match=r"^variance must be one of \['multinomial', 'pram'\], not 'bogus'$"):
        estimate_table(frame, manifest, "sex", survey=SurveyDesign("w"), variance="bogus")


def _options_before(spec: ReleaseSpec) -> dict[str, object]:
    """Every family's options as the hand-written mappings gave them before the registry's declarations (the
    manifest's ``input.options`` records this dict, in this order)."""
    if spec.method == "dp":
        distance = spec.objective == "distance"
        return {"truthful": spec.truthful, "form": None if distance and spec.family == "diagonal" else spec.family,
                "objective": spec.objective, **({"weights": spec.distance_weights} if spec.distance_weights else {}),
                **({"invariant": True} if spec.invariant else {})}
    if spec.method == "metric":
        return {"metric_epsilon": spec.metric_epsilon, "mechanism": spec.mechanism,
                **({"dilation": spec.dilation} if spec.dilation is not None else {})}
    names = ("beta", "pd", "alpha", "diagonal", "seed", "keep", "bandwidth", "k", "gamma")
    opts = {name: getattr(spec, name) for name in names if getattr(spec, name) is not None}
    if spec.off_diagonal is not None:
        opts["alpha"] = spec.off_diagonal
    if spec.beta_family is not None:
        opts["family"] = spec.beta_family
    return opts


#: Values of every family's settings (several for a choice: each is tried).
FAMILY_VALUES: dict[str, tuple[object, ...]] = {
    "beta": (0.4,), "pd": (0.7,), "alpha": (0.2,), "diagonal": ("fixed", "uniform"), "seed": (3,), "keep": (0.8,),
    "bandwidth": (2,), "k": (2,), "gamma": (0.01,), "off_diagonal": (0.1,), "beta_family": ("rr", "best"),
    "family": ("general", "diagonal"), "truthful": (True,), "objective": ("information", "variance", "distance"),
    "metric_epsilon": (0.5,), "mechanism": ("exponential", "geometric", "optimal"), "dilation": (1.5,),
    "distance_weights": ("frequencies", "uniform", "worst"), "invariant": (True,)}


def test_every_familys_options_are_those_of_the_mappings_before_in_the_same_order() -> None:
    """Every combination of each family's settings (each given or not, each value of a choice): the same dict as
    the hand-written mappings gave, key order included (the manifest records it, and its digest keys the draws)."""
    import itertools

    from pramkit.design.registry import FAMILIES

    tried = 0
    for method in FAMILIES:
        mine = [s.name for s in settings(ReleaseSpec) if s.name in FAMILY_VALUES and method in methods_of(s)]
        for r in range(len(mine) + 1):
            for given in itertools.combinations(mine, r):
                for values in itertools.product(*(FAMILY_VALUES[n] for n in given)):
                    spec = ReleaseSpec(method=method, **dict(zip(given, values, strict=True)))  # type: ignore[arg-type]
                    try:
                        spec.check()
                    except PramkitError:
                        continue
                    tried += 1
                    assert list(spec.options().items()) == list(_options_before(spec).items()), (method, given)
    assert tried > 130


def test_a_new_family_option_is_one_rule_and_one_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/architecture.md's example: a rule in the registry and a field in the specification, nothing else."""
    import dataclasses

    from pramkit.design.registry import FAMILIES
    from pramkit.settings import setting
    from pramkit.validate import Number

    monkeypatch.setitem(FAMILIES["keep"].options, "width", Number(int, low=1))  # type: ignore[index]

    @dataclasses.dataclass(frozen=True)
    class Spec(ReleaseSpec):
        width: int | None = setting(None, int, None, "keep: the width of a move", option="width", group="family")

    with pytest.raises(PramkitError, match=r"^width must be a whole number >= 1, got 0$"):
        Spec(method="keep", keep=0.8, width=0).check()
    with pytest.raises(PramkitError, match=r"^--bandwidth and --width apply to --method keep$"):
        Spec(method="rr", width=2).check()
    spec = Spec(method="keep", keep=0.8, width=2)
    assert spec.options() == {"keep": 0.8, "width": 2}
    assert spec.to_args() == ["--method", "keep", "--keep", "0.8", "--width", "2"]
    parser = argparse.ArgumentParser()
    from pramkit.settings import add_arguments, from_namespace

    add_arguments(parser, Spec)
    assert from_namespace(Spec, parser.parse_args(spec.to_args())) == spec


def test_a_new_dp_option_is_one_rule_and_one_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dp and metric families' options are no longer mapped by hand: a new one is recorded when given, after
    the options the family always records, refused with another family, and reaches the family's checks."""
    import dataclasses

    from pramkit.design.registry import FAMILIES
    from pramkit.settings import setting
    from pramkit.validate import Number

    monkeypatch.setitem(FAMILIES["dp"].options, "smoothing", Number(low=0, high=1))  # type: ignore[index]

    @dataclasses.dataclass(frozen=True)
    class Spec(ReleaseSpec):
        smoothing: float | None = setting(None, float, None, "--method dp: a smoothing", option="smoothing")

    assert Spec(smoothing=0.5, objective="variance").options() == {
        "truthful": False, "form": "diagonal", "objective": "variance", "smoothing": 0.5}
    assert Spec().options() == ReleaseSpec().options()                     # not given: not recorded
    with pytest.raises(PramkitError, match=r"^smoothing must be a number in \[0, 1\], got 2\.0$"):
        Spec(smoothing=2.0).check()
    with pytest.raises(PramkitError, match=r"^--family, --truthful, --objective and --smoothing apply to --method dp$"):
        Spec(method="rr", smoothing=0.5).check()
    assert FAMILIES["dp"].check(Spec(smoothing=0.5).options())["smoothing"] == 0.5


#: Family options no setting of ReleaseSpec gives, each with its reason.
OPTIONS_WITHOUT_A_SETTING = {
    "distances": "given by --distances, a release setting of every variable that build_matrices reads for "
                 "each target and hands to the families designed with distances",
    "unit": "the metric family's unit of distance, a library option (the distances read name their own unit)",
}


def _options_and_settings(spec: type) -> tuple[set[str], set[str]]:
    from pramkit.design.registry import FAMILIES

    declared = {o for fam in FAMILIES.values() for o in fam.options}
    given = {s.option for s in settings(spec) if s.option is not None}
    return declared, given


def test_a_family_option_and_its_setting_are_declared_together() -> None:
    """A family's option is its rule in the registry and its setting here (docs/architecture.md says why two
    places): a rule without its setting, or a setting naming an option no family takes, fails here."""
    declared, given = _options_and_settings(ReleaseSpec)
    assert declared - given == set(OPTIONS_WITHOUT_A_SETTING), (
        f"add a setting (option=...) to ReleaseSpec for {sorted(declared - given - set(OPTIONS_WITHOUT_A_SETTING))}")
    assert given <= declared, f"settings name options no family takes: {sorted(given - declared)}"
    assert all(methods_of(s) for s in settings(ReleaseSpec) if s.option is not None)


def test_the_check_of_option_and_setting_sees_a_rule_without_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from pramkit.design.registry import FAMILIES
    from pramkit.validate import Number

    monkeypatch.setitem(FAMILIES["keep"].options, "width", Number(int, low=1))  # type: ignore[index]
    declared, given = _options_and_settings(ReleaseSpec)
    assert declared - given - set(OPTIONS_WITHOUT_A_SETTING) == {"width"}


def _values(s: Setting):  # type: ignore[no-untyped-def]
    """A strategy of values of a setting's type, as a command line can write them."""
    from hypothesis import strategies as st

    from pramkit.validate import Choice

    words = st.text(alphabet="abcdefghij_0123456789", min_size=1, max_size=6).filter(lambda t: not t.isdigit())
    if s.switch:
        return st.booleans()
    if isinstance(s.rule, Choice):
        return st.sampled_from(s.rule.values)
    if s.kind is float:
        return st.floats(min_value=0.001, max_value=50, allow_nan=False)
    if s.kind is int:
        return st.integers(min_value=0, max_value=10**6)
    if s.kind is Path:
        return st.builds(Path, words.map(lambda t: t + ".csv"))
    if s.name == "na_values":
        return st.lists(words, max_size=3).map(tuple)
    return words


@pytest.mark.parametrize("spec", [ReleaseSpec, EstimateSpec, ApplySpec, SwapSpec, RiskSpec], ids=lambda c: c.__name__)
def test_to_args_parses_back_to_the_same_settings(spec: type) -> None:
    """Property: the command line a specification writes (the reproducing script's) parses to the same value."""
    from hypothesis import given
    from hypothesis import settings as hsettings
    from hypothesis import strategies as st

    from pramkit.settings import flags, from_namespace

    command, fixed = {ReleaseSpec: ("design", ["design"]),
                      EstimateSpec: ("estimate", ["estimate", "r.csv", "--manifest", "m.json"]),
                      ApplySpec: ("apply", ["apply", "d.csv", "--manifest", "m.json", "--out", "o.csv"]),
                      SwapSpec: ("swap", ["swap", "d.csv", "--hid", "h", "--geo", "a", "--out", "o.csv"]),
                      RiskSpec: ("risk", ["risk", "d.csv", "--keys", "a"])}[spec]
    parser = build_parser([command])
    every = settings(spec)

    @hsettings(max_examples=60, deadline=None)
    @given(st.fixed_dictionaries({}, optional={s.name: _values(s) for s in every}))
    def round_trip(values: dict) -> None:
        if spec is RiskSpec and {"sampling_fraction", "weights"} <= set(values):  # flags that exclude each other
            values.pop("weights")
        value = spec(**values)
        args = [x for flag, text in flags(value) for x in ((flag,) if text is None else (flag, text))]
        assert from_namespace(spec, parser.parse_args([*fixed, *args])) == value

    round_trip()


@pytest.mark.parametrize("spec, message", [
    (ReleaseSpec(target="matched=5%", epsilon=2.0, strata="age"), "age is perturbed, so it cannot also be a stratum"),
    (ReleaseSpec(split="optimal", objective="variance", epsilon=2.0), "split 'optimal' maximises information"),
    (ReleaseSpec(recognition=0.5, combinations="2", k=3), "--k applies to --method kanon"),
])
def test_a_release_is_refused_before_its_data_is_read(spec: ReleaseSpec, message: str) -> None:
    """The file does not exist: the refusal is the settings', so nothing was read."""
    with pytest.raises(PramkitError, match=message):
        spec.release("absent.csv", ["age", "sex"])


@pytest.mark.parametrize("command, spec", [("design", ReleaseSpec), ("estimate", EstimateSpec), ("apply", ApplySpec),
                                           ("swap", SwapSpec), ("risk", RiskSpec)])
def test_help_shows_every_setting(command: str, spec: type, capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` formats every generated flag's help (a stray % would fail only here)."""
    from pramkit.cli import main

    assert main([command, "--help"]) == 0
    shown = capsys.readouterr().out
    assert all(s.flag in shown for s in settings(spec))
