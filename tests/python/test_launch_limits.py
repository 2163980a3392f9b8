"""Launch sizes: T.Kernel(0) and negative extents are refused where they are written (a
dynamic extent when the call brings it; one of 0 launches nothing); a
grid or block past the target's limits (CUDA: gridDim.x < 2^31, gridDim.y/z < 65536,
blockDim.x/y <= 1024, blockDim.z <= 64, 1024 threads a block; Metal: 1024 threads a
threadgroup, < 2^32 threads of a grid per dimension) is a compile-time error when the
extent is a constant, and a launch-time error (nothing launched) when it is dynamic,
under the emulators as on the GPU. On-chip arrays that live on a stack (the cpu target's
blocks, the emulators' and the cpu target's threads) are refused past what the stack holds
rather than overflowing it."""

import inspect
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T

HERE = __file__
EMULATED = ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"]


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


@pytest.mark.parametrize("extent", [0, -4])
def test_constant_empty_or_negative_grid_is_refused_at_the_line(extent):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(extent, threads=1):  # MARK-zero
                A[0] = 1.0

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-zero')}: T.Kernel grid dimension 0 (x) is {extent}; a launch has at "
        "least one block along each dimension"
    )


def test_constant_empty_second_dimension():
    with pytest.raises(tilelang.TileLangError, match=r"T.Kernel grid dimension 1 \(y\) is 0"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(4, 0, threads=1):
                A[0] = 1.0


def grid_kernel(gx, gy=1, gz=1, threads=32):
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(gx, gy, gz, threads=threads) as (bx, by, bz):  # MARK-grid
            if bx == 0 and by == 0 and bz == 0:
                A[0] = 1.0

    return main


@pytest.mark.parametrize(
    ("target", "grid", "threads", "why"),
    [
        (
            "cuda -arch=sm_90a",
            (2**31, 1, 1),
            32,
            (
                "its grid has 2147483648 blocks along x; the target 'cuda -arch=sm_90a' launches at most "
                "2147483647 (gridDim.x); use fewer, larger blocks or another grid dimension"
            ),
        ),
        (
            "cuda -arch=sm_80 -emulate",
            (1, 65536, 1),
            32,
            (
                "its grid has 65536 blocks along y; the target 'cuda -arch=sm_80 -emulate' launches at "
                "most 65535 (gridDim.y)"
            ),
        ),
        (
            "cuda -arch=sm_80",
            (1, 1, 70000),
            32,
            (
                "its grid has 70000 blocks along z; the target 'cuda -arch=sm_80' launches at most 65535 "
                "(gridDim.z)"
            ),
        ),
        (
            "cuda -arch=sm_80 -emulate",
            (1, 1, 1),
            (1, 8, 128),
            (
                "its blocks have 128 threads along z; the target 'cuda -arch=sm_80 -emulate' allows at "
                "most 64 (blockDim.z)"
            ),
        ),
        (
            "metal -emulate",
            (2**27, 1, 1),
            64,
            (
                "its grid has 134217728 blocks of 64 threads along x; the target 'metal -emulate' runs at "
                "most 4294967295 threads of a grid along one dimension"
            ),
        ),
    ],
)
def test_constant_grid_past_the_target_limits_is_a_compile_error(target, grid, threads, why):
    func = grid_kernel(*grid, threads=threads)
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(func, target=target)
    assert str(info.value).startswith(
        f"{HERE}:{line_of('MARK-grid')}: T.Kernel of kernel 'main': {why}"
    )


def test_large_grids_within_the_limits_compile():
    source = tilelang.compile(grid_kernel(2**31 - 1, 65535, 65535), target="cuda -arch=sm_90a")
    assert "__global__" in source.get_kernel_source()


def test_more_than_1024_threads_is_refused():
    with pytest.raises(
        tilelang.TileLangError, match="T.Kernel asks for 2048 threads per block; the limit is 1024"
    ):
        grid_kernel(1, threads=(32, 64))


def dynamic_grid():
    n = T.dynamic("n")
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), s: T.int32):
        with T.Kernel(T.ceildiv(n, 4), s, threads=4) as (bx, by):  # MARK-dynamic
            for i in T.serial(4):
                if bx * 4 + i < n:
                    B[bx * 4 + i] = A[bx * 4 + i] * 2.0 + by

    del m
    return main


@pytest.mark.parametrize("target", EMULATED)
def test_dynamic_grid_is_checked_at_launch(target):
    """A negative dynamic extent is refused before anything runs; an extent of 0 (an
    empty input) launches nothing, as a T.Kernel with no blocks."""
    kernel = tilelang.compile(dynamic_grid(), target=target)
    a = np.random.default_rng(4).standard_normal(10).astype(np.float32)
    b = np.zeros(10, np.float32)
    kernel(a, b, 1)
    np.testing.assert_allclose(b, a * 2.0, rtol=1e-6)
    b[:] = 7.0
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(a, b, -3)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-dynamic')}: kernel 'main' cannot be launched: its grid has -3 "
        "blocks along y; a grid extent cannot be negative"
    )
    np.testing.assert_array_equal(b, np.full(10, 7.0, np.float32))  # nothing ran
    kernel(a, b, 0)
    np.testing.assert_array_equal(b, np.full(10, 7.0, np.float32))
    empty = np.zeros(0, np.float32)
    kernel(empty, empty, 1)


