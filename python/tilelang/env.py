"""Process-wide settings read from the environment (TILELANG_* variables), kept in one
place so that the rest of the package never parses os.environ itself. Values that tests
and tools change at run time (the cache directory, printing) are read on each use."""

import os

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def env_flag(name, default=False):
    """A boolean TILELANG_* variable; a value that is neither true nor false is refused
    (a typo must not silently leave a switch off)."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(
        f"{name} must be 1, true, yes or on (or 0, false, no, off, empty), got {value!r}"
    )


_LOG_LEVELS = {
    "NOTSET": 0,
    "DEBUG": 10,
    "INFO": 20,
    "WARNING": 30,
    "WARN": 30,
    "ERROR": 40,
    "CRITICAL": 50,
    "FATAL": 50,
}


def parse_log_level(value, what):
    """A logging level from a name ('INFO', any case) or a number (logging.INFO, 20,
    '20'); anything else is refused, naming `what` (the variable or the argument)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        word = value.strip().upper()
        if word in _LOG_LEVELS:
            return _LOG_LEVELS[word]
        if word.isdigit():
            return int(word)
    raise ValueError(
        f"{what} must be a logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL (any "
        f"case), or a number such as logging.INFO (20); got {value!r}"
    )


def log_level():
    """TILELANG_LOG_LEVEL, the `tilelang` logger's level at import; None when unset (the
    logger then follows the root logger's level: WARNING unless the application sets it)."""
    value = os.environ.get("TILELANG_LOG_LEVEL", "")
    if not value.strip():
        return None
    return parse_log_level(value, "TILELANG_LOG_LEVEL")


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


def _setting(name, default=None):
    def read(self):
        value = os.environ.get(name)
        return default() if value is None and default is not None else value

    def write(self, value):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)

    return property(read, write, doc=f"the {name} setting (the environment variable)")


class Environment:
    """TileLang's `tilelang.env.env`: the TILELANG_* settings as attributes. Reading
    one gives its value (the cache directory's default when unset); setting one sets
    the environment variable, which the settings above read on each use (None unsets
    it). They are properties, so monkeypatch.setattr restores them by setting the old
    value back."""

    TILELANG_CACHE_DIR = _setting("TILELANG_CACHE_DIR", lambda: cache_dir())
    TILELANG_TMP_DIR = _setting("TILELANG_TMP_DIR", lambda: os.path.join(cache_dir(), "tmp"))
    TILELANG_DEFAULT_TARGET = _setting("TILELANG_DEFAULT_TARGET")
    TILELANG_EXECUTION_BACKEND = _setting("TILELANG_EXECUTION_BACKEND")
    TILELANG_DISABLE_CACHE = _setting("TILELANG_DISABLE_CACHE")
    TILELANG_EMULATE = _setting("TILELANG_EMULATE")
    TILELANG_PRINT_ON_COMPILATION = _setting("TILELANG_PRINT_ON_COMPILATION")
    TILELANG_AUTO_TUNING_DISABLE_CACHE = _setting("TILELANG_AUTO_TUNING_DISABLE_CACHE")
    TILELANG_LOG_LEVEL = _setting("TILELANG_LOG_LEVEL")
    TILELANG_JIT_DIAGNOSTICS = _setting("TILELANG_JIT_DIAGNOSTICS")

    def __getattr__(self, name):
        raise AttributeError(
            f"tilelang.env.env has no setting {name!r}; it has "
            + ", ".join(n for n in vars(Environment) if n.startswith("TILELANG_"))
        )

    def __setattr__(self, name, value):
        if not isinstance(getattr(Environment, name, None), property):
            self.__getattr__(name)
        object.__setattr__(self, name, value)

    def is_cache_enabled(self):
        return is_cache_enabled()

    def enable_cache(self):
        enable_cache()

    def disable_cache(self):
        disable_cache()

    def is_jit_diagnostics_enabled(self):
        """TILELANG_JIT_DIAGNOSTICS: log the phases of each compile (tilelang.jit.diagnostics)."""
        return env_flag("TILELANG_JIT_DIAGNOSTICS")


env = Environment()
