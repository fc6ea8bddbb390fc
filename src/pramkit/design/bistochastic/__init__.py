"""Bistochastic designs: the families of bistochastic matrices, Birkhoff decompositions, and numerical attributes."""
