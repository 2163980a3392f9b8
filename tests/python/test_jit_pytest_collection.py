"""pytest does not collect a module-level `@tilelang.jit` (or `@tilelang.autotune`) object
named test_*, as with TileLang, while the object keeps the function's metadata."""

import inspect
import os
import subprocess
import sys
import textwrap

import tilelang
import tilelang.language as T

TINY = textwrap.dedent(
    """
    import tilelang
    import tilelang.language as T


    @tilelang.jit
    def test_eager_kernel(A: T.Tensor((16, 16), T.float32)):
        with T.Kernel(1, threads=32):
            A[0, 1] = A[0, 0]


    @tilelang.jit(out_idx=[-1])
    def test_lazy_factory(n):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    B[i] = A[i]

        return main


    @tilelang.autotune(configs=[{"n": 8}])
    @tilelang.jit(out_idx=[-1])
    def test_tuned_factory(n=8):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    B[i] = A[i]

        return main


    def test_plain():
        assert test_eager_kernel.__name__ == "test_eager_kernel"
    """
)


def test_jit_objects_named_test_are_not_collected(tmp_path):
    (tmp_path / "test_tiny.py").write_text(TINY)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "test_tiny.py",
        ],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "1 passed" in out, out
    assert "error" not in out.lower(), out
    for name in ("test_eager_kernel", "test_lazy_factory", "test_tuned_factory"):
        assert name not in out, out


def test_jit_objects_keep_function_metadata():
    def test_factory(n: int, dtype="float32"):
        """Doc of the factory."""

        @T.prim_func
        def main(A: T.Tensor((n,), dtype)):
            with T.Kernel(1, threads=32):
                A[0] = A[1]

        return main

    jitted = tilelang.jit(test_factory)
    assert jitted.__name__ == "test_factory"
    assert jitted.__qualname__ == test_factory.__qualname__
    assert jitted.__doc__ == "Doc of the factory."
    assert jitted.__module__ == __name__
    assert jitted.__wrapped__ is test_factory
    assert list(inspect.signature(jitted).parameters) == ["n", "dtype"]
    assert jitted.__test__ is False
