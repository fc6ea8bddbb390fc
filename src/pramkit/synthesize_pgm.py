"""Synthesis by a graphical model over marginals chosen under the budget (``pramkit synthesize --model pgm``).

The model ``"pgm"`` of :func:`pramkit.synthesize.synthesize_release` follows AIM (McKenna, Mullins, Sheldon
and Miklau 2022, Algorithm 1), with pure epsilon-DP mechanisms in place of AIM's zCDP ones:

1. **Workload.**  Every 3-way marginal of the synthesized variables (all of them when there are fewer than
   three); the candidates are its downward closure (every 1-, 2- and 3-way marginal), candidate ``r``
   weighted ``w_r = sum over workload marginals s of |r & s|`` (AIM, section 4).
2. **Start.**  Each 1-way table is measured (discrete Laplace noise, L1 sensitivity 2 under replace-one
   neighbours, :func:`pramkit.privacy.geometric.dp_counts`) at ``alpha = 0.9`` of a round's epsilon
   ``epsilon / T``, ``T`` the nominal rounds (``rounds``; by default ``ROUNDS_PER_VARIABLE`` times the number
   of variables).
   Then the categories whose noisy 1-way count is below 3 standard deviations of its noise are merged, alike
   under every rule, or across one rule's kinds for a variable it alone names
   (:mod:`pramkit.pgm_compression`, MST's and AIM's domain compression; post-processing): every later table is
   measured over the merged categories, and a record drawn into a merged category takes one of its categories
   in proportion to their noisy counts (jointly with the rule's other variables, among the combinations it
   allows).
3. **Rounds.**  Each round chooses one candidate by the exponential mechanism (McSherry and Talwar 2007)
   at ``(1 - alpha)`` of the round's epsilon, its quality ``q_r = w_r (|M_r(D) - M_r(p)|_1 - b n_r)``
   (``p`` the current model, ``b`` the expected absolute noise of a measurement this round, ``n_r`` the
   candidate's cells), sensitivity ``2 max w_r`` (one record replaced moves a marginal by at most 2 in L1),
   among the candidates whose junction tree stays within ``max_cells`` times the share of the budget spent
   (AIM's growing size limit); then measures it at ``alpha`` of the round's epsilon.  The model is fitted
   again after every ``tables_per_fit`` tables (by default each, AIM's order: :data:`TABLES_PER_FIT`), the
   rounds between two fits choosing among the candidates but the tables chosen since the fit.  For each table
   that the fit moved by less than the measurement's expected noise, the round's epsilon doubles (AIM's
   annealing).  The last round spends what is left.
4. **Fit.**  Private-PGM (McKenna, Sheldon and Miklau 2019; ``mbi`` 2.0, mirror descent) fits the
   graphical model whose marginals are closest (least squares, each measurement weighted by its noise) to
   the noisy tables, the number of records known (replace-one neighbours: it is public).  Each round's fit
   starts from the last one's model and from the step its line search had reached
   (:func:`carried_step_estimator`), so it absorbs the table just measured.  Every edit rule
   is a structural zero of the model (an ``mbi.Constraint``: a potential of minus infinity on the forbidden
   cells), so the model gives a forbidden combination probability 0.
5. **Draw.**  The records are drawn from the model along its junction tree (the elimination order
   reversed): each variable given those of its cliques already drawn, by systematic sampling within each
   group of records of the same drawn values (mbi's ``"round"`` method), at keyed uniforms.  A value of
   probability 0 is never drawn, so every record keeps every rule (checked on the released records).  When
   each draw is shared (``share``, ``synthesize --min-count 2``), a ``share``-th as many records are drawn
   and each is repeated (:func:`shared_draws`).  Balanced (``draw_by``, :mod:`pramkit.pgm_balance`): the
   draws are chosen among four times as many by a keyed local search, so that every 3-way table of the
   released file meets the model's, not only the tables of its cliques.

Every epsilon (each selection's and each measurement's) is in the ledger: their exact sum is at most the
budget (pure epsilon-DP by sequential composition, replace-one neighbours).  Everything after the
measurements (the fits, the annealing, the draws) reads only the noisy tables, the number of records, the
rules and the key: post-processing.

**Add-or-remove neighbours** (``neighbours="add-remove"``, the relation under which MST and AIM state their
(epsilon, delta) guarantees; an add-or-remove epsilon implies a replace-one 2 epsilon, not the reverse).
Two data sets are neighbours when one is the other with one record added or removed, so the number of
records ``n`` is no longer public:

* **Measurements.**  Adding or removing a record changes one cell of a table by 1: L1 sensitivity 1, and
  each table gets discrete Laplace noise ``P(k) ~ exp(-epsilon_i |k|)``, scale ``1 / epsilon_i``.
* **The model's total.**  Never ``n``: each fit is given the minimum-variance unbiased estimate of the
  total from the noisy tables measured so far (:func:`estimated_total`: each table's sum estimates ``n``
  with variance ``cells * sigma_i^2``, ``sigma_i^2 = 2 a_i / (1 - a_i)^2``, ``a_i = exp(-epsilon_i)``;
  the sums weighted by their inverse variances, as ``mbi`` estimates a total it is not given), and the
  released file has that estimate of the last fit, rounded (:func:`released_records`), records.  No
  budget is spent on it: it is post-processing of the tables.
* **Selection.**  The quality of candidate ``r`` is ``q_r(D) = w_r (|x - c|_1 - b n_r)`` with
  ``x = M_r(D)`` the exact table and ``c = M_r(p)`` the current model's, scaled to the estimated total.
  Given the outputs of the earlier rounds (adaptive composition) ``c``, ``b`` and ``n_r`` are the same for
  ``D`` and a neighbour ``D'``, and ``x' = M_r(D')`` is ``x`` with one cell moved by 1, so by the triangle
  inequality ``|q_r(D) - q_r(D')| = w_r | |x - c|_1 - |x' - c|_1 | <= w_r |x - x'|_1 = w_r``.  The
  exponential mechanism at sensitivity ``Delta = max_r w_r`` (over the round's candidates, themselves
  post-processing), choosing ``r`` with probability proportional to ``exp(epsilon_s q_r / (2 Delta))``, is
  then epsilon_s-DP.  (Under replace-one, ``|x - x'|_1 <= 2`` and ``c`` is scaled to the public ``n``:
  ``Delta = 2 max_r w_r``.)  ``b`` is the expected absolute noise at sensitivity 1.

The schedule of epsilons is the same under both relations; the sum of every epsilon is then pure
epsilon-DP under add-or-remove neighbours, delta 0.

References: R. McKenna, B. Mullins, D. Sheldon and G. Miklau, "AIM: an adaptive and iterative mechanism
for differentially private synthetic data", PVLDB 15 (2022) 2599-2612; R. McKenna, D. Sheldon and
G. Miklau, "Graphical-model based estimation and inference for differential privacy", ICML 2019;
F. McSherry and K. Talwar, "Mechanism design via differential privacy", FOCS 2007.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.kernel.rng import SecretKey, uniforms
from pramkit.pgm_balance import POOL, balance, check_draw, is_balanced
from pramkit.pgm_compression import COMPRESS_SD, compression_of
from pramkit.synthesize_codes import cell_index, code_chunks, code_dtype, count_cells
from pramkit.synthesize_marginals import Calibrated, tree_cells

#: The models of ``pramkit synthesize``: the default (margins raked over a pool) and the graphical model.
MODELS = ("margins", "pgm")
#: The default cap on the model's size: the cells of its junction tree's cliques, added up.
MAX_CELLS = 1_000_000
#: The least and the most cells a model may be allowed.
MIN_CELLS, MOST_CELLS = 1_000, 100_000_000
#: The nominal rounds per synthesized variable (AIM's T = 16 d is for zCDP; pure DP composes linearly).
ROUNDS_PER_VARIABLE = 4
#: The most nominal rounds ``T`` a release may ask for (``rounds``; AIM's T = 16 d is 960 at 60 variables).
MOST_ROUNDS = 10_000
#: The share of a round's epsilon spent on its measurement (the rest on its selection).
ALPHA = Fraction(9, 10)
#: A 1-way table's share of a round's measurement epsilon.
FIRST_SHARE = Fraction(1)
#: Mirror-descent iterations of each round's fit (warm-started) and of the final fit.
ROUND_ITERS = 100
#: Mirror-descent iterations of each round's fit under zCDP (``delta``): its less noisy tables repay a closer fit.
ZCDP_ROUND_ITERS = 300
FINAL_ITERS = 1000
#: The tables chosen and measured between two fits of the model by default (``procedure.tables_per_fit``,
#: written when it is not 1): 1, each table fitted before the next is chosen, AIM's order.  Every fit compiles a
#: program of its own (the model's cliques change), so three a fit make a release up to twice as fast; on NIST's
#: CRC data they scored as one on the demographic set, but 14 points lower on the industry set at epsilon 10 at
#: each of three keys (docs/benchmarks.md), so they are an option, not the default.
TABLES_PER_FIT = 1
#: The most tables a release may choose between two fits.
MOST_TABLES_PER_FIT = 16
#: The most variables the workload of 3-way marginals is built over.
MAX_VARIABLES = 60
#: The most cells of the original's exact marginals kept between rounds (the others are counted again).
EXACT_CACHE_CELLS = 20_000_000
#: The neighbour relations of the guarantee: replace-one (the default; the number of records is public) and
#: add-or-remove (it is not).
NEIGHBOURS = ("replace-one", "add-remove")
#: The largest delta of an (epsilon, delta) guarantee (``delta``); a delta should stay well below one over the
#: number of records.
MAX_DELTA = 1e-3
#: The L1 sensitivity of a table (a histogram of records) under each neighbour relation.
TABLE_SENSITIVITY = {"replace-one": 2, "add-remove": 1}


@dataclass(frozen=True)
class Selection:
    """One round's choice of a marginal by the exponential mechanism (public: its epsilon is in the ledger).

    Examples
    --------
    >>> Selection(0, 0.01, 40, 3, ("a", "b")).to_dict()["chosen"]
    ['a', 'b']
    """

    round: int
    epsilon: float
    sensitivity: float
    candidates: int
    chosen: tuple[str, ...]
    rho: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The selection as JSON (``rho``, its zCDP ``epsilon^2 / 8`` rounded up, under zCDP only)."""
        return {"mechanism": "exponential", "round": self.round, "epsilon": self.epsilon,
                **({"rho": self.rho} if self.rho is not None else {}),
                "sensitivity": self.sensitivity, "candidates": self.candidates, "chosen": list(self.chosen)}


@dataclass(frozen=True)
class Table:
    """One noisy table of the model pgm (:class:`pramkit.synthesize.Measurement` in the manifest): its axes,
    shape, epsilon and noisy counts.

    Examples
    --------
    >>> Table(("a",), (2,), 0.5, np.array([3, -1])).epsilon
    0.5
    """

    axes: tuple[str, ...]
    shape: tuple[int, ...]
    epsilon: float
    noisy: np.ndarray
    sensitivity: int = 2
    sigma2: float | None = None


