"""JITKernel around the runtime: export and load without recompiling, the host
source, execution_backend names, the profiler (inputs, assert_allclose, do_bench), the
`tilelang` logging namespace (C++ messages, specializations, print on compile) and the
call path (each kind of tensor the C++ caller reads, numbers, outputs, and the full
error messages after calls that passed the fast checks)."""

import ctypes
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.profiler import TensorSupplyType, do_bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def scaled_rows(m, n=24, block=8):
    @T.prim_func
    def scale_rows(A: T.Tensor((m, n), "float32"), s: T.float32, B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=1) as bx:
            for i in T.serial(block):
                for j in T.serial(n):
                    if bx * block + i < m:
                        B[bx * block + i, j] = A[bx * block + i, j] * s + 1.0

    return scale_rows


@pytest.fixture(scope="module")
def dyn_kernel():
    return tilelang.compile(scaled_rows(T.dynamic("m")), out_idx=-1, target="cpu")


@pytest.fixture(scope="module")
def add_kernel():
    @T.prim_func
    def vadd(
        A: T.Tensor((300,), "float32"),
        B: T.Tensor((300,), "float32"),
        C: T.Tensor((300,), "float32"),
    ):
        with T.Kernel(3, threads=1) as bx:
            for i in T.serial(100):
                C[bx * 100 + i] = A[bx * 100 + i] + B[bx * 100 + i]

    return tilelang.compile(vadd, out_idx=[2], target="cpu", execution_backend="cython")


# ---- export / load


def test_export_and_load_without_compiling(dyn_kernel, tmp_path):
    path = tmp_path / "scale_rows.tlkernel"
    dyn_kernel.export_library(str(path))
    before = tilelang._C.compile_count()
    loaded = tilelang.jit.load_kernel(str(path))
    assert tilelang._C.compile_count() == before
    assert loaded.out_idx == [2] and loaded.target == "cpu" and loaded.prim_func is None
    assert [p.name for p in loaded.params] == ["A", "s", "B"]
    assert loaded.params[0].shape == ["m", 24]
    assert loaded.get_kernel_source() == dyn_kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    for m in (5, 17):  # the symbolic dimension and the grid still bind per call
        a = rng.standard_normal((m, 24)).astype(np.float32)
        np.testing.assert_allclose(loaded(a, 0.5), a * 0.5 + 1.0, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match="'B'.*dimension 0 is 4.*'m' was bound to 5"):
        loaded(np.zeros((5, 24), np.float32), 1.0, np.zeros((4, 24), np.float32))
    again = tilelang.JITKernel.from_library(str(path))
    a = rng.standard_normal((3, 24)).astype(np.float32)
    np.testing.assert_allclose(again(a, 2.0), a * 2.0 + 1.0, rtol=1e-6)


def test_loading_in_a_fresh_process_with_no_cache(add_kernel, tmp_path):
    path = tmp_path / "vadd.zip"
    add_kernel.export_library(str(path))
    script = (
        "import sys, numpy as np, tilelang\n"
        "k = tilelang.jit.load_kernel(sys.argv[1])\n"
        "a = np.arange(300, dtype=np.float32); b = a * 2\n"
        "assert np.array_equal(k(a, b), a * 3)\n"
        "print('builds', tilelang._C.compile_count(), k.execution_backend)\n"
    )
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "empty-cache"))
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tilelang.__file__))
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["builds", "0", "cython"]
    assert not os.path.exists(tmp_path / "empty-cache" / "kernels")


def _rewrite_export(path, old, new):
    text = (path / "export.txt").read_text()
    assert old in text, text
    (path / "export.txt").write_text(text.replace(old, new))


