"""
The demonstration release
=========================

``pramkit demo`` in a few lines of Python: the built-in census-like file, a DP-optimal
design of age, sex and marital status from differentially private counts at a record budget
of 6, the perturbed file, and the distribution of marital status estimated from the released
file beside the truth.  The command line runs the same steps on 953 076 persons; this page
uses 20 000 so that the site builds quickly.
"""

# %%
# Run the release
# ---------------
# :func:`pramkit.demo.run_demo` writes ``public/`` (safe to publish) and ``private/``
# (never published) into a folder; a fixed key makes this page the same at every build.
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pramkit.demo import run_demo
from pramkit.kernel.rng import SecretKey

out = Path(tempfile.mkdtemp()) / "pramkit-demo"
result = run_demo(out, rows=20_000, epsilon=6.0, key=SecretKey(bytes(range(32)), "a fixed example key"))
print("\n".join(result.lines))

# %%
# What was written
# ----------------
# Everything under ``public/`` may be published; ``private/`` holds the original file, the
# private design record and the internal report.
for name, path in sorted(result.files.items()):
    print(f"{name:<22} {path}")

# %%
# The estimate beside the truth
# -----------------------------
# The released shares are biased towards the matrix's noise; the estimate corrects them
# (bars: 1.96 standard errors).
cells = pd.DataFrame(result.sections["estimate"]["cells"]).set_index("category")
fig, ax = plt.subplots(figsize=(7, 3.5))
y = range(len(cells))
ax.barh([i + 0.25 for i in y], 100 * cells["truth"], height=0.25, label="truth")
ax.barh(list(y), 100 * cells["released"], height=0.25, label="released")
ax.barh([i - 0.25 for i in y], 100 * cells["estimate"], height=0.25, xerr=196 * cells["se"],
        label="estimate +/- 1.96 se")
ax.set_yticks(list(y), cells.index)
ax.set_xlabel(f"% of records ({result.sections['estimate']['variable']})")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
