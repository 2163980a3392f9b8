"""The `tilelang` logging namespace. The C++ core reports into it (its log sink is
pointed here at import), and the JIT layer logs each new specialization there, so one
`tilelang.set_log_level("DEBUG")` shows everything. Its handler writes to stderr
(above any progress bar); the level is TILELANG_LOG_LEVEL's, else the root logger's
(WARNING unless the application configures logging)."""

from __future__ import annotations

import atexit
import logging
from typing import Any

from tilelang import _native, env, progress

logger = logging.getLogger("tilelang")

_C = _native.load()


def _forward(level: int, message: str) -> None:
    # Called by the core, possibly from a worker thread; must never raise.
    logger.log(level, message)


def _detach() -> None:
    # At interpreter exit: the core must stop calling into Python before it goes away.
    _C.set_log_sink(None)


def set_log_level(level: int | str) -> None:
    """Sets the level of the `tilelang` logger: a name ('DEBUG', 'INFO', 'WARNING',
    'ERROR', 'CRITICAL', any case) or a number such as logging.INFO."""
    logger.setLevel(env.parse_log_level(level, "tilelang.set_log_level(level)"))


class StderrHandler(logging.Handler):
    """Writes the `tilelang` records to stderr, unless they also reach a handler of the
    application's (logging.basicConfig, pytest's capture): those print them instead, once."""

    def emit(self, record: logging.LogRecord) -> None:
        if logger.propagate and logging.getLogger().handlers:
            return
        try:
            progress.write_line(self.format(record))
        except Exception:  # noqa: BLE001  (logging must not raise into the caller)
            self.handleError(record)


def install() -> None:
    if not any(isinstance(h, StderrHandler) for h in logger.handlers):
        handler = StderrHandler()
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)s [tilelang %(levelname)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S"
            )
        )
        logger.addHandler(handler)
    level = env.log_level()
    if level is not None:
        logger.setLevel(level)
    if hasattr(_C, "set_log_sink"):
        _C.set_log_sink(_forward)
        atexit.register(_detach)


def describe_arguments(values: dict[str, Any], previous: dict[str, Any] | None = None) -> str:
    """'M=1024, dtype=float16 (new: M)': the arguments of a specialization, and which of
    them differ from the previous specialization of the same function."""
    text = ", ".join(f"{name}={_short(value)}" for name, value in values.items())
    if previous is None:
        return text
    changed = [n for n in values if n not in previous or _short(previous[n]) != _short(values[n])]
    changed += [n for n in previous if n not in values]
    return f"{text} (changed: {', '.join(changed) or 'none'})"


class Described(str):
    """A value already written for the log (e.g. 'float32[2d]' for a tensor argument)."""

    def __repr__(self) -> str:
        return str(self)


def _short(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"tensor{tuple(shape)}:{dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


install()
