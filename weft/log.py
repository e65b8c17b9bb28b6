"""Message levels, as Warp's: ``wp.config.log_level`` hides messages below it.

weft prints nothing in normal operation; build activity is a debug message (shown with
``wp.config.log_level = wp.LOG_DEBUG`` or the older ``wp.config.verbose = True``).
"""

from . import config

LOG_DEBUG = 10
LOG_INFO = 20
LOG_WARNING = 30
LOG_ERROR = 40


def debug(message: str) -> None:
    """Print ``message`` when debug messages are on."""
    if config.verbose or config.log_level <= LOG_DEBUG:
        print(f"weft: {message}")


def warn(message: str) -> None:
    """Print ``message`` as a warning (on stdout, as Warp's runtime warnings) unless
    ``wp.config.log_level`` is above ``wp.LOG_WARNING``."""
    if config.log_level <= LOG_WARNING:
        print(f"Warning: {message}")
