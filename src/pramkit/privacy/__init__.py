"""Privacy measures of misclassification matrices.

:mod:`~pramkit.privacy.epsilon` (epsilon-DP of any matrix, composition over
variables), :mod:`~pramkit.privacy.probabilistic` ((epsilon, delta)-probabilistic
DP, recoding and swapping as matrices, sampling) and
:mod:`~pramkit.privacy.bistochastic` (beta-bistochastic privacy).
"""

from pramkit.privacy.epsilon import matrix_epsilon, record_epsilon

__all__ = ["matrix_epsilon", "record_epsilon"]
