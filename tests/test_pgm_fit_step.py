"""The model pgm's round fits: mbi's mirror descent, each warm-started fit starting from the step the last
one reached (:func:`pramkit.synthesize_pgm.carried_step_estimator`).

On NIST's CRC excerpt (the first 3 000 records, four demographic features, noisy tables drawn here): mbi's
own estimator run to convergence (3 000 iterations from scratch) is the reference.  A round's fit of 300
warm-started iterations after a new 3-way table comes close to it with the step carried over, and mbi's
estimator restarted at its conservative step does not (the defect the carried step removes: the rounds then
read "the model did not move" and spend their budget too fast).  The carried estimator's objective is mbi's:
run long enough, both reach the same marginals; and it carries the marginals mbi's iteration recomputes, its
iterates mbi's own.  Every carried estimator compares and hashes alike, so mbi's
compiled step is shared.  A release keeps JAX's persistent compilation cache on only where the user gave it a
folder, and puts JAX's settings back.  Skipped in one line without ``mbi`` or without the shared data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from mbi import Domain, LinearMeasurement, estimation

from pramkit.synthesize_pgm import carried_step_estimator

#: The module's tests run in one test process (``--dist loadgroup``): its fixtures (the noisy tables and mbi's
#: reference fit, about 4 s) were made once in each process its tests were spread over.
pytestmark = pytest.mark.xdist_group("test_pgm_fit_step")

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
FEATURES = ["MSP", "EDU", "PINCP_DECILE", "SEX"]
ROWS = 3_000
SIGMA = 2.0  # a measurement's noise: a high budget, where the defect showed


@pytest.fixture(scope="module")
def problem() -> dict:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    frame = pd.read_csv(NIST, dtype=str, keep_default_na=False, usecols=FEATURES)[FEATURES].head(ROWS)
    codes = {f: pd.Categorical(frame[f]) for f in FEATURES}
    sizes = [len(codes[f].categories) for f in FEATURES]
    domain = Domain(FEATURES, sizes)
    rng = np.random.default_rng(7)

    def measured(axes: tuple[str, ...]) -> LinearMeasurement:
        shape = tuple(sizes[FEATURES.index(a)] for a in axes)
        idx = np.ravel_multi_index(tuple(codes[a].codes for a in axes), shape)
        exact = np.bincount(idx, minlength=int(np.prod(shape))).astype(float)
        return LinearMeasurement(exact + rng.normal(0, SIGMA, exact.size), axes, stddev=SIGMA)

    first = [measured((f,)) for f in FEATURES]
    table = ("MSP", "EDU", "PINCP_DECILE")
    return {"domain": domain, "first": first, "all": [*first, measured(table)], "table": table}


def _fit(est, problem: dict, ms: list, iters: int, warm=None):
    return est.estimate(problem["domain"], ms, known_total=float(ROWS), iters=iters, warm_start=warm)


def _distance(a, b, axes) -> float:
    """The L1 distance of two models' marginals over ``axes``, in records."""
    return float(np.abs(np.asarray(a.project(axes).datavector()) - np.asarray(b.project(axes).datavector())).sum())


@pytest.fixture(scope="module")
def reference(problem):
    """mbi's own estimator, from scratch, run to convergence."""
    return _fit(estimation.MirrorDescent(), problem, problem["all"], 3_000)


def test_a_rounds_fit_absorbs_the_new_table_with_the_step_carried(problem, reference):
    carried = carried_step_estimator()
    first = _fit(carried, problem, problem["first"], 300)
    assert carried.carry["alpha"] > 0
    after = _fit(carried, problem, problem["all"], 300, warm=first)
    restarted = _fit(estimation.MirrorDescent(), problem, problem["all"], 300,
                     warm=_fit(estimation.MirrorDescent(), problem, problem["first"], 300))
    table = problem["table"]
    near, far = _distance(after, reference, table), _distance(restarted, reference, table)
    # the table's own noise: SIGMA in each of its cells, about 0.8 SIGMA a cell in L1
    cells = int(np.prod(problem["domain"].project(table).shape))
    assert near < 0.4 * cells * SIGMA, (near, far)  # measured: 0.22
    assert far > 4 * near, (near, far)  # measured: 6.5 times


def test_the_carried_estimator_reaches_mbis_optimum(problem, reference):
    carried = carried_step_estimator()
    warm = _fit(carried, problem, problem["first"], 300)
    long = _fit(carried, problem, problem["all"], 3_000, warm=warm)
    for axes in [problem["table"], ("SEX", "MSP"), ("EDU",)]:
        assert _distance(long, reference, axes) < 0.01 * ROWS, axes


def test_every_carried_estimator_shares_one_compiled_step():
    a, b = carried_step_estimator(), carried_step_estimator()
    a.carry["alpha"] = 1.0
    assert a == b and hash(a) == hash(b) and a.carry != b.carry


