"""`python -m tilelang doctor` run as a user runs it: its sections, what it says of
each target, of the cache directory and of shadowing packages, and its exit status
(1 only when the default target cannot run kernels here, a refused cache counting as
that); `python -m tilelang --include-dir` and the generated CUDA source that names it."""

import os
import subprocess
import sys

import tilelang
import tilelang.language as T
from tilelang.utils.target import has_cuda_device

PACKAGE_PARENT = os.path.dirname(os.path.dirname(tilelang.__file__))


def run_cli(*args, cache_dir, extra_path=(), **extra):
    env = dict(os.environ)
    for name in (
        "TILELANG_EMULATE",
        "TILELANG_DEFAULT_TARGET",
        "TILELANG_DISABLE_CACHE",
        "TILELANG_CXX",
    ):
        env.pop(name, None)
    env["TILELANG_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT, *map(str, extra_path)])
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "tilelang", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def line_of(out, name):
    """The report line `  <name>  <value>`, as its value."""
    for line in out.splitlines():
        if line.startswith(f"  {name} "):
            return line[len(name) + 2 :].strip()
    raise AssertionError(f"no line {name!r} in:\n{out}")


def private_dir(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700, parents=True)
    os.chmod(d, 0o700)
    return d


def test_doctor_reports_every_section_and_exits_0_here(tmp_path):
    proc = run_cli("doctor", cache_dir=private_dir(tmp_path))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for section in ("versions", "targets", "cache", "device headers", "shadowing"):
        assert f"\n{section}\n" in f"\n{out}", out
    assert line_of(out, "tilelang").startswith(f"{tilelang.__version__} (")
    assert line_of(out, "compiler core").startswith(f"{tilelang._C.core_version()} (")
    assert line_of(out, "python").startswith(".".join(map(str, sys.version_info[:3])))
    assert line_of(out, "cpu").startswith("usable: host compiler ")
    cuda = line_of(out, "cuda")
    if not has_cuda_device():  # this machine: no driver or no GPU, and doctor says which
        assert cuda.startswith("unusable: ") and ("no CUDA driver" in cuda or "no GPU" in cuda)
    assert line_of(out, "default").startswith(
        "cpu (detected), usable" if not has_cuda_device() else "cuda"
    )
    assert line_of(out, "usable") == "yes" and line_of(out, "mode") == "0700"
    assert line_of(out, "size") == "0 entries, 0 B"
    assert line_of(out, "cuda -I") == os.path.join(tilelang._C.device_include_dir(), "cuda")
    assert out.rstrip().endswith("the default target is usable")


def test_doctor_exits_1_on_a_cache_directory_others_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    proc = run_cli("doctor", cache_dir=shared)
    assert proc.returncode == 1, proc.stdout
    assert line_of(proc.stdout, "mode") == "0777"
    assert line_of(proc.stdout, "usable") == (
        "no: it is writable by its group or by others (mode 0777)"
    )
    assert "problems: the default target is unusable (exit status 1)" in proc.stdout
    assert f"the cache directory {shared} is refused" in proc.stdout


def test_doctor_exits_1_on_a_cache_directory_of_another_user(tmp_path):
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        owner = 65534
    else:
        theirs, owner = "/", os.stat("/").st_uid  # root's
    proc = run_cli("doctor", cache_dir=theirs)
    assert proc.returncode == 1, proc.stdout
    assert line_of(proc.stdout, "usable") == (
        f"no: it belongs to uid {owner}, not to the current user (uid {os.geteuid()})"
    )


def test_doctor_names_a_key_file_others_can_read(tmp_path):
    d = private_dir(tmp_path)
    key = d / "hmac.key"
    key.write_bytes(os.urandom(32))
    os.chmod(key, 0o644)
    proc = run_cli("doctor", cache_dir=d)
    assert proc.returncode == 1, proc.stdout
    assert line_of(proc.stdout, "usable") == (
        f"no: its key file {key} is not a private 32-byte file of the current user"
    )


def test_a_refused_cache_directory_does_not_fail_with_the_cache_off(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    proc = run_cli("doctor", cache_dir=shared, TILELANG_DISABLE_CACHE="1")
    assert proc.returncode == 0, proc.stdout
    assert line_of(proc.stdout, "enabled") == "no (TILELANG_DISABLE_CACHE)"
    assert line_of(proc.stdout, "usable").startswith("no: it is writable by its group")


def test_doctor_exits_1_when_the_host_compiler_of_the_cpu_default_is_missing(tmp_path):
    missing = str(tmp_path / "no-such-c++")
    proc = run_cli(
        "doctor",
        cache_dir=private_dir(tmp_path),
        TILELANG_CXX=missing,
        TILELANG_DEFAULT_TARGET="cpu",
    )
    assert proc.returncode == 1, proc.stdout
    assert line_of(proc.stdout, "cpu").startswith(
        f"unusable: host compiler cannot run the host C++ compiler '{missing}'"
    )
    assert line_of(proc.stdout, "default") == "cpu (TILELANG_DEFAULT_TARGET), unusable"
    assert "  - the default target 'cpu' cannot run kernels here: cannot run" in proc.stdout


def test_doctor_exits_1_without_the_device_headers(tmp_path):
    proc = run_cli("doctor", cache_dir=private_dir(tmp_path), TILELANG_DEVICE_DIR=str(tmp_path))
    assert proc.returncode == 1, proc.stdout
    missing = f"TILELANG_DEVICE_DIR={tmp_path} does not hold the tilelang device headers"
    assert f"device headers\n  directory  missing: {missing}" in proc.stdout
    assert f"  - the device headers are missing: {missing}" in proc.stdout


def test_doctor_names_a_second_tilelang_and_a_real_tvm(tmp_path):
    other = tmp_path / "elsewhere"
    for package in ("tilelang", "tvm"):
        (other / package).mkdir(parents=True)
        (other / package / "__init__.py").write_text("raise ImportError('never imported')\n")
    proc = run_cli("doctor", cache_dir=private_dir(tmp_path), extra_path=[other])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        f"another package at {other / 'tilelang'} (this one comes first on sys.path)" in proc.stdout
    )
    assert line_of(proc.stdout, "tvm") == (
        f"a real TVM at {other / 'tvm' / '__init__.py'}: `import tvm` gives it, not tilelang.tvm"
    )


def test_include_dir_holds_the_header_generated_cuda_source_includes(tmp_path):
    proc = run_cli("--include-dir", cache_dir=private_dir(tmp_path))
    assert proc.returncode == 0, proc.stderr
    include_dir = proc.stdout.strip()
    assert os.path.isfile(os.path.join(include_dir, "tl_cuda.cuh"))
    device = run_cli("--device-dir", cache_dir=private_dir(tmp_path / "d")).stdout.strip()
    assert include_dir == os.path.join(device, "cuda")

    @T.prim_func
    def scale(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i] * 2.0

    source = tilelang.lower(scale, target="cuda -arch=sm_80").kernel_source
    lines = source.splitlines()
    assert lines[1] == (
        "// Needs -I <tilelang device dir>/cuda, printed by: python -m tilelang --include-dir"
    )
    assert lines[2] == '#include "tl_cuda.cuh"'


def test_include_dir_takes_no_command(tmp_path):
    proc = run_cli("--include-dir", "doctor", cache_dir=private_dir(tmp_path))
    assert proc.returncode == 2
    assert "--include-dir and --device-dir take no command" in proc.stderr
