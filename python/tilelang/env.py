"""Process-wide settings read from the environment (TILELANG_* variables), kept in one
place so that the rest of the package never parses os.environ itself. Values that tests
and tools change at run time (the cache directory, printing) are read on each use."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def parse_switch(name: str, value: Any) -> bool:
    """The value of the on/off variable `name`: 1, true, yes, on (any case, blanks around
    ignored) are on; 0, false, no, off and empty are off; anything else is a ValueError
    naming the variable and the value (a typo must not silently turn a switch on or off).
    The compiler core reads its switches by the same rule (src/support/env_switch.h)."""
    word = str(value).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(
        f"{name} must be 1, true, yes or on (or 0, false, no, off, empty), got {str(value)!r}"
    )


def env_flag(name: str, default: bool = False) -> bool:
    """A boolean TILELANG_* variable (parse_switch's rule); `default` when it is unset."""
    value = os.environ.get(name)
    if value is None:
        return default
    return parse_switch(name, value)


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


def parse_log_level(value: int | str, what: str) -> int:
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


def log_level() -> int | None:
    """TILELANG_LOG_LEVEL, the `tilelang` logger's level at import; None when unset (the
    logger then follows the root logger's level: WARNING unless the application sets it)."""
    value = os.environ.get("TILELANG_LOG_LEVEL", "")
    if not value.strip():
        return None
    return parse_log_level(value, "TILELANG_LOG_LEVEL")


_cache_enabled = not env_flag("TILELANG_DISABLE_CACHE")


def disable_cache() -> None:
    """Turns the kernel cache (memory and disk) off for the rest of the process."""
    global _cache_enabled
    _cache_enabled = False


def enable_cache() -> None:
    """Turns the kernel cache back on."""
    global _cache_enabled
    _cache_enabled = True


def is_cache_enabled() -> bool:
    return _cache_enabled


def cache_dir() -> str:
    """The disk cache directory: TILELANG_CACHE_DIR, else the core's default
    ($XDG_CACHE_HOME/tilelang-cpp or ~/.cache/tilelang-cpp)."""
    explicit = Environment.__dict__["TILELANG_CACHE_DIR"].get()
    return str(explicit) if explicit else _default_cache_dir()


def print_on_compilation() -> bool:
    """TILELANG_PRINT_ON_COMPILATION: the core prints a line for each real compilation."""
    return env_flag("TILELANG_PRINT_ON_COMPILATION")


_emulate = env_flag("TILELANG_EMULATE")


def set_emulation(enabled: bool = True) -> None:
    """Run CUDA targets through the CPU emulator: the kernel's exact CUDA source,
    compiled with host shims, its threads run as fibers. Arguments are CPU arrays."""
    global _emulate
    _emulate = bool(enabled)


def is_emulation_enabled() -> bool:
    return _emulate


class EnvVar:
    """One setting of `tilelang.env` (TileLang's descriptor of the same name). Its value is,
    in order: `_forced_value` when not None (TileLang's override, for tests), the
    environment variable `key`, the default (a value or a function giving one).
    `tilelang.env.NAME = value` sets the environment variable, which the compiler core
    reads too (None unsets it), so that monkeypatch.setattr / setenv restore it alike."""

    def __init__(self, key: str, default: Any | Callable[[], Any] = None) -> None:
        self.key = key
        self.default = default
        self._forced_value: Any = None

    def get(self) -> Any:
        if self._forced_value is not None:
            return self._forced_value
        value = os.environ.get(self.key)
        if value is not None:
            return value
        return self.default() if callable(self.default) else self.default

    def __get__(self, instance: Any, owner: Any) -> Any:
        return self.get()

    def __set__(self, instance: Any, value: Any) -> None:
        if value is None:
            os.environ.pop(self.key, None)
        else:
            os.environ[self.key] = str(value)


def parse_pass_profile_threshold_ms(value: Any, name: str = "pass profile threshold") -> float:
    """A pass-timing threshold in milliseconds: a finite number >= 0, else ValueError
    naming `name`."""
    try:
        threshold = float(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}") from err
    if not math.isfinite(threshold) or threshold < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    return threshold


def resolve_pass_profile_threshold_ms(
    pass_configs: dict, key: Any, env_threshold_ms: Callable[[], float]
) -> float:
    """The threshold a compile uses: the pass config `key` when given (0 included), else
    `env_threshold_ms()` (the environment's)."""
    if key in pass_configs:
        return parse_pass_profile_threshold_ms(pass_configs[key], str(key))
    return env_threshold_ms()


def _default_cache_dir() -> str:
    from tilelang import _native

    return _native.load().default_cache_dir()


def _no_setting(name: str) -> AttributeError:
    """The error for a name `tilelang.env` has no setting of (read or assigned): it lists
    the settings there are."""
    return AttributeError(
        f"tilelang.env has no setting {name!r}; it has "
        + ", ".join(n for n in vars(Environment) if n.startswith("TILELANG_"))
    )


class Environment:
    """`tilelang.env` (and `tilelang.env.env`), as in TileLang: the TILELANG_* settings as
    attributes (EnvVar above: a value set here, else the environment variable, else the
    default) and the queries TileLang's code makes of them. Names of this module that are
    not settings (cache_dir(), env_flag() ...) are reachable through it too."""

    TILELANG_CACHE_DIR = EnvVar("TILELANG_CACHE_DIR", _default_cache_dir)
    TILELANG_TMP_DIR = EnvVar(
        "TILELANG_TMP_DIR", lambda: os.path.join(Environment.TILELANG_CACHE_DIR, "tmp")
    )
    TILELANG_DEFAULT_TARGET = EnvVar("TILELANG_DEFAULT_TARGET", "auto")
    TILELANG_DEFAULT_EXECUTION_BACKEND = EnvVar("TILELANG_EXECUTION_BACKEND", "auto")
    TILELANG_EXECUTION_BACKEND = TILELANG_DEFAULT_EXECUTION_BACKEND
    TILELANG_DEFAULT_VERBOSE = EnvVar("TILELANG_VERBOSE", "0")
    TILELANG_DISABLE_CACHE = EnvVar("TILELANG_DISABLE_CACHE", "0")
    TILELANG_CACHE_MAX_SIZE = EnvVar("TILELANG_CACHE_MAX_SIZE")
    TILELANG_EMULATE = EnvVar("TILELANG_EMULATE", "0")
    TILELANG_PRINT_ON_COMPILATION = EnvVar("TILELANG_PRINT_ON_COMPILATION", "1")
    TILELANG_AUTO_TUNING_DISABLE_CACHE = EnvVar("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0")
    TILELANG_LOG_LEVEL = EnvVar("TILELANG_LOG_LEVEL")
    TILELANG_JIT_DIAGNOSTICS = EnvVar("TILELANG_JIT_DIAGNOSTICS", "0")
    TILELANG_COMPILE_TIMEOUT_SECONDS = EnvVar("TILELANG_COMPILE_TIMEOUT_SECONDS", "")
    TILELANG_PASS_PROFILE = EnvVar("TILELANG_PASS_PROFILE", "0")
    TILELANG_PASS_PROFILE_THRESHOLD_MS = EnvVar("TILELANG_PASS_PROFILE_THRESHOLD_MS", "0")
    TILELANG_TIME_PASSES = EnvVar("TILELANG_TIME_PASSES", "0")
    TILELANG_DUMP_IR = EnvVar("TILELANG_DUMP_IR")
    TILELANG_DEVICE_DIR = EnvVar("TILELANG_DEVICE_DIR")
    TILELANG_CPU_THREADS = EnvVar("TILELANG_CPU_THREADS")

    def __getattr__(self, name: str) -> Any:
        module = globals()
        if name in module and not name.startswith("__"):
            return module[name]
        raise _no_setting(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not isinstance(vars(Environment).get(name), EnvVar):
            raise _no_setting(name)
        object.__setattr__(self, name, value)

    def _switch(self, setting: str) -> bool:
        """The on/off setting `setting` (its value here, else its variable, else its
        default) by parse_switch's rule; a value neither on nor off is a ValueError."""
        var = vars(Environment)[setting]
        return parse_switch(var.key, var.get())

    def is_cache_enabled(self) -> bool:
        return is_cache_enabled()

    def enable_cache(self) -> None:
        enable_cache()

    def disable_cache(self) -> None:
        disable_cache()

    def is_cache_globally_disabled(self) -> bool:
        return self._switch("TILELANG_DISABLE_CACHE")

    def is_autotune_cache_disabled(self) -> bool:
        return self._switch("TILELANG_AUTO_TUNING_DISABLE_CACHE")

    def is_print_on_compilation_enabled(self) -> bool:
        """On unless TILELANG_PRINT_ON_COMPILATION is 0 (as in TileLang): each compile is
        announced at INFO level on the `tilelang` logger; set to 1 explicitly, it is also
        printed on stdout."""
        return self._switch("TILELANG_PRINT_ON_COMPILATION")

    def is_jit_diagnostics_enabled(self) -> bool:
        """TILELANG_JIT_DIAGNOSTICS: log the phases of each compile (tilelang.jit.diagnostics)."""
        return self._switch("TILELANG_JIT_DIAGNOSTICS")

    def is_pass_profile_enabled(self) -> bool:
        """TILELANG_PASS_PROFILE: print each pass's time to stderr as kernels compile."""
        return self._switch("TILELANG_PASS_PROFILE")

    def get_pass_profile_threshold_ms(self) -> float:
        """TILELANG_PASS_PROFILE_THRESHOLD_MS: only passes taking at least this long are
        printed (0 or empty: all)."""
        value = str(self.TILELANG_PASS_PROFILE_THRESHOLD_MS).strip()
        if not value:
            return 0.0
        return parse_pass_profile_threshold_ms(value, "TILELANG_PASS_PROFILE_THRESHOLD_MS")

    def get_compile_timeout_seconds(self) -> float | None:
        """TILELANG_COMPILE_TIMEOUT_SECONDS as a number of seconds > 0, or None when unset."""
        value = str(self.TILELANG_COMPILE_TIMEOUT_SECONDS).strip()
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            seconds = float("nan")
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(
                f"TILELANG_COMPILE_TIMEOUT_SECONDS must be a positive number of seconds, got {value!r}"
            )
        return seconds

    def get_default_target(self) -> str | dict[str, Any]:
        """TILELANG_DEFAULT_TARGET: "auto" when unset, a dict when the value is a JSON
        object ('{"kind": "cuda", "arch": "sm_90a"}'), else the string."""
        target = self.TILELANG_DEFAULT_TARGET
        if target is None:
            return "auto"
        if isinstance(target, dict):
            return dict(target)
        text = str(target).strip()
        if not text.startswith("{"):
            return target
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"TILELANG_DEFAULT_TARGET looks like a dict but is not JSON: {target!r}. Use JSON "
                'syntax like {"kind": "cuda", "arch": "sm_90a"}'
            ) from err
        if not isinstance(parsed, dict) or not all(isinstance(k, str) for k in parsed):
            raise ValueError(
                f"TILELANG_DEFAULT_TARGET must be a JSON object with string keys, got {target!r}"
            )
        return parsed

    def get_default_execution_backend(self) -> str:
        return self.TILELANG_DEFAULT_EXECUTION_BACKEND

    def get_default_verbose(self) -> bool:
        return self._switch("TILELANG_DEFAULT_VERBOSE")


env = Environment()
