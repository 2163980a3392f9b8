"""The kernel cache across processes (DESIGN §6, §9): concurrent writers, damaged
entries, read-only directories, compiler-version changes, deterministic keys,
switching the cache off, and `python -m tilelang cache` (stats / prune / clear)."""

import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.cache
import tilelang.language as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A fresh process: builds the tiny kernel(s) named on the command line (in that order),
# runs the first one and prints what the test needs as JSON.
WORKER = r"""
import hashlib, json, logging, sys
import numpy as np
import tilelang, tilelang.language as T

warnings = []
class Count(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(record.getMessage())
logging.getLogger("tilelang").addHandler(Count())

def make(name, scale):
    @T.prim_func
    def kernel(A: T.Tensor((37,), "float32"), B: T.Tensor((37,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(37):
                B[i] = A[i] * scale + 1.0
    kernel.core  # noqa
    return kernel

kernels, keys = {}, {}
for name in sys.argv[1].split(","):
    scale = {"a": 3.0, "b": 5.0, "c": 7.0}[name]
    func = make(name, scale)
    keys[name] = hashlib.sha256(
        tilelang._C.cache_key_material(func.core, "cpu", {}, []).encode()).hexdigest()
    if len(sys.argv) > 2 and sys.argv[2] == "keys-only":
        continue
    kernels[name] = tilelang.compile(func, out_idx=-1, target="cpu")
    assert kernels[name].cache_key == keys[name]
a = np.linspace(-1.0, 1.0, 37, dtype=np.float32)
first = sys.argv[1].split(",")[0]
out = kernels[first](a).tolist() if kernels else None
print(json.dumps({"keys": keys, "out": out, "builds": tilelang._C.compile_count(),
                  "warnings": warnings}))
"""


_worker_file = None


def worker():
    """WORKER saved to a file (kernels must come from a file that the frontend can read)."""
    global _worker_file
    if _worker_file is None:
        import tempfile

        fd, _worker_file = tempfile.mkstemp(prefix="tilelang_cache_worker_", suffix=".py")
        with os.fdopen(fd, "w") as f:
            f.write(WORKER)
        os.chmod(_worker_file, 0o644)
    return _worker_file


