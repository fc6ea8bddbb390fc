"""``pramkit design``: design PRAM matrices.

Two modes:

* ``pramkit design --probs 0.5,0.3,0.2 --epsilon 0.5 [--family diagonal|general] [--truthful] [--json]``
  designs one matrix for a distribution (``--counts`` for counts or weights)
  and prints it;
* ``pramkit design DATA --vars a,b --epsilon E [--split optimal|equal|joint] --out manifest.json``
  designs one matrix per variable from the data, splitting the record budget
  E across the variables (or, with ``--split joint``, one matrix on their
  cross-classification), and writes the manifest that ``pramkit apply`` uses.
  The data are streamed (:func:`pramkit.counts.count_file`).

``--method`` picks the design family from :data:`METHODS`: ``dp`` (Ayed,
Battiston and Camerlenghi, program (7); the default) and the classic and
bistochastic families of :mod:`pramkit.design.methods` (invariant, keep, rr,
kanon, tridiagonal, circulant, bistochastic-beta), each reported with its
measures (epsilon, beta, information).  A new family is one more entry.

``pramkit design DATA --keys a,b,c,d,e --recognition ALPHA [--combinations 3] --out M.json``
designs one joint matrix over the keys against spontaneous recognition
(Cator, Hensbergen and Rozenholc) and writes it as a joint manifest variable.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pramkit.atomic import check_writable
from pramkit.cli._common import add_quiet, print_json
from pramkit.design.dp_general import dp_general
from pramkit.design.dp_multivariate import compare_joint, joint_table, split_budget
from pramkit.counts import count_file
from pramkit.design.dp_optimal import dp_optimal
from pramkit.design.methods import METHODS as FAMILY_METHODS
from pramkit.design.methods import measure
from pramkit.design.recognition import recognition_design_from_data
from pramkit.io import read_table
from pramkit.errors import PramkitError
from pramkit.manifest import Manifest, PerturbedVariable, epsilon_to_json
from pramkit.matrix import Label, PramMatrix

#: Tolerance within which ``--probs`` may miss 1 and be normalised (with a note).
PROBS_TOL = 1e-6

#: One variable's categories and probabilities.
Distribution = tuple[list[Label], np.ndarray]


@dataclass(frozen=True)
class DesignMethod:
    """A design family of the ``design`` command.

    help: one line for ``--help``
    single: design one matrix for one distribution -> (matrix, extra JSON fields)
    several: design the matrices of several variables of a record -> ({name: matrix}, extra JSON fields)
    """

    help: str
    single: Callable[[argparse.Namespace, Distribution], tuple[PramMatrix, dict[str, Any]]]
    several: Callable[[argparse.Namespace, dict[str, Distribution], Any], tuple[dict[str, PramMatrix], dict[str, Any]]]


def _require_epsilon(args: argparse.Namespace) -> float:
    if args.epsilon is None:
        raise PramkitError("--method dp needs --epsilon (the per-record privacy budget)")
    return args.epsilon


def _dp_single(args: argparse.Namespace, dist: Distribution) -> tuple[PramMatrix, dict[str, Any]]:
    cats, p = dist
    eps = _require_epsilon(args)
    if args.family == "general":
        if args.truthful:
            raise PramkitError("--truthful applies to --family diagonal only")
        m = dp_general(p, eps, categories=cats)
        return m, {}
    m = dp_optimal(p, eps, categories=cats, truthful=args.truthful)
    return m, {"warnings": _truthful_warning(m, p, eps)}


def _truthful_warning(m: PramMatrix, p: np.ndarray, eps: float) -> list[str]:
    cert = m.provenance.certificate or {}
    if cert.get("is_truthful", True):
        return []
    s = m.size
    low = [m.categories[k] for k in np.flatnonzero(m.diagonal < 1.0 / s)]
    truthful = dp_optimal(p, eps, categories=m.categories, truthful=True)
    return [
        f"the optimal matrix is not truthful: categories {low} are released as themselves with probability "
        f"below 1/S = {1 / s:.4g}, less often than as some other category; --truthful requires q_k >= 1/S "
        f"and keeps {truthful.provenance.objective:.6g} nats instead of {m.provenance.objective:.6g} nats"
    ]


def _dp_several(args: argparse.Namespace, dists: dict[str, Distribution],
                data: Any) -> tuple[dict[str, PramMatrix], dict[str, Any]]:
    eps = _require_epsilon(args)
    if args.family == "general":
        raise PramkitError("--family general is for --probs/--counts; data designs use form (8)")
    ps = {n: p for n, (_, p) in dists.items()}
    cats = {n: c for n, (c, _) in dists.items()}
    split = split_budget(ps, eps, method="equal" if args.split == "equal" else "optimal",
                         truthful=args.truthful, categories=cats)
    extra: dict[str, Any] = {
        "split": args.split,
        "epsilons": split.epsilons,
        "information_nats": split.information_nats,
        "total_information_nats": split.total_nats,
    }
    if split.upper_bound_nats is not None:
        extra["split_upper_bound_nats"] = split.upper_bound_nats
        extra["split_grid_step"] = split.grid_step
    if args.split == "joint":
        cmp = compare_joint(joint_table(data), split)
        extra["joint_matrix"] = cmp.joint_matrix
        extra["joint"] = {
            "cells": cmp.cells,
            "independent_joint_information_nats": cmp.independent_nats,
            "joint_design_information_nats": cmp.joint_nats,
            "better": cmp.better,
        }
    for n, m in split.matrices.items():
        extra.setdefault("warnings", []).extend(f"{n}: {w}" for w in _truthful_warning(m, ps[n], split.epsilons[n]))
    unperturbed = [n for n in dists if n not in split.matrices]
    if unperturbed and args.split != "joint":
        extra.setdefault("warnings", []).append(
            f"variables {unperturbed} get epsilon 0 in the optimal split and are released unperturbed "
            "only if they are not sensitive; use --split equal to perturb every variable")
    return split.matrices, extra


#: Options of the classic and bistochastic families (``--beta-family`` is their ``family``).
_FAMILY_OPTIONS = ("epsilon", "beta", "pd", "alpha", "diagonal", "seed", "keep", "bandwidth", "k", "gamma")


def _family_params(args: argparse.Namespace) -> dict[str, Any]:
    params = {name: getattr(args, name) for name in _FAMILY_OPTIONS}
    params["family"] = args.beta_family
    return params


def _family(name: str) -> DesignMethod:
    """A classic or bistochastic family of :data:`pramkit.design.methods.METHODS`, each variable
    designed on its own (the record's epsilon is the sum of theirs)."""
    build = FAMILY_METHODS[name]

    def single(args: argparse.Namespace, dist: Distribution) -> tuple[PramMatrix, dict[str, Any]]:
        cats, p = dist
        m = build(cats, p, params=_family_params(args))
        measures = measure(m, p)
        return m, {"measures": dataclasses.asdict(measures),
                   "mutual_information_nats": measures.mutual_information_nats}

    def several(args: argparse.Namespace, dists: dict[str, Distribution],
                data: Any) -> tuple[dict[str, PramMatrix], dict[str, Any]]:
        if args.split == "joint":
            raise PramkitError(f"--split joint is for --method dp; --method {name} designs each variable on its own")
        matrices = {n: build(c, p, params=_family_params(args)) for n, (c, p) in dists.items()}
        measures = {n: dataclasses.asdict(measure(m, dists[n][1])) for n, m in matrices.items()}
        return matrices, {"measures": measures}

    return DesignMethod(f"{name} (classic / bistochastic family; see docs/bistochastic.md)", single, several)


#: Design families: name -> :class:`DesignMethod`.
METHODS: dict[str, DesignMethod] = {
    "dp": DesignMethod("epsilon-DP with maximal mutual information (Ayed, Battiston and Camerlenghi)",
                       _dp_single, _dp_several),
    **{name: _family(name) for name in FAMILY_METHODS},
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "design", help="design PRAM matrices (print one, or write a manifest for a data file)",
        description="Design a PRAM matrix for a distribution (--probs/--counts), or one per variable of a "
                    "data file (--vars) written as a manifest for `pramkit apply`.")
    p.add_argument("data", nargs="?", type=Path, help="data file (CSV, Parquet, Stata, SPSS) to design from")
    p.add_argument("--vars", "--keys", dest="vars",
                   help="comma-separated columns of DATA to perturb (the key variables for --recognition)")
    p.add_argument("--probs", help="comma-separated probabilities of the categories (sum 1)")
    p.add_argument("--counts", help="comma-separated counts or weights of the categories (normalised)")
    p.add_argument("--categories", help="comma-separated labels for --probs/--counts (default 0..S-1)")
    p.add_argument("--method", choices=sorted(METHODS), default="dp",
                   help="design family (default %(default)s: " + METHODS["dp"].help + ")")
    p.add_argument("--epsilon", type=float, help="privacy budget per record (likelihood ratios at most e^epsilon); "
                   "for --method rr, per variable")
    fam = p.add_argument_group("classic and bistochastic families (--method invariant|keep|rr|kanon|tridiagonal|"
                               "circulant|bistochastic-beta; see docs/bistochastic.md)")
    fam.add_argument("--beta", type=float, help="target beta-bistochastic privacy, H(P)/log2 r in (0, 1]")
    fam.add_argument("--keep", type=float, help="keep probability (keep: mu-ARGUS PRAM; circulant: p11)")
    fam.add_argument("--bandwidth", type=int, help="keep: move only to categories within this many codes")
    fam.add_argument("--pd", type=float, help="invariant: lower bound of P's diagonal (default 0.8)")
    fam.add_argument("--alpha", type=float, help="invariant: weight of R against the identity (default 0.5); "
                     "tridiagonal: off-diagonal entry")
    fam.add_argument("--diagonal", choices=["uniform", "fixed"], help="invariant: P's diagonal drawn from U(pd, 1) "
                     "(default) or fixed at pd")
    fam.add_argument("--seed", type=int, help="invariant: seed of the diagonal draw")
    fam.add_argument("--k", type=int, help="kanon: categories per class")
    fam.add_argument("--gamma", type=float, help="kanon, tridiagonal: floor that removes zeros (finite epsilon); "
                     "--recognition: lower bound on the diagonal of the reductions (default 0.9)")
    fam.add_argument("--beta-family", choices=["rr", "kanon", "tridiagonal", "circulant", "best"],
                     help="bistochastic-beta: the family to fit (default best: most information for the data)")
    p.add_argument("--family", choices=["diagonal", "general"], default="diagonal",
                   help="diagonal: form (8), any S, certificate in the output; general: any matrix, staircase LP (S <= 14)")
    p.add_argument("--truthful", action="store_true", help="require q_k >= 1/S (form (8) only)")
    p.add_argument("--split", choices=["optimal", "equal", "joint"], default="equal",
                   help="how the record budget is shared by the variables (default %(default)s: every listed "
                        "variable is perturbed); optimal: the most total information, which may give a "
                        "variable epsilon 0 and leave it unperturbed; joint: one matrix on their "
                        "cross-classification at the whole budget, compared with the optimal split")
    rec = p.add_argument_group("protection against spontaneous recognition (Cator, Hensbergen and Rozenholc; "
                               "see docs/design-recognition.md)")
    rec.add_argument("--recognition", type=float, metavar="ALPHA",
                     help="design one joint matrix over --keys with every posterior of condition (C1) at most "
                          "ALPHA and the smallest L2 loss")
    rec.add_argument("--combinations", default="3",
                     help="key combinations checked: a size (default 3: every combination of three keys) "
                          "or lists such as 'a,b,c;a,b,d'")
    rec.add_argument("--recognition-method", choices=["restricted", "full"], default="restricted",
                     help="restricted: convex, certified gap (default); full: every entry free (small X only)")
    p.add_argument("--out", type=Path, help="manifest to write (data mode)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(p)
    p.set_defaults(func=run)


def _numbers(text: str, flag: str) -> np.ndarray:
    try:
        values = np.array([float(x) for x in text.split(",") if x.strip()], dtype=float)
    except ValueError:
        raise PramkitError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if values.size < 2:
        raise PramkitError(f"{flag} needs at least two categories")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise PramkitError(f"{flag} must be finite and non-negative, got {text!r}")
    return values


def _distribution(args: argparse.Namespace) -> tuple[Distribution, list[str]]:
    notes = []
    if (args.probs is None) == (args.counts is None):
        raise PramkitError("give exactly one of --probs and --counts (or a data file with --vars)")
    if args.probs is not None:
        p = _numbers(args.probs, "--probs")
        total = float(p.sum())
        if abs(total - 1.0) > PROBS_TOL:
            raise PramkitError(f"--probs sum to {total:.10g}, not 1; pass --counts to have them normalised")
        if total != 1.0:
            notes.append(f"--probs summed to {total!r}; normalised to 1")
    else:
        p = _numbers(args.counts, "--counts")
        if p.sum() <= 0:
            raise PramkitError("--counts are all zero")
    p = p / p.sum()
    if args.categories is None:
        cats: list[Label] = list(range(p.size))
    else:
        cats = [c.strip() for c in args.categories.split(",")]
        if len(cats) != p.size:
            raise PramkitError(f"--categories has {len(cats)} labels for {p.size} probabilities")
    return (cats, p), notes


def _matrix_json(m: PramMatrix) -> dict[str, Any]:
    prov = m.provenance
    cert = dict(prov.certificate or {})
    return {
        "method": prov.method,
        "categories": list(m.categories),
        "q": m.diagonal.tolist(),
        "matrix": m.matrix.tolist(),
        "mutual_information_nats": prov.objective,
        "epsilon": epsilon_to_json(m.epsilon),
        "optimal": bool(cert.get("optimal", False)),
        "certificate": cert,
        "seconds": prov.seconds,
    }


def _combinations(text: str) -> int | list[list[str]]:
    if text.strip().isdigit():
        return int(text)
    return [[k.strip() for k in group.split(",") if k.strip()] for group in text.split(";") if group.strip()]


def _run_recognition(args: argparse.Namespace) -> int:
    """``--recognition ALPHA``: one joint matrix over the keys, written as a joint manifest variable."""
    if args.data is None or not args.vars or not args.out:
        raise PramkitError("--recognition needs a data file, --keys and --out")
    if args.epsilon is not None or args.method != "dp":
        raise PramkitError("--recognition is its own privacy model: leave out --epsilon and --method")
    keys = [v.strip() for v in args.vars.split(",") if v.strip()]
    check_writable(args.out, force=args.force)
    data = read_table(args.data, columns=keys)
    d = recognition_design_from_data(
        data, keys, alpha=args.recognition, combinations=_combinations(args.combinations),
        method=args.recognition_method, gamma=0.9 if args.gamma is None else args.gamma,
    )
    manifest = Manifest((d.perturbed_variable(),), input={"data": args.data.name, "method": "recognition"})
    manifest.write(args.out, force=args.force)
    top = d.destinations().head(5)
    out = {
        "manifest": str(args.out),
        "keys": keys,
        "alpha": d.alpha,
        "worst_posterior": d.worst_posterior,
        "l2_loss": d.loss,
        "expected_changes_records": d.expected_changes,
        "min_diagonal": d.matrix.min_diagonal if d.matrix is not None else None,
        "record_epsilon": epsilon_to_json(manifest.record_epsilon),
        "baseline": {"weight": d.baseline.weight, "l2_loss": d.baseline.loss,
                     "expected_changes_records": d.baseline.expected_changes},
        "destinations": [{"cell": list(c) if isinstance(c, tuple) else c, "records_in": float(r)}
                         for c, r in zip(top["cell"], top["records_in"])],
        "diagnostics": dataclasses.asdict(d.diagnostics),
    }
    if args.json:
        print_json(out)
    else:
        print(f"recognition design over {', '.join(keys)}: worst posterior {d.worst_posterior:.4g} "
              f"(alpha {d.alpha:g}), L2 loss {d.loss:.4g}, expected changes {d.expected_changes:.1f} records "
              f"(uniform noise at the same protection: {d.baseline.expected_changes:.1f} records, "
              f"L2 {d.baseline.loss:.4g})")
        print(f"wrote {args.out} (one joint variable; record epsilon {out['record_epsilon']})")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.recognition is not None:
        return _run_recognition(args)
    method = METHODS[args.method]
    if args.data is None:
        if args.vars or args.out:
            raise PramkitError("--vars and --out need a data file; for a distribution use --probs or --counts")
        dist, notes = _distribution(args)
        m, extra = method.single(args, dist)
        out = {**_matrix_json(m), "family": args.family, "notes": notes, **extra}
        out.setdefault("warnings", [])
        if args.json:
            print_json(out)
        else:
            _print_text(out)
        return 0
    if args.probs or args.counts:
        raise PramkitError("give either a data file or --probs/--counts, not both")
    if not args.vars:
        raise PramkitError("--vars is required with a data file (comma-separated columns to perturb)")
    names = [v.strip() for v in args.vars.split(",") if v.strip()]
    if len(set(names)) != len(names):
        raise PramkitError(f"--vars lists a column twice: {args.vars!r}")
    if not args.out:
        raise PramkitError("--out is required: the manifest to write")
    check_writable(args.out, force=args.force)
    # streamed: memory is bounded by a chunk and the table, not the file
    table = count_file(args.data, names, quiet=args.quiet)
    dists = {}
    for n, cats in zip(names, table.categories):
        if len(cats) < 2:
            raise PramkitError(f"column {n!r} has fewer than two categories ({list(cats)}); nothing to perturb")
        dists[n] = (list(cats), table.proportions(n))
    matrices, extra = method.several(args, dists, table)
    joint = extra.pop("joint_matrix", None)
    out: dict[str, Any] = {"data": str(args.data), "variables": names, **extra}
    facts = {"data": args.data.name, "method": args.method, "split": args.split,
             "record_epsilon_budget": args.epsilon}
    if joint is not None:  # one matrix on the cross-classification of the variables
        name = "*".join(names)
        manifest = Manifest((PerturbedVariable(name, joint, columns=tuple(names)),), input=facts)
        matrices = {name: joint}
    elif not matrices:
        raise PramkitError("no variable gets a positive epsilon; nothing to write")
    else:
        manifest = Manifest.of(matrices, input=facts)
    manifest.write(args.out, force=args.force)
    out["manifest"] = str(args.out)
    out["record_epsilon"] = epsilon_to_json(manifest.record_epsilon)
    out["matrices"] = {n: _matrix_json(m) for n, m in matrices.items()}
    if args.json:
        print_json(out)
    else:
        _print_text(out)
    return 0


def _print_text(out: dict[str, Any]) -> None:
    if "q" in out:
        timing = "" if out["seconds"] is None else f", {out['seconds']:.3g} s"
        optimal = f", optimal = {out['optimal']}" if out["certificate"] else ""
        print(f"{out['method']}: I(X;Z) = {out['mutual_information_nats']:.6g} nats, "
              f"epsilon = {out['epsilon']}{optimal}{timing}")
        print("q = " + ", ".join(f"{x:.6g}" for x in out["q"]))
    else:
        if "epsilons" in out:
            for n, e in out["epsilons"].items():
                print(f"{n}: epsilon = {e:.6g}, I(X;Z) = {out['information_nats'][n]:.6g} nats")
            print(f"total I = {out['total_information_nats']:.6g} nats")
        for n, m in out.get("measures", {}).items():
            beta = "not bistochastic" if m["beta"] is None else f"beta = {m['beta']:.4g}"
            print(f"{n}: epsilon = {m['epsilon']:.6g}, {beta}, I(X;Z) = {m['mutual_information_nats']:.6g} nats, "
                  f"min diagonal = {m['min_diagonal']:.4g}")
        if "joint" in out:
            j = out["joint"]
            print(f"joint I(X;Z): independent {j['independent_joint_information_nats']:.6g} nats, "
                  f"joint design {j['joint_design_information_nats']:.6g} nats over {j['cells']} cells: "
                  f"{j['better']} is better")
        if "manifest" in out:
            print(f"wrote {out['manifest']} (record epsilon {out['record_epsilon']})")
    for note in out.get("notes", []):
        print(f"note: {note}")
    for w in out.get("warnings", []):
        print(f"warning: {w}")
