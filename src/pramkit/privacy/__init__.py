"""Privacy measures of misclassification matrices."""

from pramkit.privacy.epsilon import matrix_epsilon, record_epsilon

__all__ = ["matrix_epsilon", "record_epsilon"]