def worker_env(cache_dir, **extra):
    env = dict(os.environ)
    env["TILELANG_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = (
        os.path.dirname(os.path.dirname(tilelang.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    )
    env.pop("TILELANG_CACHE_SALT", None)
    env.pop("TILELANG_DISABLE_CACHE", None)
    env.update(extra)
    return env


def run_worker(cache_dir, kernels="a", *flags, **env):
    proc = subprocess.run(
        [sys.executable, worker(), kernels, *flags],
        env=worker_env(cache_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    """The kernels' entries (the prelude entries aside: prelude_entries)."""
    kernels = os.path.join(cache_dir, "kernels")
    if not os.path.isdir(kernels):
        return []
    return sorted(
        d for d in os.listdir(kernels) if not os.path.exists(os.path.join(kernels, d, "prelude.h"))
    )


def prelude_entries(cache_dir):
    """The host compiler's prelude entries: a precompiled header, and for the
    emulators their runtime object (driver/cpu/prelude_entry.h)."""
    kernels = os.path.join(cache_dir, "kernels")
    if not os.path.isdir(kernels):
        return []
    return sorted(
        d for d in os.listdir(kernels) if os.path.exists(os.path.join(kernels, d, "prelude.h"))
    )


def correct(out, scale):
    a = np.linspace(-1.0, 1.0, 37, dtype=np.float64)
    return out is not None and np.allclose(out, a * scale + 1.0, rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def concurrent_run(tmp_path_factory):
    """8 fresh processes compiling one kernel into one empty cache directory at once."""
    cache = tmp_path_factory.mktemp("concurrent")
    procs = [
        subprocess.Popen(
            [sys.executable, worker(), "a"],
            env=worker_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return cache, results


def test_eight_processes_compiling_one_kernel_agree(concurrent_run):
    cache, results = concurrent_run
    assert correct(results[0]["out"], 3.0)
    assert all(r["out"] == results[0]["out"] for r in results)
    assert len({r["keys"]["a"] for r in results}) == 1
    assert all(r["warnings"] == [] for r in results)
    # One published entry, no staging or trash left behind.
    assert entries(cache) == [results[0]["keys"]["a"]]


def test_damaged_entries_rebuild_and_salt_never_serves_stale(tmp_path):
    first = run_worker(tmp_path)
    assert first["builds"] == 1 and correct(first["out"], 3.0)
    folder = os.path.join(tmp_path, "kernels", first["keys"]["a"])
    os.utime(folder, (1000, 1000))
    assert run_worker(tmp_path)["builds"] == 0  # a disk hit in a fresh process ...
    assert os.path.getmtime(folder) > 1000  # ... refreshes the entry's time (for prune)
    # Truncate every file of every entry.
    for entry in entries(tmp_path):
        folder = os.path.join(tmp_path, "kernels", entry)
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), "r+b") as f:
                f.truncate(max(0, os.path.getsize(f.name) // 3))
    rebuilt = run_worker(tmp_path)
    assert rebuilt["builds"] == 1 and correct(rebuilt["out"], 3.0)
    # Another compiler version (the salt stands in for a rebuilt compiler): a new entry.
    salted = run_worker(tmp_path, TILELANG_CACHE_SALT="other")
    assert salted["builds"] == 1 and correct(salted["out"], 3.0)
    assert salted["keys"]["a"] != first["keys"]["a"]
    assert sorted(entries(tmp_path)) == sorted([first["keys"]["a"], salted["keys"]["a"]])


def test_keys_do_not_depend_on_build_order(tmp_path):
    # The worker checks that a compiled kernel's key is this one (see the test above).
    forward = run_worker(tmp_path, "a,b,c", "keys-only")
    backward = run_worker(tmp_path, "c,b,a", "keys-only")
    assert backward["keys"] == forward["keys"]
    assert len(set(forward["keys"].values())) == 3


def read_only(cache, argv):
    """`argv` run so that `cache` is read-only for it. Root ignores permission bits, so
    as root the directory is bind-mounted read-only in a private mount namespace."""
    if os.geteuid() != 0:
        cache.chmod(0o555)
        return argv
    usable = shutil.which("unshare") is not None
    if usable:
        usable = (
            subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False).returncode
            == 0
        )
    if not usable:
        pytest.skip("running as root without mount namespaces: no way to make a read-only dir")
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(cache), *argv]


def test_read_only_cache_dir_still_works_and_warns_once(tmp_path, concurrent_run):
    cache = tmp_path / "ro"
    shutil.copytree(concurrent_run[0], cache)  # holds kernel 'a': still served read-only
    proc = subprocess.run(
        read_only(cache, [sys.executable, worker(), "a,b"]),
        env=worker_env(cache),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert correct(result["out"], 3.0) and result["builds"] == 1  # 'a' hit, 'b' built
    assert len(result["warnings"]) == 1, result["warnings"]
    assert "is not writable" in result["warnings"][0] and str(cache) in result["warnings"][0]
    assert entries(cache) == [result["keys"]["a"]]


def tiny(scale):
    @T.prim_func
    def tiny_kernel(A: T.Tensor((5,), "float32"), B: T.Tensor((5,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(5):
                B[i] = A[i] * scale

    return tiny_kernel


def test_disabling_the_cache_compiles_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.arange(5, dtype=np.float32) + 0.5
    k1 = tilelang.compile(tiny(1.25), out_idx=-1, target="cpu")
    before = tilelang._C.compile_count()
    assert tilelang.compile(tiny(1.25), out_idx=-1, target="cpu").kernel is k1.kernel  # memory hit
    assert tilelang._C.compile_count() == before
    tilelang.disable_cache()
    try:
        k2 = tilelang.compile(tiny(1.25), out_idx=-1, target="cpu")
    finally:
        tilelang.enable_cache()
    assert tilelang._C.compile_count() == before + 1
    assert not k2.kernel.artifact_dir.startswith(str(tmp_path))
    np.testing.assert_array_equal(k2(a), a * np.float32(1.25))
    assert entries(tmp_path) == [k1.cache_key]


def test_stats_prune_clear(tmp_path, monkeypatch, capsys):
    from tilelang.__main__ import main

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    keys = [tilelang.compile(tiny(s), target="cpu").cache_key for s in (2.0, 3.0)]
    # The precompiled header's entry (with g++) counts as any other; this test counts kernels.
    for d in prelude_entries(tmp_path):
        shutil.rmtree(os.path.join(tmp_path, "kernels", d))
    stats = tilelang.cache.stats()
    assert stats["entries"] == 2 and stats["dir"] == str(tmp_path) and stats["bytes"] > 0
    # The first entry was used last: the second is the least recently used.
    for i, key in enumerate([keys[1], keys[0]]):
        os.utime(os.path.join(tmp_path, "kernels", key), (1000 + i, 1000 + i))
    cli = [sys.executable, "-m", "tilelang", "cache"]
    out = subprocess.run(
        cli + ["stats"],
        env=worker_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "entries: 2" in out.stdout and f"dir: {tmp_path}" in out.stdout
    assert main(["cache", "prune", "--max-size", str(stats["bytes"] * 3 // 4)]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert entries(tmp_path) == [keys[0]]
    with pytest.raises(SystemExit):
        main(["cache", "prune"])
    assert "prune needs --max-size" in capsys.readouterr().err
    assert (
        tilelang.cache.parse_size("1G") == 1 << 30
        and tilelang.cache.parse_size("500M") == 500 << 20
    )
    with pytest.raises(ValueError, match="cannot read the size 'lots'"):
        tilelang.cache.parse_size("lots")
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert entries(tmp_path) == [] and os.path.isdir(os.path.join(tmp_path, "kernels"))


# ---- the emulator's runtime entry (device/emu/emu_core.h, TL_EMU_RUNTIME_SPLIT)


def emulated_scale(scale):
    @T.prim_func
    def emulated_scale_kernel(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            S = T.alloc_shared((64,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx] * scale
            T.sync_threads()
            B[tx] = S[63 - tx]

    return emulated_scale_kernel


def runtime_entries(cache_dir):
    return sorted(d.name for d in (cache_dir / "kernels").iterdir() if (d / "runtime.o").exists())


def header_entries(cache_dir):
    """The cpu target's prelude entries: a precompiled tl_cpu.h, no object."""
    return [d for d in prelude_entries(cache_dir) if d not in runtime_entries(cache_dir)]


needs_gcc = pytest.mark.skipif(
    not tilelang._C.host_compiler_is_gcc(), reason="precompiled headers are built with g++ only"
)


@needs_gcc
def test_cpu_kernels_share_one_precompiled_header_per_flag_set(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.arange(5, dtype=np.float32) + 0.5
    k1 = tilelang.compile(tiny(4.25), out_idx=-1, target="cpu")
    np.testing.assert_array_equal(k1(a), a * np.float32(4.25))
    (header,) = header_entries(tmp_path)
    files = set(os.listdir(tmp_path / "kernels" / header))
    assert {"prelude.h", "prelude.h.gch", "manifest.txt"} <= files and "runtime.o" not in files
    assert (tmp_path / "kernels" / header / "prelude.h").read_text() == '#include "tl_cpu.h"\n'
    assert not {"prelude.h", "prelude.h.gch"} & set(os.listdir(k1.kernel.artifact_dir))

    k2 = tilelang.compile(tiny(5.25), out_idx=-1, target="cpu")
    np.testing.assert_array_equal(k2(a), a * np.float32(5.25))
    assert header_entries(tmp_path) == [header] and len(entries(tmp_path)) == 2

    # The user's flags get their own header: g++ uses a precompiled one only when the
    # macros and code options match.
    k3 = tilelang.compile(
        tiny(6.25), out_idx=-1, target="cpu", compile_flags=["-DTL_TEST_UNUSED=2"]
    )
    np.testing.assert_array_equal(k3(a), a * np.float32(6.25))
    assert len(header_entries(tmp_path)) == 2


def test_prepare_host_compiler_builds_the_entry_kernels_use(tmp_path, monkeypatch):
    """What the autotuner calls before timing its compiles: the entry exists before
    the first kernel, which then builds none of its own."""
    from tilelang.jit.kernel import prepare_host_compiler

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    target = "cuda -arch=sm_80 -emulate"
    prepare_host_compiler(target)
    (runtime,) = runtime_entries(tmp_path)
    assert entries(tmp_path) == []
    k = tilelang.compile(emulated_scale(11.5), out_idx=-1, target=target)
    a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    np.testing.assert_array_equal(k(a), (a * np.float32(11.5))[::-1])
    assert runtime_entries(tmp_path) == [runtime] and len(entries(tmp_path)) == 1
    assert prepare_host_compiler(target) < 0.5  # there already: checked, not rebuilt

    prepare_host_compiler("cpu", "-DTL_TEST_UNUSED=3")  # a string of flags, as compile takes
    assert len(header_entries(tmp_path)) == (1 if tilelang._C.host_compiler_is_gcc() else 0)
    tilelang.disable_cache()
    try:
        prepare_host_compiler("cpu", ["-DTL_TEST_UNUSED=4"])  # no cache: nothing to build
    finally:
        tilelang.enable_cache()
    assert len(prelude_entries(tmp_path)) == len(runtime_entries(tmp_path)) + len(
        header_entries(tmp_path)
    )
    assert len(header_entries(tmp_path)) <= 1


@needs_gcc
def test_a_prelude_that_fails_to_build_leaves_the_kernel_to_build_alone(tmp_path):
    """A host compiler that refuses the precompiled header (here a wrapper around c++
    that fails on -x c++-header): the kernel still builds, against the headers, with a
    warning, and no entry is left behind."""
    wrapper = tmp_path / "cxx"
    real = os.environ.get("TILELANG_CXX") or os.environ.get("CXX") or "c++"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" c++-header "*) echo "no precompiled headers here" >&2; exit 1;; esac\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    script = (
        "import logging, numpy as np, tilelang, tilelang.language as T\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor((5,), 'float32'), B: T.Tensor((5,), 'float32')):\n"
        "    with T.Kernel(1, threads=1):\n"
        "        for i in T.serial(5):\n"
        "            B[i] = A[i] * 3.0\n"
        "a = np.arange(5, dtype=np.float32)\n"
        "assert (tilelang.compile(k, out_idx=-1, target='cpu')(a) == a * 3).all()\n"
        "print('ok')\n"
    )
    cache = tmp_path / "cache"
    (tmp_path / "kernel.py").write_text(script)  # kernels are read from their file
    out = subprocess.run(
        [sys.executable, str(tmp_path / "kernel.py")],
        env=worker_env(cache, TILELANG_CXX=str(wrapper)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
    assert "prelude entry failed; compiling against the headers alone" in out.stderr, out.stderr
    assert "no precompiled headers here" in out.stderr
    assert prelude_entries(cache) == [] and len(entries(cache)) == 1


@needs_gcc
@needs_gcc
def test_a_kernel_that_does_not_compile_reports_its_own_error_once(tmp_path, monkeypatch, caplog):
    # The entry is sound and the kernel is not: the compiler's error is raised once,
    # with no warning blaming the entry.
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))

    @T.prim_func
    def calls_nothing_real(A: T.Tensor((8,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(8):
                A[i] = T.call_extern("float32", "tl_no_such_function", A[i])

    tilelang.compile(tiny(1.5), out_idx=-1, target="cpu")  # the entry, built and sound
    with pytest.raises(tilelang.TileLangError) as err:  # the kernel's own call: the user's error
        tilelang.compile(calls_nothing_real, target="cpu")
    assert "brings code of its own (calls of tl_no_such_function)" in str(err.value)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("prelude entry" in m for m in warned), warned
    assert len(header_entries(tmp_path)) == 1


def test_a_damaged_or_removed_precompiled_header_still_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.arange(5, dtype=np.float32) + 0.5
    tilelang.compile(tiny(7.25), out_idx=-1, target="cpu")
    (header,) = header_entries(tmp_path)
    # Damaged after this process checked it: g++ finds no valid precompiled header
    # and reads prelude.h, which includes tl_cpu.h.
    (tmp_path / "kernels" / header / "prelude.h.gch").write_bytes(b"not a precompiled header")
    k = tilelang.compile(tiny(8.25), out_idx=-1, target="cpu")
    np.testing.assert_array_equal(k(a), a * np.float32(8.25))
    # Removed (a prune): rebuilt on the next compile.
    shutil.rmtree(tmp_path / "kernels" / header)
    k = tilelang.compile(tiny(9.25), out_idx=-1, target="cpu")
    np.testing.assert_array_equal(k(a), a * np.float32(9.25))
    (rebuilt,) = header_entries(tmp_path)
    assert (tmp_path / "kernels" / rebuilt / "prelude.h.gch").read_bytes()[:4] == b"gpch"


def test_emulated_kernels_share_one_runtime_entry_per_flag_set(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    target = "cuda -arch=sm_80 -emulate"
    k1 = tilelang.compile(emulated_scale(1.5), out_idx=-1, target=target)
    np.testing.assert_array_equal(k1(a), (a * np.float32(1.5))[::-1])
    (runtime,) = runtime_entries(tmp_path)
    files = set(os.listdir(tmp_path / "kernels" / runtime))
    assert {"prelude.h", "runtime.cpp", "runtime.o", "manifest.txt"} <= files
    # The kernel links the runtime: its own entry holds none of the runtime's files.
    assert not {"prelude.h", "prelude.h.gch", "runtime.o"} & set(os.listdir(k1.kernel.artifact_dir))

    k2 = tilelang.compile(emulated_scale(2.5), out_idx=-1, target=target)
    np.testing.assert_array_equal(k2(a), (a * np.float32(2.5))[::-1])
    assert runtime_entries(tmp_path) == [runtime]
    assert len(entries(tmp_path)) == 2  # the kernels'; the runtime is a prelude entry

    # The user's flags build their own runtime: a macro may change what it compiles to.
    k3 = tilelang.compile(
        emulated_scale(3.5), out_idx=-1, target=target, compile_flags=["-DTL_TEST_UNUSED=1"]
    )
    np.testing.assert_array_equal(k3(a), (a * np.float32(3.5))[::-1])
    assert len(runtime_entries(tmp_path)) == 2


def test_a_damaged_or_removed_runtime_entry_is_rebuilt(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    target = "cuda -arch=sm_80 -emulate"
    tilelang.compile(emulated_scale(4.5), out_idx=-1, target=target)
    (runtime,) = runtime_entries(tmp_path)
    obj = tmp_path / "kernels" / runtime / "runtime.o"

    # Damaged after this process checked it: the kernel is built against the headers
    # alone, with a warning, and the next one checks the entry again and rebuilds it.
    obj.write_bytes(b"not an object file")
    k = tilelang.compile(emulated_scale(5.5), out_idx=-1, target=target)
    np.testing.assert_array_equal(k(a), (a * np.float32(5.5))[::-1])
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("failed to build a kernel, which built without it" in m for m in warned), warned
    k = tilelang.compile(emulated_scale(6.5), out_idx=-1, target=target)
    np.testing.assert_array_equal(k(a), (a * np.float32(6.5))[::-1])
    (rebuilt,) = runtime_entries(tmp_path)
    assert (tmp_path / "kernels" / rebuilt / "runtime.o").read_bytes()[:4] == b"\x7fELF"

    # Removed (a prune): rebuilt on the next emulated compile.
    shutil.rmtree(tmp_path / "kernels" / rebuilt)
    k = tilelang.compile(emulated_scale(7.5), out_idx=-1, target=target)
    np.testing.assert_array_equal(k(a), (a * np.float32(7.5))[::-1])
    assert len(runtime_entries(tmp_path)) == 1


def test_kernels_without_the_disk_cache_need_no_prelude_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    tilelang.disable_cache()
    try:
        for target in ("cuda -arch=sm_80 -emulate", "metal -emulate"):
            k = tilelang.compile(emulated_scale(8.5), out_idx=-1, target=target)
            np.testing.assert_array_equal(k(a), (a * np.float32(8.5))[::-1])
        k = tilelang.compile(tiny(10.25), out_idx=-1, target="cpu")
        np.testing.assert_array_equal(k(a[:5]), a[:5] * np.float32(10.25))
    finally:
        tilelang.enable_cache()
    assert not (tmp_path / "kernels").exists() or os.listdir(tmp_path / "kernels") == []


def test_a_failed_build_leaves_no_staging_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))

    # Refused inside the build (the lowering for the target), after its staging
    # directory was made.
    @T.prim_func
    def hopper_only(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):  # noqa: SIM117 - a T.ws region inside the kernel
            with T.ws(0):
                for i in T.Parallel(128):
                    B[i] = A[i]

    with pytest.raises(tilelang.TileLangError, match="T.ws needs sm_90"):
        tilelang.compile(hopper_only, out_idx=[-1], target="cuda -arch=sm_80 -emulate")
    assert entries(tmp_path) == []


# ---- who may write the cache (docs/design/reliability.md, "Cache and build directories")


def run_worker_with(cache_env, kernels="a", umask=None, **extra):
    """run_worker with the environment `cache_env` (a dict) and an optional umask."""
    env = worker_env("unused", **extra)
    env.pop("TILELANG_CACHE_DIR")
    env.update(cache_env)
    proc = subprocess.run(
        [sys.executable, worker(), kernels],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cache_is_private_whatever_the_umask(tmp_path):
    cache = tmp_path / "made" / "cache"
    result = run_worker_with({"TILELANG_CACHE_DIR": str(cache)}, "a", umask=0)
    assert correct(result["out"], 3.0) and result["warnings"] == []
    modes = {"made": (tmp_path / "made").lstat().st_mode & 0o7777}
    for folder, dirs, files in os.walk(tmp_path / "made"):
        for name in dirs + files:
            path = os.path.join(folder, name)
            modes[os.path.relpath(path, tmp_path)] = os.lstat(path).st_mode & 0o7777
    assert modes["made"] == 0o700 and modes["made/cache"] == 0o700, modes
    assert modes["made/cache/hmac.key"] == 0o600
    (entry,) = entries(cache)
    assert modes[f"made/cache/kernels/{entry}/kernel.so"] == 0o600
    assert {m for p, m in modes.items() if os.path.isdir(tmp_path / p)} == {0o700}, modes
    assert {m for p, m in modes.items() if not os.path.isdir(tmp_path / p)} == {0o600}, modes


def test_no_home_uses_a_private_temporary_directory_and_says_so(tmp_path):
    env = {"TMPDIR": str(tmp_path)}
    result = run_worker_with(env, "a", HOME="", XDG_CACHE_HOME="")
    assert correct(result["out"], 3.0) and result["builds"] == 1
    (warning,) = result["warnings"]
    assert "neither TILELANG_CACHE_DIR, XDG_CACHE_HOME nor HOME is set" in warning
    assert f"the private directory {tmp_path}/tilelang-cpp-cache-" in warning
    assert "removed when it exits" in warning
    assert os.listdir(tmp_path) == []  # gone with the process
    assert not os.path.exists("/tmp/tilelang-cpp-cache")


def untrusted_root(tmp_path, kind):
    root = tmp_path / kind
    if kind == "mode-0777":
        root.mkdir()
        root.chmod(0o777)
        return root, "it is writable by its group or by others (mode 0777)"
    if kind == "symlink":
        (tmp_path / "target").mkdir()
        root.symlink_to(tmp_path / "target")
        return root, "it is a symbolic link"
    if os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    root.mkdir()
    os.chown(root, 12345, 12345)
    return root, "it belongs to uid 12345, not to the current user (uid 0)"


@pytest.mark.parametrize("kind", ["mode-0777", "symlink", "foreign-owner"])
def test_a_cache_root_others_can_write_is_not_used(tmp_path, kind):
    root, why = untrusted_root(tmp_path, kind)
    before = sorted(os.listdir(root))
    spare = tmp_path / "tmp"
    spare.mkdir()
    result = run_worker_with({"TILELANG_CACHE_DIR": str(root), "TMPDIR": str(spare)}, "a")
    assert correct(result["out"], 3.0) and result["builds"] == 1
    (warning,) = result["warnings"]
    assert f"the kernel cache directory {root} is not used: {why}" in warning, warning
    assert f"in the private directory {spare}/tilelang-cpp-cache-" in warning, warning
    assert sorted(os.listdir(root)) == before  # nothing written there
    assert os.listdir(spare) == []  # the private directory went with the process


def test_an_entry_copied_from_another_key_or_with_a_swapped_file_is_rebuilt(tmp_path):
    both = run_worker(tmp_path, "a,b")
    assert both["builds"] == 2
    kernels = tmp_path / "kernels"
    a, b = kernels / both["keys"]["a"], kernels / both["keys"]["b"]
    # b's entry replaced by a copy of a's (a sound entry of another key).
    shutil.rmtree(b)
    shutil.copytree(a, b)
    rebuilt = run_worker(tmp_path, "b")
    assert rebuilt["builds"] == 1 and correct(rebuilt["out"], 5.0)
    # The libraries of a and b swapped: each is another key's.
    so_a, so_b = (a / "kernel.so").read_bytes(), (b / "kernel.so").read_bytes()
    (a / "kernel.so").write_bytes(so_b)
    (b / "kernel.so").write_bytes(so_a)
    first = run_worker(tmp_path, "a")
    assert first["builds"] == 1 and correct(first["out"], 3.0)
    second = run_worker(tmp_path, "b")
    assert second["builds"] == 1 and correct(second["out"], 5.0)
    assert run_worker(tmp_path, "a,b")["builds"] == 0


def resign(entry, secret):
    """Rewrites `entry`'s manifest for its present files, as the cache would: the
    entry is then consistent, whatever its files hold."""
    import hmac

    key = entry.name

    def mac(data):
        return hmac.new(secret, data, "sha256").hexdigest()

    lines = ["tilelang-cache-entry 2", f"key {key}"]
    for name in sorted(os.listdir(entry)):
        if name == "manifest.txt":
            continue
        data = (entry / name).read_bytes()
        digest = mac(key.encode() + b"\0" + name.encode() + b"\0" + data)
        lines.append(f"file {digest} {len(data)} {name}")
    body = "\n".join(lines) + "\n"
    (entry / "manifest.txt").write_text(body + f"mac {mac(body.encode())}\n")


def test_an_entry_that_passes_its_check_but_fails_to_load_is_removed_and_rebuilt(tmp_path):
    first = run_worker(tmp_path, "a")
    entry = tmp_path / "kernels" / first["keys"]["a"]
    secret = (tmp_path / "hmac.key").read_bytes()
    # The manifest the cache wrote is what resign writes: the check reads it as sound.
    written = (entry / "manifest.txt").read_text()
    resign(entry, secret)
    assert (entry / "manifest.txt").read_text() == written
    (entry / "kernel.so").write_bytes(b"not a shared library, " * 40)
    resign(entry, secret)
    rebuilt = run_worker(tmp_path, "a")
    assert rebuilt["builds"] == 1 and correct(rebuilt["out"], 3.0)
    (warning,) = rebuilt["warnings"]
    assert f"the cache entry {entry} failed to load (cannot load kernel library" in warning, warning
    assert "removed and rebuilt" in warning
    assert (entry / "kernel.so").read_bytes()[:4] == b"\x7fELF"
    again = run_worker(tmp_path, "a")  # later processes hit the rebuilt entry
    assert again["builds"] == 0 and again["warnings"] == [] and correct(again["out"], 3.0)


def test_build_directories_without_the_disk_cache_are_private_and_unpredictable(tmp_path):
    import re

    tilelang.disable_cache()
    try:
        kernels = [tilelang.compile(tiny(s), out_idx=-1, target="cpu") for s in (11.5, 11.5)]
    finally:
        tilelang.enable_cache()
    dirs = [k.kernel.artifact_dir for k in kernels]
    assert dirs[0] != dirs[1]  # same kernel, same process: still two fresh directories
    for d in dirs:
        # mkdtemp's random tail, not the process id and a counter.
        assert re.fullmatch(r"tilelang-build-[0-9a-f]{16}-[A-Za-z0-9]{6}", os.path.basename(d)), d
        assert os.lstat(d).st_mode & 0o777 == 0o700
    a = np.arange(5, dtype=np.float32) + 0.5
    np.testing.assert_array_equal(kernels[1](a), a * np.float32(11.5))


# ---- bounded resources: the in-memory cache unloads what it evicts

MANY_KERNELS = r"""
import gc, json, sys
import numpy as np
import tilelang, tilelang.language as T

def make(scale):
    @T.prim_func
    def many_kernel(A: T.Tensor((7,), "float32"), B: T.Tensor((7,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(7):
                B[i] = A[i] * scale
    return many_kernel

def mapped_libraries():
    with open("/proc/self/maps") as f:
        return len({line.split()[-1] for line in f if line.rstrip().endswith("kernel.so")})

a = np.linspace(-1.0, 1.0, 7, dtype=np.float32)
kept = tilelang.compile(make(0.5), out_idx=-1, target="cpu")  # a user holds this one
ok, counts = True, []
for i in range(int(sys.argv[1])):
    scale = 1.0 + i / 64
    k = tilelang.compile(make(scale), out_idx=-1, target="cpu")
    ok = ok and bool(np.allclose(k(a), a.astype(np.float64) * scale, rtol=1e-6))
    del k
    # A dropped PrimFunc and its kernel are a cycle (the PrimFunc's compile memo holds
    # the kernel, the kernel its PrimFunc): count after the cycle collector ran, or
    # the count depends on when it last did.
    gc.collect()
    counts.append(mapped_libraries())
builds = tilelang._C.compile_count()
again = tilelang.compile(make(1.0), out_idx=-1, target="cpu")  # evicted long ago: a disk hit
ok = ok and bool(np.allclose(again(a), a, rtol=1e-6))
ok = ok and bool(np.allclose(kept(a), a.astype(np.float64) * 0.5, rtol=1e-6))
print(json.dumps({"ok": ok, "counts": counts, "held": tilelang._C.memory_cache_size(),
                  "rebuilt": tilelang._C.compile_count() - builds}))
"""


def test_many_distinct_kernels_keep_a_bounded_number_of_libraries_mapped(tmp_path):
    script = tmp_path / "many_kernels.py"
    script.write_text(MANY_KERNELS)
    proc = subprocess.run(
        [sys.executable, str(script), "40"],
        env=worker_env(tmp_path / "cache", TILELANG_MEMORY_CACHE_MAX_KERNELS="8"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"]
    # 8 in the memory cache and the one a user holds: never more, however many were made
    # (five times the cap here).
    assert len(result["counts"]) == 40
    assert max(result["counts"]) <= 9, result["counts"]
    assert result["counts"][-1] == 9
    assert result["held"] == 8
    assert result["rebuilt"] == 0


def test_a_jit_function_keeps_a_bounded_number_of_specializations(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_MEMORY_CACHE_MAX_KERNELS", "3")

    @tilelang.jit(out_idx=-1, target="cpu")
    def scaled(scale):
        return tiny(scale)

    a = np.arange(5, dtype=np.float32) + 0.25
    first = scaled(1.75)
    for s in (2.75, 3.75, 4.75, 5.75):
        np.testing.assert_array_equal(scaled(s)(a), a * np.float32(s))
    assert len(scaled._kernel_cache) == 3 and tilelang._C.memory_cache_size() <= 3
    builds = tilelang._C.compile_count()
    again = scaled(1.75)  # dropped by both caches: loaded again from the disk
    assert again is not first and tilelang._C.compile_count() == builds
    np.testing.assert_array_equal(again(a), a * np.float32(1.75))
    np.testing.assert_array_equal(first(a), a * np.float32(1.75))  # its user's copy still runs


def test_the_disk_cap_prunes_prelude_entries_too(tmp_path):
    """TILELANG_CACHE_MAX_SIZE below one entry: each publication prunes every other
    entry, the precompiled header's and the emulator runtime's included, and the kernels
    still build and run."""
    script = tmp_path / "capped.py"
    script.write_text(
        "import json, numpy as np, tilelang, tilelang.language as T\n"
        "a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)\n"
        "outs = []\n"
        "for s in (1.5, 2.5):\n"
        "    @T.prim_func\n"
        "    def k(A: T.Tensor((64,), 'float32'), B: T.Tensor((64,), 'float32')):\n"
        "        with T.Kernel(1, threads=64) as _:\n"
        "            tx = T.get_thread_binding()\n"
        "            B[tx] = A[tx] * s\n"
        "    for target in ('cpu', 'cuda -arch=sm_80 -emulate'):\n"
        "        outs.append(bool((tilelang.compile(k, out_idx=-1, target=target)(a) == a * np.float32(s)).all()))\n"
        "print(json.dumps(outs))\n"
    )
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [sys.executable, str(script)],
        env=worker_env(cache, TILELANG_CACHE_MAX_SIZE="1K"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [True] * 4
    assert prelude_entries(cache) == [] and len(entries(cache)) == 1  # the last kernel's
