"""examples/cpp/cuda_launch.cpp on a GPU, built as an outside C++ project builds it:
against the CMake package that the installed Python package carries (`python -m
tilelang --cmake-dir`), so a C++ program compiles its tile kernel and launches it on
device memory and a stream of its own, with no Python in the process."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cmd, **kw):
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def test_cuda_launch_example_runs_on_the_gpu(tmp_path):
    cmake_dir = _run([sys.executable, "-m", "tilelang", "--cmake-dir"]).stdout.strip()
    assert os.path.isfile(os.path.join(cmake_dir, "tilelang_cppConfig.cmake")), cmake_dir
    build = tmp_path / "build"
    configure = ["cmake", "-S", os.path.join(ROOT, "examples", "cpp"), "-B", str(build)]
    configure.append(f"-Dtilelang_cpp_DIR={cmake_dir}")
    if os.path.exists("/usr/bin/g++"):  # the system compiler, as a C++ user would build
        configure.append("-DCMAKE_CXX_COMPILER=/usr/bin/g++")
    _run(configure)
    _run(["cmake", "--build", str(build), "--target", "cuda_launch", "-j", "8"])
    env = {k: v for k, v in os.environ.items() if k not in ("TILELANG_DEV_BUILD_DIR",)}
    r = subprocess.run(
        [str(build / "cuda_launch")],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, f"cuda_launch exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    assert re.search(r"^compiled kernel 'axpy' for cuda -arch=sm_\d+a? ", r.stdout, re.MULTILINE), (
        r.stdout
    )
    err = re.search(r"axpy of 1000003 elements on the GPU: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-5, r.stdout
    assert r.stdout.rstrip().endswith("OK"), r.stdout
