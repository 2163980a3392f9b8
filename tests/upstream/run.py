"""Runs TileLang's own test suite and example tests, unchanged, against this package and
tabulates the outcome per directory: passed, failed, skipped, and why.

    python tests/upstream/run.py --source PATH [--mode sm80 --mode sm90a --mode cpu]
                                 [--dirs language kernel ...] [--files LIST] [--out DIR]

PATH is a checkout of TileLang's repository: the directory that holds `testing/python`
and `examples/` (without --source the runner reads TILELANG_UPSTREAM_SRC). Instead,
`--release 0.1.14` downloads that release's source distribution from the package index
(pip; the release carries its tests and examples) and unpacks its `testing/` and
`examples/` under --download-dir. Nothing of either is copied into this repository. Modes:

- `cpu`: the files as they are on this machine; tests gated on a GPU skip.
- `sm80`, `sm90a`: torch's CUDA device becomes the CPU and CUDA kernels run in the
  emulator of that arch (tests/upstream/torch_on_cpu.py), so GPU-gated tests run too.
- `gpu`: the files as they are, on a machine with a GPU.

Each file runs in its own pytest process (a crash or a hang costs one file, with the
per-file --timeout), and the results go to DIR/results.json and DIR/table.md.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DIRS = [
    "testing/python/language", "testing/python/kernel", "testing/python/issue",
    "testing/python/jit", "testing/python/cache", "testing/python/profiler",
    "testing/python/autotune", "testing/python/math", "testing/python/cpu",
    "testing/python/cuda", "testing/python/metal", "testing/python/dynamic", "examples",
]  # fmt: skip
MODES = {"cpu": None, "sm80": "sm_80", "sm90a": "sm_90a", "gpu": None}


def fetch_release(version, download_dir, python):
    """The tests and examples of TileLang `version`'s source distribution, unpacked once
    into download_dir/<version> (its `tilelang/` package is left out, so it can never
    shadow this one)."""
    import tarfile

    target = Path(download_dir).expanduser() / version
    if (target / "testing" / "python").is_dir():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [python, "-m", "pip", "download", f"tilelang=={version}", "--no-deps",
               "--no-binary", "tilelang", "-q", "-d", tmp]  # fmt: skip
        subprocess.run(cmd, check=True)
        (archive,) = Path(tmp).glob("tilelang-*.tar.gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent))
        with tarfile.open(archive) as tar:
            prefix = f"tilelang-{version}/"
            members = [
                m
                for m in tar.getmembers()
                if m.name.startswith((prefix + "testing/", prefix + "examples/"))
            ]
            for m in members:
                m.name = m.name[len(prefix) :]
            tar.extractall(staging, members=members, filter="data")
        staging.rename(target)
    return target


def find_files(source, dirs, listed):
    if listed:
        return [source / line for line in listed]
    files = []
    for d in dirs:
        files += sorted((source / d).rglob("test_*.py"))
    return files


def reason_of(element):
    """One line saying why a test failed or skipped: the exception's type and message
    (for a file that failed to import, the traceback's last `E` line)."""
    message = (element.get("message") or "").strip()
    text = element.text or ""
    if not message or message == "collection failure":
        errors = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
        message = errors[-1] if errors else (text.strip().splitlines() or [message])[-1]
    lines = message.splitlines()
    first = lines[0] if lines else ""
    if first.endswith("Regex pattern did not match."):  # pytest.raises(match=): what was raised
        raised = [  # pytest 8's "Actual message:", older pytest's "Input:"
            ln.strip() for ln in lines if ln.strip().startswith(("Actual message:", "Input:"))
        ]
        first += f" {raised[0]}" if raised else ""
        return re.sub(r"0x[0-9a-f]+", "0x…", first)[:320]
    return re.sub(r"0x[0-9a-f]+", "0x…", first)[:200]


def parse_junit(path):
    tests = []
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, why = "failed", reason_of(child)
                if child.get("message") == "collection failure":
                    outcome = "import_error"
                break
            if child.tag == "skipped":
                outcome, why = "skipped", reason_of(child)
        tests.append({"name": name, "outcome": outcome, "reason": why})
    return tests


def run_file(path, mode, args, source):
    env = dict(os.environ, TILELANG_UPSTREAM_MODE=mode, TILELANG_UPSTREAM_SRC=str(source))
    # One pytest process per file, as TileLang's files run: options meant for this
    # package's own tests (PYTEST_ADDOPTS="-n 8" for tests/gpu) would fan each file out
    # over workers (on a GPU machine, 8 CUDA contexts per file, at --jobs files at once).
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    plugin = ["-p", "torch_on_cpu"]
    if MODES[mode]:
        env["TILELANG_EMULATE_ARCH"] = MODES[mode]
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [args.python, "-P", "-m", "pytest", str(path), "-q", "-p", "no:cacheprovider",
               *plugin, f"--junitxml={junit}", "-o", "junit_family=xunit1",
               *(["--collect-only"] if args.collect_only else [])]  # fmt: skip
        start = time.time()
        try:
            proc = subprocess.run(
                cmd,
                check=False,
                cwd=path.parent,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "seconds": args.timeout, "tests": []}
        seconds = round(time.time() - start, 1)
        if not junit.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            return {"status": "crashed", "seconds": seconds, "returncode": proc.returncode,
                    "tests": [], "reason": " | ".join(tail)[:300]}  # fmt: skip
        tests = parse_junit(junit)
    if proc.returncode < 0:
        return {"status": "crashed", "seconds": seconds, "returncode": proc.returncode,
                "tests": tests, "reason": f"signal {-proc.returncode}"}  # fmt: skip
    status = "import_error" if any(t["outcome"] == "import_error" for t in tests) else "ran"
    return {"status": status, "seconds": seconds, "tests": tests}


def directory_of(rel):
    parts = Path(rel).parts
    return "/".join(parts[:3]) if parts[0] == "testing" else "/".join(parts[:2])


# Failure messages of assertions on the text of the generated code: the source quoted
# (ours starts with this line), or the test's own wording of such a check.
_CODE_TEXT = re.compile(
    r"// Generated by tilelang-cpp|in generated source|"
    r"Expected \S+ in (the )?(generated |SM100 |auto-vectorised |CUDA )*(CUDA )?source|"
    r"Expected fastmath calls|"
    r"Cast \S+ to \S+ with lanes=\d+ is not vectorized"  # language/vectorized_cast: `check_str in code`
)


def checks_code_text(reason):
    """Whether a failure is an assertion on the text of the generated code (TileLang's
    own spellings: `assert 'tl::add2' in src`, "Expected run_batch in generated source"):
    the kernel may compute the right result with other code. Counted apart, not hidden."""
    return bool(_CODE_TEXT.search(reason))


# Failures at a name this package provides only as a stand-in refused on use (TVM's IR
# classes and passes, TileLang's backend internals: docs/design/tilelang_compat.md,
# "Out of scope"), recognised by the OutOfScopeError's message.
# A test that opens a file of TileLang's own source tree (its C++ device templates under
# src/tl_templates, its Python backend modules under tilelang/) to read their text checks
# TileLang's sources, not the package under test: counted with the out-of-scope failures.
_OUT_OF_SCOPE = re.compile(
    r"OutOfScopeError|out of scope for tilelang|"
    r"No such file or directory: '[^']*/(src/tl_templates|tilelang)/"
)


def out_of_scope(reason):
    """Whether a failure stopped at an out-of-scope stand-in (tilelang.tvm.OutOfScopeError)
    or at a file of TileLang's own source tree that the test reads."""
    return bool(_OUT_OF_SCOPE.search(reason))


# Failures at this package's refusal of sm_100-family features (stochastic rounding,
# sm_100's unpacked fp4 TMA) in tests that compile for sm_100 / sm_100a: arch-gated
# beyond the H100 / H200 the suite runs on (and beyond this package's sm_80 to sm_90a).
# sm_75's refusals are not among them: an older arch than the machine stays in scope.
# The reasons are cut at 200 characters, so a pattern matches the start of a message.
# A test's own assertion about the code it lowered for an sm_100 target ("Expected
# tl::max2 in SM100 float32 max reduction") is gated the same way.
_SM100_ONLY = re.compile(
    r"CUDA arch sm_1[0-2]\d\w* in target .* is not supported|"
    r"with round='rs' \(rounding stochastically\)|"
    r"would unpack fp4 as sm_100's|"
    r"Expected \S+ in SM100 "
)


def needs_sm100(reason):
    """Whether a failure is the refusal of an sm_100-family feature (beyond the machine)."""
    return bool(_SM100_ONLY.search(reason))


# A test that imports a third-party package the machine lacks (flash_attn's kernels as a
# reference): beyond the machine like sm_100, counted apart. tilelang, tvm and their
# submodules are the package under test and never match.
# A name the CPU stand-ins of tests/upstream/cpu_packages do not provide counts the same.
_MISSING_PACKAGE = re.compile(
    r"No module named '(?!tilelang\b|tvm\b)[\w.]+'|cannot import name '\w+' from '[\w.]+' \([^)]*cpu_packages"
)


def needs_package(reason):
    """Whether a failure is the import of a third-party package that is not installed."""
    return bool(_MISSING_PACKAGE.search(reason))


def classify(reason):
    """The bucket a failure is counted in apart from plain failures: "out_of_scope",
    "sm100", "package" (all three outside the in-scope rate), "code_text" (inside it, the
    last column also gives the rate without it), or None. The arch and out-of-scope
    buckets come first: a code-text assertion on sm_100 code is arch-gated."""
    for bucket, test in (("out_of_scope", out_of_scope), ("sm100", needs_sm100),
                         ("package", needs_package), ("code_text", checks_code_text)):  # fmt: skip
        if test(reason):
            return bucket
    return None


def summarize(results):
    """Per mode and directory: files, import failures, crashed/timed-out files, tests
    passed / failed / skipped, and the share passed of those that ran unskipped."""
    table = {}
    for mode, files in results.items():
        rows = collections.defaultdict(collections.Counter)
        for rel, r in files.items():
            row = rows[directory_of(rel)]
            row["files"] += 1
            if r["status"] != "ran":
                row[r["status"]] += 1
            for t in r["tests"]:
                if t["outcome"] == "import_error" and r["status"] == "import_error":
                    continue  # the file's status counted it: one import error per file
                row[t["outcome"]] += 1
                bucket = classify(t["reason"]) if t["outcome"] == "failed" else None
                if bucket:
                    row[bucket] += 1
        table[mode] = dict(rows)
    return table


def mode_totals(results):
    """Per mode, the counts of summarize() added over its directories."""
    totals = {}
    for mode, rows in summarize(results).items():
        totals[mode] = collections.Counter()
        for c in rows.values():
            totals[mode].update(c)
    return totals


def write_table(results, out):
    lines = ["# TileLang's suite on this package", ""]
    for mode, rows in summarize(results).items():
        lines += [f"## mode {mode}", "",
                  ("| directory | files | import errors | crashed / timed out | passed | failed "
                   "| of which code text | of which out of scope | of which sm_100 only "
                   "| of which a missing package | skipped "
                   "| pass rate | pass rate without code text | pass rate in scope "
                   "| pass rate in scope without code text |"),
                  "|" + " --- |" * 15]  # fmt: skip
        total = collections.Counter()
        for d in sorted(rows):
            c = rows[d]
            total.update(c)
            lines.append(_row(d, c))
        lines += [_row("**all**", total), ""]
        reasons = collections.Counter()
        for r in results[mode].values():
            if r["status"] in ("crashed", "timeout"):
                reasons[f"{r['status']}: {r.get('reason', '')}"[:160]] += 1
            for t in r["tests"]:
                if t["outcome"] in ("failed", "import_error"):
                    reasons[t["reason"][:160]] += 1
        lines += ["Most common reasons for failures:", ""]
        lines += [f"- {n} × `{why}`" for why, n in reasons.most_common(40)]
        lines.append("")
    (out / "table.md").write_text("\n".join(lines))


def _rate(passed, ran):
    return f"{100 * passed / ran:.1f} %" if ran else "-"


def _row(name, c):
    """A directory's counts and rates. "In scope" leaves out the failures at out-of-scope
    stand-ins, at sm_100-only features and at missing third-party packages (beyond the
    machine); code-text
    failures stay in it, and the last column gives the rate without them too."""
    ran = c["passed"] + c["failed"]
    bad = c["crashed"] + c["timeout"]
    in_scope = ran - c["out_of_scope"] - c["sm100"] - c["package"]
    return (f"| {name} | {c['files']} | {c['import_error']} | {bad} | {c['passed']} | "
            f"{c['failed']} | {c['code_text']} | {c['out_of_scope']} | {c['sm100']} | "
            f"{c['package']} | "
            f"{c['skipped']} | {_rate(c['passed'], ran)} | "
            f"{_rate(c['passed'], ran - c['code_text'])} | {_rate(c['passed'], in_scope)} | "
            f"{_rate(c['passed'], in_scope - c['code_text'])} |")  # fmt: skip


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", default=os.environ.get("TILELANG_UPSTREAM_SRC"))
    p.add_argument("--release", help="download this release's sources instead of --source")
    p.add_argument("--download-dir", default="~/.cache/tilelang-upstream")
    p.add_argument("--mode", action="append", choices=sorted(MODES))
    p.add_argument("--dirs", nargs="*", default=DEFAULT_DIRS)
    p.add_argument("--files", help="a file listing test files relative to --source, one a line")
    p.add_argument("--out", default="build/upstream")
    p.add_argument("--timeout", type=int, default=900, help="seconds per file")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--collect-only", action="store_true", help="import and collect only (fast)")
    p.add_argument("--min-pass-rate", type=float, default=None,
                   help="exit 1 when a mode's pass rate (of tests that ran) is below this percentage")  # fmt: skip
    args = p.parse_args()
    if args.release:
        args.source = fetch_release(args.release, args.download_dir, args.python)
    if not args.source:
        p.error("--source (or TILELANG_UPSTREAM_SRC) must name a checkout of TileLang's repository")
    source = Path(args.source).resolve()
    listed = None
    if args.files:
        text = Path(args.files).read_text().splitlines()
        listed = [ln.split("#")[0].strip() for ln in text if ln.split("#")[0].strip()]
    files = find_files(source, args.dirs, listed)
    missing = [f for f in files if not f.exists()]
    if missing:
        p.error(f"not in {source}: {', '.join(str(m.relative_to(source)) for m in missing)}")
    if not files:
        p.error(f"no test_*.py under {', '.join(args.dirs)} in {source} "
                "(directories are relative to it: testing/python/language, examples/gemm ...)")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for mode in args.mode or ["sm80"]:
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(run_file, f, mode, args, source): f for f in files}
            results[mode] = {}
            # Taken as they finish, so a run stopped early keeps every file it finished.
            for fut in as_completed(futures):
                rel = str(futures[fut].relative_to(source))
                r = results[mode][rel] = fut.result()
                counts = collections.Counter(t["outcome"] for t in r["tests"])
                print(f"[{mode}] {rel}: {r['status']} {dict(counts)} {r['seconds']}s", flush=True)
                # Written after every file, so an interrupted run leaves its table so far.
                (out / "results.json").write_text(json.dumps(results, indent=1))
                write_table(results, out)
    print((out / "table.md").read_text())
    totals = mode_totals(results)
    total = sum(totals.values(), collections.Counter())
    failed = total["failed"] + total["import_error"] + total["crashed"] + total["timeout"]
    print(f"upstream: {total['passed']} passed, {failed} failed, {total['skipped']} skipped")
    if args.min_pass_rate is not None:
        for mode, t in totals.items():
            ran = t["passed"] + t["failed"] + t["import_error"]
            rate = 100 * t["passed"] / ran if ran else 0.0
            if rate < args.min_pass_rate or t["crashed"] or t["timeout"]:
                print(f"mode {mode}: pass rate {rate:.1f} % (minimum {args.min_pass_rate} %), "
                      f"{t['crashed']} crashed, {t['timeout']} timed out")  # fmt: skip
                sys.exit(1)


if __name__ == "__main__":
    main()