def test_load_rejects_damaged_files(add_kernel, tmp_path):
    path = tmp_path / "k"
    add_kernel.export_library(str(path))
    so = (path / "kernel.so").read_bytes()
    (path / "kernel.so").write_bytes(so[:-1] + bytes([so[-1] ^ 1]))
    with pytest.raises(
        tilelang.TileLangError,
        match=f"the exported kernel in {path} is damaged: kernel.so does not match its "
        "checksum in export.txt",
    ):
        tilelang.jit.load_kernel(str(path))
    (path / "kernel.so").write_bytes(so)
    (path / "extra.so").write_bytes(so)
    with pytest.raises(
        tilelang.TileLangError,
        match=f"the exported kernel in {path} holds extra.so, which export.txt does not list",
    ):
        tilelang.jit.load_kernel(str(path))
    (path / "extra.so").unlink()
    (path / "kernel.so").rename(path / "real.so")
    (path / "kernel.so").symlink_to(path / "real.so")
    with pytest.raises(tilelang.TileLangError, match="has kernel.so as a symbolic link"):
        tilelang.jit.load_kernel(str(path))
    (path / "kernel.so").unlink()
    (path / "real.so").rename(path / "kernel.so")
    assert tilelang.jit.load_kernel(str(path)).out_idx == [2]
    (tmp_path / "junk").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk is not a loadable tilelang kernel.*export_library"):
        tilelang.jit.load_kernel(str(tmp_path / "junk"))
    with pytest.raises(
        tilelang.TileLangError, match=f"{tmp_path} is not an exported tilelang kernel"
    ):
        tilelang.jit.load_kernel(str(tmp_path))


def test_load_refuses_unknown_versions_and_other_machines(add_kernel, tmp_path):
    path = tmp_path / "k"
    add_kernel.export_library(str(path))
    _rewrite_export(path, "version 2\n", "version 3\n")
    with pytest.raises(
        tilelang.TileLangError,
        match=f"{path}/export.txt is a tilelang kernel of format version 3, which this release "
        r"does not read \(it reads version 2\)",
    ):
        tilelang.jit.load_kernel(str(path))
    _rewrite_export(path, "version 3\n", "version 2\n")
    machine = f"built_on {platform.system()} {platform.machine()}\n"
    _rewrite_export(path, machine, "built_on Plan9 mips\n")
    with pytest.raises(
        tilelang.TileLangError,
        match=f"{path} holds a kernel built for Plan9 mips, this machine is "
        f"{platform.system()} {platform.machine()}",
    ):
        tilelang.jit.load_kernel(str(path))
    _rewrite_export(path, "built_on Plan9 mips\n", machine)
    # The description of the earlier C++ release carries no checksums and is refused.
    (path / "export.txt").write_text("tilelang-cpp-kernel 1\ntarget cpu\nsignature\n")
    with pytest.raises(tilelang.TileLangError, match="written by an earlier release"):
        tilelang.jit.load_kernel(str(path))


