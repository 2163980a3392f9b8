"""Process-wide settings read from the environment (TILELANG_* variables), kept in one
place so that the rest of the package never parses os.environ itself."""

import os

_TRUE = {"1", "true", "yes", "on"}


def env_flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in _TRUE


_cache_enabled = not env_flag("TILELANG_DISABLE_CACHE")


def disable_cache():
    """Turns the kernel cache off for the rest of the process."""
    global _cache_enabled
    _cache_enabled = False


def enable_cache():
    global _cache_enabled
    _cache_enabled = True


def is_cache_enabled():
    return _cache_enabled
