"""Reproduce."""