def _old_zip_export(kernel, path):
    """A kernel file as earlier releases' export_library wrote it (zip, version 1)."""
    files = {}
    src = kernel.kernel.artifact_dir
    for name in sorted(os.listdir(src)):
        if name != "manifest.txt":
            with open(os.path.join(src, name), "rb") as f:
                files[name] = f.read()
    manifest = {
        "format": "tilelang-cpp-kernel",
        "version": 1,
        "name": kernel.name,
        "target": kernel.target,
        "execution_backend": kernel.execution_backend,
        "out_idx": list(kernel.out_idx),
        "pass_configs": {},
        "compile_flags": [],
        "built_on": {"system": platform.system(), "machine": platform.machine()},
        "signature": kernel.kernel.signature_text,
        "files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()},
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            z.writestr(name, data)
    return files


def test_kernels_exported_by_earlier_releases_still_load(add_kernel, tmp_path):
    path = tmp_path / "k.tlk"
    files = _old_zip_export(add_kernel, path)
    loaded = tilelang.jit.load_kernel(str(path))
    assert loaded.out_idx == [2] and loaded.execution_backend == "cython"
    rng = np.random.default_rng(11)
    a = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_allclose(loaded(a, b), a.astype(np.float64) + b, rtol=1e-6)
    # Re-exported, it is in the one format.
    again = tmp_path / "again"
    loaded.export_library(str(again))
    assert (again / "export.txt").read_text().startswith("format tilelang-cpp-kernel\nversion 2\n")
    np.testing.assert_allclose(tilelang.jit.load_kernel(str(again))(a, b), a + b, rtol=1e-6)
    # Its checksums are still checked.
    damaged = tmp_path / "damaged.tlk"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            dst.writestr(item, data[:-1] + b"x" if item.filename == "kernel.so" else data)
    assert "kernel.so" in files
    with pytest.raises(ValueError, match="member kernel.so does not match its checksum"):
        tilelang.jit.load_kernel(str(damaged))


def test_export_over_an_earlier_export_replaces_its_files(add_kernel, tmp_path):
    path = tmp_path / "k"
    add_kernel.export_library(str(path))
    text = (path / "export.txt").read_text()
    (path / "old.so").write_bytes(b"an earlier export's file")
    (path / "export.txt").write_text(
        text.replace("file kernel.so", "file old.so 00\nfile kernel.so")
    )
    add_kernel.export_library(str(path))
    assert sorted(os.listdir(path)) == ["export.txt", "kernel.cpp", "kernel.so"]
    rng = np.random.default_rng(13)
    a = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_allclose(tilelang.jit.load_kernel(str(path))(a, b), a + b, rtol=1e-6)
    # A kernel loaded from the directory exports to it again.
    loaded = tilelang.jit.load_kernel(str(path))
    loaded.export_library(str(path))
    np.testing.assert_allclose(tilelang.jit.load_kernel(str(path))(a, b), a + b, rtol=1e-6)


def test_a_loaded_kernel_runs_from_its_own_checked_copy(add_kernel, tmp_path):
    """load_kernel copies the checked files into a private directory and loads that
    copy: replacing or removing the export afterwards does not reach the loaded kernel,
    and the replaced export no longer loads."""
    import shutil

    path = tmp_path / "k"
    add_kernel.export_library(str(path))
    loaded = tilelang.jit.load_kernel(str(path))
    (path / "kernel.so").write_bytes(b"not the checked library")
    rng = np.random.default_rng(14)
    a = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_allclose(loaded(a, b), a.astype(np.float64) + b, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match="kernel.so does not match its checksum"):
        tilelang.jit.load_kernel(str(path))
    shutil.rmtree(path)
    np.testing.assert_allclose(loaded(a, b), a.astype(np.float64) + b, rtol=1e-6)
    loaded.export_library(str(tmp_path / "again"))  # from the private copy
    again = tilelang.jit.load_kernel(str(tmp_path / "again"))
    np.testing.assert_allclose(again(a, b), a.astype(np.float64) + b, rtol=1e-6)


def test_kernel_exported_without_python_meta_loads(add_kernel, tmp_path):
    """What tl::export_kernel writes from a C++ program: no meta line, so every
    parameter is an input and the target's default backend runs it."""
    path = tmp_path / "k"
    tilelang._C.export_kernel(add_kernel.kernel, str(path), "")
    assert "\nmeta " not in (path / "export.txt").read_text()
    loaded = tilelang.jit.load_kernel(str(path))
    assert loaded.out_idx == [] and loaded.execution_backend == "native"
    rng = np.random.default_rng(12)
    a = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    c = np.full(300, -7.0, np.float32)
    loaded(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) + b, rtol=1e-6)


def test_signature_round_trip_keeps_the_grid(dyn_kernel):
    text = dyn_kernel.kernel.signature_text
    assert text.startswith("tl-signature 1\nvar 0 int32 m\n")
    assert "scalar s 1" in text and "dynamic 0" in text
    with pytest.raises(tilelang.TileLangError, match=r"malformed kernel signature \(line 1\)"):
        tilelang._C.load_kernel("nonsense", "cpu", "/nonexistent")


# ---- sources and attributes


def test_host_source_describes_checks_and_launch(dyn_kernel):
    host = dyn_kernel.get_host_source()
    assert "check A: tensor float32(m, 24) on cpu" in host
    assert "check s: scalar float32" in host
    assert "bind m = A.shape[0]" in host
    assert "grid = (" in host and "args = [A.data, s, B.data, m]" in host
    full = dyn_kernel.get_kernel_source(kernel_only=False)
    assert full.startswith(host) and full.endswith(dyn_kernel.get_kernel_source())


