"""Risk."""
