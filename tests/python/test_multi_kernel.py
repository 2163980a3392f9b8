"""A prim_func with several `with T.Kernel(...)` blocks one after another: one kernel
object whose call launches the blocks in program order on one stream, with shared
parameters, dynamic shapes and out_idx outputs. Checked against numpy on the cpu and
emulated cuda targets; the NVRTC build, the disk cache in a fresh process, export and
load, old cache entries and the errors (a statement between the kernels, metal) too."""

import hashlib
import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.jit import load_kernel
from tilelang.utils.target import available_targets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
_C = tilelang._C


def split_k_gemm(M, N, K, split, block_M=32, block_N=32, block_K=32):
    """Kernel 1 writes one float32 partial product per K slice; kernel 2 sums them."""
    slice_k = K // split

    @T.prim_func
    def split_k(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        P: T.Tensor((split, M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split, threads=128) as (
            bx,
            by,
            bz,
        ):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(slice_k, block_K), num_stages=2):
                T.copy(A[by * block_M, bz * slice_k + k * block_K], A_shared)
                T.copy(B[bz * slice_k + k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, acc)
            T.copy(acc, P[bz, by * block_M, bx * block_N])
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            total = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(total)
            for s in T.serial(split):
                for i, j in T.Parallel(block_M, block_N):
                    total[i, j] += P[s, by * block_M + i, bx * block_N + j]
            T.copy(total, C[by * block_M, bx * block_N])

    return split_k


def producer_consumer(block=64):
    """Kernel 1 fills Y from X; kernel 2 reads Y at mirrored positions, which other
    blocks of kernel 1 wrote, so it is right only when kernel 1 finished first.
    n is dynamic: both kernels' grids depend on it."""
    n = T.dynamic("n")

    @T.prim_func
    def mirror(
        X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "float32")
    ):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * 3.0 + 1.0
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    Z[bx * 32 + i] = Y[n - 1 - (bx * 32 + i)] - Y[bx * 32 + i]

    return mirror


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def mirror_reference(x):
    y = x.astype(np.float64) * 3.0 + 1.0
    return y, y[::-1] - y


@pytest.mark.parametrize("target", TARGETS)
def test_split_k_gemm_partials_then_reduce(target):
    M, N, K, split = 64, 96, 256, 4
    kernel = tilelang.compile(split_k_gemm(M, N, K, split), out_idx=[2, 3], target=target)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    partials, c = kernel(a, b)
    a32, b32 = a.astype(np.float64), b.astype(np.float64)
    s = K // split
    want = np.stack([a32[:, i * s : (i + 1) * s] @ b32[i * s : (i + 1) * s] for i in range(split)])
    np.testing.assert_allclose(partials, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(c, a32 @ b32, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_producer_consumer_through_a_global_buffer(target):
    kernel = tilelang.compile(producer_consumer(), out_idx=[2], target=target)
    rng = np.random.default_rng(2)
    for n in (1000, 77):  # one kernel object, dynamic n bound per call for both grids
        x = rng.standard_normal(n).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        z = kernel(x, y)
        want_y, want_z = mirror_reference(x)
        np.testing.assert_allclose(y, want_y, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(z, want_z, rtol=1e-5, atol=1e-5)


def test_sources_and_host_list_every_kernel():
    cpu = tilelang.compile(producer_consumer(), out_idx=[2], target="cpu")
    src = cpu.get_kernel_source()
    assert (
        'extern "C" void tl_block_mirror(' in src and 'extern "C" void tl_block_mirror_k1(' in src
    )
    host = cpu.get_host_source()
    assert "launch(mirror, args, grid, threads)  # kernel 1 of 2" in host
    assert "launch(mirror_k1, args, grid, threads)  # kernel 2 of 2" in host
    emu = tilelang.compile(producer_consumer(), out_idx=[2], target="cuda -arch=sm_80 -emulate")
    src = emu.get_kernel_source()
    assert "__launch_bounds__(64, 1) tl_kernel_mirror(" in src
    assert "__launch_bounds__(32, 1) tl_kernel_mirror_k1(" in src
    # The signature records both launches: grid, then that launch's threads.
    lines = emu.kernel.signature_text.splitlines()
    grids = [i for i, line in enumerate(lines) if line.startswith("grid ")]
    assert len(grids) == 2
    assert lines[grids[0] + 1] == "threads 1 64" and lines[grids[1] + 1] == "threads 1 32"


def test_an_empty_grid_skips_only_its_kernel():
    m = T.dynamic("m")

    @T.prim_func
    def two(X: T.Tensor((m,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(m, threads=1) as bx:
            X[bx] = X[bx] + 1.0
        with T.Kernel(4, threads=1) as bx:
            Y[bx] = T.cast(m, "float32") * 2.0 + bx

    kernel = tilelang.compile(two, target="cpu")
    y = np.zeros(4, np.float32)
    kernel(np.zeros(0, np.float32), y)  # m = 0: the first kernel has no blocks
    np.testing.assert_array_equal(y, np.arange(4, dtype=np.float32))
    x = np.arange(3, dtype=np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(x, np.arange(1, 4, dtype=np.float32))
    np.testing.assert_array_equal(y, 6 + np.arange(4, dtype=np.float32))


@pytest.mark.skipif(
    "cuda" not in available_targets(), reason="needs NVRTC (libnvrtc.so) for the cuda target"
)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvrtc_builds_one_module_with_every_kernel(arch, tmp_path):
    kernel = tilelang.compile(
        split_k_gemm(64, 96, 256, 4), out_idx=[2, 3], target=f"cuda -arch={arch}"
    )
    src = kernel.get_kernel_source()
    assert "tl_kernel_split_k(" in src and "tl_kernel_split_k_k1(" in src
    assert src.count('extern "C" __global__') == 2
    meta = read_lines(os.path.join(kernel.kernel.artifact_dir, "meta.txt"))
    entries = [line for line in meta if line.startswith("entry ")]
    assert entries == ["entry tl_kernel_split_k", "entry tl_kernel_split_k_k1"]
    assert "threads 64" in meta
    # The exported file loads back without compiling (and without a GPU).
    path = str(tmp_path / "split_k.tlk")
    kernel.export_library(path)
    loaded = load_kernel(path)
    assert loaded.kernel.signature_text == kernel.kernel.signature_text
    assert loaded.get_host_source() == kernel.get_host_source()


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_export_and_load_run_both_kernels(target, tmp_path):
    kernel = tilelang.compile(producer_consumer(), out_idx=[2], target=target)
    path = str(tmp_path / "mirror.tlk")
    kernel.export_library(path)
    before = _C.compile_count()
    loaded = load_kernel(path)
    assert _C.compile_count() == before
    x = np.random.default_rng(3).standard_normal(300).astype(np.float32)
    y = np.zeros(300, np.float32)
    z = loaded(x, y)
    want_y, want_z = mirror_reference(x)
    np.testing.assert_allclose(y, want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(z, want_z, rtol=1e-5, atol=1e-5)


# ---- the disk cache, in fresh processes

WORKER = r"""
import json, sys
import numpy as np
import tilelang
sys.path.insert(0, sys.argv[2])
from test_multi_kernel import producer_consumer, mirror_reference
kernel = tilelang.compile(producer_consumer(), out_idx=[2], target=sys.argv[1])
x = np.random.default_rng(4).standard_normal(500).astype(np.float32)
y = np.zeros(500, np.float32)
z = kernel(x, y)
want_y, want_z = mirror_reference(x)
ok = bool(np.allclose(y, want_y, rtol=1e-6, atol=1e-6) and np.allclose(z, want_z, rtol=1e-5, atol=1e-5))
print(json.dumps({"builds": tilelang._C.compile_count(), "ok": ok, "dir": kernel.kernel.artifact_dir}))
"""


def run_worker(target, cache_dir):
    env = dict(os.environ, TILELANG_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", WORKER, target, here],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_cache_hit_in_a_fresh_process(target, tmp_path):
    first = run_worker(target, tmp_path)
    assert first == {"builds": 1, "ok": True, "dir": first["dir"]}
    second = run_worker(target, tmp_path)
    assert second == {"builds": 0, "ok": True, "dir": first["dir"]}


def test_a_cache_entry_whose_meta_lists_fewer_kernels_is_a_miss(tmp_path):
    target = "cuda -arch=sm_80 -emulate"
    first = run_worker(target, tmp_path)
    meta = os.path.join(first["dir"], "meta.txt")
    lines = read_lines(meta)
    second_entry = [i for i, line in enumerate(lines) if line.startswith("entry ")][1]
    os.chmod(meta, 0o644)
    with open(meta, "w") as f:  # one kernel's record only, as an entry of the old format holds
        f.write("\n".join(lines[:second_entry]) + "\n")
    again = run_worker(target, tmp_path)
    assert again["builds"] == 1 and again["ok"]


def test_a_single_kernel_meta_of_the_old_format_still_loads(tmp_path):
    """Entries written before several kernels: one group, no `threads` line."""

    @T.prim_func
    def add_one(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] + 1.0

    kernel = tilelang.compile(add_one, out_idx=[1], target="cuda -arch=sm_80 -emulate")
    meta = os.path.join(kernel.kernel.artifact_dir, "meta.txt")
    lines = [line for line in read_lines(meta) if not line.startswith("threads")]
    assert lines == ["entry tl_kernel_add_one", "shared_bytes 0"]
    old = tmp_path / "add_one_old"
    kernel.export_library(str(old))
    # The same export with the old meta.txt (and its checksum in export.txt).
    data = ("\n".join(lines) + "\n").encode()
    before = hashlib.sha256((old / "meta.txt").read_bytes()).hexdigest()
    (old / "meta.txt").write_bytes(data)
    text = (old / "export.txt").read_text()
    assert f"file meta.txt {before}\n" in text
    text = text.replace(before, hashlib.sha256(data).hexdigest())
    (old / "export.txt").write_text(text)
    loaded = load_kernel(str(old))
    x = np.random.default_rng(5).standard_normal(256).astype(np.float32)
    y = loaded(x)
    np.testing.assert_allclose(y, x + 1.0, rtol=1e-6)


# ---- errors


def line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_statement_between_the_kernels_is_refused_at_its_line():
    def body():
        @T.prim_func
        def gap(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    X[i] = X[i] + 1.0
            for j in T.serial(8):  # not in any T.Kernel
                X[j] = 0.0
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    X[i] = X[i] * 2.0

        return gap

    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(body(), target="cpu")
    msg = str(err.value)
    assert f"test_multi_kernel.py:{line_of(body, 'for j in T.serial(8)')}" in msg, msg
    assert "outside every `with T.Kernel(...)` block" in msg and "kernel 'gap'" in msg


def test_a_function_without_a_kernel_runs_as_one_block():
    """TileLang's cpu programs of plain statements, with no T.Kernel: one block of one
    thread (statements next to T.Kernel blocks stay refused, above)."""

    @T.prim_func
    def no_block(X: T.Tensor((8,), "float32")):
        X[0] = 1.0

    for target in ("cpu", "cuda -arch=sm_80 -emulate"):
        x = np.zeros(8, np.float32)
        tilelang.compile(no_block, target=target)(x)
        np.testing.assert_array_equal(x, [1, 0, 0, 0, 0, 0, 0, 0])


def test_metal_refuses_a_second_kernel_at_its_line():
    def body():
        @T.prim_func
        def pair(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    X[i] = X[i] + 1.0
            with T.Kernel(1, threads=8):  # the second block
                for i in T.Parallel(8):
                    X[i] = X[i] * 2.0

        return pair

    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(body(), target="metal -emulate")
    msg = str(err.value)
    assert f"test_multi_kernel.py:{line_of(body, '# the second block')}" in msg, msg
    assert "kernel 'pair' has 2 `with T.Kernel(...)` blocks; the metal target supports one" in msg
