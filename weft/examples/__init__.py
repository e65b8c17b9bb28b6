"""Runnable weft demos: ``python -m weft.examples.NAME``."""
