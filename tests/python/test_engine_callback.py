"""tilelang.engine.callback: the CUDA source post-processor sees every CUDA kernel's
source, what it returns is what compiles, and it is part of the cache key."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import _C
from tilelang.engine import callback

EMU = "cuda -arch=sm_80 -emulate"


@pytest.fixture(autouse=True)
def no_callback_left():
    callback.unregister_cuda_postproc_callback()
    yield
    callback.unregister_cuda_postproc_callback()


def scaled():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            B[tx] = T.call_extern("float32", "user_scale", A[tx])

    return k


def defining(factor):
    """A post-processor that defines user_scale (x * factor) at the top of the source."""
    seen = []

    def post(code, target):
        seen.append(target)
        return (
            "// patched by the test\n"
            "#if defined(__CUDACC__) && !defined(TL_EMULATE)\n__device__\n#endif\n"
            f"inline float user_scale(float x) {{ return x * {factor}.0f; }}\n" + code
        )

    return post, seen


def test_the_rewritten_source_is_what_compiles_and_it_keys_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    a = np.arange(64, dtype=np.float32)
    twice, seen = defining(2)

    @callback.register_cuda_postproc_callback
    def _(code, target):
        return twice(code, target)

    kernel = tilelang.compile(scaled(), target=EMU)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, 2 * a)
    assert seen == [EMU]
    assert kernel.get_kernel_source().startswith("// patched by the test\n")

    # Another rewrite is another binary, never the cached one.
    thrice, _ = defining(3)
    callback.register_cuda_postproc(thrice)
    other = tilelang.compile(scaled(), target=EMU)
    other(a, b)
    np.testing.assert_array_equal(b, 3 * a)
    assert other.cache_key != kernel.cache_key

    # The first rewrite again: the same key, loaded without a build.
    callback.register_cuda_postproc(twice)
    builds = _C.compile_count()
    again = tilelang.compile(scaled(), target=EMU)
    assert _C.compile_count() == builds and again.cache_key == kernel.cache_key
    again(a, b)
    np.testing.assert_array_equal(b, 2 * a)
    assert seen == [EMU, EMU]  # it ran for the lookup too


def test_nvrtc_compiles_the_rewritten_source():
    post, seen = defining(5)
    callback.register_cuda_postproc_callback(override=True)(post)
    kernel = tilelang.compile(scaled(), target="cuda -arch=sm_90a")
    assert seen == ["cuda -arch=sm_90a"]
    assert "return x * 5.0f;" in kernel.get_kernel_source()


def test_other_targets_are_not_post_processed():
    post, seen = defining(2)
    callback.register_cuda_postproc(post)

    @T.prim_func
    def k(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as _:
            tx = T.get_thread_binding()
            A[tx] = A[tx] + 1.0

    a = np.zeros(4, np.float32)
    tilelang.compile(k, target="cpu")(a)
    np.testing.assert_array_equal(a, 1)
    assert seen == []


def test_bad_callbacks_are_named():
    @callback.register_cuda_postproc_callback()
    def returns_nothing(code, target):
        pass

    with pytest.raises(
        TypeError, match="returns_nothing must return the source as a str, got NoneType"
    ):
        tilelang.compile(scaled(), target=EMU)
    with pytest.raises(ValueError, match="already registered .*returns_nothing.*override=True"):
        callback.register_cuda_postproc(lambda c, t: c, override=False)
    with pytest.raises(TypeError, match="func must be callable as func\\(code, target\\), got 3"):
        callback.register_cuda_postproc(3)
    with pytest.raises(TypeError, match="use it as @register_cuda_postproc_callback"):
        callback.register_cuda_postproc_callback("x")
