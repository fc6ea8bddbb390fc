"""``pramkit`` commands of another tree's code, each in a fork of one process that imported that code once
(the comparisons with an older commit: tests/test_resample_stream.py, tests/test_memory_swap_synthesize.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The process: ``PRELUDE`` run once, then each command of the JSON list ``[[folder, args], ...]`` (``argv[1]``)
#: in a fork, in ``folder`` (also its ``HOME``), its stdout and stderr written there (``stdout``, ``stderr``);
#: prints the exit statuses as a JSON list.
SCRIPT = textwrap.dedent("""
    import json, os, sys
    import pandas, pyarrow, pyarrow.csv, pyarrow.parquet  # noqa: F401  (imported once, before the forks)
    from pramkit.cli import main
    PRELUDE
    codes = []
    for folder, args in json.loads(sys.argv[1]):
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            os.chdir(folder)
            os.environ["HOME"] = folder
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            try:
                code = main(args)
            except SystemExit as stop:
                code = stop.code
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 99
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 0 if code is None else 1)
        codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    print(json.dumps(codes))
""")


def run_forked(src: Path, runs: Sequence[tuple[Path, list[str]]], env: Mapping[str, str],
               prelude: str = "") -> list[int]:
    """The exit statuses of ``pramkit ARGS`` run in each ``(folder, ARGS)`` of ``runs`` by the code in ``src``
    (on ``PYTHONPATH``, beside ``env``), ``prelude`` (Python) run once before them; each command's stdout and
    stderr are ``folder/stdout`` and ``folder/stderr``."""
    script = SCRIPT.replace("PRELUDE", textwrap.dedent(prelude).strip() or "pass")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps([[str(f), list(a)] for f, a in runs])],
                          env={**env, "PYTHONPATH": str(src)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return list(json.loads(proc.stdout))