def test_a_process_making_release_after_release_keeps_its_memory_maps(tmp_path):
    """Each release compiles programs holding mapped executable memory; dropped after it, the process's memory
    maps stay level (kept, they grew by about 2 500 a release of NIST's family features, and the kernel's
    65 530 ran out).  Each release here runs 8 rounds (2 a variable; each new set of cliques a new program):
    with the programs kept, the maps grew by about 1 200 over the last two releases, four times the bound
    (the default's 16 rounds: 1 600, in 1.7 times the time)."""
    import os

    from pramkit.synthesize import synthesize_release

    if not NIST.is_file() or not os.path.exists("/proc/self/maps"):
        pytest.skip("needs the shared data and /proc")
    frame = pd.read_csv(NIST, dtype=str, keep_default_na=False, usecols=FEATURES)[FEATURES].head(2_000)

    def maps() -> int:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    counts = []
    for i in range(3):
        synthesize_release(frame, tmp_path / f"s{i}.csv", variables=FEATURES, public="", epsilon=1.0,
                           key=bytes([i + 1]) * 32, model="pgm", delta=1e-5, neighbours="add-remove", rounds=8)
        counts.append(maps())
    assert counts[2] - counts[0] < 300, counts


def test_the_carried_marginals_give_mbis_own_iterates(problem):
    """The state carries the marginals mbi's iteration recomputes: after its first iteration (which only
    computes them) the carried estimator's 99 iterations are mbi's 99 steps, run here by mbi's own ``_step``
    from mbi's own start."""
    import jax
    from mbi import marginal_loss

    domain, ms, total = problem["domain"], problem["all"], float(ROWS)
    plain = estimation.MirrorDescent()
    loss_fn = marginal_loss.from_linear_measurements(ms, domain)
    steps = jax.jit(lambda s: jax.lax.fori_loop(0, 99, lambda _, t: plain._step(t, loss_fn, total), s))
    expected = plain._finalize(steps(plain._init(domain, loss_fn, total)), total)
    got = carried_step_estimator().estimate(domain, ms, known_total=total, iters=100)
    for axes in [problem["table"], ("SEX", "MSP"), ("EDU",), ("MSP", "SEX", "EDU")]:
        a = np.asarray(got.project(axes).datavector())
        b = np.asarray(expected.project(axes).datavector())
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3 * ROWS / a.size)
    # and the model's marginals are those of its potentials (the carried ones are not stale)
    again = plain._finalize(plain._init(domain, loss_fn, total, warm_start=got.potentials), total)
    for axes in [problem["table"], ("EDU",)]:
        np.testing.assert_allclose(np.asarray(got.project(axes).datavector()),
                                   np.asarray(again.project(axes).datavector()), rtol=1e-5, atol=1e-6 * ROWS)


