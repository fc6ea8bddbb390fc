"""Designs of PRAM matrices under privacy models; each returns a :class:`pramkit.PramMatrix`."""
