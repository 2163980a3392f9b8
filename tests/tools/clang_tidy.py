"""Runs clang-tidy (.clang-tidy) over the compiler core and the Python bindings for `make lint`.

A translation unit is checked again only when it, a project header it includes, the check
list or its compile command changed: each clean result is remembered under
<build>/clang-tidy-cache by a hash of those, so a lint after a small edit takes seconds.
Without a compile_commands.json in the build folder (nothing built yet) there is nothing
to check against and the step is skipped.

    python tests/tools/clang_tidy.py BUILD_DIR [--jobs N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Test and example sources follow gtest's and the examples' idioms; device/ is CUDA and
# Metal code that the host compile commands do not describe.
CHECKED = ("src/", "python/src/")


def _ninja_deps(build: Path) -> dict[str, list[Path]]:
    """Each object file's headers, from the build's dependency log (empty when not Ninja)."""
    if not (build / ".ninja_deps").exists() or shutil.which("ninja") is None:
        return {}
    out = subprocess.run(
        ["ninja", "-C", str(build), "-t", "deps"], check=True, capture_output=True, text=True
    )
    deps: dict[str, list[Path]] = {}
    current: list[Path] | None = None
    for line in out.stdout.splitlines():
        if line and not line.startswith(" "):
            current = deps.setdefault(line.split(":", 1)[0], [])
        elif line.strip() and current is not None:
            current.append((build / line.strip()).resolve())
    return deps


def _project_headers() -> list[Path]:
    return sorted(p for d in ("src", "include", "python/src") for p in (ROOT / d).rglob("*.h"))


def _object_of(command: str) -> str:
    args = shlex.split(command)
    return args[args.index("-o") + 1] if "-o" in args else ""


def _key(entry: dict, headers: list[Path], config: bytes) -> str:
    h = hashlib.sha256(config)
    h.update(entry["command"].encode())
    for path in [Path(entry["file"]), *headers]:
        h.update(str(path).encode())
        h.update(path.read_bytes() if path.exists() else b"<missing>")
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    build = args.build.resolve()
    database = build / "compile_commands.json"
    if not database.exists():
        print(f"clang-tidy: skipped, no {database} (build first)")
        return 0
    tidy = os.environ.get("CLANG_TIDY", "clang-tidy")
    if shutil.which(tidy) is None:
        print(
            f"clang-tidy: '{tidy}' not found; install clang-tidy or set CLANG_TIDY", file=sys.stderr
        )
        return 1

    entries: dict[str, dict] = {}
    for entry in json.loads(database.read_text()):
        rel = os.path.relpath(entry["file"], ROOT)
        if rel.startswith(CHECKED) and Path(entry["file"]).exists():
            entries.setdefault(rel, entry)
    deps = _ninja_deps(build)
    all_headers = _project_headers()
    config = (ROOT / ".clang-tidy").read_bytes()
    cache = build / "clang-tidy-cache"
    cache.mkdir(exist_ok=True)

    def headers_of(entry: dict) -> list[Path]:
        # Without the build's dependency log every project header counts.
        listed = deps.get(_object_of(entry["command"]))
        if listed is None:
            return all_headers
        return sorted(p for p in listed if p.suffix == ".h" and ROOT in p.parents)

    def check(rel: str) -> tuple[str, bool, str]:
        entry = entries[rel]
        stamp = cache / _key(entry, headers_of(entry), config)
        if stamp.exists():
            return rel, True, ""
        run = subprocess.run(
            [tidy, "-p", str(build), "--quiet", entry["file"]],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if run.returncode == 0:
            stamp.touch()
        return rel, run.returncode == 0, run.stdout + run.stderr

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(check, sorted(entries)))

    # A finding in a header is reported by every unit that includes it: print it once.
    seen: set[str] = set()
    failed = [rel for rel, ok, _ in results if not ok]
    for rel, ok, output in results:
        if ok:
            continue
        print(f"clang-tidy: {rel}")
        # Drop clang-tidy's counts ("N warnings generated.", "... treated as errors").
        output = re.sub(r"(?m)^\d+ warnings? (generated\.|treated as errors?)$", "", output)
        for block in re.split(r"\n(?=\S+:\d+:\d+: )", output):
            text = block.strip()
            if text and text not in seen:
                seen.add(text)
                print(text)
    if failed:
        print(f"clang-tidy: findings in {len(failed)} of {len(entries)} files", file=sys.stderr)
        return 1
    print(f"clang-tidy: {len(entries)} files clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