def test_execution_backend_names(add_kernel):
    assert add_kernel.execution_backend == "cython"
    func = scaled_rows(4)
    for name in ("native", "tvm_ffi", "ctypes"):
        assert (
            tilelang.compile(func, target="cpu", execution_backend=name).execution_backend == name
        )
    assert tilelang.compile(func, target="cpu").execution_backend == "native"
    with pytest.raises(
        ValueError,
        match=r"'nvrtc' is not available for target 'cpu'; use one of 'auto', 'native', 'tvm_ffi'",
    ):
        tilelang.compile(func, target="cpu", execution_backend="nvrtc")
    with pytest.raises(ValueError, match="'torch' is not available for target 'cpu'"):
        tilelang.compile(func, target="cpu", execution_backend="torch")
    with pytest.raises(
        ValueError, match="unknown execution_backend 'fast'; for target 'cpu' use one of"
    ):
        tilelang.compile(func, target="cpu", execution_backend="fast")


# ---- profiler


def test_profiler_checks_against_a_reference(dyn_kernel, add_kernel):
    prof = add_kernel.get_profiler()
    prof.assert_allclose(lambda a, b: a + b)
    with pytest.raises(AssertionError, match=r"output 'C': 300 of 300 elements \(100.00%\) differ"):
        prof.assert_allclose(lambda a, b: a - b - 1)

    # A few bad elements pass under max_mismatched_ratio and fail without it.
    def almost(a, b):
        c = a + b
        c[:2] += 1
        return c

    prof.assert_allclose(almost, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError, match="2 of 300 elements"):
        prof.assert_allclose(almost, max_mismatched_ratio=0.0)
    dprof = dyn_kernel.get_profiler()
    with pytest.raises(ValueError, match="symbolic dimension 'm'; give its size with"):
        dprof.assert_allclose(lambda a, s: a * s + 1)
    a = np.random.default_rng(0).standard_normal((9, 24)).astype(np.float32)
    dprof.assert_allclose(lambda a, s: a * s + 1, input_tensors=[a, 0.25])


