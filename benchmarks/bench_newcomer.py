"""Benchmark: a newcomer's first release (docs/app.md, "Your first release"), timed step by step.

``python benchmarks/bench_newcomer.py`` starts ``pramkit app --no-browser`` as a newcomer would (its home
folder a new temporary one, where the documented paths ``~/keys`` and ``~/census-release`` land), then
does the documented steps in Chromium with the runner of the browser test (``tests/_newcomer.py``: the
steps are read from docs/app.md, never copied here).  It prints, per step and in all, the machine's wall
time (from the command to the page's answer; the app's start included) and the time a person adds: reading
the step at 200 words a minute, the Keystroke-Level Model's operators for each click and keystroke, 10 s to
read each result the step points to (the constants are those of ``tests/_newcomer.py``), and both against
the issue's budget of five minutes.  Needs Playwright and Chromium (as the browser tests).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

#: The issue's budget: a newcomer's release in under five minutes.
BUDGET = 300.0


def main() -> None:
    import pytest

    try:
        import _browser
        import _newcomer
    except pytest.skip.Exception as exc:  # no Playwright or no Chromium: the browser tests are skipped too
        print(f"bench_newcomer: not run: {exc}")
        return
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "PYTHONUNBUFFERED": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        app: list[subprocess.Popen[str]] = []

        def start() -> str:
            """`pramkit app` typed in a terminal: the address it prints (the browser opens it)."""
            proc = subprocess.Popen(["pramkit", "app", "--no-browser"], cwd=home, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            app.append(proc)
            assert proc.stdout is not None
            for line in proc.stdout:
                found = re.search(r"open (http://\S+)", line)
                if found:  # what it says later is read on, so that it never waits on a full pipe
                    threading.Thread(target=proc.stdout.read, daemon=True).start()
                    return found.group(1)
            raise RuntimeError(f"pramkit app stopped before printing its address (exit status {proc.wait()})")

        try:
            with _browser.chromium() as browser:
                newcomer = _newcomer.Newcomer(browser, start, [Path(home) / "shots"])
                try:
                    timed = list(newcomer.run())
                finally:
                    newcomer.close()
        finally:
            for proc in app:
                proc.terminate()  # as Ctrl-C: the app removes its work folder
                proc.wait(timeout=30)
        released = sorted(p.name for p in (Path(home) / "census-release" / "public").iterdir())
    report(timed, released)


def report(timed: list, released: list[str]) -> None:
    """The table of the steps' times and the totals against the budget."""
    from _newcomer import HOME, KEY, MENTAL, POINT, PRESS, READ_RESULT, WORDS_PER_MINUTE

    print(f"a newcomer's first release (docs/app.md), {len(timed)} steps; public/: {', '.join(released)}")
    print(f"person's time: reading at {WORDS_PER_MINUTE} words a minute; a click {MENTAL + POINT + PRESS:.2f} s "
          f"(KLM: M {MENTAL} + P {POINT} + B {PRESS}); a keystroke {KEY} s, {HOME} s back to the mouse; "
          f"{READ_RESULT:g} s per result read")
    print(f"{'step':<58} {'machine s':>10} {'person s':>9} {'total s':>8}")
    machine = person = 0.0
    for t in timed:
        think = t.step.think()
        machine, person = machine + t.seconds, person + think
        title = f"{t.step.number}. {t.step.title}"
        print(f"{title[:58]:<58} {t.seconds:10.2f} {think:9.1f} {t.seconds + think:8.1f}")
    total = machine + person
    print(f"{'all steps':<58} {machine:10.2f} {person:9.1f} {total:8.1f}")
    print(f"machine time {machine:.1f} s = {machine / BUDGET:.3f} of the five minutes; with the person's time "
          f"{total:.0f} s = {total / BUDGET:.2f} of the five minutes "
          f"({'under' if total < BUDGET else 'OVER'} the budget)")


if __name__ == "__main__":
    main()
