"""Adapters to other Python reactive libraries (optional extras)."""
