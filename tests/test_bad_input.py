"""Bad input, table-driven, over every command and option.

Every case must give: exit status 2, exactly one line on stderr (no
traceback, no usage block), the input files unchanged and nothing written.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def dense_rr(categories: list, epsilon: float) -> PramMatrix:
    """Randomized response stored densely, so that the manifest holds rows to corrupt."""
    m = randomized_response(categories, epsilon)
    return PramMatrix(m.matrix, m.categories, m.provenance)


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """A folder of inputs, good and bad; the cases only read it."""
    d = tmp_path_factory.mktemp("bad_input")
    rng = np.random.default_rng(2)
    n = 2000
    frame = pd.DataFrame({
        "region": rng.integers(1, 4, n), "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(0, 90, n), "w": rng.uniform(50, 150, n).round(2),
    })
    frame.to_csv(d / "data.csv", index=False)
    (d / "data.xlsx").write_text("not a table")
    (d / "ragged.csv").write_text("region,sex\n1,m\n2,f,9\n")
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("region,sex\n")
    (d / "unknown.csv").write_text("region,sex\n1,m\n7,f\n")
    (d / "nocol.csv").write_text("area,sex\n1,m\n")
    (d / "dup.csv").write_text("region,region\n1,2\n")
    (d / "folder.csv").mkdir()
    (d / "na.csv").write_text("region,sex\n1,m\nNA,f\n2,m\n")
    q = pd.DataFrame({"q": [1.0, 2.0, 9.0, 3.0] * 10})
    pyreadstat.write_sav(q, str(d / "q.sav"), missing_ranges={"q": [9]})

    manifest = Manifest.of({"region": dense_rr([1, 2, 3], 1.0), "sex": dense_rr(["m", "f"], 0.5)})
    manifest.write(d / "m.json")
    Manifest.of({"region": randomized_response([1, 2, 3], 2.0)}).write(d / "other.json")
    Manifest.of({"region": randomized_response([1, 2, "NA"], 1.0)}).write(d / "m_na.json")
    Manifest.of({"q": randomized_response([1, 2, 3, 9], 1.0)}).write(d / "m_q9.json")
    text = json.loads((d / "m.json").read_text())
    rows = json.loads(json.dumps(text))
    rows["variables"][0]["matrix"][0] = [0.5, 0.2, 0.2]
    (d / "rows.json").write_text(json.dumps(rows))
    neg = json.loads(json.dumps(text))
    neg["variables"][1]["matrix"] = [[1.2, -0.2], [0.5, 0.5]]
    (d / "neg.json").write_text(json.dumps(neg))
    (d / "format.json").write_text(json.dumps({**text, "format": "something-else"}))
    (d / "novars.json").write_text(json.dumps({**text, "variables": []}))
    (d / "eps.json").write_text(json.dumps({**text, "record_epsilon": 99}))
    (d / "nan.json").write_text((d / "m.json").read_text().replace('"record_epsilon": 1.5', '"record_epsilon": NaN'))
    (d / "list.json").write_text("[1, 2]")

    assert main(["keygen", str(d / "key")]) == 0
    (d / "recode.json").write_text('{"region": {"merge": {"1": "1-2", "2": "1-2"}}}')
    (d / "recode_unknown.json").write_text('{"nope": {"merge": {"a": "b"}}}')
    (d / "recode_top.json").write_text('{"region": {"top": {"above": "high", "value": "3+"}}}')
    (d / "short_key").write_bytes(b"\x01\x02\x03")
    (d / "odd_hex_key").write_text("a" * 65 + "\n")
    (d / "short_hex_key").write_text("ab" * 20 + "\n")
    (d / "blank_key").write_text("  \n")
    (d / "key_folder").mkdir()
    (d / "key_folder" / "keep").write_text("x")
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "released.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    (d / "exists.csv").write_text("precious")
    (d / "exists.png").write_bytes(b"precious")
    (d / "prior_text.csv").write_text("variable,category,frequency\nregion,1,many\n")
    (d / "prior_columns.csv").write_text("var,cat\nregion,1\n")
    (d / "codebook_blank.csv").write_text("variable,category\nregion,\n")
    (d / "codebook_columns.csv").write_text("variable;category\nregion;1\n")
    (d / "rules_unknown_var.csv").write_text("height,sex\n1,m\n")
    (d / "rules_unknown_cat.csv").write_text("region,sex\n1,x\n")
    (d / "rules_all.csv").write_text("region,sex\n1|2|3,m|f\n")
    (d / "rules_stratum.csv").write_text("region,sex\n1,m|f\n")
    (d / "rules_coupled.csv").write_text("region,sex\n1,m\n")
    (d / "rules_empty_row.csv").write_text("region,sex\n,\n")
    hh = pd.DataFrame({"hid": [1, 1, 2, 2, 3, 3] * 50, "region": [1, 2, 1, 1, 3, 3] * 50,
                       "sex": ["m", "f"] * 150})
    hh.to_csv(d / "households_vary.csv", index=False)
    hh.assign(region=[1, 1, 2, 2, 3, 3] * 50, hid=[1, 1, 2, 2, None, 3] * 50).to_csv(
        d / "households_noid.csv", index=False)
    return d


def cases(d: Path) -> list[tuple[list, str]]:
    data, m, key, rel = d / "data.csv", d / "m.json", d / "key", d / "released.csv"
    apply = ["apply", data, "--manifest", m, "--out"]
    risk = ["risk", data, "--keys", "region,sex", "--sampling-fraction", "0.1"]
    est = ["estimate", rel, "--manifest", m, "--vars"]
    design = ["design", data, "--vars", "region,sex", "--epsilon", "2", "--exact-frequencies", "--out"]
    report = ["report", data, "--manifest", m, "--released", rel, "--keys", "region,sex", "--out"]
    return [
        # ---- apply: the data file
        (["apply", d / "absent.csv", "--manifest", m, "--out", d / "o.csv"], "does not exist"),
        (["apply", d / "empty.csv", "--manifest", m, "--out", d / "o.csv"], "empty"),
        (["apply", d / "header_only.csv", "--manifest", m, "--out", d / "o.csv"], "no data rows"),
        (["apply", d / "ragged.csv", "--manifest", m, "--out", d / "o.csv"], "line 3"),
        (["apply", d / "unknown.csv", "--manifest", m, "--out", d / "o.csv"], "value '7'"),
        (["apply", d / "nocol.csv", "--manifest", m, "--out", d / "o.csv"], "'region'"),
        (["apply", d / "dup.csv", "--manifest", m, "--out", d / "o.csv"], "duplicate column"),
        (["apply", d / "data.xlsx", "--manifest", m, "--out", d / "o.csv"], "suffix"),
        (["apply", d / "folder.csv", "--manifest", m, "--out", d / "o.csv"], "folder"),
        # ---- apply: the manifest
        (apply[:3] + [d / "absent.json", "--out", d / "o.csv"], "does not exist"),
        (apply[:3] + [d / "ragged.csv", "--out", d / "o.csv"], "not valid JSON"),
        (apply[:3] + [d / "rows.json", "--out", d / "o.csv"], "sums to"),
        (apply[:3] + [d / "neg.json", "--out", d / "o.csv"], "negative"),
        (apply[:3] + [d / "format.json", "--out", d / "o.csv"], "'format'"),
        (apply[:3] + [d / "novars.json", "--out", d / "o.csv"], "'variables'"),
        (apply[:3] + [d / "eps.json", "--out", d / "o.csv"], "record_epsilon"),
        (apply[:3] + [d / "nan.json", "--out", d / "o.csv"], "NaN"),
        (apply[:3] + [d / "list.json", "--out", d / "o.csv"], "JSON object"),
        (["apply", d / "na.csv", "--manifest", d / "m_na.json", "--out", d / "o.csv"], "missing-value code"),
        (["apply", d / "q.sav", "--manifest", d / "m_q9.json", "--out", d / "o.sav"], "user-missing"),
        # ---- apply: the key file
        (apply + [d / "o.csv", "--key-file", d / "no_key"], "does not exist"),
        (apply + [d / "o.csv", "--key-file", d / "short_key"], "at least 32"),
        (apply + [d / "o.csv", "--key-file", d / "odd_hex_key"], "odd number"),
        (apply + [d / "o.csv", "--key-file", d / "short_hex_key"], "at least 32"),
        (apply + [d / "o.csv", "--key-file", d / "blank_key"], "empty"),
        (apply + [d / "o.csv", "--key-file", d / "key_folder"], "folder"),
        # ---- apply: the output and options
        (apply + [d / "exists.csv"], "--force"),
        (apply + [d / "folder.csv", "--force"], "directory"),
        (apply + [d / "o.xlsx"], "suffix"),
        (apply + [d / "absent_dir" / "o.csv"], "does not exist"),
        (apply + [data, "--force"], "would overwrite the input"),
        (apply + [d / "o.csv", "--chunk-rows", "0"], "at least 1"),
        (apply + [d / "o.csv", "--chunk-rows", "many"], "invalid int value"),
        (apply + [d / "o.csv", "--threads", "0"], "threads must be at least 1"),
        (apply + [d / "o.csv", "--engine", "gpu"], "engine must be one of 'local', 'spark', got 'gpu'"),
        (apply + [d / "o.parquet", "--engine", "spark", "--spark-master", "bogus://x"], "Spark"),
        (apply + [d / "o.csv", "--na-values", "1"], "missing-value code"),
        (apply + [d / "o.csv", "--na-values", "NA,m"], "category 'm' is a missing-value code"),
        (apply + [d / "o.dta", "--engine", "spark"], "CSV and Parquet"),
        (["apply", d / "q.sav", "--manifest", m, "--out", d / "o.csv", "--engine", "spark"], "CSV and Parquet"),
        (["apply", data, "--out", d / "o.csv"], "required: --manifest"),
        (apply + [d / "o.csv", "--bogus"], "unrecognized arguments"),
        # ---- inspect
        (["inspect", d / "absent.json"], "does not exist"),
        (["inspect", d / "ragged.csv"], "not valid JSON"),
        (["inspect", d / "format.json"], "'format'"),
        (["inspect", d / "rows.json"], "sums to"),
        (["inspect"], "required"),
        # ---- keygen
        (["keygen", key], "never overwritten"),
        (["keygen", data], "never overwritten"),
        (["keygen", d / "absent_dir" / "k"], "does not exist"),
        (["keygen"], "required"),
        (["keygen", d / "absent.key", "--fingerprint"], "does not exist"),
        (["keygen", data, "--fingerprint"], "is a CSV file, not a key"),
        (["keygen", d / "m.json", "--fingerprint"], "is a pramkit manifest (JSON), not a key"),
        (["keygen", d / "short_key", "--fingerprint"], "3 bytes"),
        # ---- recode
        (["recode", data, "--map", d / "absent.json", "--out", d / "r.csv"], "does not exist"),
        (["recode", data, "--map", d / "ragged.csv", "--out", d / "r.csv"], "not a JSON map"),
        (["recode", data, "--map", d / "recode_unknown.json", "--out", d / "r.csv"], "'nope', not a column of"),
        (["recode", data, "--map", d / "recode_top.json", "--out", d / "r.csv"], "threshold must be a number"),
        (["recode", data, "--map", d / "recode.json", "--out", d / "exists.csv"], "exists"),
        (["recode", data, "--map", d / "recode.json", "--out", data, "--force"], "input"),
        (["recode", data, "--out", d / "r.csv"], "required: --map"),
        # ---- reproduce
        (["reproduce", "nobody2099", "--out", d / "r"], "unknown reproduction"),
        (["reproduce", "ruiz", "--out", data], "not a folder"),
        (["reproduce", "ruiz"], "required: --out"),
        # ---- estimate
        (["estimate", d / "absent.csv", "--manifest", m, "--vars", "sex"], "does not exist"),
        (["estimate", rel, "--manifest", d / "absent.json", "--vars", "sex"], "does not exist"),
        (["estimate", rel, "--manifest", d / "other.json", "--vars", "sex"], "another manifest"),
        (est + ["height"], "height"),
        (est + ["sex", "--by", "sex"], "twice"),
        (est + ["sex", "--confidence", "1.5"], "between 0 and 1"),
        (est + ["sex", "--confidence", "high"], "invalid float value"),
        (est + ["sex", "--method", "magic"], "method must be one of 'moment', 'mle', got 'magic'"),
        (est + ["sex", "--variance", "none"], "variance must be one of ['multinomial', 'pram'], not 'none'"),
        (["estimate", rel, "--vars", "sex"], "required: --manifest"),
        # ---- risk
        (["risk", d / "absent.csv", "--keys", "sex", "--sampling-fraction", "0.1"], "does not exist"),
        (["risk", data, "--keys", " , ", "--sampling-fraction", "0.1"], "at least one"),
        (["risk", data, "--keys", "sex,height", "--sampling-fraction", "0.1"], "height"),
        (["risk", data, "--keys", "sex", "--sampling-fraction", "0"], "sampling fraction"),
        (["risk", data, "--keys", "sex", "--sampling-fraction", "1.5"], "sampling fraction"),
        (["risk", data, "--keys", "sex"], "required"),
        (["risk", data, "--keys", "sex", "--sampling-fraction", "0.1", "--weights", "w"], "not allowed with"),
        (["risk", data, "--keys", "sex", "--weights", "height"], "height"),
        (risk + ["--original", data], "--original needs --manifest"),
        (risk + ["--missing", "drop"], "invalid choice"),
        (risk + ["--model", "region*"], "empty term"),
        (risk + ["--model", "region + "], "empty term"),
        (risk + ["--model", "region*height"], "height"),
        (["risk", data, "--keys", "region,sex", "--weights", "w", "--fractions", "cells"], "invalid choice"),
        (["risk", data, "--keys", "region,sex", "--weights", "w", "--fractions", ""], "invalid choice"),
        (risk + ["--plot", d / "exists.png"], "--force"),
        (risk + ["--plot", data, "--force"], "would overwrite the input"),
        (risk + ["--plot", d / "absent_dir" / "fit.png"], "does not exist"),
        (["risk", rel, "--keys", "region,sex", "--sampling-fraction", "0.1", "--manifest", d / "other.json"],
         "another manifest"),
        # ---- design (one line already before this work)
        (["design", "--probs", "0.5,0.6", "--epsilon", "1"], "sum"),
        (["design", "--probs", "0.5,-0.5,1", "--epsilon", "1"], "negative"),
        (["design", "--probs", "0.5,0.5", "--epsilon", "fast"], "invalid float value"),
        (["design", "--probs", "0.5,0.5", "--method", "magic"], "unknown design method 'magic'; the methods are dp,"),
        (["design", d / "absent.csv", "--vars", "sex", "--epsilon", "1", "--out", d / "o.json"], "does not exist"),
        (design + [d / "exists.csv"], "--force"),
        (design + [data, "--force"], "would overwrite the input"),
        (design + [d / "absent_dir" / "o.json"], "does not exist"),
        (["design", data, "--vars", "height", "--epsilon", "2", "--exact-frequencies", "--out", d / "o.json"], "height"),
        (["design", data, "--vars", "region,sex", "--recognition", "1.5", "--out", d / "o.json"], "strictly between"),
        (["design", data, "--vars", "region,sex", "--recognition", "0", "--out", d / "o.json"], "strictly between"),
        (["design", data, "--vars", "region,sex", "--recognition", "often", "--out", d / "o.json"],
         "invalid float value"),
        (design + [d / "o.json", "--split", "best"], "split must be one of 'equal', 'optimal', 'joint', got 'best'"),
        (["design", data, "--vars", "region,sex", "--epsilon", "2", "--prior", d / "prior_text.csv",
          "--out", d / "o.json"], "'many' is not a number"),
        (["design", data, "--vars", "region,sex", "--epsilon", "2", "--prior", d / "prior_columns.csv",
          "--out", d / "o.json"], "needs the columns"),
        (["design", data, "--vars", "region,sex", "--epsilon", "2", "--prior", d / "absent.csv",
          "--out", d / "o.json"], "does not exist"),
        (design + [d / "o.json", "--categories", d / "codebook_blank.csv"], "must not be empty"),
        (design + [d / "o.json", "--categories", d / "codebook_columns.csv"], "needs the columns"),
        # ---- design: the structure of the microdata
        (design + [d / "o.json", "--split", "joint", "--forbid", d / "rules_unknown_var.csv"],
         "names 'height', which is neither perturbed nor a stratum"),
        (design + [d / "o.json", "--split", "joint", "--forbid", d / "rules_unknown_cat.csv"],
         "'x' is not a category of 'sex'"),
        (design + [d / "o.json", "--split", "joint", "--forbid", d / "rules_all.csv"], "forbid every combination"),
        (["design", data, "--vars", "sex", "--epsilon", "2", "--exact-frequencies", "--strata", "region",
          "--forbid", d / "rules_stratum.csv", "--out", d / "o.json"], "forbid every value of sex in the stratum"),
        (design + [d / "o.json", "--forbid", d / "rules_coupled.csv"], "use split joint"),
        (design + [d / "o.json", "--split", "joint", "--forbid", d / "rules_empty_row.csv"],
         "would forbid every record"),
        (design + [d / "o.json", "--split", "joint", "--forbid", d / "absent.csv"], "does not exist"),
        (design + [d / "o.json", "--strata", "sex"], "sex is perturbed, so it cannot also be a stratum"),
        (design + [d / "o.json", "--keep-codes", "sex=x"], "kept code 'x' is not a category of 'sex'"),
        (design + [d / "o.json", "--keep-codes", "sex"], "--keep-codes must look like"),
        (design + [d / "o.json", "--household-vars", "region"], "need the household id"),
        (design + [d / "o.json", "--recoded-by", d / "recode.json"], "the data of region was not recoded by recode.json"),
        (design + [d / "o.json", "--recoded-by", d / "recode_top.json"], "threshold must be a number"),
        (["design", d / "households_vary.csv", "--vars", "region,sex", "--epsilon", "2", "--exact-frequencies",
          "--household", "hid", "--household-vars", "region", "--out", d / "o.json"],
         "household '1' has several values of 'region'"),
        (["design", d / "households_noid.csv", "--vars", "region,sex", "--epsilon", "2", "--exact-frequencies",
          "--household", "hid", "--household-vars", "region", "--out", d / "o.json"], "has no household id"),
        (["design", data, "--vars", "region,sex", "--recognition", "0.5", "--strata", "age", "--out", d / "o.json"],
         "--strata is not available with --recognition"),
        (["design", data, "--vars", "region,sex", "--recognition", "0.5", "--missing", "category",
          "--out", d / "o.json"], "--missing category is not available with --recognition"),
        (["design", data, "--vars", "region,sex", "--epsilon", "2", "--missing", "guess", "--out", d / "o.json"],
         "missing must be one of 'keep', 'category', got 'guess'"),
        (["design", "--probs", "0.5,0.5", "--epsilon", "1", "--off-diagonal", "0.1"], "--off-diagonal is the"),
        (["design", "--probs", "0.5,0.5", "--method", "tridiagonal", "--alpha", "0.1", "--off-diagonal", "0.1"],
         "instead of --alpha"),
        (design + [d / "o.json", "--recognition-gamma", "0.8"], "--recognition-gamma applies to --recognition"),
        (["design", data, "--vars", "region,sex", "--recognition", "0.5", "--gamma", "0.8",
          "--out", d / "o.json"], "the recognition design's is --recognition-gamma"),
        # ---- report
        (["report", d / "absent.csv", "--manifest", m, "--released", rel, "--keys", "sex", "--out", d / "r.html"],
         "does not exist"),
        (report[:7] + [" ", "--out", d / "r.html"], "at least one"),
        (report + [d / "exists.csv"], "--force"),
        (report + [d / "r.html", "--sampling-fraction", "x"], "invalid float value"),
        (["report", data, "--manifest", m, "--keys", "sex", "--out", d / "r.html"], "required: --released"),
        (["report", data, "--manifest", d / "other.json", "--released", rel, "--keys", "region,sex",
          "--out", d / "r.html"], "another manifest"),
        (["report", "--manifest", d / "other.json", "--released", rel, "--public", d / "p.html"], "another manifest"),
        (["report", data, "--manifest", m, "--released", data, "--public", d / "p.html"], "identical to the original"),
        (report + [rel.with_name("released.csv.receipt.json"), "--force"], "would overwrite the input"),
        # ---- demo
        (["demo", "--rows", "0", "--out", d / "demo"], "at least 1"),
        (["demo", "--rows", "many", "--out", d / "demo"], "invalid int value"),
        (["demo", "--out", d / "demo", "--key-file", d / "short_key"], "at least 32"),
        # ---- the command itself
        ([], "required"),
        (["frobnicate"], "invalid choice"),
    ]


def _ids() -> list[str]:
    return [f"{i:02d}-{' '.join(str(a) for a in args[:1])}" for i, (args, _) in enumerate(cases(Path("/x")))]


@pytest.mark.parametrize("index", range(len(cases(Path("/x")))), ids=_ids())
def test_bad_input(d: Path, capsys, index: int) -> None:
    args, message = cases(d)[index]
    before = digests(d)
    if "--spark-master" in args:  # in a fresh process, as a user runs it: a Spark session that another test
        # started in this one would be reused, whatever the master
        proc = subprocess.run([sys.executable, "-c", "import sys; from pramkit.cli import main; sys.exit(main())",
                               *map(str, args)], capture_output=True, text=True, timeout=600)
        code, err = proc.returncode, proc.stderr
    else:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (args, err)
    assert len(lines) == 1 and "Traceback" not in err, (args, err)
    assert message in lines[0], (args, lines[0])
    assert lines[0].startswith("pramkit"), lines[0]
    assert digests(d) == before, (args, "an input changed or a file was written")
    assert not any(".pramkit-tmp." in p.name for p in d.rglob("*"))


def test_enough_cases() -> None:
    assert len(cases(Path("/x"))) >= 60
