"""Misconfigurations end in an error that names the cause: an invalid or unsupported
CUDA arch, an unknown target option, a malformed TILELANG_* environment value, a pass
config of the wrong type. Never an internal compiler error, never a value silently
read as something else. Cases that used to end the process run in a subprocess."""

import os
import subprocess
import sys

import pytest
import tilelang
import tilelang.language as T
from tilelang.autotuner.compile_pool import worker_count


def copy_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            i = T.get_thread_binding()
            B[i] = A[i]

    return main


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "cuda -arch=sm_9O -emulate",
            (
                "invalid CUDA arch 'sm_9O' in target 'cuda -arch=sm_9O -emulate'; expected sm_ and the "
                "compute capability, such as sm_80, sm_89, sm_90a or sm_100a"
            ),
        ),
        (
            "cuda -arch=compute_90",
            "invalid CUDA arch 'compute_90' in target 'cuda -arch=compute_90'; expected sm_",
        ),
        ("cuda -arch=", "invalid CUDA arch '' in target 'cuda -arch='"),
        (
            "cuda -arch=sm_70",
            "CUDA arch sm_70 in target 'cuda -arch=sm_70' is not supported: the oldest is sm_75",
        ),
        (
            "cuda -arch=sm_72 -emulate",
            "CUDA arch sm_72 in target 'cuda -arch=sm_72 -emulate' is not supported: the oldest is sm_75",
        ),
        (
            "cuda -arch=sm_80 -emulated",
            (
                "unknown target option '-emulated' in 'cuda -arch=sm_80 -emulated'; tilelang knows -arch=, "
                "-keys=, -emulate"
            ),
        ),
        ("cpu -bogus=1", "unknown target option '-bogus=1' in 'cpu -bogus=1'"),
    ],
)
def test_bad_targets_name_the_cause(target, message):
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(copy_kernel(), target=target)
    assert str(info.value).startswith(message)
    assert "internal compiler error" not in str(info.value)


@pytest.mark.skipif(
    "cuda" not in tilelang.utils.target.available_targets(),
    reason="NVRTC (libnvrtc.so) is not on this machine",
)
def test_an_arch_nvrtc_does_not_know_is_a_user_error():
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(copy_kernel(), target="cuda -arch=sm_130")
    assert str(info.value).startswith(
        "the CUDA toolkit's NVRTC cannot compile for sm_130 (it answered: nvrtc: error: invalid "
        "value for --gpu-architecture (-arch)); pick an arch it supports or a newer toolkit"
    )


def test_tvm_target_options_are_still_accepted():
    kernel = tilelang.compile(
        copy_kernel(), target="cuda -arch=sm_90a -max_num_threads=1024 -emulate"
    )
    assert "__global__" in kernel.get_kernel_source()


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("tl.enable_fast_math", "yes please", "a bool (True/False, or 1/0), got str 'yes please'"),
        ("tl.disable_warp_specialized", 2, "a bool (True/False, or 1/0), got int 2"),
        ("tl.config_index_bitwidth", 48, "32 or 64, got int 48"),
        ("tl.ptxas_register_usage_level", "high", "an int, got str 'high'"),
        ("tl.device_compile_flags", [1, 2], "a str or a list of str, got list [1, 2]"),
        ("tl.dump_ir_dir", 3, "a str, got int 3"),
    ],
)
def test_pass_config_values_are_type_checked(key, value, expected):
    with pytest.raises(TypeError) as info:
        tilelang.compile(copy_kernel(), target="cpu", pass_configs={key: value})
    assert str(info.value).split("\n")[0] == f"pass config {key!r} must be {expected}"


def test_pass_config_values_of_the_right_type_pass():
    import numpy as np

    kernel = tilelang.compile(
        copy_kernel(),
        target="cpu",
        pass_configs={"tl.enable_fast_math": 1, "tl.disable_warp_specialized": np.bool_(True)},
    )
    a = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


def _run_with_env(tmp_path, env, code):
    script = tmp_path / "script.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


COMPILE_AND_RUN = """
import numpy as np
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as bx:
        for i in T.serial(32):
            B[bx * 32 + i] = A[bx * 32 + i]

tilelang.disable_cache()
a = np.arange(64, dtype=np.float32)
b = np.zeros(64, np.float32)
try:
    tilelang.compile(main, target="cpu")(a, b)
except Exception as e:
    print(type(e).__name__, e)
"""


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        (
            "TILELANG_COMPILE_TIMEOUT_SECONDS",
            "abc",
            (
                "TileLangError TILELANG_COMPILE_TIMEOUT_SECONDS must be a whole number of seconds from 1 "
                "to 86400, got 'abc'"
            ),
        ),
        (
            "TILELANG_COMPILE_TIMEOUT_SECONDS",
            "-5",
            (
                "TileLangError TILELANG_COMPILE_TIMEOUT_SECONDS must be a whole number of seconds from 1 "
                "to 86400, got '-5'"
            ),
        ),
        (
            "TILELANG_CPU_THREADS",
            "-3",
            (
                "TileLangError TILELANG_CPU_THREADS must be an integer from 1 to 4096 (the threads that "
                "run CPU kernel blocks, the caller included), got '-3'"
            ),
        ),
    ],
)
def test_malformed_core_environment_values_name_the_variable(tmp_path, var, value, message):
    proc = _run_with_env(tmp_path, {var: value}, COMPILE_AND_RUN)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == message


@pytest.mark.parametrize("var", ["TILELANG_EMULATE", "TILELANG_DISABLE_CACHE"])
def test_malformed_switches_are_refused_at_import(tmp_path, var):
    proc = _run_with_env(tmp_path, {var: "ture"}, "import tilelang\n")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"ValueError: {var} must be 1, true, yes or on (or 0, false, no, off, empty), got 'ture'"
    )


