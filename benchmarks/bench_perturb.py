"""Throughput of the perturbation kernels against NumPy's floor and a naive loop.

For n values and S categories, prints for each kernel (form (8) diagonal, Walker
alias for any matrix):
  * seconds and millions of values per second;
  * the ratio to the time NumPy needs to draw n uniforms from the same
    bit generator (Philox), measured in the same run: the floor any keyed
    sampler must pay;
  * the speed-up over a naive per-row loop (``rng.choice(S, p=M[k])`` for each
    record, the way a simple Python PRAM does it), timed on a subsample.

Then ``perturb_frame`` end to end (values to codes, kernel, codes back to values
of the column's own dtype) on ``--frame-n`` rows, for string (pandas ``str``),
object (Python strings), pandas categorical, Arrow dictionary and integer
columns, and polars ``String``, ``Categorical`` and ``Enum`` columns and a ``LazyFrame`` of a
``String`` column (computed by ``collect``), of 10, 50, 200 and 10 000 levels, for the issue's frame of three text
columns (10, 50 and 200 levels), and for the census columns age, sex and
marital_status; each as a ratio to the floor for as many uniforms as values
perturbed, of wall-clock and of CPU times, the case and the floor timed
alternately (``--frame-repeat`` rounds) so that both see the same load; then the
one-thread ratios as a table of column kind by levels.  The matrices are form
(8) with keep probabilities uniform on [0.6, 0.95].

``--sources`` times ``perturb_frame`` on one thread with the draws computing the keyed Philox stream
themselves and reading it through NumPy's ``next_double`` (one call per value), alternately.

``--references`` sets each text kind's ``perturb_frame`` beside what its own library takes for the two
steps a release of text cannot skip, with no draw at all: finding each value among the categories
(pyarrow's ``index_in``, pandas' ``factorize``, polars' cast to an ``Enum`` of the categories, or
reading a polars ``Categorical``'s physical codes) and writing the column from codes (pyarrow's
``take``, NumPy's ``take`` of the label objects, polars' ``gather``); and beside pramkit's draw of the
codes alone (``perturb_codes``). Each as CPU time on one thread over the floor, timed alternately with it.

Usage: python benchmarks/bench_perturb.py [--n 10000000] [--frame-n 1000000] [--repeat 3] [--frame-repeat 9]
       [--frames-only | --sources | --references]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from timing import best_of

from pramkit.datasets import census
from pramkit.engine import sampling
from pramkit.engine.perturb import available_threads, perturb_codes, perturb_frame
from pramkit.engine.sampling import MAX_ALIAS, DiagonalSampler, sampler_for
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix


def naive_seconds_per_value(matrix: np.ndarray, codes: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    s = matrix.shape[0]
    t0 = time.perf_counter()
    out = np.empty_like(codes)
    for i, k in enumerate(codes):
        out[i] = rng.choice(s, p=matrix[k])
    return (time.perf_counter() - t0) / codes.size


def column(kind: str, levels: int, n: int, rng: np.random.Generator) -> tuple[pd.Series, list]:
    """A column of ``n`` values of ``levels`` categories, of the given kind, and its category labels."""
    codes = rng.integers(0, levels, n)
    if kind == "integer":
        return pd.Series(codes * 3 + 1), [int(3 * i + 1) for i in range(levels)]
    labels = [f"level {i}" for i in range(levels)]
    if kind == "string":
        return pd.Series(np.array(labels, dtype=object)[codes]).astype(str), labels
    if kind == "object":
        return pd.Series(np.array(labels, dtype=object)[codes], dtype=object), labels
    if kind == "categorical":
        return pd.Series(pd.Categorical.from_codes(codes, categories=labels)), labels
    if kind.startswith("polars"):  # a polars Series (framed() puts it in a frame)
        import polars as pl

        text = pl.Series("x", labels).gather(codes)
        dtype = {"polars cat": pl.Categorical, "polars enum": pl.Enum(labels)}.get(kind, pl.String)
        return text.cast(dtype), labels
    dictionary = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(labels))
    return pd.Series(pd.array(dictionary, dtype=pd.ArrowDtype(dictionary.type))), labels


def form8(labels: list, rng: np.random.Generator) -> PramMatrix:
    return PramMatrix.from_diagonal(rng.uniform(0.6, 0.95, len(labels)), labels)


def alternately(fn: Callable[[], object], floor: Callable[[], object], repeat: int) -> np.ndarray:
    """Best wall-clock and CPU (this process, every thread) seconds of ``fn`` and of ``floor`` over ``repeat``
    rounds, each round timing one then the other so that both meet the same load of a shared machine:
    ``[[fn wall, fn CPU], [floor wall, floor CPU]]``."""
    best = np.full((2, 2), np.inf)
    for _ in range(repeat):
        for i, f in enumerate((fn, floor)):
            wall, cpu = time.perf_counter(), time.process_time()
            f()
            best[i] = np.minimum(best[i], [time.perf_counter() - wall, time.process_time() - cpu])
    return best


KINDS = ("string", "object", "categorical", "arrow dict", "integer", "polars str", "polars cat", "polars enum",
         "polars lazy")


def framed(kind: str, values: object) -> object:
    """A column of :func:`column` as the frame of its kind (a pandas, polars or lazy polars frame)."""
    if not kind.startswith("polars"):
        return pd.DataFrame({"x": values})
    import polars as pl

    frame = pl.DataFrame({"x": values})
    return frame.lazy() if kind == "polars lazy" else frame


def released(frame: object, manifest: Manifest, key: SecretKey, threads: int | None) -> object:
    """``perturb_frame``, computed (a LazyFrame's release is computed by ``collect``)."""
    out = perturb_frame(frame, manifest, key=key, threads=threads).data
    return out.collect() if hasattr(out, "collect") else out
LEVELS = (10, 50, 200, 10_000)
#: The goal of ``perturb_frame``: its CPU time on one thread at most this many times the floor's.
GOAL = 1.5


def frames(n: int, repeat: int, key: SecretKey) -> None:
    """``perturb_frame`` end to end against the uniform floor, on one thread and on all cores."""
    rng = np.random.default_rng(2)
    cases: list[tuple[str, object, Manifest]] = []
    for kind in KINDS:
        for levels in LEVELS:
            values, labels = column(kind, levels, n, rng)
            cases.append((f"{kind}, {levels} levels", framed(kind, values),
                          Manifest.of({"x": form8(labels, rng)})))
    text = {f"t{levels}": column("string", levels, n, rng) for levels in (10, 50, 200)}
    cases.append(("3 text columns (10, 50, 200 levels)", pd.DataFrame({name: v for name, (v, _) in text.items()}),
                  Manifest.of({name: form8(labels, rng) for name, (_, labels) in text.items()})))
    data = census(n, seed=3)
    manifest = Manifest.of({k: form8(list(data[k].cat.categories), rng) for k in ("age", "sex", "marital_status")})
    cases.append(("census age, sex, marital (categorical)", data, manifest))
    cases.append(("census age, sex, marital (text)", data.astype(str), manifest))
    import polars as pl

    cases.append(("census age, sex, marital (polars String)", pl.from_pandas(data.astype(str)), manifest))
    print(f"\nperturb_frame, {n:,} rows, {available_threads()} cores; x floor = best time / (best time of NumPy "
          f"drawing {n:,} Philox uniforms x columns), each case and the floor timed alternately, best of {repeat}; "
          "CPU: the same ratio of CPU times (steadier on a shared machine)")
    print(f"{'columns':<42} {'1 thread: ms':>12} {'x floor':>8} {'CPU':>6}   {'all cores: ms':>13} {'x floor':>8}")
    one_thread: dict[str, np.ndarray] = {}
    floors = []
    for label, frame, man in cases:
        cells = []
        for threads in (1, None):
            (secs, cpu), floor = alternately(lambda: released(frame, man, key, threads),
                                             lambda: np.random.Generator(np.random.Philox()).random(n), repeat)
            ratios = np.array([secs, cpu]) / (floor * len(man.names))
            floors.append(floor[0])
            if threads == 1:
                one_thread[label] = ratios
                cells.append(f"{secs * 1e3:>12.1f} {ratios[0]:>8.2f} {ratios[1]:>6.2f}")
            else:
                cells.append(f"{secs * 1e3:>13.1f} {ratios[0]:>8.2f}")
        print(f"{label:<42} " + "   ".join(cells), flush=True)
    print(f"\nx floor on one thread, wall / CPU, by column kind and levels (floor {min(floors) * 1e3:.2f} to "
          f"{max(floors) * 1e3:.2f} ms per {n:,} uniforms over the run):")
    print(f"{'kind':<12}" + "".join(f"{levels:>16}" for levels in LEVELS))
    for kind in KINDS:
        cells = ("{:.2f} / {:.2f}{}".format(*one_thread[f"{kind}, {levels} levels"],
                                            "*" if one_thread[f"{kind}, {levels} levels"][1] > GOAL else " ")
                 for levels in LEVELS)
        print(f"{kind:<12}" + "".join(f"{cell:>16}" for cell in cells))
    above = sorted(label for label, ratios in one_thread.items() if ratios[1] > GOAL)
    print(f"goal: CPU time at most {GOAL}x the floor on one thread; "
          + (f"{len(above)} of {len(one_thread)} cases above it (*)" if above else "every case within it"))


@contextlib.contextmanager
def _next_raw_source(generator: np.random.Generator) -> Iterator[tuple[object, int]]:
    """The draws' words through NumPy's ``next_raw``, one call per value (what
    :func:`pramkit.engine.sampling.uniform_source` gives for a generator other than Philox)."""
    bits = generator.bit_generator
    with bits.lock:
        yield bits.capsule, sampling._CAPSULE


def sources(n: int, repeat: int, key: SecretKey) -> None:
    """``perturb_frame`` on one thread with the draws computing the keyed Philox stream themselves and reading
    it through NumPy's ``next_raw``, alternately in the same run: the same
    release, and what computing Philox saves."""
    rng = np.random.default_rng(4)
    print(f"\nperturb_frame, {n:,} rows, one thread: the draws' words computed (Philox in the draws) "
          f"or read through NumPy's next_raw, x floor (best of {repeat}, timed alternately)")
    print(f"{'columns':<26} {'next_raw':>12} {'computed':>9} {'saved':>6}  release")
    computed = sampling.uniform_source
    for kind in ("string", "object", "categorical", "integer"):
        for levels in (10, 10_000):
            values, labels = column(kind, levels, n, rng)
            frame, man = pd.DataFrame({"x": values}), Manifest.of({"x": form8(labels, rng)})
            best, released = {}, {}
            for _ in range(repeat):
                for name, source in (("next_raw", _next_raw_source), ("computed", computed),
                                     ("floor", None)):
                    sampling.uniform_source = source or computed
                    t0 = time.perf_counter()
                    if source is None:
                        np.random.Generator(np.random.Philox()).random(n)
                    else:
                        released[name] = perturb_frame(frame, man, key=key, threads=1).data
                    best[name] = min(best.get(name, np.inf), time.perf_counter() - t0)
            sampling.uniform_source = computed
            ratio = {k: v / best["floor"] for k, v in best.items()}
            same = "the same" if released["computed"].equals(released["next_raw"]) else "DIFFERENT"
            print(f"{kind + ', ' + str(levels) + ' levels':<26} {ratio['next_raw']:>12.2f} {ratio['computed']:>9.2f} "
                  f"{ratio['next_raw'] - ratio['computed']:>6.2f}  {same}", flush=True)


def library_steps(kind: str, frame: object, labels: list) -> Callable[[np.ndarray], object]:
    """What the column's own library does for the lookup and the writing of a release of ``frame``'s text
    column ``x`` (see the module's ``--references``), as a function of the released codes (drawn beforehand,
    so that no draw is timed)."""
    if kind == "object":  # pandas' factorisation (Index.get_indexer of the labels took ten times as long)
        values, objects = frame["x"].to_numpy(), np.array(labels, dtype=object)
        return lambda codes: (pd.factorize(values), objects.take(codes))
    if kind == "string":
        import pyarrow.compute as pc

        text = pa.array(frame["x"])
        known = pa.array(labels, type=text.type)
        return lambda codes: (pc.index_in(text, value_set=known), known.take(codes))
    import polars as pl

    series = frame.collect()["x"] if kind == "polars lazy" else frame["x"]
    enum, written = pl.Enum(labels), pl.Series("x", labels).cast(series.dtype)
    if kind in ("polars cat", "polars enum"):
        return lambda codes: (series.to_physical(), written.gather(codes))
    return lambda codes: (series.cast(enum).to_physical(), written.gather(codes))


TEXT_KINDS = ("string", "object", "polars str", "polars cat", "polars enum", "polars lazy")


def references(n: int, repeat: int, key: SecretKey) -> None:
    """Each text kind's ``perturb_frame`` on one thread beside its library's lookup and writing alone and
    pramkit's draw alone, CPU time over the floor (see the module's ``--references``)."""
    rng = np.random.default_rng(2)
    uniforms = lambda: np.random.Generator(np.random.Philox()).random(n)  # noqa: E731 - the floor
    print(f"\ntext columns, {n:,} rows, one thread, CPU time x floor (each timed alternately with the floor, best "
          f"of {repeat}): perturb_frame; its library's lookup + writing alone (no draw); pramkit's draw alone; "
          "and the last two added")
    print(f"{'columns':<28} {'perturb_frame':>13} {'library':>8} {'draw':>6} {'library + draw':>15}")
    for kind in TEXT_KINDS:
        for levels in LEVELS:
            values, labels = column(kind, levels, n, rng)
            frame, manifest = framed(kind, values), Manifest.of({"x": form8(labels, rng)})
            sampler = sampler_for(manifest.variables[0].matrix)
            codes = rng.integers(0, levels, n)
            steps = library_steps(kind, frame, labels)
            ratio = {}
            for name, fn in (("perturb_frame", lambda: released(frame, manifest, key, 1)),
                             ("library", lambda: steps(codes)),
                             ("draw", lambda: perturb_codes(codes, sampler, key=key, variable="x"))):
                (_, cpu), (_, floor) = alternately(fn, uniforms, repeat)
                ratio[name] = cpu / floor
            print(f"{kind + ', ' + str(levels) + ' levels':<28} {ratio['perturb_frame']:>13.2f} "
                  f"{ratio['library']:>8.2f} {ratio['draw']:>6.2f} {ratio['library'] + ratio['draw']:>15.2f}",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--frame-n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frame-repeat", type=int, default=9,
                    help="rounds of each perturb_frame case, timed alternately with the floor")
    ap.add_argument("--naive-n", type=int, default=20_000)
    ap.add_argument("--frames-only", action="store_true", help="only the perturb_frame section")
    ap.add_argument("--sources", action="store_true",
                    help="only perturb_frame with the words computed and read through next_raw, side by side")
    ap.add_argument("--references", action="store_true",
                    help="only the text kinds' perturb_frame beside their libraries' lookup and writing alone")
    args = ap.parse_args()
    if args.references:
        references(args.frame_n, args.frame_repeat, SecretKey(bytes(32), "benchmark"))
        return
    if args.sources:
        sources(args.frame_n, args.frame_repeat, SecretKey(bytes(32), "benchmark"))
        return
    if args.frames_only:
        frames(args.frame_n, args.frame_repeat, SecretKey(bytes(32), "benchmark"))
        return
    n = args.n
    key = SecretKey(bytes(32), "benchmark")
    rng = np.random.default_rng(1)
    philox = np.random.Philox(key=key.philox_key("bench"))
    floor = best_of(lambda: np.random.Generator(philox).random(n), args.repeat)
    pcg = best_of(lambda: np.random.default_rng(0).random(n), args.repeat)
    print(f"n = {n:,} values; NumPy floor: {floor:.3f} s for n Philox uniforms ({n / floor / 1e6:.0f} M/s), "
          f"PCG64 {pcg:.3f} s")
    print(f"{'kernel':<9} {'S':>5} {'setup s':>8} {'seconds':>8} {'M values/s':>11} {'x floor':>8} {'x faster than naive':>20}")
    for s in (2, 50, 1000, 3000):
        codes = rng.integers(0, s, n)
        q = rng.uniform(0.6, 0.95, s)
        general = 0.8 * np.eye(s) + 0.2 * rng.dirichlet(np.ones(s), size=s)
        kernels = (
            ("diagonal", PramMatrix.from_diagonal(q), lambda m: DiagonalSampler(m.diagonal)),
            ("alias" if s <= MAX_ALIAS else "bisect", PramMatrix(general), sampler_for),
        )
        for name, m, make in kernels:
            t0 = time.perf_counter()
            sampler = make(m)
            setup = time.perf_counter() - t0
            secs = best_of(lambda: perturb_codes(codes, sampler, key=key, variable="bench"), args.repeat)
            naive = naive_seconds_per_value(m.matrix, codes[: args.naive_n])
            print(f"{name:<9} {s:>5} {setup:>8.3f} {secs:>8.3f} {n / secs / 1e6:>11.1f} {secs / floor:>8.2f} "
                  f"{naive * n / secs:>20.0f}")
    frames(args.frame_n, args.frame_repeat, key)


if __name__ == "__main__":
    main()
