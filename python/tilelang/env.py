"""Process-wide settings read from the environment (TILELANG_* variables), kept in one
place so that the rest of the package never parses os.environ itself. Values that tests
and tools change at run time (the cache directory, printing) are read on each use."""

import os

_TRUE = {"1", "true", "yes", "on"}


def env_flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in _TRUE


_cache_enabled = not env_flag("TILELANG_DISABLE_CACHE")


def disable_cache():
    """Turns the kernel cache (memory and disk) off for the rest of the process."""
    global _cache_enabled
    _cache_enabled = False


def enable_cache():
    """Turns the kernel cache back on."""
    global _cache_enabled
    _cache_enabled = True


def is_cache_enabled():
    return _cache_enabled


def cache_dir():
    """The disk cache directory: TILELANG_CACHE_DIR, else the core's default
    ($XDG_CACHE_HOME/tilelang-cpp or ~/.cache/tilelang-cpp)."""
    explicit = os.environ.get("TILELANG_CACHE_DIR", "")
    if explicit:
        return explicit
    from tilelang import _native

    return _native.load().default_cache_dir()


def print_on_compilation():
    """TILELANG_PRINT_ON_COMPILATION: the core prints a line for each real compilation."""
    return env_flag("TILELANG_PRINT_ON_COMPILATION")


_emulate = env_flag("TILELANG_EMULATE")


def set_emulation(enabled=True):
    """Run CUDA targets through the CPU emulator: the kernel's exact CUDA source,
    compiled with host shims, its threads run as fibers. Arguments are CPU arrays."""
    global _emulate
    _emulate = bool(enabled)


def is_emulation_enabled():
    return _emulate
