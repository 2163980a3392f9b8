"""T.CUDASourceCodeKernel: a kernel given as CUDA source, launched on the T.Kernel grid
with the prim_func's parameters in order and then its dynamic dimensions; run in the
CUDA emulator against numpy, and the errors for misuse."""

import inspect

import numpy as np
import pytest
import tilelang
import tilelang.language as T

EMU = "cuda -arch=sm_80 -emulate"
HERE = __file__
rng = np.random.default_rng(11)


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


AXPY = """
// a comment naming __global__ void not_an_entry( is not a kernel
__device__ float twice(float v) { return v + v; }

extern "C" __global__ void __launch_bounds__(64) other(float* X) {}

extern "C" __global__ void __launch_bounds__(64)
axpy(const float* __restrict__ X, double alpha, float* Y, int m, long long n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) Y[i] = (float)alpha * X[i] + twice(Y[i]) + (float)m;
}
"""


def axpy_kernel(source, entry="axpy", prelude=None):
    n = T.dynamic("n")

    @T.prim_func
    def main(
        X: T.Tensor((n,), T.float32), alpha: T.float32, Y: T.Tensor((n,), T.float32), m: T.int32
    ):
        T.CUDASourceCodeKernel(  # MARK-launch
            T.ceildiv(n, 64),
            threads=64,
            source_code_or_path=source,
            entry_name=entry,
            prelude=prelude,
        )

    return main


@pytest.mark.parametrize("n", [300, 64, 1])
def test_source_kernel_takes_parameters_in_order_then_dynamic_dims(n):
    kernel = tilelang.compile(axpy_kernel(AXPY), target=EMU)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    ref = np.float32(1.5) * x.astype(np.float64) + 2 * y.astype(np.float64) + 7
    kernel(x, 1.5, y, 7)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    source = kernel.get_kernel_source()
    assert "Y[i] = (float)alpha * X[i] + twice(Y[i]) + (float)m;" in source


def test_source_from_a_file_and_a_prelude(tmp_path):
    path = tmp_path / "scale.cu"
    path.write_text(
        'extern "C" __global__ void axpy(float* X, double a, float* Y, int m, int n) {\n'
        "    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
        "    if (i < n) Y[i] = X[i] * SCALE + (float)m;\n"
        "}\n"
    )
    kernel = tilelang.compile(axpy_kernel(path, prelude="#define SCALE 3.0f"), target=EMU)
    x = rng.standard_normal(100).astype(np.float32)
    y = np.zeros(100, np.float32)
    kernel(x, 0.0, y, 2)
    np.testing.assert_allclose(y, x.astype(np.float64) * 3 + 2, rtol=1e-6, atol=1e-6)
    assert "Y[i] = X[i] * SCALE + (float)m;" in kernel.get_kernel_source()


def test_entry_name_must_name_a_global_function():
    with pytest.raises(tilelang.TileLangError) as info:
        axpy_kernel(AXPY, entry="main_kernel")
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-launch')}: T.CUDASourceCodeKernel entry_name: expected the name of a "
        "__global__ function of the CUDA source, got 'main_kernel'. Available entries: other, axpy"
    )
    with pytest.raises(
        tilelang.TileLangError, match="the CUDA source declares no __global__ function"
    ):
        axpy_kernel("__device__ int f(int x) { return x; }\n")
    with pytest.raises(
        tilelang.TileLangError, match="the CUDA source file '/no/such/file.cu' does not exist"
    ):
        axpy_kernel("/no/such/file.cu")


@pytest.mark.parametrize("target", ["cpu", "metal"])
def test_other_targets_refuse_it(target):
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(axpy_kernel(AXPY), target=target)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-launch')}: T.CUDASourceCodeKernel: a kernel given as CUDA source runs on "
        "the cuda target (and its emulator) only; compile this prim_func for a cuda target, or write the "
        "kernel with T.Kernel for this one"
    )


def test_a_float_parameter_must_be_declared_double():
    # A GPU launch passes a float scalar in 8 bytes; a `float` parameter would read 4.
    source = AXPY.replace("double alpha", "float alpha")
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(axpy_kernel(source), target=EMU)
    message = str(info.value)
    assert message.startswith("the CUDA source of T.CUDASourceCodeKernel failed to compile")
    assert "declare that parameter of the CUDA source `double`" in message


def test_the_emulator_refuses_shared_arrays_of_the_source():
    source = (
        'extern "C" __global__ void rev(float* A) {\n'
        "    __shared__ float s[64];\n"
        "    s[threadIdx.x] = A[threadIdx.x];\n"
        "    __syncthreads();\n"
        "    A[threadIdx.x] = s[63 - threadIdx.x];\n"
        "}\n"
    )

    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        T.CUDASourceCodeKernel(1, threads=64, source_code_or_path=source, entry_name="rev")

    with pytest.raises(
        tilelang.TileLangError, match="cannot run source that declares __shared__ arrays"
    ):
        tilelang.compile(main, target=EMU)


def test_it_is_a_launch_of_its_own():
    with pytest.raises(tilelang.TileLangError, match="is a kernel launch of its own"):

        @T.prim_func
        def main(A: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=64):
                T.CUDASourceCodeKernel(1, source_code_or_path=AXPY, entry_name="axpy")


REVERSE = """
extern "C" __global__ void rev(float* X, float* Y, int m) {
  X[threadIdx.x] = X[threadIdx.x] + 1.0f;
  tl::__sync_thread_partial(1);  // TileLang's header: no count is the whole block
  Y[threadIdx.x] = X[blockDim.x - 1 - threadIdx.x];
}
"""


def test_tilelang_named_barrier_helpers_in_a_source_kernel():
    """TileLang's tl::__sync_thread_partial(id[, count]) (bar.sync; without a count,
    every thread of the block) from the package's CUDA header, in the emulator."""

    @T.prim_func
    def main(X: T.Tensor((128,), T.float32), Y: T.Tensor((128,), T.float32), m: T.int32):
        T.CUDASourceCodeKernel(1, threads=128, source_code_or_path=REVERSE, entry_name="rev")

    x = rng.standard_normal(128).astype(np.float32)
    y = np.zeros_like(x)
    tilelang.compile(main, target=EMU)(x.copy(), y, 0)
    np.testing.assert_array_equal(y, (x + 1)[::-1])
