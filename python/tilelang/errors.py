"""TileLang's `tilelang.errors`: `enrich_error(exc)` appends the source line that an
error's location marker (a line `  --> path:line:col`, TileLang's diagnostic form)
points at, when that file can be read; an error without a marker is returned as it is.
tilelang's own errors name `file:line:` in their first line already."""

from __future__ import annotations

import re

__all__ = ["enrich_error"]

# `  --> path:line:col` on a line of its own; the path may hold spaces or a drive letter.
_MARKER_RE = re.compile(r"^\s*--> (?P<file>.+):(?P<line>\d+):(?P<col>\d+)\s*$", re.MULTILINE)


def enrich_error(exc: BaseException) -> BaseException:
    """`exc` with the marked source line appended to its message (in place), as
    `   |` / `12 | the line` / `   |   ^`; unchanged without a readable marker."""
    message = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else None
    if message is None:
        return exc
    m = _MARKER_RE.search(message)
    if m is None:
        return exc
    line, col = int(m.group("line")), int(m.group("col"))
    try:
        with open(m.group("file"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return exc
    if not 1 <= line <= len(lines):
        return exc
    width = len(str(line))
    pad = " " * width
    snippet = f"\n{pad} |\n{line} | {lines[line - 1]}\n{pad} | {' ' * max(col - 1, 0)}^"
    exc.args = (message + snippet, *exc.args[1:])
    return exc
