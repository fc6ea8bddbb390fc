"""Designs that protect against spontaneous recognition: the design, its matrix space and the reductions that make it tractable."""
