"""
Training a classifier on a released file
========================================

A data holder releases the census with four key variables perturbed by PRAM
(:class:`pramkit.sklearn.PRAMTransformer`: the matrices designed from the data
through the DP design step at a record budget of 3 nats, the draws from a secret
key).  An analyst trains a classifier on the released records only, and we score it
on original records it has never seen, beside the same classifier trained on the
original records.
"""

# %%
# The data: 20 000 census records, employment as the label
# ---------------------------------------------------------
import matplotlib.pyplot as plt
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from pramkit.datasets import census
from pramkit.sklearn import PRAMTransformer

data = census(20_000, seed=7)
features = ["age", "sex", "marital_status", "education", "disability"]
X = data[features].astype(str)
y = (data["employment"] == "employed").to_numpy()
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

# %%
# The release: four variables perturbed, one record budget
# --------------------------------------------------------
# ``fit`` designs the matrices (the design step's DP counts are part of the
# budget); ``transform`` perturbs with the key.  ``sex`` is released as it is.
pram = PRAMTransformer(["age", "marital_status", "education", "disability"], epsilon=3.0, key=bytes(32))
released = pram.set_output(transform="pandas").fit_transform(X_train)
print(f"record epsilon {pram.manifest_.record_epsilon:.3f} nats")
changed = (released != X_train.reset_index(drop=True).set_axis(released.index)).mean()
print("share of values changed per column:")
print(changed.round(3).to_string())

# %%
# The classifier, trained on the released file and on the original
# ----------------------------------------------------------------
def accuracy(train: object) -> float:
    model = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000))
    return float(model.fit(train, y_train).score(X_test, y_test))


accuracy_released = accuracy(released)
accuracy_original = accuracy(X_train)
print(f"accuracy on original test records: trained on released {accuracy_released:.3f}, "
      f"on original {accuracy_original:.3f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(["released", "original"], [accuracy_released, accuracy_original], color=["tab:orange", "tab:blue"])
ax.set_ylim(0.5, 1.0)
ax.set_ylabel("accuracy on original test records")
ax.set_title("Employment classifier trained on a PRAM release")
fig.tight_layout()