@dataclass
class PgmFit:
    """What :func:`fit_and_draw` made: the drawn codes (records by variables), the measurements (the 1-way
    tables, then one per round), the selections, the model's size in cells and its cliques; under add-or-remove
    neighbours, ``total``: the total estimated from the noisy tables (the drawn records are it, rounded);
    ``shared``: the records that take another record's draw (``share`` above 1: the records less the draws);
    ``balanced``: whether the draws were balanced (:mod:`pramkit.pgm_balance`)."""

    drawn: np.ndarray
    measurements: list[Any]
    selections: list[Selection]
    cells: int
    cliques: list[tuple[str, ...]]
    rounds: int
    total: float | None = None
    compression: Any = None
    shared: int = 0
    balanced: bool = False


def check_pgm_settings(model: Any, max_cells: Any) -> str:
    """Check the model's name and its size cap before any data is read.

    Examples
    --------
    >>> check_pgm_settings("pgm", 10_000)
    'pgm'
    >>> check_pgm_settings("pgm", 10)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: max_cells must be an integer from 1000 to 100000000, got 10
    >>> check_pgm_settings("bayes", MAX_CELLS)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: model must be one of margins, pgm, got 'bayes'
    """
    if model not in MODELS:
        raise ParameterError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if isinstance(max_cells, bool) or not isinstance(max_cells, (int, np.integer)) or \
            not MIN_CELLS <= max_cells <= MOST_CELLS:
        raise ParameterError(f"max_cells must be an integer from {MIN_CELLS} to {MOST_CELLS}, got {max_cells!r}")
    return str(model)


def default_rounds(variables: int) -> int:
    """The nominal rounds ``T`` of a release that asks for none: :data:`ROUNDS_PER_VARIABLE` per variable.

    Examples
    --------
    >>> default_rounds(11)
    44
    """
    return ROUNDS_PER_VARIABLE * int(variables)


def check_rounds(rounds: Any, variables: int, model: Any = "pgm") -> int | None:
    """Check the nominal number of rounds ``T`` before any data is read: ``None`` (the default,
    :data:`ROUNDS_PER_VARIABLE` per variable) or an integer from the number of synthesized variables to
    :data:`MOST_ROUNDS`, with the model pgm only.

    Examples
    --------
    >>> check_rounds(160, 10), check_rounds(None, 10)
    (160, None)
    >>> check_rounds(5, 10)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: rounds must be an integer from 10 (the synthesized variables) to 10000, got 5
    >>> check_rounds(40, 10, "margins")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: rounds needs the model pgm (the model margins chooses no tables)
    """
    if rounds is None:
        return None
    if model != "pgm":
        raise ParameterError(f"rounds needs the model pgm (the model {model} chooses no tables)")
    low = max(1, int(variables))
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not low <= rounds <= MOST_ROUNDS:
        raise ParameterError(f"rounds must be an integer from {low} (the synthesized variables) to {MOST_ROUNDS}, "
                             f"got {rounds!r}")
    return int(rounds)


def check_tables_per_fit(value: Any, model: Any = "pgm") -> int:
    """The tables chosen between two fits of the model pgm: a whole number from 1 to :data:`MOST_TABLES_PER_FIT`
    (``None``: :data:`TABLES_PER_FIT`), with the model pgm only.

    Examples
    --------
    >>> check_tables_per_fit(3), check_tables_per_fit(None)
    (3, 1)
    >>> check_tables_per_fit(0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: tables_per_fit must be a whole number from 1 to 16, got 0
    """
    if value is None:
        return TABLES_PER_FIT
    if model != "pgm":
        raise ParameterError(f"tables_per_fit needs the model pgm (the model {model} chooses no tables)")
    return whole_tables_per_fit(value)


