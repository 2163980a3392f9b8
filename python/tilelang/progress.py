"""Progress bars of long jobs (autotuning, batch compilation) and the stderr writer that
the `tilelang` log handler shares with them, so a log line never breaks a bar. A bar is
shown only while stderr is a terminal (a script whose output goes to a file or a pipe
stays quiet); it is tqdm's when tqdm is installed, else one plain line redrawn in place."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

_lock = threading.RLock()
_plain_bars: list = []  # the plain bars on screen, innermost last (only it is drawn)
_tqdm_bars = 0  # tqdm bars open: log lines then go through tqdm.write

# A plain bar redraws at most this often (seconds); its first and last states always draw.
_REDRAW_S = 0.1


def stderr_is_terminal():
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def _fixed_size():
    """(None, None): tqdm follows the terminal's size; (100, 24) for a terminal that
    reports none (a pseudo-terminal never sized), where tqdm would draw nothing."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return 100, 24
    return (None, None) if size.columns > 0 and size.lines > 0 else (100, 24)


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def write_line(text):
    """Writes one line (a log message) to stderr above the bars that are showing."""
    with _lock:
        stream = sys.stderr
        if stream is None:
            return
        if _tqdm_bars:
            _tqdm().write(text, file=stream)
            return
        if _plain_bars:
            stream.write("\r\x1b[K" + text + "\n")
            _plain_bars[-1]._draw(force=True)
            return
        stream.write(text + "\n")
        stream.flush()


class Progress:
    """A bar of `total` steps: `desc` says what runs ('autotune matmul: compiling'),
    advance(k) counts steps done, note(text) sets the text after the count (the best
    config so far, failures), describe(desc) renames the phase. Shown only when stderr
    is a terminal; a no-op otherwise. Use it as a context manager (close() ends the line)."""

    def __init__(self, desc: str, total: int, unit: str = "config") -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.done = 0
        self.text = ""
        self._start = time.monotonic()
        self._drawn_at = None
        self._dirty = True  # changed since last drawn
        self._tqdm = None
        self._plain = False
        if not stderr_is_terminal():
            return
        global _tqdm_bars
        tqdm = _tqdm()
        with _lock:
            if tqdm is not None:
                size = _fixed_size()
                self._tqdm = tqdm(
                    total=total, desc=desc, unit=unit, file=sys.stderr, ncols=size[0], nrows=size[1]
                )
                _tqdm_bars += 1
                return
            self._plain = True
            _plain_bars.append(self)
            self._draw(force=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._dirty = True
        if self._tqdm is not None:
            self._tqdm.update(steps)
        elif self._plain:
            self._draw(force=self.done >= self.total)

    def note(self, text: str) -> None:
        self._dirty = self._dirty or text != self.text
        self.text = text
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(text)
        elif self._plain:
            self._draw()

    def describe(self, desc: str) -> None:
        self._dirty = self._dirty or desc != self.desc
        self.desc = desc
        if self._tqdm is not None:
            self._tqdm.set_description(desc)
        elif self._plain:
            self._draw()

    def close(self) -> None:
        global _tqdm_bars
        with _lock:
            if self._tqdm is not None:
                self._tqdm.close()
                self._tqdm = None
                _tqdm_bars -= 1
            elif self._plain:
                if self._dirty:
                    self._draw(force=True)
                sys.stderr.write("\n")
                sys.stderr.flush()
                _plain_bars.remove(self)
                self._plain = False
                if _plain_bars:
                    _plain_bars[-1]._draw(force=True)

    def line(self) -> str:
        """The plain bar's text: 'autotune matmul: compiling 3/8 configs [2s] 1 failed'."""
        seconds = time.monotonic() - self._start
        text = f"{self.desc} {self.done}/{self.total} {self.unit}s [{seconds:.0f}s]"
        return f"{text} {self.text}" if self.text else text

    def _draw(self, force=False):
        now = time.monotonic()
        if not force and self._drawn_at is not None and now - self._drawn_at < _REDRAW_S:
            return
        if _plain_bars and _plain_bars[-1] is not self:
            return
        with _lock:
            self._drawn_at = now
            self._dirty = False
            width = shutil.get_terminal_size((100, 24)).columns - 1
            stream = sys.stderr
            stream.write("\r\x1b[K" + self.line()[:width])
            stream.flush()