def test_profiler_reference_written_for_torch(add_kernel):
    """TileLang's profiler hands torch tensors: a reference written for torch gets the
    same values as CPU torch tensors when it fails on the numpy arrays, and one written
    for numpy keeps them."""
    torch = pytest.importorskip("torch")
    prof = add_kernel.get_profiler()
    seen = []

    def torch_ref(a, b):
        seen.append(type(a))
        return torch.add(a.float(), b.float())

    prof.assert_allclose(torch_ref)
    assert seen == [np.ndarray, torch.Tensor]
    with pytest.raises(AssertionError, match="elements"):
        prof.assert_allclose(lambda a, b: torch.sub(a.float(), b.float()))
    numpy_seen = []
    prof.assert_allclose(lambda a, b: numpy_seen.append(type(a)) or a + b)
    assert numpy_seen == [np.ndarray]
    assert prof.do_bench(torch_ref, warmup=1, rep=1) > 0
    # A reference that fails on both keeps its own error.
    with pytest.raises(ZeroDivisionError):
        prof.assert_allclose(lambda a, b: 1 // 0)


def test_profiler_func_and_call_are_the_kernel(add_kernel):
    # TileLang's gemm_intrinsics example times `profiler.do_bench(profiler.func)`
    prof = add_kernel.get_profiler()
    assert prof.func is add_kernel
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(300).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(prof(a, b), a.astype(np.float64) + b, rtol=1e-6)
    assert prof.do_bench(prof.func, warmup=1, rep=1) > 0


def test_tensor_supply_types(add_kernel):
    def inputs(kind):
        return add_kernel.get_profiler(tensor_supply_type=kind)._get_inputs()[0]

    auto = inputs(TensorSupplyType.Auto)
    assert auto.dtype == np.float32 and auto.shape == (300,)
    assert auto.min() >= -1 and auto.max() <= 1 and auto.std() > 0.3
    integer = inputs(TensorSupplyType.Integer)
    assert set(np.unique(integer)) <= {-2, -1, 0, 1, 2} and len(np.unique(integer)) == 5
    assert inputs(TensorSupplyType.Normal).std() > 0.7
    assert not inputs(TensorSupplyType.Zero).any() and (inputs(TensorSupplyType.One) == 1).all()
    with pytest.raises(TypeError, match="must be a tilelang.profiler.TensorSupplyType"):
        add_kernel.get_profiler(tensor_supply_type="uniform")


def test_integer_inputs_take_tilelang_ranges():
    # 0..2 unsigned and -2..2 signed, for Auto and every random supply type: TileLang's
    # mxfp4 references compute 2 ** Scale on a uint8 Scale, which wraps for larger ones.
    @T.prim_func
    def widen(
        U: T.Tensor((4096,), "uint8"), S: T.Tensor((4096,), "int16"), O: T.Tensor((4096,), "int32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(4096):
                O[i] = T.Cast("int32", U[i]) + T.Cast("int32", S[i])

    kernel = tilelang.compile(widen, out_idx=[2], target="cpu")
    for kind in (TensorSupplyType.Auto, TensorSupplyType.Integer, TensorSupplyType.Normal):
        u, s = kernel.get_profiler(tensor_supply_type=kind)._get_inputs()
        assert u.dtype == np.uint8 and set(np.unique(u)) == {0, 1, 2}, (kind, np.unique(u))
        assert s.dtype == np.int16 and set(np.unique(s)) == {-2, -1, 0, 1, 2}, (kind, np.unique(s))
        kernel.get_profiler(tensor_supply_type=kind).assert_allclose(
            lambda u, s: u.astype(np.int32) + s.astype(np.int32)
        )


def test_do_bench(add_kernel):
    prof = add_kernel.get_profiler()
    ms = prof.do_bench(warmup=1, rep=5)
    assert 0 < ms < 10_000  # wall clock on a shared machine: only sanity
    q = prof.do_bench(func=lambda a, b: a + b, warmup=1, rep=5, quantiles=[0.2, 0.5, 0.8])
    assert len(q) == 3 and q[0] <= q[1] <= q[2]
    calls = []
    assert do_bench(lambda: calls.append(1), _n_warmup=3, _n_repeat=7, return_mode="min") >= 0
    assert len(calls) == 1 + 5 + 3 + 7  # first call, estimate, warmup, measured
    # TileLang's GPU backend names run on the CPU too, all timing the wall clock.
    for backend in ("cupti", "cudagraph", "wall", "event"):
        assert 0 < prof.do_bench(backend=backend, warmup=1, rep=5) < 10_000
    with pytest.raises(ValueError, match="unknown do_bench backend 'nvprof'; use one of 'event'"):
        prof.do_bench(backend="nvprof")
    with pytest.raises(ValueError, match="do_bench device must be 'cuda', 'cuda:N', a CUDA index"):
        do_bench(lambda: None, device="tpu")
    # early_stop_baseline: a first estimate above it is returned at once.
    calls.clear()
    slow = lambda: (calls.append(1), time.sleep(0.002))
    ms = do_bench(slow, early_stop_baseline=0.5, _n_repeat=50)
    assert ms > 0.5 and len(calls) == 1 + 5
    q = do_bench(slow, early_stop_baseline=0.5, quantiles=[0.5, 0.9])
    assert len(q) == 2 and q[0] == q[1] > 0.5
    # cache_size is accepted (the CPU flush has its own size).
    assert do_bench(lambda: None, cache_size=16, _n_repeat=2) >= 0
    with pytest.raises(ValueError, match="return_mode must be one of min, max, mean, median"):
        do_bench(lambda: None, return_mode="average")


# ---- logging


def test_core_messages_and_specializations_go_to_the_tilelang_logger(caplog, monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))

    @tilelang.jit(out_idx=-1, target="cpu")
    def make(m, block=8):
        return scaled_rows(m, 16, block)

    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        make(6)
        make(6)  # no new specialization
        make(6, block=4)
    messages = [r.getMessage() for r in caplog.records if r.name == "tilelang"]
    specs = [m for m in messages if "new specialization" in m]
    assert specs == [
        "new specialization #1 of 'make': m=6, block=8",
        "new specialization #2 of 'make': m=6, block=4 (changed: block)",
    ]
    assert messages.count("compiling kernel 'scale_rows' for cpu") == 2  # from the C++ core


@tilelang.jit(target="cpu")
def eager_scale(A, factor=2.0):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1):
        for i in T.serial(N):
            B[i] = A[i] * factor
    return B


def test_eager_specializations_are_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        eager_scale(np.ones(4, np.float32))
        eager_scale(np.ones(6, np.float32))
    specs = [r.getMessage() for r in caplog.records if "new specialization" in r.getMessage()]
    assert specs == [
        "new specialization #1 of 'eager_scale': A=float32[1d], factor=2.0, N=4",
        "new specialization #2 of 'eager_scale': A=float32[1d], factor=2.0, N=6 (changed: N)",
    ]


def test_print_on_compilation(tmp_path):
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import tilelang, test_jit_runtime as t\n"
        "tilelang.compile(t.scaled_rows(5), target='cpu')\n"
        "tilelang.compile(t.scaled_rows(5), target='cpu')\n"
    )
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path), TILELANG_PRINT_ON_COMPILATION="1")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tilelang.__file__))
    out = subprocess.run(
        [sys.executable, "-c", script, os.path.dirname(__file__)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["tilelang: compiling scale_rows for cpu..."]


# ---- the call path: one C++ call per launch, with the checks of the slow path


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_DLTensor))
_STREAM = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)
)


