"""Designs under metric differential privacy (geography, ordinal variables): the distances between categories and the mechanisms over them."""
