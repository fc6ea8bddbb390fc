"""Code run in forks of one process that imported its modules once (:class:`ForkServer`): the peaks of
tests/test_memory_bounds.py and tests/test_memory_swap_synthesize.py, and ``pramkit`` commands of another tree's
code (:func:`run_forked`: the comparisons with an older commit, tests/test_resample_stream.py and
tests/test_memory_swap_synthesize.py)."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The libraries every server imports before its first fork.
LIBRARIES = ("numpy", "pandas", "pyarrow", "pyarrow.compute", "pyarrow.csv", "pyarrow.parquet")

#: The process :class:`ForkServer` starts: it imports the modules named in place of ``IMPORTS``, runs the code in
#: place of ``PRELUDE``, then reads one request a line (JSON: a child's code, its ``sys.argv[1:]`` and a folder) and
#: runs the code in a fork of itself, the fork's stdout and stderr written into the folder (files ``stdout``,
#: ``stderr``); it answers each with the fork's exit status (99 for a traceback).
SERVER = textwrap.dedent("""
    import json, os, sys, traceback
    IMPORTS
    PRELUDE
    for line in sys.stdin:
        code, argv, folder = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            sys.argv = ["-c", *argv]
            try:
                exec(compile(code, "<child>", "exec"), {"__name__": "__main__"})
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            except BaseException:
                traceback.print_exc()
                status = 99
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
        print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
""")

#: A child running ``pramkit ARGS`` in a folder (also its ``HOME``): ``sys.argv[1:]`` is the folder, then ARGS.
COMMAND = textwrap.dedent("""
    import os, sys
    from pramkit.cli import main
    os.chdir(sys.argv[1])
    os.environ["HOME"] = sys.argv[1]
    sys.exit(main(sys.argv[2:]))
""")


class ForkServer:
    """A process (:data:`SERVER`) that runs each child in a fork of itself, after importing ``imports`` (beside
    :data:`LIBRARIES`) and running ``prelude`` once, in the environment ``env``.  A fork's ``VmHWM`` is not its
    parent's: it starts at the fork's resident memory (what it shares with the server), so a child's peak is its
    own, as in a fresh interpreter, without the second each fresh interpreter spends importing pramkit and its
    libraries (most of a small file's time).  Only imports and ``prelude`` run before a fork."""

    def __init__(self, imports: Sequence[str], env: Mapping[str, str], prelude: str = "") -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="pramkit-forks-"))
        script = (SERVER.replace("IMPORTS", f"import {', '.join((*LIBRARIES, *imports))}")
                  .replace("PRELUDE", textwrap.dedent(prelude).strip() or "pass"))
        with open(self.folder / "stderr", "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True, env=dict(env))
        self.runs = 0

    def run(self, code: str, argv: Sequence[str], timeout: float, folder: Path | None = None) -> tuple[int, str]:
        """Run ``code`` with ``sys.argv[1:]`` ``argv`` in a fork, its stdout and stderr written into ``folder``
        (one of the server's own if None): its exit status and stderr."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.runs += 1
        if folder is None:
            folder = self.folder / str(self.runs)
            folder.mkdir()
        self.proc.stdin.write(json.dumps([code, list(argv), str(folder)]) + "\n")
        self.proc.stdin.flush()
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.close()
            raise TimeoutError(f"no answer in {timeout:g} s: {argv}")
        line = self.proc.stdout.readline()
        assert line, (self.folder / "stderr").read_text()[-3000:]  # the server ended
        return int(json.loads(line)), (folder / "stderr").read_text()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def run_forked(src: Path, runs: Sequence[tuple[Path, list[str]]], env: Mapping[str, str],
               prelude: str = "") -> list[int]:
    """The exit statuses of ``pramkit ARGS`` run in each ``(folder, ARGS)`` of ``runs`` by the code in ``src``
    (on ``PYTHONPATH``, beside ``env``), ``prelude`` (Python) run once before them; each command's stdout and
    stderr are ``folder/stdout`` and ``folder/stderr``."""
    server = ForkServer(("pramkit.cli",), {**env, "PYTHONPATH": str(src)}, prelude)
    try:
        return [server.run(COMMAND, [str(folder), *args], timeout=600, folder=Path(folder))[0]
                for folder, args in runs]
    finally:
        server.close()