def whole_tables_per_fit(value: Any) -> int:
    """A stated ``tables_per_fit`` (a manifest's, or one asked for): a whole number from 1 to
    :data:`MOST_TABLES_PER_FIT`, with no default (``None`` is refused like any other value).

    Examples
    --------
    >>> whole_tables_per_fit(16)
    16
    >>> whole_tables_per_fit(None)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: tables_per_fit must be a whole number from 1 to 16, got None
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MOST_TABLES_PER_FIT:
        raise ParameterError(f"tables_per_fit must be a whole number from 1 to {MOST_TABLES_PER_FIT}, got {value!r}")
    return int(value)


def check_bins(bins: Any, variables: Sequence[str], model: Any = "pgm") -> dict[str, int] | None:
    """Check the declared bins before any data is read: ``None`` (none), or each synthesized variable's bin
    width, a positive integer (:func:`pramkit.pgm_compression.bin_groups`), as a mapping or as text
    ``"VAR=WIDTH,..."``; with the model pgm only.  The widths come back in the variables' order.

    Examples
    --------
    >>> check_bins("AGEP=5, POVPIP=25", ["AGEP", "SEX", "POVPIP"]), check_bins(None, ["AGEP"])
    ({'AGEP': 5, 'POVPIP': 25}, None)
    >>> check_bins({"AGE": 5}, ["AGEP"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: bins names AGE, which is not a synthesized variable (AGEP)
    >>> check_bins("AGEP=0", ["AGEP"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: bins: the width of AGEP must be a positive integer, got '0'
    """
    if bins is None or (isinstance(bins, str) and not bins.strip()):
        return None
    if model != "pgm":
        raise ParameterError(f"bins needs the model pgm (the model {model} measures every category)")
    if isinstance(bins, str):
        pairs = [part.split("=", 1) for part in bins.split(",") if part.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ParameterError(f"bins must be written VAR=WIDTH, comma-separated, got {bins!r}")
        items = [(name.strip(), width.strip()) for name, width in pairs]
    elif isinstance(bins, Mapping):
        items = list(bins.items())
    else:
        raise ParameterError(f"bins must be a mapping of variables to widths or text VAR=WIDTH,..., got {bins!r}")
    out: dict[str, int] = {}
    for name, given in items:
        if name not in variables:
            raise ParameterError(f"bins names {name}, which is not a synthesized variable ({', '.join(variables)})")
        if name in out:
            raise ParameterError(f"bins names {name} twice")
        width: Any = int(given) if isinstance(given, str) and given.isdecimal() else given
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
            raise ParameterError(f"bins: the width of {name} must be a positive integer, got {given!r}")
        out[str(name)] = int(width)
    return {v: out[v] for v in variables if v in out}  # in the variables' order: one release for one setting


def binned(bins: Mapping[str, int] | None, cats: Mapping[str, Sequence[Any]]) -> dict[str, tuple[list[Any], int]]:
    """Each binned variable's categories and width, as :func:`pramkit.pgm_compression.compression_of` takes
    them; a variable none of whose categories is a number cannot be binned.

    Examples
    --------
    >>> binned({"AGEP": 5}, {"AGEP": ["0", "1", "N"]})
    {'AGEP': (['0', '1', 'N'], 5)}
    >>> binned({"SEX": 2}, {"SEX": ["f", "m"]})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: bins: SEX has no category that is a number (f, m): it cannot be binned
    """
    from pramkit.pgm_compression import bin_of

    out = {}
    for v, width in (bins or {}).items():
        cs = list(cats[v])
        if all(bin_of(c, width) is None for c in cs):
            shown = ", ".join(str(c) for c in cs[:5]) + (", ..." if len(cs) > 5 else "")
            raise ParameterError(f"bins: {v} has no category that is a number ({shown}): it cannot be binned")
        out[v] = (cs, width)
    return out


def check_neighbours(neighbours: Any, model: Any = "pgm") -> str:
    """Check the neighbour relation of the guarantee before any data is read: ``"replace-one"`` (any model) or
    ``"add-remove"`` (the model pgm only: the model margins releases one record per original record, so its
    number of records is public).

    Examples
    --------
    >>> check_neighbours("add-remove")
    'add-remove'
    >>> check_neighbours("add-remove", "margins")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: neighbours 'add-remove' needs the model pgm: the model margins releases one record per original record, so its number of records is public
    >>> check_neighbours("swap")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: neighbours must be one of replace-one, add-remove, got 'swap'
    """
    if neighbours not in NEIGHBOURS:
        raise ParameterError(f"neighbours must be one of {', '.join(NEIGHBOURS)}, got {neighbours!r}")
    if neighbours == "add-remove" and model != "pgm":
        raise ParameterError(f"neighbours 'add-remove' needs the model pgm: the model {model} releases one record "
                             "per original record, so its number of records is public")
    return str(neighbours)


def check_delta(delta: Any, model: Any = "pgm") -> float | None:
    """Check the delta of an (epsilon, delta) guarantee before any data is read: ``None`` (pure epsilon-DP, the
    default) or a number in ``(0, MAX_DELTA]``, with the model pgm only (which then accounts in zCDP).

    Examples
    --------
    >>> check_delta(1e-5), check_delta(None)
    (1e-05, None)
    >>> check_delta(0.01)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: delta must be a number above 0 and at most 0.001, got 0.01
    >>> check_delta(1e-5, "margins")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: delta needs the model pgm (the model margins is pure epsilon-DP)
    """
    if delta is None:
        return None
    if model != "pgm":
        raise ParameterError(f"delta needs the model pgm (the model {model} is pure epsilon-DP)")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)) or \
            not math.isfinite(float(delta)) or not 0 < float(delta) <= MAX_DELTA:
        raise ParameterError(f"delta must be a number above 0 and at most {MAX_DELTA:g}, got {delta!r}")
    return float(delta)


@contextlib.contextmanager
def _quiet_jax() -> Iterator[None]:
    """JAX in float64, and mbi's warnings about it and about JAX's persistent compilation cache silenced, for
    the duration of the block only (the settings are put back); JAX's compiled programs dropped after it.

    The persistent cache is used only where the user gave it a folder (``JAX_COMPILATION_CACHE_DIR``): a fit
    made again (the audit's release made again, another draw of the same tables) then loads each program
    instead of compiling it (a release of NIST's 3 000-record excerpt: 26 s, then 7 s).  JAX stores only
    programs that took ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` (default 1 s) to compile, and a round's
    take about 0.2 s: set it to 0 as well.

    A release compiles a few programs a round (each new set of cliques is a new program), and each holds
    mapped executable memory until dropped: a process that made release after release ran out of memory
    maps (the kernel's ``vm.max_map_count``) in LLVM, on the fourth release of NIST's excerpt."""
    import jax

    flags = jax.config.values
    x64, cache = flags["jax_enable_x64"], flags["jax_enable_compilation_cache"]
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", cache and flags["jax_compilation_cache_dir"] is not None)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(float32|compilation cache).*")
            yield
    finally:
        jax.clear_caches()
        jax.config.update("jax_enable_x64", x64)
        jax.config.update("jax_enable_compilation_cache", cache)


#: XLA's CPU code generation, set only for the jaxlib releases it was measured on (an XLA that does not know a
#: flag stops the process), only before JAX's backend starts (XLA reads its flags then), and never over the user's
#: own setting of a flag:
#:
#: * the older emitters for fused operations, which compile a round's fit in about three quarters of the time and
#:   run it faster (NIST's demographic features: a release in 46 s instead of 65 s);
#: * reductions emitted by XLA itself, not by the YNNPACK library, and matrix products on one thread of Eigen.
#:   YNNPACK splits a large reduction among the threads of XLA's pool, one per core the process may use, and adds
#:   the pieces: its sums, and so the fitted model and the file drawn from it, depended on the machine's number of
#:   cores (the same key drew another file on one core than on two).
#:
#: Each rounds otherwise, so they draw another file from the same key than XLA's defaults.
CPU_CODEGEN = (("--xla_cpu_use_fusion_emitters=false", "--xla_cpu_experimental_ynn_fusion_type=-reduce",
                "--xla_cpu_multi_thread_eigen=false"), ("0.10",))


def _jax_started() -> bool:
    """Whether JAX's backend has started, so that XLA has read its flags: JAX imported is not enough.

    Examples
    --------
    >>> import sys
    >>> _jax_started() if "jax" not in sys.modules else False
    False
    """
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # another JAX: imported is taken for started
        return True


def _cpu_codegen(environ: Any = None) -> bool:
    """Add :data:`CPU_CODEGEN`'s flags to ``XLA_FLAGS`` (``environ``, default the process's) when JAX's backend
    has not started and the installed jaxlib is one they were measured on; True when any was added.

    When the backend has started without them (something in the process computed with JAX first), a
    :class:`~pramkit.errors.PramkitWarning` says that this release is not the file a fresh process draws
    from the same key, and how to make it so.

    Examples
    --------
    >>> env = {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}
    >>> added = _cpu_codegen(env)
    >>> env["XLA_FLAGS"].split()[0]  # the user's own choice is kept
    '--xla_cpu_use_fusion_emitters=true'
    >>> "--xla_cpu_use_fusion_emitters=false" in env["XLA_FLAGS"]
    False
    """
    import os
    from importlib import metadata

    environ = os.environ if environ is None else environ
    flags, tested = CPU_CODEGEN
    current = environ.get("XLA_FLAGS", "")
    missing = [flag for flag in flags if flag.split("=")[0] not in current]
    if not missing:
        return False
    try:
        version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return False
    if not any(version == t or version.startswith(t + ".") for t in tested):
        return False
    if _jax_started():
        from pramkit.errors import PramkitWarning

        warnings.warn(f"JAX started before pramkit could add {' '.join(missing)} to XLA_FLAGS: XLA rounds "
                      "otherwise without them, so this release is not the file a fresh process draws from the same "
                      "key. Set those flags in XLA_FLAGS before JAX starts (or start pramkit first) to draw it",
                      PramkitWarning, stacklevel=3)
        return False
    environ["XLA_FLAGS"] = " ".join([current, *missing]).strip()
    return True


def import_mbi() -> Any:
    """Private-PGM's ``mbi`` 2.0, imported on first use, or a one-line error naming the extra to install.

    Examples
    --------
    >>> import_mbi().__name__  # doctest: +SKIP
    'mbi'
    """
    _cpu_codegen()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(float32|compilation cache).*")
            import mbi
    except ImportError:
        raise ParameterError('the model pgm needs Private-PGM: pip install "pramkit[pgm]"') from None
    return mbi


def workload(names: Sequence[str]) -> tuple[list[tuple[str, ...]], dict[tuple[str, ...], float]]:
    """The candidates (every 1-, 2- and 3-way marginal, in order) and their AIM weights
    ``w_r = sum over the workload's 3-way marginals s of |r & s|``.

    Examples
    --------
    >>> cands, w = workload(["a", "b", "c"])
    >>> len(cands), w[("a",)], w[("a", "b")], w[("a", "b", "c")]
    (7, 1.0, 2.0, 3.0)
    """
    k = min(3, len(names))
    work = list(itertools.combinations(names, k))
    cands = [c for size in range(1, k + 1) for c in itertools.combinations(names, size)]
    return cands, {r: float(sum(len(set(r) & set(s)) for s in work)) for r in cands}


def expected_noise(epsilon: float, sensitivity: int = 2) -> float:
    """The expected absolute value of discrete Laplace noise at ``epsilon`` and L1 ``sensitivity`` (2:
    replace-one neighbours, 1: add-or-remove): ``2 a / (1 - a^2)``, ``a = exp(-epsilon / sensitivity)``.

    Examples
    --------
    >>> round(expected_noise(1.0), 4), round(expected_noise(0.01), 1), round(expected_noise(0.01, 1), 1)
    (1.919, 200.0, 100.0)
    """
    a = math.exp(-epsilon / sensitivity)
    return 2 * a / (1 - a * a)


def noise_sd(epsilon: float, sensitivity: int = 2) -> float:
    """The standard deviation of discrete Laplace noise at ``epsilon`` and L1 ``sensitivity``:
    ``sqrt(2 a) / (1 - a)``, ``a = exp(-epsilon / sensitivity)``.

    Examples
    --------
    >>> round(noise_sd(1.0), 4), round(noise_sd(0.5, 1), 4)    # half the epsilon at half the sensitivity
    (2.7992, 2.7992)
    """
    a = math.exp(-epsilon / sensitivity)
    return math.sqrt(2 * a) / (1 - a)


def table_sd(t: Any) -> float:
    """The standard deviation of a table's noise: ``sqrt(sigma2)`` for a discrete Gaussian table (a ``sigma2``
    stated), else :func:`noise_sd` of its epsilon and sensitivity.  ``t``: a :class:`Table` or its JSON.

    Examples
    --------
    >>> table_sd({"epsilon": 1.0, "sensitivity": 2}) == noise_sd(1.0), table_sd({"sigma2": 4.0, "sensitivity": 1})
    (True, 2.0)
    """
    def field(name: str) -> Any:
        return t.get(name) if isinstance(t, Mapping) else getattr(t, name, None)

    sigma2 = field("sigma2")
    if sigma2 is not None:
        return math.sqrt(float(sigma2))
    return noise_sd(float(field("epsilon")), int(field("sensitivity")))


def estimated_total(tables: Sequence[Any]) -> float:
    """The number of records estimated from noisy tables alone (add-or-remove neighbours, module docstring):
    each table's sum weighted by the inverse of its variance ``cells * noise_sd(epsilon, sensitivity)^2``, at
    least 1.  ``tables``: objects or JSON objects with ``epsilon``, ``noisy`` and ``sensitivity``.

    Examples
    --------
    >>> t = [Table(("a",), (2,), 1.0, np.array([60, 41]), 1), Table(("b",), (4,), 1.0, np.array([30, 30, 20, 21]), 1)]
    >>> round(estimated_total(t), 3)    # (101 / 2 + 101 / 4) / (1 / 2 + 1 / 4)
    101.0
    >>> estimated_total([{"epsilon": 0.5, "noisy": [[-3, 1], [0, 0]], "sensitivity": 1}])
    1.0
    """
    num = den = 0.0
    for t in tables:
        noisy = np.asarray(t["noisy"] if isinstance(t, Mapping) else t.noisy, dtype=np.int64)
        w = 1.0 / (noisy.size * table_sd(t) ** 2)
        num += w * float(noisy.sum())
        den += w
    return max(1.0, num / den) if den > 0 else 1.0


def released_records(total: float) -> int:
    """The number of records released for an estimated ``total``: rounded half up, at least 1.

    Examples
    --------
    >>> released_records(2724.5), released_records(0.2)
    (2725, 1)
    """
    return max(1, math.floor(total + 0.5))


def _down(x: Fraction) -> float:
    """The largest float at most ``x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, 0.0)


def _up(x: Fraction) -> float:
    """The smallest float at least ``x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


@dataclass(frozen=True)
class Accounting:
    """How the model pgm counts its budget: ``"pure"`` (the budget an epsilon; discrete Laplace tables, each
    selection at its epsilon; sequential composition adds them) or ``"zcdp"`` (the budget a rho of
    zero-concentrated DP; discrete Gaussian tables at ``rho = sensitivity / (2 sigma2)``, each selection at the
    exponential mechanism's ``epsilon^2 / 8``; composition adds the rhos).  ``sensitivity``: a table's L1
    sensitivity, which for a histogram is its squared L2 sensitivity too.  A round's amount is converted to the
    published parameter (an epsilon, a ``sigma2``) rounded so that what is spent, computed back exactly from the
    published figure, is at most the amount.

    Examples
    --------
    >>> z = Accounting("zcdp", 1)
    >>> eps, spent = z.select(0.02)
    >>> spent <= Fraction(0.02), round(eps, 4)
    (True, 0.4)
    >>> _, sigma2, spent = z.measure(0.005)
    >>> sigma2, spent == Fraction(1, 2) / Fraction(sigma2) <= Fraction(0.005)
    (100.0, True)
    """

    kind: str
    sensitivity: int

    #: The factor the annealing multiplies a round's amount by, in either unit.  (AIM multiplies a round's rho
    #: by 4, halving the noise's deviation; doubling it chose more tables and scored higher on NIST's CRC data.)
    growth = 2

    def select(self, amount: float) -> tuple[float, Fraction]:
        """The selection's epsilon for ``amount``, and what it spends."""
        if self.kind == "pure":
            return amount, Fraction(amount)
        from pramkit.privacy.zcdp import exponential_epsilon, exponential_rho

        eps = exponential_epsilon(amount)
        return eps, exponential_rho(eps)

    def measure(self, amount: float) -> tuple[float | None, float | None, Fraction]:
        """A table's epsilon (pure) or ``sigma2`` (zCDP) for ``amount``, and what it spends."""
        if self.kind == "pure":
            return amount, None, Fraction(amount)
        from pramkit.privacy.gaussian import gaussian_rho, gaussian_sigma2

        sigma2 = _up(gaussian_sigma2(amount, self.sensitivity))
        return None, sigma2, gaussian_rho(sigma2, self.sensitivity)

    def expected_abs(self, epsilon: float | None, sigma2: float | None) -> float:
        """The expected absolute noise of one cell of a table measured at ``epsilon`` or ``sigma2`` (Gaussian:
        ``sqrt(2 sigma2 / pi)``)."""
        if sigma2 is not None:
            return math.sqrt(2 * sigma2 / math.pi)
        return expected_noise(float(epsilon), self.sensitivity)  # type: ignore[arg-type]


class _Budget:
    """The rounds' amounts (epsilons, or rhos under zCDP), exactly: what is spent (a Fraction) never passes the
    budget."""

    def __init__(self, budget: float, rounds: int, variables: int) -> None:
        self.budget = Fraction(budget)
        self.spent = Fraction(0)
        self.round = _down(self.budget / rounds)
        self.first = _down(Fraction(self.round) * ALPHA * FIRST_SHARE)  # each 1-way table's amount
        if self.first * variables >= budget:
            raise ParameterError("the budget is too small for the model pgm")

    def spend(self, eps: float | Fraction) -> float | Fraction:
        self.spent += Fraction(eps)
        if self.spent > self.budget:  # pragma: no cover - the schedule never passes it
            raise DataError("the model pgm overspent its budget: report this")
        return eps

    def next_round(self) -> tuple[float, float, bool]:
        """The next round's selection and measurement amounts, and whether it is the last."""
        left = self.budget - self.spent
        last = left < 2 * Fraction(self.round)
        total = left if last else Fraction(self.round)
        select = _down(total * (1 - ALPHA))
        measure = _down(total - Fraction(select))
        return select, measure, last

    def share(self) -> float:
        return float(self.spent / self.budget)


class _Data:
    """The original's codes and what the rounds read of them: exact marginals, computed once each."""

    def __init__(self, codes: np.ndarray, names: Sequence[str], sizes: Sequence[int]) -> None:
        self.codes, self.names, self.sizes = codes, list(names), list(sizes)
        self._exact: dict[tuple[str, ...], np.ndarray] = {}
        self.cached = 0
        digest = hashlib.sha256()
        for piece in code_chunks(codes):
            digest.update(piece)
        self.digest = digest.digest()

    def shape(self, r: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.sizes[self.names.index(a)] for a in r)

    def forget(self) -> None:
        """Hold the records no more (their exact marginals are read no more)."""
        self.codes = self.codes[:0]

    def exact(self, r: tuple[str, ...]) -> np.ndarray:
        if r in self._exact:
            return self._exact[r]
        table = count_cells(self.codes, [self.names.index(a) for a in r], self.shape(r))
        if self.cached + table.size <= EXACT_CACHE_CELLS:  # kept while memory allows, else counted again
            self._exact[r] = table
            self.cached += table.size
        return table


class _Factors:
    """The model as non-negative factors over cliques (its potentials, exponentiated, and the rules' masks),
    and its marginals from their junction tree calibrated in NumPy (:mod:`pramkit.synthesize_marginals`),
    scaled to ``total`` records; ``fitted``: a marginal a clique holds is summed from the fit's own marginal of
    that clique instead."""

    fitted = True

    def __init__(self, model: Any, masks: Sequence[tuple[tuple[str, ...], np.ndarray]], total: float) -> None:
        self.items: list[tuple[tuple[str, ...], np.ndarray]] = []
        for cl in model.potentials.cliques:
            v = np.asarray(model.potentials[cl].values, dtype=float)
            self.items.append((tuple(cl), np.exp(v - v.max())))
        self.masks = [(cl, m.astype(float)) for cl, m in masks]
        self.items += self.masks
        self.total = total
        self.model = model
        self._cliques: dict[tuple[str, ...], np.ndarray] = {}
        self._tree: Calibrated | None = None
        self._no_tree = False  # the factors gave no distribution

    def marginal(self, r: Sequence[str]) -> np.ndarray:
        """The model's marginal of ``r`` scaled to the total: summed from the fitted marginal of a clique that
        holds ``r`` when there is one; else from the calibrated junction tree of the factors; last (the factors'
        product zero everywhere, which a fitted model never gives), by mbi's own inference (in logs) times the
        rules' masks within ``r``."""
        held = self._held(r)
        if held is not None:
            return held
        if self._tree is None and not self._no_tree:
            sizes = {a: n for cl, v in self.items for a, n in zip(cl, v.shape)}
            try:
                self._tree = Calibrated(self.items, sizes)
            except FloatingPointError:
                self._no_tree = True
        if self._tree is not None:
            return self._to_total(self._tree.marginal(r))
        out = np.asarray(self.model.project(list(r)).transpose(list(r)).values, dtype=float)
        return self._to_total(self._masked(out, r))

    def _masked(self, out: np.ndarray, r: Sequence[str]) -> np.ndarray:
        """``out`` (over ``r``) times every rule's mask whose variables are all in ``r``: mbi's inference reads
        the potentials alone, and the rules' cells are zeros the model's constraints hold apart from them."""
        for cl, m in self.masks:
            if set(cl) <= set(r):
                aligned = np.transpose(m, [cl.index(a) for a in r if a in cl])
                out = out * aligned.reshape([out.shape[i] if a in cl else 1 for i, a in enumerate(r)])
        return out

    def _to_total(self, out: np.ndarray) -> np.ndarray:
        """A marginal scaled to the total records (as it is when it sums to 0)."""
        s = out.sum()
        return out * (self.total / s) if s > 0 else out

    def _held(self, r: Sequence[str]) -> np.ndarray | None:
        """``r``'s marginal summed from the fitted marginals of the smallest model clique holding it (the fit's
        own, at the same total), or None when no clique holds it or the model carries no marginals."""
        marginals = getattr(self.model, "marginals", None)
        if not self.fitted or marginals is None or float(self.model.total) != float(self.total):
            return None
        holding = [tuple(cl) for cl in marginals.cliques if set(r) <= set(cl)]
        if not holding:
            return None
        cl = min(holding, key=lambda c: math.prod(marginals[c].domain.shape))
        if cl not in self._cliques:
            self._cliques[cl] = np.asarray(marginals[cl].values, dtype=float)
        values = self._cliques[cl]
        out = values.sum(axis=tuple(i for i, a in enumerate(cl) if a not in r))
        kept = [a for a in cl if a in r]
        return self._to_total(np.clip(out.transpose([kept.index(a) for a in r]), 0.0, None))


def _model_cells(domain: Any, cliques: Sequence[tuple[str, ...]]) -> int:
    """The cells of mbi's junction tree of ``cliques`` (its maximal cliques' cells, added up), counted on sets
    (:func:`pramkit.synthesize_marginals.tree_cells`; each variable's own clique, which every model has, added)."""
    return tree_cells(dict(zip(domain.attributes, domain.shape)), [(v,) for v in domain.attributes] + list(cliques))


def rule_masks(rules: Any, variables: Sequence[str], cats: Mapping[str, Sequence[Any]], max_cells: int
               ) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The edit rules as structural zeros: for each set of synthesized variables some rule names, the cells of
    their joint table it allows (a boolean array in the variables' order), refused in one line when the table
    passes ``max_cells`` or allows nothing.

    Examples
    --------
    >>> from pramkit.structure import Rules
    >>> [(cl, m.tolist()) for cl, m in rule_masks(Rules.of([{"a": "x", "b": "y"}]), ["a", "b"],
    ...                                          {"a": ["x", "z"], "b": ["y", "w"]}, 1000)]
    [(('a', 'b'), [[False, True], [True, True]])]
    """
    from pramkit.structure import Rules

    groups: dict[tuple[str, ...], list[Any]] = {}
    for rule in rules.rules if rules is not None else ():
        named = tuple(v for v in variables if v in rule.values)
        if named:
            groups.setdefault(named, []).append(rule)
    out = []
    for names, sub in groups.items():
        cells = math.prod(len(cats[v]) for v in names)
        if cells > max_cells:
            raise ParameterError(f"the rules on {', '.join(names)} span {cells:,} cells, more than max_cells = "
                                 f"{max_cells:,}: raise max_cells or recode to fewer categories")
        grid = list(itertools.product(*(cats[v] for v in names)))
        allowed = ~Rules(tuple(sub)).forbidden(names, grid).reshape(tuple(len(cats[v]) for v in names))
        if not allowed.any():
            raise DataError(f"the edit rules forbid every combination of {', '.join(names)}: check the rules")
        out.append((names, allowed))
    return out


def _measure(data: _Data, r: tuple[str, ...], eps: float | None, key: SecretKey, cats: Mapping[str, Sequence[Any]],
             sensitivity: int = 2, sigma2: float | None = None) -> Any:
    """One table measured with discrete Laplace noise at ``eps`` (L1 ``sensitivity``: 2 under replace-one
    neighbours, 1 under add-or-remove, whose noise is keyed apart), or with discrete Gaussian noise of variance
    ``sigma2`` (zCDP; keyed apart too), keyed by the exact table."""
    from pramkit.release.frequencies import measured_bytes, noise_query

    exact = data.exact(r)
    labels = [*r, *(str(c) for a in r for c in cats[a])]
    if sigma2 is not None:
        from pramkit.privacy.gaussian import dg_counts

        name = f"pgm-dg-{sensitivity}:" + "x".join(r)
        rng = key.design_random(noise_query(name, labels, sigma2), measured_bytes(exact))
        noisy = dg_counts(exact.ravel(), sigma2, rng=rng)
        return Table(tuple(r), exact.shape, 0.0, np.asarray(noisy).reshape(exact.shape), sensitivity, sigma2)
    from pramkit.privacy.geometric import dp_counts

    name = ("pgm:" if sensitivity == 2 else f"pgm-l1-{sensitivity}:") + "x".join(r)
    if eps is None:  # pragma: no cover - a table has an epsilon or a variance
        raise DataError("a table of the model pgm has neither an epsilon nor a variance: report this")
    rng = key.design_random(noise_query(name, labels, eps), measured_bytes(exact))
    noisy = dp_counts(exact.ravel(), eps, sensitivity=sensitivity, rng=rng).noisy
    return Table(tuple(r), exact.shape, float(eps), noisy.reshape(exact.shape), sensitivity)


def _select(scores: np.ndarray, eps: float, sensitivity: float, key: SecretKey, digest: bytes, t: int) -> int:
    """The exponential mechanism: index ``i`` with probability proportional to
    ``exp(eps * scores[i] / (2 * sensitivity))``, at a keyed uniform (keyed by the round and the data)."""
    logits = eps * (scores - scores.max()) / (2 * sensitivity)
    p = np.exp(logits)
    cdf = np.cumsum(p)
    u = key.design_random(f"pgm-select|{t}|{float(eps)!r}|{len(scores)}", digest).random()
    return int(min(np.searchsorted(cdf, u * cdf[-1], side="right"), len(scores) - 1))


def _checked_sizes(names: Sequence[str], cats: Mapping[str, Sequence[Any]], max_cells: int) -> list[int]:
    """Each variable's number of categories, or a one-line error: more than :data:`MAX_VARIABLES` variables, or
    a variable of more categories than ``max_cells``.

    Examples
    --------
    >>> _checked_sizes(["a"], {"a": [0, 1, 2]}, 10)
    [3]
    >>> _checked_sizes(["a"], {"a": range(20)}, 10)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a has 20 categories, more than max_cells = 10: raise max_cells or recode it to fewer categories
    """
    sizes = [len(cats[v]) for v in names]
    if len(names) > MAX_VARIABLES:
        raise ParameterError(f"the model pgm takes at most {MAX_VARIABLES} variables, got {len(names)}")
    too_big = [v for v, s in zip(names, sizes) if s > max_cells]
    if too_big:
        raise ParameterError(f"{too_big[0]} has {len(cats[too_big[0]]):,} categories, more than max_cells = "
                             f"{max_cells:,}: raise max_cells or recode it to fewer categories")
    return sizes


def fit_and_draw(codes: np.ndarray, variables: Sequence[str], cats: Mapping[str, Sequence[Any]], *,
                 epsilon: float, key: SecretKey, draw_key: SecretKey, rules: Any = None,
                 max_cells: int = MAX_CELLS, neighbours: str = "replace-one",
                 rounds: int | None = None, round_iters: int | None = None, final_iters: int = FINAL_ITERS,
                 anneal: float = 1.0, delta: float | None = None, compress: float = COMPRESS_SD,
                 jointly: bool = True, share: float = 1, bins: Mapping[str, int] | None = None,
                 draw_by: str = "systematic", tables_per_fit: int = TABLES_PER_FIT,
                 quiet: bool = False) -> PgmFit:
    """Choose, measure and fit the marginals (module docstring) and draw one record per original record (under
    add-or-remove neighbours, as many records as the noisy tables estimate).

    Parameters
    ----------
    codes : numpy.ndarray
        The original's codes (records by variables).
    variables : sequence of str
        The synthesized variables.
    cats : mapping
        Each variable's categories.
    epsilon : float
        The central budget (pure epsilon-DP under ``neighbours``).
    key, draw_key : SecretKey
        The secret key (the noise, the selections) and the key of the draws.
    rules : Rules, optional
        The edit rules: structural zeros of the model.
    max_cells : int
        The most cells of the model's junction tree.
    neighbours : {"replace-one", "add-remove"}
        The neighbour relation (module docstring): under ``"add-remove"`` every table has L1 sensitivity 1, the
        selections' sensitivity is the largest weight, and the number of records is estimated, never read.
    rounds : int, optional
        The nominal rounds ``T`` (default :data:`ROUNDS_PER_VARIABLE` times the number of variables): each
        round's epsilon is the budget over ``T`` until the annealing doubles it (:func:`check_rounds`).
    round_iters, final_iters : int
        Mirror-descent iterations of each round's fit (warm-started; default :data:`ROUND_ITERS`, and
        :data:`ZCDP_ROUND_ITERS` under zCDP) and of the last one.
    anneal : float
        The round's epsilon doubles when the fit moved the chosen marginal by at most ``anneal`` times the
        measurement's expected noise (1: AIM's rule; 0: only when it did not move at all).
    delta : float, optional
        Account in zCDP, as AIM does (module docstring): the budget is the largest rho whose zCDP implies
        (``epsilon``, ``delta``)-DP (:func:`pramkit.privacy.zcdp.rho_for`), every table is measured with discrete
        Gaussian noise and every selection's epsilon costs ``epsilon^2 / 8``.  ``None`` (default): pure
        ``epsilon``-DP.
    compress : float
        After the 1-way tables, the categories whose noisy count is below ``compress`` standard deviations of
        its noise are merged, alike under every rule (:mod:`pramkit.pgm_compression`; default 3, MST's and
        AIM's); 0: none.
    jointly : bool
        A variable that one rule alone names has its rare categories merged across the rule's signatures and
        is expanded jointly with the rule's other variables (:func:`pramkit.pgm_compression.compression_of`;
        default; ``False``: merged within signatures, as releases before ``procedure.compress_rules``).
    bins : mapping, optional
        Ordered numeric variables' bin widths (:func:`check_bins`): each is modelled in bins of its values,
        split where a rule treats values apart, and a record drawn into a bin takes a value by the noisy 1-way
        counts (:func:`pramkit.pgm_compression.bin_groups`).
    share : int or float
        Each draw given to this many records (1: one draw a record; 2: ``synthesize --min-count 2``; between
        them, ``synthesize --records-per-draw``, on average): ``rows // share`` records are drawn, by the same
        systematic sampling, and each is repeated (:func:`shared_draws`: the whole part of ``share`` times, and
        the records left over given to draws in a keyed order), so that the released tables are those of the
        smaller draw.  A balanced draw counts each draw as many times as it is given (a whole ``share``: that
        many times, the few records left over not counted).
    draw_by : {"systematic", "balanced", "auto"}
        How the draws are made (:mod:`pramkit.pgm_balance`): along the junction tree only (default), or chosen
        among :data:`pramkit.pgm_balance.POOL` times as many so that every 3-way table meets the model's
        (``"auto"``: when the pool is small enough, :func:`pramkit.pgm_balance.is_balanced`).
    tables_per_fit : int
        The tables chosen and measured between two fits of the model (default :data:`TABLES_PER_FIT`; 1: each
        fitted before the next is chosen, as AIM does; :func:`check_tables_per_fit`).
    quiet : bool
        No progress bars (the rounds, by the share of the budget spent; the draws, by variable).

    Returns
    -------
    PgmFit

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 500)
    >>> codes = np.stack([a, (a + (rng.random(500) < 0.2)) % 3], 1)
    >>> fit = fit_and_draw(codes, ["a", "b"], {"a": [0, 1, 2], "b": [0, 1, 2]}, epsilon=5.0,
    ...                    key=resolve_key(bytes(32)), draw_key=resolve_key(bytes(range(32))))  # doctest: +SKIP
    >>> fit.drawn.shape, [m.axes for m in fit.measurements][:2]  # doctest: +SKIP
    ((500, 2), [('a',), ('b',)])
    """
    from pramkit.privacy.epsilon import record_epsilon

    mbi = import_mbi()
    names = list(variables)
    sizes = _checked_sizes(names, cats, max_cells)
    neighbours = check_neighbours(neighbours)
    bins_of = binned(check_bins(bins, names), cats)
    masks = rule_masks(rules, names, cats, max_cells)
    data = _Data(codes, names, sizes)
    n = len(codes) if neighbours == "replace-one" else None
    del codes  # the records are read through data alone (and freed with it, before the draws)  # add-or-remove: the total is estimated
    rounds = check_rounds(rounds, len(names))
    if rounds is None:
        rounds = default_rounds(len(names))
    per_fit = check_tables_per_fit(tables_per_fit)
    accounting = Accounting("pure" if delta is None else "zcdp", TABLE_SENSITIVITY[neighbours])
    from pramkit.privacy.zcdp import rho_for

    budget = _Budget(epsilon if delta is None else rho_for(float(epsilon), float(delta)), rounds, len(names))
    if round_iters is None:
        round_iters = ROUND_ITERS if delta is None else ZCDP_ROUND_ITERS
    with _quiet_jax():
        base = _model_cells(mbi.Domain(names, sizes), [(v,) for v in names] + [cl for cl, _ in masks])
        if base > max_cells:
            raise ParameterError(f"the rules alone make a model of {base:,} cells, more than max_cells = "
                                 f"{max_cells:,}: raise max_cells or recode to fewer categories")
        first = []
        for v in names:
            eps, sigma2, spent = accounting.measure(budget.first)
            budget.spend(spent)
            first.append(_measure(data, (v,), eps, key, cats, TABLE_SENSITIVITY[neighbours], sigma2))
        comp = compression_of(names, [t.noisy for t in first], [table_sd(t) for t in first], masks,
                               float(compress), jointly, bins_of)
        state = _compressed_rounds(mbi, comp, data, cats, masks, key, n)
        domain, sizes_c = state.domain, state.data.sizes
        base = _model_cells(domain, [(v,) for v in names] + [cl for cl, _ in state.masks])
        for t in first:
            state.add(t)
        state.fit(round_iters)
        _rounds(state, budget, max_cells, base, iters=(round_iters, final_iters), anneal=anneal,
                accounting=accounting, quiet=quiet, per_fit=per_fit)
        eps_all = [m.epsilon for m in state.measurements] + [s.epsilon for s in state.selections]
        if delta is None and record_epsilon(eps_all) > epsilon:  # pragma: no cover - the schedule never passes it
            raise DataError("the model pgm overspent its budget: report this")
        rows = n if n is not None else released_records(state.total())
        data.forget()
        state.data.forget()
        draws = max(1, int(rows // share))
        balanced = is_balanced(check_draw(draw_by), draws, len(names))
        weights = int(share) if float(share).is_integer() else share_weights(draws, rows, share, draw_key)
        made = _draws(state, names, sizes_c, draws, weights, draw_key, balanced, quiet)
        drawn = expand(comp, made, names, draw_key)
    _check_rules_kept(masks, names, drawn)
    if rows > draws:
        drawn = shared_draws(drawn, rows, share, draw_key)
    return PgmFit(drawn, state.measurements, state.selections, _model_cells(domain, state.cliques()),
                  [tuple(c) for c in state.measured], rounds, None if n is not None else state.total(), comp,
                  rows - draws, balanced)


def _draws(state: _Rounds, names: Sequence[str], sizes: Sequence[int], draws: int, share: int | np.ndarray,
           key: SecretKey, balanced: bool, quiet: bool) -> np.ndarray:
    """``draws`` records over the compressed categories, drawn from the fitted model along its junction tree,
    or (``balanced``) chosen among :data:`pramkit.pgm_balance.POOL` times as many (:func:`balance`), each
    counted ``share`` times (or draw ``i`` ``share[i]`` times)."""
    factors, cliques = state.factors(), state.cliques()
    if not balanced:
        return draw(factors, names, sizes, draws, key, cliques, quiet=quiet)
    pool = draw(factors, names, sizes, POOL * draws, key, cliques, quiet=quiet)
    chosen = balance(pool, draws, share, sizes, lambda t: factors.marginal(tuple(names[i] for i in t)), key,
                     quiet=quiet)
    return pool[chosen]


def expand(comp: Any, drawn: np.ndarray, names: Sequence[str], key: SecretKey) -> np.ndarray:
    """The drawn codes back in the full categories (:class:`pramkit.pgm_compression.Compression`): a record
    drawn into a merged category takes one of its categories by :meth:`~Compression.expansion`'s weights, by
    systematic sampling within the records drawn into it, at keyed uniforms; the variables merged across a
    rule's signatures, after the others, jointly among the combinations the rule allows
    (:func:`_expand_jointly`)."""
    out = np.array(drawn, dtype=code_dtype([comp.full(v) for v in names]), copy=True)
    jointly = comp.jointly()
    for j, v in enumerate(names):
        if comp.merged(v) and v not in jointly:
            out[:, j] = _systematic(comp.expansion(v), out[:, j], uniforms(key, f"@pgm|{v}|expand-rank", 0, len(out)),
                                    uniforms(key, f"@pgm|{v}|expand-u", 0, len(out)))
    for cl, mask, across in comp.joint:
        _expand_jointly(comp, cl, mask, across, out, names, key)
    return out


def _expand_jointly(comp: Any, cl: tuple[str, ...], mask: np.ndarray, across: tuple[str, ...], out: np.ndarray,
                    names: Sequence[str], key: SecretKey) -> None:
    """The variables ``across`` of the mask of ``cl`` (merged across signatures) expanded together, in place: a
    record drawn into their groups takes a combination of members that the mask allows beside its other
    variables' values, in proportion to the product of the members' noisy counts clipped at 0 (alike when none
    of the allowed is positive), by systematic sampling within the records of the same key, at keyed uniforms.
    The compressed mask allows a cell when one of its members does, so every key has an allowed choice."""
    cols = [names.index(a) for a in cl]
    keyed = cell_index([out[:, c] for c in cols], [comp.size(a) if a in across else comp.full(a) for a in cl])
    keys, first, group = np.unique(keyed, return_index=True, return_inverse=True)
    width = comp.widest(across)
    weights = np.zeros((len(keys), width))
    cells = np.zeros((len(keys), width), dtype=np.int64)
    full = tuple(comp.full(a) for a in across)
    clipped = {a: np.clip(np.asarray(comp.counts[a], dtype=float), 0, None) for a in across}
    rows = out[first]  # one record of each key, in the keys' order
    for k, row in enumerate(rows):
        members = [comp.groups[a][int(row[names.index(a)])] if a in across else [int(row[names.index(a)])]
                   for a in cl]
        allowed = mask[np.ix_(*members)].reshape(-1)
        w = functools.reduce(np.multiply.outer, [clipped[a][m] if clipped[a][m].sum() > 0 else np.ones(len(m))
                                                 for a, m in zip(cl, members) if a in across]).reshape(-1) * allowed
        w = w if w.sum() > 0 else allowed.astype(float)
        weights[k, : len(w)] = w
        cells[k, : len(w)] = np.ravel_multi_index(np.ix_(*(m for a, m in zip(cl, members) if a in across)),
                                                  full).reshape(-1)
    name = "x".join(across)
    at = _systematic(weights, group, uniforms(key, f"@pgm|{name}|joint-rank", 0, len(out)),
                     uniforms(key, f"@pgm|{name}|joint-u", 0, len(out)))
    chosen = np.unravel_index(cells[group, at], full)
    for a, codes in zip(across, chosen):
        out[:, names.index(a)] = codes


def share_weights(m: int, rows: int, share: float, key: SecretKey) -> np.ndarray:
    """How many records each of the ``m`` draws is given by :func:`shared_draws` (``rows`` records, ``share``
    records a draw on average): the whole part of ``share``, and one more for each time the keyed order of
    the left-over records reaches it.

    Examples
    --------
    >>> from pramkit.kernel.rng import resolve_key
    >>> w = share_weights(8, 10, 1.25, resolve_key(bytes(32)))
    >>> int(w.sum()), sorted(w.tolist())
    (10, [1, 1, 1, 1, 1, 1, 2, 2])
    """
    w = np.full(m, int(share), dtype=np.int64)
    np.add.at(w, _left_over(m, rows - int(share) * m, key), 1)
    return w


def _left_over(m: int, extra: int, key: SecretKey) -> np.ndarray:
    """The draws (of ``m``) that the ``extra`` records left over take, in the keyed order that
    :func:`share_weights` and :func:`shared_draws` both follow (going round the draws again when ``extra``
    exceeds ``m``)."""
    if extra <= 0:
        return np.empty(0, dtype=np.int64)
    return np.argsort(uniforms(key, "@pgm|share-extra", 0, m), kind="stable")[np.arange(extra) % m]


def shared_draws(drawn: np.ndarray, rows: int, share: float, key: SecretKey) -> np.ndarray:
    """``rows`` records from the draws ``drawn``: each draw given to the whole part of ``share`` records, the
    records left over (``rows - int(share) * len(drawn)``: fewer than ``share`` when ``len(drawn)`` is
    ``rows // share`` and ``share`` is whole) given draws in a keyed order (:func:`share_weights`), and all
    the records put in a keyed order.  Drawing ``rows / share`` records and repeating each keeps every table
    of the draw to within its systematic sampling's rounding, where pairing ``rows`` independent draws would
    leave half of them out at random.

    Examples
    --------
    >>> from pramkit.kernel.rng import resolve_key
    >>> out = shared_draws(np.array([[0], [1], [2]]), 7, 2, resolve_key(bytes(32)))
    >>> out.shape, sorted(np.bincount(out[:, 0]).tolist())    # two records a draw, one draw given to three
    ((7, 1), [2, 2, 3])
    """
    m = len(drawn)
    src = np.repeat(np.arange(m, dtype=np.int64), int(share))[:rows]
    src = np.concatenate([src, _left_over(m, rows - len(src), key)])
    order = np.argsort(uniforms(key, "@pgm|share-order", 0, rows), kind="stable")
    return drawn[src[order]]


def _check_rules_kept(masks: Sequence[tuple[tuple[str, ...], np.ndarray]], names: Sequence[str],
                      drawn: np.ndarray) -> None:
    """Every drawn record allowed by every rule's mask (the model's structural zeros and the expansion keep
    them; a record that breaks one is a defect)."""
    for cl, m in masks:
        idx = [names.index(a) for a in cl]
        if not m[tuple(drawn[:, i] for i in idx)].all():
            raise DataError("the released records break an edit rule the model should have kept: report this")


def _compressed_rounds(mbi: Any, comp: Any, data: _Data, cats: Mapping[str, Sequence[Any]],
                       masks: Sequence[tuple[tuple[str, ...], np.ndarray]], key: SecretKey, n: int | None) -> _Rounds:
    """The rounds' state over the compressed categories (:class:`pramkit.pgm_compression.Compression`): the
    original's codes, the categories' labels and the rules' masks compressed, the rules as mbi's structural
    zeros."""
    names = data.names
    sizes_c = [comp.size(v) for v in names]
    masks_c = [(cl, comp.mask(cl, m)) for cl, m in masks]
    domain = mbi.Domain(names, sizes_c)
    constraints = tuple(mbi.Constraint(domain.project(cl), invalid=np.argwhere(~m)) for cl, m in masks_c)
    return _Rounds(mbi, domain, _Data(comp.codes(data.codes, names), names, sizes_c), comp.cats(cats), key,
                   constraints, masks_c, n, comp)


def _rounds(state: _Rounds, budget: _Budget, max_cells: int, base: int, *,
            iters: tuple[int, int] = (ROUND_ITERS, FINAL_ITERS), anneal: float = 1.0,
            accounting: Accounting | None = None, quiet: bool = False, per_fit: int = 1) -> None:
    """AIM's rounds (module docstring, step 3): select, measure, fit, anneal, until the budget is spent;
    ``iters``: the mirror-descent iterations of a round's fit and of the last one; ``anneal``: the share of the
    expected noise under which the chosen marginal's move doubles the round's amount (an epsilon, or a rho
    under zCDP); ``quiet``: no progress bar (the share of the budget spent); ``per_fit``: the tables chosen
    between two fits."""
    from pramkit.progress import progress

    shown = [0]  # the percent the bar shows (a bar that prints nothing counts nothing)

    def done() -> None:
        now = int(100 * budget.share())
        bar.update(now - shown[0])
        shown[0] = now

    with progress(total=100, desc="fitting (budget spent)", unit="%", quiet=quiet) as bar:
        _spend_rounds(state, budget, max_cells, base, iters, anneal, accounting, done, per_fit)


def _spend_rounds(state: _Rounds, budget: _Budget, max_cells: int, base: int, iters: tuple[int, int],
                  anneal: float, accounting: Accounting | None, done: Any, per_fit: int = 1) -> None:
    """The loop of :func:`_rounds`; ``done()`` after each fit; ``per_fit``: the tables chosen and measured
    between two fits (:data:`TABLES_PER_FIT`), the later ones chosen among the candidates but those chosen since
    the fit (among all of them when that leaves none)."""
    acc = accounting or Accounting("pure", state.sensitivity)
    data, key = state.data, state.key
    cands, weights = workload(data.names)
    t = 0
    batch: list[tuple[tuple[str, ...], np.ndarray, float]] = []  # chosen since the fit: (r, its marginal, noise)
    while budget.budget - budget.spent > 0:
        eps_s, eps_m, last = budget.next_round()
        if eps_s <= 0 or eps_m <= 0:
            break
        limit = max(base, max_cells * min(1.0, budget.share() + float((Fraction(eps_s) + Fraction(eps_m))
                                                                       / budget.budget)))
        fitting = [r for r in cands if math.prod(data.shape(r)) <= max_cells and state.fits(r, limit)]
        taken = {b[0] for b in batch}
        allowed = [r for r in fitting if r not in taken] or fitting  # all taken: a table may be measured again
        sel_eps, sel_spent = acc.select(eps_s)
        m_eps, sigma2, m_spent = acc.measure(eps_m)
        noise = acc.expected_abs(m_eps, sigma2)
        scores = np.array([weights[r] * (state.error(r) - noise * math.prod(data.shape(r))) for r in allowed])
        # the quality's sensitivity: the L1 change of a table times the largest weight (module docstring)
        sens = float(state.sensitivity) * max(weights[r] for r in allowed)
        r = allowed[_select(scores, sel_eps, sens, key, data.digest, t)]
        budget.spend(sel_spent)
        state.selections.append(Selection(t, sel_eps, sens, len(allowed), r,
                                          None if sigma2 is None else _up(sel_spent)))
        batch.append((r, state.model_marginal(r), noise))
        budget.spend(m_spent)
        state.add(_measure(data, r, m_eps, key, state.cats, state.sensitivity, sigma2))
        t += 1
        if last or len(batch) == per_fit:
            state.fit(iters[1] if last else iters[0])
            done()
            if last:
                return
            for table, before, expected in batch:  # AIM's annealing, table by table
                moved = np.abs(state.model_marginal(table) - before).sum()
                if moved <= anneal * expected * math.prod(data.shape(table)):
                    budget.round = _down(Fraction(budget.round) * acc.growth)
            batch = []
    if batch:  # the budget ran out between two fits
        state.fit(iters[1])
        done()


class _Rounds:
    """The measurements so far and the model fitted to them; ``n``: the public number of records (replace-one
    neighbours), or ``None`` (add-or-remove: the total is estimated from the noisy tables at each fit)."""

    def __init__(self, mbi: Any, domain: Any, data: _Data, cats: Mapping[str, Sequence[Any]], key: SecretKey,
                 constraints: tuple[Any, ...], masks: Sequence[tuple[tuple[str, ...], np.ndarray]],
                 n: int | None, compression: Any) -> None:
        self.mbi, self.domain, self.data, self.cats, self.key = mbi, domain, data, cats, key
        self.compression = compression
        self._queries: dict[tuple[tuple[str, ...], bytes], Any] = {}
        self.constraints, self.masks, self.n = constraints, list(masks), n
        self.sensitivity = TABLE_SENSITIVITY["replace-one" if n is not None else "add-remove"]
        self.measurements: list[Any] = []
        self.selections: list[Selection] = []
        self.measured: list[tuple[str, ...]] = []
        self.model: Any = None
        self.estimator = carried_step_estimator()
        self._factors: _Factors | None = None
        self._marginals: dict[tuple[str, ...], np.ndarray] = {}
        self._cells: dict[tuple[str, ...], int] = {}

    def add(self, m: Any) -> None:
        self.measurements.append(m)
        if m.axes not in self.measured:
            self.measured.append(m.axes)
        self._cells = {}

    def cliques(self) -> list[tuple[str, ...]]:
        return list(self.measured) + [cl for cl, _ in self.masks]

    def total(self) -> float:
        """The model's total: the public number of records, or the estimate from the tables measured so far."""
        return float(self.n) if self.n is not None else estimated_total(self.measurements)

    def fit(self, iters: int) -> None:

        # a table measured twice is one measurement of the precision-weighted mean (the same least-squares
        # objective, up to a constant): the model's structure, and so its compiled fit, stay the same
        sums: dict[tuple[str, ...], list[Any]] = {}
        for m in self.measurements:
            y, var = self._compressed(m)
            acc = sums.setdefault(m.axes, [0.0, 0.0])
            acc[0] = acc[0] + y.ravel() / var.ravel()
            acc[1] = acc[1] + 1.0 / var.ravel()
        ms = [self._measurement(axes, y / w, w ** -0.5) for axes, (y, w) in sums.items()]
        self.model = self.estimator.estimate(self.domain, ms, known_total=self.total(),
                                             constraints=self.constraints, iters=iters, warm_start=self.model)
        self._factors = None
        self._marginals = {}

    def _compressed(self, m: Any) -> tuple[np.ndarray, np.ndarray]:
        """A table over the model's categories and each cell's noise variance."""
        return self.compression.table(m.axes, np.asarray(m.noisy, dtype=float), table_sd(m) ** 2)

    def _measurement(self, axes: tuple[str, ...], y: np.ndarray, sd: np.ndarray) -> Any:
        """mbi's measurement of ``y`` with noise ``sd`` in each cell: a cell's residual over its own sd (a
        weighted query, one object for one set of weights, so mbi's compiled fit is reused)."""
        if np.all(sd == sd[0]):
            return self.mbi.LinearMeasurement(y, axes, stddev=float(sd[0]))
        from mbi.marginal_loss import WeightedQuery

        coef = 1.0 / sd
        query = self._queries.setdefault((axes, coef.tobytes()), WeightedQuery(coef))
        return self.mbi.LinearMeasurement(y * coef, axes, stddev=1.0, query=query)

    def factors(self) -> _Factors:
        if self._factors is None:
            self._factors = _Factors(self.model, self.masks, self.n if self.n is not None else self.total())
        return self._factors

    def model_marginal(self, r: tuple[str, ...]) -> np.ndarray:
        if r not in self._marginals:
            self._marginals[r] = self.factors().marginal(r)
        return self._marginals[r]

    def error(self, r: tuple[str, ...]) -> float:
        return float(np.abs(self.data.exact(r) - self.factors().marginal(r)).sum())

    def fits(self, r: tuple[str, ...], limit: float) -> bool:
        cl = self.cliques()
        if len(r) == 1 or any(set(r) <= set(c) for c in cl):
            return True
        if r not in self._cells:
            self._cells[r] = _model_cells(self.domain, [*cl, r])
        return self._cells[r] <= limit


def carried_step_estimator() -> Any:
    """mbi's mirror descent (Armijo line search), each fit starting from the step the previous one ended with,
    the model's marginals carried from one iteration to the next.

    mbi starts every fit at the conservative step ``2 / (L n)`` (``L`` the loss's Lipschitz constant) and grows
    it by 1 % an accepted iteration.  A warm-started round's fit then spends its iterations regaining the step
    the last fit had reached, and moves a table it has just measured by less than the table's noise (so the
    annealing reads "no change" and doubles the budget).  Carried over, the step starts where it was; a step
    too long for the new loss is halved by the line search, as before.

    mbi's iteration computes the marginals of its current potentials, then those of the trial potentials for
    the line search: two passes of message passing, though the first is the second of the iteration before
    (the trial's, when accepted; the same potentials', when not).  Here the state carries them, so an
    iteration makes one pass; the first iteration of a fit only computes the starting marginals.  The
    iterates are mbi's, one iteration later; the fitted model's marginals are the carried ones, so a fit
    compiles one program (mbi compiles message passing again to start and to end each fit), half the size.
    Only where the optimiser starts and what it recomputes change: the objective, and so what the fit
    converges to, is mbi's.

    Examples
    --------
    >>> est = carried_step_estimator()  # doctest: +SKIP
    >>> est.carry  # doctest: +SKIP
    {}
    """
    return _carried_step_class()()


@functools.cache
def _carried_step_class() -> type:
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp
    from mbi import CliqueVector, MarkovRandomField, estimation

    class State(NamedTuple):
        mu: Any  # the marginals of ``potentials`` (zeros until the first iteration computes them)
        potentials: Any
        alpha: Any
        loss: Any  # the loss at ``mu``
        fresh: Any  # True until the first iteration

    def choose(keep: Any, a: Any, b: Any) -> Any:
        return jax.tree.map(lambda x, y: jnp.where(keep, x, y), a, b)

    @dataclasses.dataclass(frozen=True)
    class CarriedStep(estimation.MirrorDescent):
        # not compared, so not hashed: every fit shares one compiled step (mbi jits on the estimator's hash)
        carry: dict[str, float] = dataclasses.field(default_factory=dict, compare=False)

        def _init(self, domain: Any, loss_fn: Any, known_total: float, *, warm_start: Any = None,
                  constraints: Any = ()) -> Any:
            potentials = estimation._extract_potentials(warm_start, domain, loss_fn.cliques)
            # the oracle's marginals have the structure of the potentials (their cliques, in their order): made
            # directly, where tracing the oracle for its shapes took about a tenth of a second a fit
            mu = CliqueVector.zeros(potentials.domain, potentials.cliques)
            alpha = self.carry.get("alpha", 2.0 / (loss_fn.lipschitz * known_total))  # mbi's start
            return State(mu, potentials, alpha, jnp.zeros((), jnp.result_type(float)), jnp.asarray(True))

        def _step(self, state: Any, loss_fn: Any, known_total: Any, constraints: Any = ()) -> Any:
            oracle = self._oracle(loss_fn.cliques, state.potentials.domain, constraints=constraints)
            loss, dL = jax.value_and_grad(loss_fn)(state.mu)
            # the first iteration tries the potentials themselves: it only computes their marginals
            theta2 = jax.lax.cond(state.fresh, lambda: state.potentials,
                                  lambda: state.potentials - state.alpha * dL)
            mu2 = oracle(theta2, known_total)
            loss2 = loss_fn(mu2)
            decrease = loss - loss2 >= 0.5 * state.alpha * dL.dot(state.mu - mu2)  # mbi's Armijo test
            keep = jnp.logical_or(state.fresh, decrease)
            alpha = jax.lax.select(state.fresh, state.alpha * 1.0,
                                   jax.lax.select(decrease, 1.01 * state.alpha, 0.5 * state.alpha))
            return State(choose(keep, mu2, state.mu), jax.lax.cond(keep, lambda: theta2, lambda: state.potentials),
                         alpha, jnp.where(keep, loss2, loss), jnp.asarray(False))

        def _finalize(self, state: Any, known_total: float, constraints: Any = ()) -> Any:
            self.carry["alpha"] = float(state.alpha)  # a float, as mbi's own
            if bool(state.fresh):  # no iteration ran
                return super()._finalize(state, known_total, constraints=constraints)
            return MarkovRandomField(potentials=state.potentials, marginals=state.mu, total=known_total,
                                     constraints=constraints)

    return CarriedStep


def draw(factors: _Factors, names: Sequence[str], sizes: Sequence[int], n: int, key: SecretKey,
         cliques: Sequence[tuple[str, ...]], quiet: bool = True) -> np.ndarray:
    """``n`` records drawn from the model along its junction tree (the elimination order reversed): each
    variable given the variables of its cliques already drawn, by systematic sampling within each group of
    records with the same drawn values (mbi's ``"round"``), at keyed uniforms (``key``).  A value of
    probability 0 given the drawn values is never drawn; ``quiet``: no progress bar (by variable)."""
    from mbi import junction_tree

    from pramkit.progress import progress

    domain = _domain(names, sizes)
    tree, order = junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
    nodes = [set(c) for c in tree.nodes]
    out = np.zeros((n, len(names)), dtype=code_dtype(sizes))
    used: list[str] = []
    bar = progress(total=len(order), desc="drawing", unit="variables", quiet=quiet)
    for col in order[::-1]:
        parents = [a for a in used if any(col in c and a in c for c in nodes)]
        j = names.index(col)
        marg = factors.marginal((*parents, col)).reshape(-1, sizes[j])
        if parents:
            idx = [names.index(a) for a in parents]
            group = cell_index([out[:, i] for i in idx], [sizes[i] for i in idx])
        else:
            group = np.zeros(n, dtype=np.int64)
        out[:, j] = _systematic(marg, group, uniforms(key, f"@pgm|{col}|rank", 0, n),
                                uniforms(key, f"@pgm|{col}|u", 0, n))
        used.append(col)
        bar.update(1)
    bar.close()
    return out


def _domain(names: Sequence[str], sizes: Sequence[int]) -> Any:
    from mbi import Domain

    return Domain(list(names), list(sizes))


def _systematic(marg: np.ndarray, group: np.ndarray, rank_u: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each record, a value drawn from its group's row of ``marg`` (counts, groups by values) by
    systematic sampling: the records of a group, in the keyed order ``rank_u``, take the points
    ``(rank + u) / size`` of the row's distribution.  A value of probability 0 is never drawn; a group whose
    row is all zero (probability 0 under the model, which drawing never reaches) takes its row's last value.

    Examples
    --------
    >>> _systematic(np.array([[1.0, 0.0, 3.0]]), np.zeros(4, dtype=np.int64), np.array([.1, .2, .3, .4]),
    ...             np.full(4, 0.5)).tolist()
    [0, 2, 2, 2]
    """
    order = np.lexsort((rank_u, group))
    g = group[order].astype(np.int64, copy=False)  # the groups' offsets below pass a small code type's range
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[starts, len(g)])
    point = np.arange(len(g), dtype=float)  # each record's rank within its group, plus its uniform, over the size
    point -= np.repeat(starts, counts)
    point += u[order]
    point /= np.repeat(counts, counts)
    tot = marg.sum(axis=1, keepdims=True)
    cdf = np.cumsum(marg, axis=1) / np.where(tot > 0, tot, 1.0)
    last = marg.shape[1] - 1 - np.argmax(marg[:, ::-1] > 0, axis=1)
    shift = 2.0 * np.arange(len(marg))
    point += shift[g]
    at = np.searchsorted((cdf + shift[:, None]).ravel(), point, side="right")
    del point
    at -= g * marg.shape[1]
    np.minimum(at, last[g], out=at)
    out = np.empty(len(group), dtype=np.int64)
    out[order] = at
    return out


# ----------------------------------------------------------------- the audit of a manifest of the model pgm

def is_pgm(raw: Any) -> bool:
    """Whether a synthesis manifest's model is ``"pgm"``.

    Examples
    --------
    >>> is_pgm({"procedure": {"model": "pgm"}}), is_pgm({"procedure": {"pool": 40}})
    (True, False)
    """
    proc = raw.get("procedure") if isinstance(raw, Mapping) else None
    return isinstance(proc, Mapping) and proc.get("model") == "pgm"


def neighbours_of(raw: Any) -> str:
    """The neighbour relation a synthesis manifest states: its ``neighbours`` field, ``"replace-one"`` when it
    has none (every manifest written before the field, and every release under replace-one neighbours).

    Examples
    --------
    >>> neighbours_of({"neighbours": "add-remove"}), neighbours_of({"format": "pramkit.synthesis"})
    ('add-remove', 'replace-one')
    """
    stated = raw.get("neighbours", "replace-one") if isinstance(raw, Mapping) else "replace-one"
    return stated if isinstance(stated, str) else repr(stated)


def table_sensitivity(raw: Any) -> int:
    """The L1 sensitivity every table of a synthesis manifest must state: 1 under add-or-remove neighbours,
    2 otherwise (a relation that is not one of :data:`NEIGHBOURS` is taken as replace-one: its own check fails).

    Examples
    --------
    >>> table_sensitivity({"neighbours": "add-remove"}), table_sensitivity({})
    (1, 2)
    """
    return TABLE_SENSITIVITY.get(neighbours_of(raw), 2)


def check_neighbours_field(raw: Mapping[str, Any], value: Any) -> tuple[bool, str]:
    """The manifest's ``neighbours`` against what its tables imply: written only for ``"add-remove"``, by the
    model pgm, every table measured at L1 sensitivity 1 and the released records the total its noisy tables
    estimate (:func:`estimated_total`, :func:`released_records`).

    Examples
    --------
    >>> raw = {"procedure": {"model": "pgm"}, "rows": 101,
    ...        "measurements": [{"epsilon": 1.0, "noisy": [60, 41], "sensitivity": 1}]}
    >>> check_neighbours_field(raw, "add-remove")
    (True, 'add-or-remove: every table at L1 sensitivity 1, 101 records estimated from the noisy tables')
    >>> check_neighbours_field(raw, "replace-one")[0], check_neighbours_field({**raw, "rows": 100}, "add-remove")[0]
    (False, False)
    """
    if value != "add-remove":
        return False, f"stated {value!r}: only 'add-remove' is written (replace-one is the relation when absent)"
    if not is_pgm(raw):
        return False, "add-or-remove neighbours are the model pgm's only (the model margins releases every record)"
    ms = [m for m in raw.get("measurements") or [] if isinstance(m, Mapping)]
    if not ms or any(m.get("sensitivity") != 1 for m in ms):
        return False, "add-or-remove neighbours, but not every table is measured at L1 sensitivity 1"
    try:
        rows = released_records(estimated_total(ms))
    except (TypeError, ValueError, KeyError) as exc:
        return False, f"the total cannot be estimated from the tables ({exc})"
    if raw.get("rows") != rows:
        return False, f"add-or-remove neighbours, but {raw.get('rows')!r} records stated, {rows} estimated from the tables"
    return True, f"add-or-remove: every table at L1 sensitivity 1, {rows} records estimated from the noisy tables"


def _selections(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    sel = raw.get("selections")
    return [s for s in sel if isinstance(s, Mapping)] if isinstance(sel, list) else []


def planned_tables(raw: Mapping[str, Any]) -> list[list[str]]:
    """The tables a manifest of the model pgm must list, in order: each variable's 1-way table, then the
    marginal each selection chose.

    Examples
    --------
    >>> planned_tables({"variables": {"a": {}, "b": {}}, "selections": [{"chosen": ["a", "b"]}]})
    [['a'], ['b'], ['a', 'b']]
    """
    names = list(raw.get("variables") or {})
    return [[v] for v in names] + [list(s.get("chosen") or []) for s in _selections(raw)]


def delta_of_manifest(raw: Any) -> float | None:
    """The delta of a manifest of the model pgm accounted in zCDP (its ``procedure.delta``), or None (pure
    epsilon-DP; a delta that is not a number is taken as none: its own checks fail).

    Examples
    --------
    >>> delta_of_manifest({"procedure": {"model": "pgm", "delta": 1e-05}}), delta_of_manifest({"procedure": {}})
    (1e-05, None)
    """
    proc = raw.get("procedure") if isinstance(raw, Mapping) else None
    d = proc.get("delta") if isinstance(proc, Mapping) and proc.get("model") == "pgm" else None
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def schedule(raw: Mapping[str, Any]) -> tuple[list[float], list[float]] | str:
    """The epsilons of the measurements and of the selections that the manifest's budget, rounds and choices
    give, the annealing read off the stated epsilons (after each fit, every ``procedure.tables_per_fit`` tables
    (absent: 1), a round's epsilon is the last one's doubled at most once for each table fitted; between two
    fits it is the last one's; the last round spends what is left): a list each, or why they cannot be (a
    text).  Under zCDP (a ``procedure.delta``) the measurements' list holds their ``sigma2``, the budget is the
    rho of the stated epsilon and delta (:class:`Accounting`).

    Examples
    --------
    >>> raw = {"variables": {"a": {}, "b": {}}, "procedure": {"rounds": 4},
    ...        "ledger": {"record_epsilon_budget": 1.0}, "selections": [{"epsilon": 0.025}],
    ...        "measurements": [{"epsilon": 0.225}, {"epsilon": 0.225}, {"epsilon": 0.225}]}
    >>> [round(e, 6) for e in schedule(raw)[0]], [round(e, 6) for e in schedule(raw)[1]]
    ([0.225, 0.225, 0.225], [0.025])
    """
    delta = delta_of_manifest(raw)
    try:
        names = list(raw.get("variables") or {})
        eps = float((raw.get("ledger") or {})["record_epsilon_budget"])
        if delta is not None:
            from pramkit.privacy.zcdp import rho_for

            eps = rho_for(eps, delta)
        budget = _Budget(eps, int((raw.get("procedure") or {})["rounds"]), len(names))
        # absent: a release made before the setting, one table a fit
        per_fit = whole_tables_per_fit((raw.get("procedure") or {}).get("tables_per_fit", 1))
    except (KeyError, TypeError, ValueError, ParameterError) as exc:
        return f"the schedule cannot be replayed ({exc})"
    acc = Accounting("pure" if delta is None else "zcdp", table_sensitivity(raw))

    def measure(amount: float) -> float:
        e, sigma2, spent = acc.measure(amount)
        budget.spend(spent)
        return float(sigma2 if sigma2 is not None else e)  # type: ignore[arg-type]

    def select(amount: float) -> float:
        e, spent = acc.select(amount)
        budget.spend(spent)
        return e

    param = "epsilon" if delta is None else "sigma2"
    measured = [measure(budget.first) for _ in names]
    chosen: list[float] = []
    stated = [m.get(param) for m in raw.get("measurements") or [] if isinstance(m, Mapping)][len(names):]
    for t, sel in enumerate(_selections(raw)):
        s, m, last = budget.next_round()
        # after a fit (every per_fit tables), each of the tables fitted may have doubled the round's amount
        for _ in range(per_fit if t > 0 and t % per_fit == 0 else 0):
            planned = (acc.select(s)[0], acc.measure(m)[0 if delta is None else 1])
            if (sel.get("epsilon"), stated[t] if t < len(stated) else None) == planned or last:
                break
            budget.round = _down(Fraction(budget.round) * acc.growth)  # the annealing raised it
            s, m, last = budget.next_round()
        chosen.append(select(s))
        measured.append(measure(m))
        if last:
            break
    return measured, chosen


def _check_selection_rho(raw: Mapping[str, Any], sel: Mapping[str, Any], value: Any) -> tuple[bool, str]:
    """A selection's ``rho`` under zCDP: its epsilon squared over 8, rounded up."""
    eps = sel.get("epsilon")
    if delta_of_manifest(raw) is None or not isinstance(eps, (int, float)) or isinstance(eps, bool):
        return False, "a selection's rho is stated under zCDP only (a procedure.delta), of its epsilon"
    from pramkit.privacy.zcdp import exponential_rho

    if not (math.isfinite(eps) and eps > 0):
        return False, f"a selection's rho is of a positive epsilon, stated {eps!r}"
    want = _up(exponential_rho(eps))
    return value == want, "epsilon^2 / 8, rounded up" if value == want else f"stated {value!r}, epsilon^2 / 8 is {want!r}"


def weight(names: Sequence[str], r: Sequence[str]) -> float:
    """The AIM weight of marginal ``r`` among the 3-way workload of ``names`` (:func:`workload`).

    Examples
    --------
    >>> weight(["a", "b", "c", "d"], ["a", "b"])
    6.0
    """
    k = min(3, len(names))
    return float(sum(len(set(r) & set(s)) for s in itertools.combinations(names, k)))


def check_selection(raw: Mapping[str, Any], at: Sequence[Any], value: Any) -> tuple[bool, str]:
    """One field of a selection (``selections[i].FIELD``) against what the manifest implies: the mechanism, its
    round, its epsilon (the schedule replayed), its sensitivity (at least twice the chosen marginal's weight,
    the bound of its score; once under add-or-remove neighbours) and its choice (a 1-, 2- or 3-way marginal of the variables, the next table
    measured).

    Examples
    --------
    >>> raw = {"variables": {"a": {}, "b": {}}, "selections": [{"chosen": ["a", "b"], "sensitivity": 4.0}]}
    >>> check_selection(raw, ("selections", 0, "sensitivity"), 4.0)
    (True, 'at least 2 w = 4 of the chosen marginal')
    >>> check_selection(raw, ("selections", 0, "chosen"), ["a", "c"])
    (False, "stated ['a', 'c']: not 1 to 3 distinct synthesized variables")
    """
    i, name = int(at[1]), at[-1]
    names = list(raw.get("variables") or {})
    sels = _selections(raw)
    sel = sels[i] if i < len(sels) else {}
    if name == "mechanism":
        return value == "exponential", "the exponential mechanism" if value == "exponential" else \
            f"stated {value!r}: 'exponential'"
    if name == "round":
        return value == i, f"round {i}" if value == i else f"stated {value!r}, its place {i}"
    if name == "chosen":
        return _check_chosen(raw, names, i, value)
    if name == "sensitivity":
        k = table_sensitivity(raw)
        w = weight(names, sel.get("chosen") or [])
        times = f"{k} w" if k != 1 else "w"
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= k * w
        return ok, f"at least {times} = {k * w:g} of the chosen marginal" if ok else \
            f"stated {value!r}, below {times} = {k * w:g} of the chosen marginal"
    if name == "rho":
        return _check_selection_rho(raw, sel, value)
    if name == "epsilon":
        plan = schedule(raw)
        if isinstance(plan, str):
            return False, plan
        expected = plan[1][i] if i < len(plan[1]) else None
        ok = expected is not None and value == expected
        return ok, "its share of the round, the schedule replayed" if ok else \
            f"stated {value!r}, the schedule replayed {expected!r}"
    return False, f"no such field of a selection: {name}"


def _check_chosen(raw: Mapping[str, Any], names: Sequence[str], i: int, value: Any) -> tuple[bool, str]:
    """Selection ``i``'s ``chosen``: 1 to 3 distinct synthesized variables, the axes of the table measured
    after it (the first tables are the ``names``' 1-way tables)."""
    ok = isinstance(value, list) and 1 <= len(value) <= 3 and len(set(value)) == len(value) and \
        all(v in names for v in value)
    if not ok:
        return False, f"stated {value!r}: not 1 to 3 distinct synthesized variables"
    ms = [m.get("axes") for m in raw.get("measurements") or [] if isinstance(m, Mapping)]
    there = len(names) + i < len(ms) and ms[len(names) + i] == value
    return there, "the next table measured" if there else "not the table measured after it"


def table_rho(sensitivity: int, sigma2: float) -> float:
    """The zCDP of a table measured with discrete Gaussian noise of variance ``sigma2`` at L1 (and squared L2)
    ``sensitivity``: ``sensitivity / (2 sigma2)``, rounded up to a float.

    Examples
    --------
    >>> table_rho(1, 100.0), table_rho(2, 100.0)
    (0.005, 0.01)
    """
    from pramkit.privacy.gaussian import gaussian_rho

    return _up(gaussian_rho(sigma2, sensitivity))


def manifest_groups(raw: Mapping[str, Any]) -> dict[str, list[list[int]] | None] | str:
    """Each variable's groups as a manifest of the model pgm implies them: recomputed from its first 1-way
    tables, their noise, its rules, ``procedure.compress``, ``procedure.compress_rules`` (``"jointly"``:
    merged across the rules' signatures, :func:`pramkit.pgm_compression.compression_of`; absent, as releases
    before it: within them) and ``procedure.bins`` (the declared bins); or why they cannot be.

    Examples
    --------
    >>> raw = {"variables": {"a": {"categories": ["x", "y", "z"]}}, "procedure": {"model": "pgm", "compress": 3.0},
    ...        "rules": None, "measurements": [{"axes": ["a"], "noisy": [90, 1, 2], "sigma2": 4.0,
    ...                                         "sensitivity": 1}]}
    >>> manifest_groups(raw)
    {'a': [[0], [1, 2]]}
    """
    from pramkit.structure import as_rules

    try:
        variables = raw["variables"]
        names = list(variables)
        threshold = float((raw.get("procedure") or {}).get("compress", 0.0))
        first = list(raw["measurements"][: len(names)])
        if [list(m["axes"]) for m in first] != [[v] for v in names]:
            return "the first tables are not each variable's 1-way table"
        cats = {v: list(variables[v]["categories"]) for v in names}
        rules = raw.get("rules")
        forbidden = rules.get("forbidden") if isinstance(rules, Mapping) else None
        masks = rule_masks(as_rules(forbidden) if forbidden else None, names, cats,
                           int((raw.get("procedure") or {}).get("max_cells", MAX_CELLS)))
        jointly = (raw.get("procedure") or {}).get("compress_rules") == "jointly"
        bins = binned(check_bins((raw.get("procedure") or {}).get("bins"), names), cats)
        comp = compression_of(names, [m["noisy"] for m in first], [table_sd(m) for m in first], masks, threshold,
                              jointly, bins)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        return f"the groups cannot be recomputed ({exc})"
    except ParameterError as exc:
        return f"the groups cannot be recomputed: procedure.{exc}"
    return {v: comp.groups_of(v) for v in names}
