"""Code run in forks of one process that imported its modules once (:class:`ForkServer`): the peaks of
tests/test_memory_bounds.py and tests/test_memory_swap_synthesize.py, ``pramkit`` commands of another tree's
code (:func:`run_forked`: the comparisons with an older commit, tests/test_resample_stream.py and
tests/test_memory_swap_synthesize.py), and the ``pramkit`` commands of the documentation's shell blocks
(:meth:`ForkServer.command_folder`, tests/test_doc_examples.py).

A fresh ``pramkit`` process spends most of a small file's second importing its libraries; a fork of a process
that imported them starts with them.  Only imports (and a given prelude) run before a fork: no thread, no open
file, no JAX backend is inherited.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The libraries every server imports before its first fork.
LIBRARIES = ("numpy", "pandas", "pyarrow", "pyarrow.compute", "pyarrow.csv", "pyarrow.parquet")

#: The process :class:`ForkServer` starts: it imports the modules named in place of ``IMPORTS`` and runs the code
#: in place of ``PRELUDE``, then listens on the Unix socket ``sys.argv[1]`` (printing a line when it does).  Each
#: connection is a request: a first message carrying three file descriptors (the child's stdin, stdout and
#: stderr), then JSON until the client stops writing: ``code`` (Python), ``argv`` (its ``sys.argv[1:]``), and
#: optionally ``cwd`` and ``env`` (the whole environment).  A fork of the server answers it: it forks the child,
#: which runs the code with those descriptors, folder and environment, and writes the child's exit status back
#: (99 for a traceback, minus the signal's number for a signal).  Requests are answered at once, so commands
#: run at the same time (a pipeline) each have their own child.
SERVER = textwrap.dedent("""
    import json, os, signal, socket, sys, traceback
    IMPORTS
    PRELUDE

    def child(request, fds):
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        if "env" in request:
            os.environ.clear()
            os.environ.update(request["env"])
        if "cwd" in request:
            os.chdir(request["cwd"])
        sys.argv = [request.get("argv0", "-c"), *request["argv"]]
        try:
            exec(compile(request["code"], "<child>", "exec"), {"__name__": "__main__"})
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            traceback.print_exc()
            status = 99
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BrokenPipeError:
                pass
        os._exit(status)

    def answer(conn):
        first, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        chunks = [first]
        while chunk := conn.recv(1 << 16):
            chunks.append(chunk)
        request = json.loads(b"".join(chunks))
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            conn.close()
            child(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])).encode())

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the answering forks are reaped as they end
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    print("listening", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its child, and the child's own children, are waited
            try:
                answer(conn)
            finally:
                os._exit(0)
        conn.close()
""")

#: A child running ``pramkit ARGS`` as the installed command does (``sys.argv[1:]`` is ARGS).
COMMAND = "import sys\nfrom pramkit.cli import main\nsys.exit(main(sys.argv[1:]))\n"

#: The ``pramkit`` command of :meth:`ForkServer.command_folder`: it sends its arguments, folder, environment and
#: standard streams to the server named in place of ``SOCKET`` and exits with the child's status.  It starts
#: Python without ``site`` and imports only what the request needs (a few milliseconds).
CLIENT = textwrap.dedent("""\
    import json, os, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCKET)
    request = {"code": CODE, "argv0": "pramkit", "argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(s, [b" "], [0, 1, 2])
    s.sendall(json.dumps(request).encode())
    s.shutdown(socket.SHUT_WR)
    answer = b""
    while chunk := s.recv(64):
        answer += chunk
    status = int(answer or b"1")
    sys.exit(status if status >= 0 else 128 - status)
""")


class ForkServer:
    """A process (:data:`SERVER`) that runs each child in a fork of itself, after importing ``imports`` (beside
    :data:`LIBRARIES`) and running ``prelude`` once, in the environment ``env``.  A fork's ``VmHWM`` is not its
    parent's: it starts at the fork's resident memory (what it shares with the server), so a child's peak is its
    own, as in a fresh interpreter, without the second each fresh interpreter spends importing pramkit and its
    libraries (most of a small file's time)."""

    def __init__(self, imports: Sequence[str], env: Mapping[str, str], prelude: str = "") -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="pramkit-forks-"))
        self.socket = str(self.folder / "socket")
        script = (SERVER.replace("IMPORTS", f"import {', '.join((*LIBRARIES, *imports))}")
                  .replace("PRELUDE", textwrap.dedent(prelude).strip() or "pass"))
        with open(self.folder / "stderr", "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", script, self.socket], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=err, text=True, env=dict(env))
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert ready == "listening\n", (self.folder / "stderr").read_text()[-3000:]  # the server ended
        self.runs = 0

    def run(self, code: str, argv: Sequence[str], timeout: float, folder: Path | None = None,
            cwd: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[int, str]:
        """Run ``code`` with ``sys.argv[1:]`` ``argv`` in a fork (in ``cwd`` and the environment ``env`` if
        given), its stdout and stderr written into ``folder`` (one of the server's own if None): its exit status
        and stderr."""
        self.runs += 1
        if folder is None:
            folder = self.folder / str(self.runs)
            folder.mkdir()
        request: dict = {"code": code, "argv": list(argv)}
        if cwd is not None:
            request["cwd"] = str(cwd)
        if env is not None:
            request["env"] = dict(env)
        with (open(os.devnull, "rb") as stdin, open(folder / "stdout", "wb") as out,
              open(folder / "stderr", "wb") as err, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s):
            s.settimeout(timeout)
            s.connect(self.socket)
            socket.send_fds(s, [b" "], [stdin.fileno(), out.fileno(), err.fileno()])
            s.sendall(json.dumps(request).encode())
            s.shutdown(socket.SHUT_WR)
            try:
                answer = b"".join(iter(lambda: s.recv(64), b""))
            except TimeoutError:
                raise TimeoutError(f"no answer in {timeout:g} s: {argv}") from None
        assert answer, (self.folder / "stderr").read_text()[-3000:]  # the server ended
        return int(answer), (folder / "stderr").read_text()

    def command_folder(self) -> Path:
        """A folder holding a ``pramkit`` command (:data:`CLIENT`) that runs each call in a fork of this server:
        put first on a shell's ``PATH``, its calls run as the installed command's do."""
        folder = self.folder / "bin"
        folder.mkdir(exist_ok=True)
        command = folder / "pramkit"
        command.write_text(f"#!{sys.executable} -S\n"
                           + CLIENT.replace("SOCKET", repr(self.socket)).replace("CODE", repr(COMMAND)))
        command.chmod(0o755)
        return folder

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def run_forked(src: Path, runs: Sequence[tuple[Path, list[str]]], env: Mapping[str, str],
               prelude: str = "") -> list[int]:
    """The exit statuses of ``pramkit ARGS`` run in each ``(folder, ARGS)`` of ``runs`` by the code in ``src``
    (on ``PYTHONPATH``, beside ``env``), ``prelude`` (Python) run once before them; each command runs in its
    folder (also its ``HOME``), its stdout and stderr written to ``folder/stdout`` and ``folder/stderr``."""
    env = {**env, "PYTHONPATH": str(src)}
    server = ForkServer(("pramkit.cli",), env, prelude)
    try:
        return [server.run(COMMAND, args, timeout=600, folder=Path(folder), cwd=Path(folder),
                           env={**env, "HOME": str(folder)})[0]
                for folder, args in runs]
    finally:
        server.close()