def test_the_cpu_code_generation_flag_is_set_before_jax_starts_only(tmp_path):
    """A fresh process gets :data:`CPU_CODEGEN`'s flags (on the jaxlib they were measured on), and so does one
    that imported JAX without computing; one whose JAX backend started first keeps its flags and is warned that
    its release is not the fresh process's; a user's own setting of a flag is kept, and the others are added."""
    import subprocess
    import sys
    from importlib import metadata

    from pramkit.synthesize_pgm import CPU_CODEGEN

    flags, tested = CPU_CODEGEN
    code = ("import os, sys\n{pre}\nfrom pramkit.synthesize_pgm import import_mbi\nimport_mbi()\n"
            "print(os.environ.get('XLA_FLAGS', ''))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}

    def run(pre: str, **extra: str) -> tuple[list[str], str]:
        out = subprocess.run([sys.executable, "-c", code.format(pre=pre)], capture_output=True, text=True,
                             env={**env, **extra}, check=True)
        return out.stdout.split(), out.stderr

    measured = any(metadata.version("jaxlib").startswith(t) for t in tested)
    assert run("")[0] == (list(flags) if measured else [])
    assert run("import jax, jax.numpy")[0] == (list(flags) if measured else [])  # imported, not started
    started, warned = run("import jax.numpy as jnp\njnp.ones(2).block_until_ready()")
    assert started == [] and ("not the file a fresh process draws" in warned) == measured
    mine = flags[0].replace("false", "true")
    assert run("", XLA_FLAGS=mine)[0] == [mine, *(flags[1:] if measured else [])]


#: A child summing a large array over its leading axes with JAX, started as pramkit starts it, on the cores of
#: ``sys.argv[1]`` (its affinity; XLA's pool has a thread per core the process may use): the sums' bytes.
THREADS_CHILD = """
import hashlib, os, sys
import numpy as np
os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")})
from pramkit.synthesize_pgm import _quiet_jax, import_mbi
import_mbi()
import jax, jax.numpy as jnp
with _quiet_jax():
    a = jnp.asarray(np.random.default_rng(0).random((300, 400, 50)))
    sums = jax.jit(lambda x: (x.sum(axis=(0, 1)), jax.scipy.special.logsumexp(x, axis=(0, 2))))(a)
    print(hashlib.sha256(b"".join(np.asarray(s).tobytes() for s in sums)).hexdigest())
"""


def test_a_sum_of_the_fit_is_the_same_on_one_core_as_on_several() -> None:
    """XLA's default on jaxlib 0.10 hands a large reduction to YNNPACK, which splits it among the threads of the
    pool (one per core) and adds the pieces: the same sums, and so the same model and key, gave another file on
    one core than on two.  With pramkit's flags (:data:`CPU_CODEGEN`) a process allowed one core and one allowed
    every core compute the same bytes (without the YNNPACK flag, they differ on two cores)."""
    import os
    import subprocess
    import sys
    from importlib import metadata

    from pramkit.synthesize_pgm import CPU_CODEGEN

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: nothing to compare")
    if not any(metadata.version("jaxlib").startswith(t) for t in CPU_CODEGEN[1]):
        pytest.skip("pramkit sets its XLA flags on the jaxlib they were measured on only")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    digests = [subprocess.run([sys.executable, "-c", THREADS_CHILD, ",".join(map(str, use))], env=env, check=True,
                              capture_output=True, text=True).stdout.strip() for use in (cores[:1], cores)]
    assert digests[0] == digests[1]


def test_a_marginal_whose_product_underflows_keeps_its_rules() -> None:
    """Forty factors whose maxima disagree: their product is about 1e-240 everywhere, which a product of the
    factors would lose.  The calibrated tree (never mbi's inference, which reads the potentials without the rules'
    masks) gives the brute-force marginal of the joint, in logs, with the rule's cells at 0."""
    from types import SimpleNamespace

    from scipy.special import logsumexp

    from pramkit.synthesize_pgm import _Factors

    rng = np.random.default_rng(3)
    names, size = ["a", "b", "c", "d"], 3
    cliques = [("a", "b"), ("b", "c"), ("c", "d")] * 14
    logs = []
    for i, _ in enumerate(cliques):
        v = np.full((size, size), -20.0) + rng.normal(0, 0.5, (size, size))
        v[(i // 3) % size, (i // 9) % size] = 0.0  # factors of one clique disagree on where their maximum is
        logs.append(v)
    class Potentials:  # what _Factors reads of mbi's potentials: the cliques, and each one's log values
        def __init__(self) -> None:
            self.cliques = cliques
            self.lookups = list(range(len(cliques)))

        def __getitem__(self, cl: tuple[str, ...]) -> SimpleNamespace:
            return SimpleNamespace(values=logs[self.lookups.pop(0)])

    model = SimpleNamespace(potentials=Potentials(), marginals=None,
                            project=lambda r: pytest.fail("mbi's inference reads no mask"))
    mask = np.ones((size, size), dtype=bool)
    mask[0, 2] = mask[2, 1] = False  # the rule: (a, d) never (0, 2) nor (2, 1)
    factors = _Factors(model, [(("a", "d"), mask)], total=1000.0)
    got = factors.marginal(("d", "a"))
    joint = np.zeros((size,) * 4)
    for cl, v in zip(cliques, logs):
        idx = [names.index(x) for x in cl]
        joint = joint + np.expand_dims(v, [i for i in range(4) if i not in idx])
    joint = joint + np.where(mask, 0.0, -np.inf)[:, None, None, :]
    assert logsumexp(joint) < np.log(1e-200)  # the product underflows the elimination's bound
    want = np.exp(logsumexp(joint, axis=(1, 2)) - logsumexp(joint)).T * 1000.0  # (d, a)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert got[2, 0] == 0 and got[1, 2] == 0


@pytest.mark.parametrize("folder, user_on, on", [(None, True, False), ("given", True, True), ("given", False, False)])
def test_the_persistent_cache_is_used_only_where_the_user_gave_it_a_folder(tmp_path, folder, user_on, on):
    """Inside a release's block JAX runs in float64, its persistent compilation cache on only where the user
    gave it a folder and did not turn it off; every setting is put back after the block."""
    import jax

    from pramkit.synthesize_pgm import _quiet_jax

    names = ("jax_enable_x64", "jax_enable_compilation_cache", "jax_compilation_cache_dir")
    before = {name: jax.config.values[name] for name in names}
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path) if folder else None)
        jax.config.update("jax_enable_compilation_cache", user_on)
        jax.config.update("jax_enable_x64", False)
        with _quiet_jax():
            assert jax.config.values["jax_enable_compilation_cache"] is on
            assert jax.config.values["jax_enable_x64"] is True
        assert jax.config.values["jax_enable_compilation_cache"] is user_on
        assert jax.config.values["jax_enable_x64"] is False
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