def test_malformed_emulate_arch_names_the_variable(monkeypatch):
    monkeypatch.setattr(sys.modules["tilelang.env"], "_emulate", True)
    monkeypatch.setenv("TILELANG_EMULATE_ARCH", "hopper")
    with pytest.raises(ValueError, match="TILELANG_EMULATE_ARCH must be a CUDA arch such as sm_80"):
        tilelang.compile(copy_kernel(), target="cuda")


@pytest.mark.parametrize("value", ["-3", "0", "many"])
def test_malformed_autotuning_cpu_counts(monkeypatch, value):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", value)
    with pytest.raises(ValueError) as info:
        worker_count(8)
    assert str(info.value).split("\n")[0] == (
        f"TILELANG_AUTO_TUNING_CPU_COUNTS must be a positive integer, got {value!r}"
    )


def test_unwritable_dump_directory_names_the_path(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    proc = _run_with_env(tmp_path, {"TILELANG_DUMP_IR": f"{not_a_dir}/dump"}, COMPILE_AND_RUN)
    assert proc.stdout.strip() == (
        f"TileLangError TILELANG_DUMP_IR={not_a_dir}/dump: cannot write {not_a_dir}/dump/main.input.py "
        "(Not a directory); give an existing, writable directory, or 1 to print to stderr"
    )


def test_unusable_temporary_directory_names_tmpdir(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    proc = _run_with_env(
        tmp_path, {"TMPDIR": str(not_a_dir), "TILELANG_DISABLE_CACHE": "1"}, COMPILE_AND_RUN
    )
    assert proc.stdout.strip() == (
        f"TileLangError no temporary directory to build the kernel in: Not a directory "
        f"(TMPDIR={not_a_dir}); point TMPDIR at a writable directory"
    )


@pytest.mark.parametrize("cause", ["No space left on device", "Read-only file system"])
def test_a_full_or_read_only_disk_is_named_not_an_internal_error(tmp_path, cause):
    """The host compiler's own failure to write (a full disk, a read-only mount) is the
    machine's, reported as such; a stand-in compiler fails the way gcc does then."""
    compiler = tmp_path / "cxx"
    compiler.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--version*|*-dumpversion*) echo "stand-in 1.0"; exit 0;; esac\n'
        f'echo "/usr/bin/ld: final link failed: {cause}" >&2\n'
        "exit 1\n"
    )
    compiler.chmod(0o755)
    proc = _run_with_env(
        tmp_path, {"TILELANG_CXX": str(compiler), "TILELANG_DISABLE_CACHE": "1"}, COMPILE_AND_RUN
    )
    out = proc.stdout.strip()
    assert out.startswith("TileLangError the host compiler could not build the kernel in ")
    assert (
        f": {cause}; free space there or point TILELANG_CACHE_DIR (the cache) and TMPDIR (the "
        "compiler's scratch files) at a writable directory. The compiler said:\n"
        f"/usr/bin/ld: final link failed: {cause}"
    ) in out
    assert "internal compiler error" not in out


FILE_SIZE_LIMITED = """
import resource, sys
import numpy as np
import tilelang
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as bx:
        for i in T.serial(32):
            B[bx * 32 + i] = A[bx * 32 + i] * 3.0

# Python ignores SIGXFSZ: a write past the limit fails with EFBIG ("File too large"),
# as one on a full disk fails with ENOSPC.
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
a = np.arange(64, dtype=np.float32)
b = np.zeros(64, np.float32)
try:
    tilelang.compile(main, target=sys.argv[2])(a, b)
    print("ran", bool((b == a * 3).all()))
except Exception as e:
    print(type(e).__name__, e)
"""


@pytest.mark.parametrize(
    ("target", "cache", "source"),
    [("cpu", False, "kernel.cpp"), ("cuda -arch=sm_80 -emulate", True, "kernel.cu")],
)
def test_a_generated_source_that_cannot_be_written_is_named_not_compiled_truncated(
    tmp_path, target, cache, source
):
    """Writing the generated source fails (the file size limit stands in for a full
    disk: both fail the write, with EFBIG or ENOSPC): the error names the file and the
    cause. Unchecked, the host compiler got a truncated source and its complaint was
    reported as an internal compiler error."""
    script = tmp_path / "limited.py"
    script.write_text(FILE_SIZE_LIMITED)
    env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    if not cache:
        env["TILELANG_DISABLE_CACHE"] = "1"
    proc = subprocess.run(
        [sys.executable, str(script), "128", target],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.strip()
    assert out.startswith("TileLangError cannot write "), out
    first = out.splitlines()[0]
    assert (
        f"/{source} (" in first
        and " bytes) to build the kernel: File too large; free space in " in (first)
    ), out
    assert first.endswith(
        "or point TILELANG_CACHE_DIR (the cache) and TMPDIR (builds without it) at a writable "
        "directory with room, or raise the file size limit (ulimit -f)"
    ), out
    assert "internal compiler error" not in out


def test_a_compiler_output_past_the_file_size_limit_is_named_not_an_internal_error(tmp_path):
    # The source fits, the compiler's output does not.
    script = tmp_path / "limited.py"
    script.write_text(FILE_SIZE_LIMITED)
    proc = subprocess.run(
        [sys.executable, str(script), "4096", "cpu"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TILELANG_DISABLE_CACHE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.strip()
    assert out.startswith("TileLangError the host compiler could not build the kernel in "), out
    assert (
        ": File too large; raise the file size limit (ulimit -f), free space there or point "
        "TILELANG_CACHE_DIR (the cache) and TMPDIR (the compiler's scratch files) at a writable "
        "directory. The compiler said:\n"
    ) in out
    assert "internal compiler error" not in out