def test_dynamic_grid_past_cuda_limits_is_checked_at_launch():
    kernel = tilelang.compile(dynamic_grid(), target="cuda -arch=sm_80 -emulate")
    a = np.random.default_rng(5).standard_normal(8).astype(np.float32)
    b = np.full(8, 3.0, np.float32)
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(a, b, 70000)
    assert (
        str(info.value)
        .split("\n")[0]
        .endswith(
            "kernel 'main' cannot be launched: its grid has 70000 blocks along y; the target "
            "'cuda -arch=sm_80 -emulate' launches at most 65535 (gridDim.y); use fewer, larger blocks or "
            "another grid dimension"
        )
    )
    np.testing.assert_array_equal(b, np.full(8, 3.0, np.float32))


# ---- on-chip arrays that live on a stack


def stack_kernel(scope, n, threads=1, read_thread=False):
    """B = reversed(2 * A) through an on-chip array of n float32 in `scope`; with
    `read_thread`, thread 0 does it (the kernel reads a thread index)."""
    alloc = {"local": T.alloc_local, "shared": T.alloc_shared, "fragment": T.alloc_fragment}[scope]

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):  # MARK-stack
            buf = alloc((n,), "float32")
            if read_thread:
                tx = T.get_thread_binding()
                if tx == 0:
                    for i in T.serial(n):
                        buf[i] = A[i] * 2.0
                    for i in T.serial(n):
                        B[n - 1 - i] = buf[i]
            else:
                for i in T.serial(n):
                    buf[i] = A[i] * 2.0
                for i in T.serial(n):
                    B[n - 1 - i] = buf[i]

    return main


def test_a_block_array_past_the_stack_is_refused_not_a_crash(tmp_path):
    """16 MiB of local array in a cpu kernel's block: it overflowed the thread's stack
    and the process died of SIGSEGV."""
    script = tmp_path / "big_local.py"
    script.write_text(
        "import numpy as np, tilelang, tilelang.language as T\n"
        "N = 1 << 22\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((N,), 'float32'), B: T.Tensor((N,), 'float32')):\n"
        "    with T.Kernel(1, threads=1):\n"
        "        L = T.alloc_local((N,), 'float32')\n"
        "        for i in T.serial(N):\n"
        "            L[i] = A[i] * 2.0\n"
        "        for i in T.serial(N):\n"
        "            B[N - 1 - i] = L[i]\n"
        "a = np.random.default_rng(7).standard_normal(N).astype(np.float32)\n"
        "try:\n"
        "    tilelang.compile(main, target='cpu')(a, np.zeros(N, np.float32))\n"
        "except tilelang.TileLangError as e:\n"
        "    print('refused:', e)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip().split("\n")[0] == (
        f"refused: {script}:5: kernel 'main': the on-chip buffers of a block take 16777216 bytes "
        "('L' 16777216 (4194304 float32)), more than the 4194304 (4 MiB) the target 'cpu' allows: "
        "it keeps them on the stack of the thread that runs the block. Use smaller tiles, or keep "
        "the data in global memory"
    )


@pytest.mark.parametrize(
    ("target", "scope", "n", "read_thread"),
    [
        ("cuda -arch=sm_80 -emulate", "local", 1 << 18, True),
        ("cuda -arch=sm_80", "local", 1 << 18, True),
        ("metal -emulate", "local", 1 << 18, True),
        ("cpu", "local", 1 << 18, True),
    ],
)
def test_thread_arrays_past_512_kib_are_refused(target, scope, n, read_thread):
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(stack_kernel(scope, n, threads=2, read_thread=read_thread), target=target)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-stack')}: kernel 'main': the arrays each thread keeps take 1048576 "
        f"bytes ('buf' 1048576 (262144 float32)), more than the 524288 (512 KiB) a thread may have "
        f"on the target '{target}' (CUDA's local memory a thread; the emulators and the cpu target "
        "run each thread on a 1 MiB stack). Use smaller tiles or more threads, or keep the data in "
        "shared or global memory"
    )


@pytest.mark.parametrize("scope", ["shared", "fragment"])
def test_cpu_block_buffers_past_4_mib_are_refused(scope):
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(stack_kernel(scope, 3 << 20), target="cpu")
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-stack')}: kernel 'main': the on-chip buffers of a block take 12582912 "
        "bytes ('buf' 12582912 (3145728 float32)), more than the 4194304 (4 MiB) the target 'cpu' "
        "allows: it keeps them on the stack of the thread that runs the block. Use smaller tiles, or "
        "keep the data in global memory"
    )


@pytest.mark.parametrize(
    ("target", "scope", "n", "read_thread"),
    [
        ("cpu", "local", 1 << 19, False),  # 2 MiB of the block's stack
        ("cpu", "shared", 1 << 19, False),
        ("cpu", "local", 1 << 16, True),  # 256 KiB of a fiber's stack
        ("cuda -arch=sm_80 -emulate", "local", 1 << 16, True),
    ],
)
def test_arrays_within_the_limits_run(target, scope, n, read_thread):
    kernel = tilelang.compile(
        stack_kernel(scope, n, threads=2, read_thread=read_thread), target=target
    )
    a = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    b = np.zeros(n, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, (a.astype(np.float64) * 2.0)[::-1].astype(np.float32))
