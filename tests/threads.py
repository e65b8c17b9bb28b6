"""Test helper: run a callable with a given ``wp.config.cpu_threads``."""

import weft as wp


def with_threads(n, fn):
    """``fn()`` with ``wp.config.cpu_threads = n`` and no adaptive choice of one thread (so that
    n threads really run); the previous settings are restored."""
    saved = wp.config.cpu_threads, wp.config.cpu_adaptive
    wp.config.cpu_threads, wp.config.cpu_adaptive = n, False
    try:
        return fn()
    finally:
        wp.config.cpu_threads, wp.config.cpu_adaptive = saved