class _ExchangeApi(ctypes.Structure):
    """DLPackExchangeAPI of dlpack.h (the struct torch publishes), filled from Python."""

    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator", ctypes.c_void_p),
        ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
        ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
        ("dltensor_from_py_object_no_sync", _FROM_PY),
        ("current_work_stream", _STREAM),
    ]


_DL_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}


def _fill_dltensor(obj, out):
    arr, t = obj.array, out.contents
    t.data = arr.ctypes.data
    t.device = _DLDevice(1, 0)
    t.ndim = arr.ndim
    t.dtype = _DLDataType(_DL_CODES[arr.dtype.kind], arr.dtype.itemsize * 8, 1)
    t.shape = ctypes.cast(obj.shape_c, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(obj.strides_c, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    type(obj).reads += 1
    return 0


def _no_stream(device_type, device_id, out):
    out[0] = None
    return 0


_API = _ExchangeApi(1, 1, None, None, None, None, _FROM_PY(_fill_dltensor), _STREAM(_no_stream))
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class ExchangeTensor:
    """A CPU tensor type that, like torch.Tensor, publishes the DLPack C exchange API;
    `reads` counts how often the runtime read a tensor through it."""

    __dlpack_c_exchange_api__ = _capsule_new(ctypes.addressof(_API), b"dlpack_exchange_api", None)
    reads = 0

    def __init__(self, array):
        self.array = array
        self.shape_c = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides_c = (ctypes.c_int64 * array.ndim)(
            *[s // array.itemsize for s in array.strides]
        )


class DLPackOnly:
    """A tensor that offers nothing but __dlpack__ (read through nanobind's ndarray)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.fixture(scope="module")
def scale_kernel():
    return tilelang.compile(scaled_rows(T.dynamic("m"), 16, 4), target="cpu")


@pytest.mark.parametrize("wrap", [np.asarray, ExchangeTensor, DLPackOnly])
def test_tensor_kinds_read_by_the_caller(scale_kernel, wrap):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((10, 16)).astype(np.float32)
    b = np.zeros((10, 16), np.float32)
    before = ExchangeTensor.reads
    scale_kernel(wrap(a), np.float32(0.5), wrap(b))  # a numpy scalar for s
    np.testing.assert_allclose(b, a * 0.5 + 1.0, rtol=1e-6)
    assert ExchangeTensor.reads - before == (2 if wrap is ExchangeTensor else 0)
    # After calls that passed the checks, bad calls still get the full messages.
    for _ in range(3):
        scale_kernel(wrap(a), 2.0, wrap(b))
    np.testing.assert_allclose(b, a * 2.0 + 1.0, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* has dtype float64"):
        scale_kernel(wrap(a.astype(np.float64)), 2.0, wrap(b))
    with pytest.raises(tilelang.TileLangError, match=r"'B'.*dimension 0 is 9.*'m' was bound to 10"):
        scale_kernel(wrap(a), 2.0, wrap(b[:9]))
    with pytest.raises(tilelang.TileLangError, match=r"'B' .* 1 dimension\(s\).*expected 2"):
        scale_kernel(wrap(a), 2.0, wrap(b.reshape(-1)))
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* stride 2 in dimension 1"):
        scale_kernel(wrap(np.zeros((10, 32), np.float32)[:, ::2]), 2.0, wrap(b))
    with pytest.raises(tilelang.TileLangError, match=r"argument 's' .* must be a scalar"):
        scale_kernel(wrap(a), wrap(a), wrap(b))
    np.testing.assert_allclose(b, a * 2.0 + 1.0, rtol=1e-6)  # no failed call wrote


def test_scalars_and_outputs_through_the_caller():
    @T.prim_func
    def affine(
        A: T.Tensor((12,), "float32"), k: T.int32, s: T.float32, B: T.Tensor((12,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(12):
                B[i] = A[i] * s + k

    kernel = tilelang.compile(affine, out_idx=-1, target="cpu")
    a = np.random.default_rng(12).standard_normal(12).astype(np.float32)
    for k, s in ((3, 0.5), (np.int64(-2), np.float32(1.5)), (True, 2)):
        np.testing.assert_allclose(kernel(a, k, s), a * np.float32(s) + int(k), rtol=1e-6)
    full = kernel.run([a, 1, 2.0])
    assert len(full) == 4 and full[0] is a
    np.testing.assert_allclose(full[3], a * 2 + 1, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'k' .* must be an integer"):
        kernel(a, 1.5, 2.0)
    with pytest.raises(TypeError, match=r"must be tensors .* or Python numbers, got <class 'str'>"):
        kernel(a, "1", 2.0)
    with pytest.raises(
        TypeError, match=r"kernel 'affine' takes 3 argument\(s\) \(A, k, s\), got 2"
    ):
        kernel(a, 1)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'k' .* is an integer wider than 64 bits"
    ):
        kernel(a, 1 << 70, 2.0)


def test_more_symbolic_dims_than_the_fast_path_holds():
    # 18 symbolic dims: beyond the call path's inline bindings, so calls take the
    # general path, which must bind, check and launch the same way.
    dims = [T.dynamic(f"d{i}") for i in range(18)]

    @T.prim_func
    def first_element(A: T.Tensor(tuple(dims), "float32"), B: T.Tensor((dims[0],), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(dims[0]):
                B[i] = A[(i,) + (0,) * 17] * 3.0

    kernel = tilelang.compile(first_element, out_idx=-1, target="cpu")
    a = np.random.default_rng(13).standard_normal((3,) + (1,) * 16 + (2,)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a[(slice(None),) + (0,) * 17] * 3, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match=r"'B'.*dimension 0 is 4.*'d0' was bound to 3"):
        kernel(a, np.zeros(4, np.float32))


NO_INPUT_KERNEL = """
import sys
import tilelang
import tilelang.language as T
{imports}

@T.prim_func
def fill(out: T.Tensor((8, 16), "int8")):
    with T.Kernel(1, threads=128):
        smem = T.alloc_shared((8, 16), "int8")
        T.fill(smem, -7)
        T.copy(smem, out)

out = tilelang.compile(fill, out_idx=[0], target="{target}")()
print(type(out).__module__.split(".")[0], int(out.min()), int(out.max()))
"""


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
@pytest.mark.parametrize(("imports", "framework"), [("", "numpy"), ("import torch", "torch")])
def test_outputs_of_a_kernel_without_inputs(tmp_path, target, imports, framework):
    """No input to take the framework from: torch tensors where the program uses torch
    (TileLang returns torch tensors), numpy arrays otherwise."""
    if framework == "torch":
        pytest.importorskip("torch")
    script = tmp_path / "no_inputs.py"
    script.write_text(NO_INPUT_KERNEL.format(imports=imports, target=target))
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [framework, "-7", "-7"]
