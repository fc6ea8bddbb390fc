"""Designs under epsilon-differential privacy: the optimal (form (8)), general, least-variance, least-distance and multivariate designs, and the budget split's bound."""
