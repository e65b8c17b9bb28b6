"""Test helper: run a callable with a given ``wp.config.cpu_threads``."""

import weft as wp


def with_threads(n, fn):
    """``fn()`` with ``wp.config.cpu_threads = n``; the previous setting is restored."""
    saved = wp.config.cpu_threads
    wp.config.cpu_threads = n
    try:
        return fn()
    finally:
        wp.config.cpu_threads = saved
