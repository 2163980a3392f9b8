"""The JIT runtime on a real GPU: launches go to torch's current stream (or an explicit
stream=), CUDA-graph capture records them, the profiler times on the GPU with its
inputs on the GPU, and an exported cuda kernel runs after loading."""

import pytest
import tilelang
import tilelang.language as T
from tilelang.jit import load_kernel
from tilelang.profiler import do_bench

torch = pytest.importorskip("torch")

N = 1 << 20
BLOCK = 256


def scaled_add(n, block=BLOCK):
    @T.prim_func
    def scaled_add_kernel(
        A: T.Tensor((n,), "float32"),
        B: T.Tensor((n,), "float32"),
        C: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 2 + B[bx * block + i]

    return scaled_add_kernel


@pytest.fixture(scope="module")
def kernel():
    return tilelang.compile(scaled_add(N), target="cuda")


@pytest.fixture(scope="module")
def out_kernel():
    return tilelang.compile(scaled_add(N), out_idx=[-1], target="cuda")


def inputs():
    return torch.randn(N, device="cuda"), torch.randn(N, device="cuda")


def test_launch_goes_to_the_current_torch_stream(kernel):
    a, b = inputs()
    c = torch.zeros(N, device="cuda")
    kernel(a, b, torch.empty_like(c))  # loads the module now: loading synchronizes the device
    c.zero_()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)  # keeps `side` busy for a while (about a second)
        kernel(a, b, c)
    # The call returned while `side` still sleeps: the launch was queued, not waited
    # for. (Reading c from the default stream here would wait on `side` as well, so
    # the ordering itself is checked by the result after the sleep.)
    assert not side.query(), "the call waited for the side stream, or the sleep was too short"
    side.synchronize()
    torch.testing.assert_close(c, a * 2 + b)


@pytest.mark.parametrize("how", ["object", "int"])
def test_explicit_stream_argument(out_kernel, how):
    a, b = inputs()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    given = side if how == "object" else side.cuda_stream
    out_kernel(a, b, stream=given)  # loads the module first: loading synchronizes the device
    side.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)
    c = out_kernel(a, b, stream=given)  # called on the default stream, launched on `side`
    assert c.is_cuda and c.shape == (N,)
    assert not side.query(), "the call waited for the side stream, or the sleep was too short"
    side.synchronize()
    torch.testing.assert_close(c, a * 2 + b)


def test_bad_stream_argument_is_a_clear_error(out_kernel):
    a, b = inputs()
    with pytest.raises(
        TypeError, match=r"stream= of kernel .* must be a torch.cuda.Stream or a raw"
    ):
        out_kernel(a, b, stream="side")


def test_cuda_graph_capture_and_replay(out_kernel, kernel):
    a, b = inputs()
    c_static = torch.empty(N, device="cuda")
    # Warm up on a side stream (loads the module outside the capture), as torch asks.
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        out_kernel(a, b)
        kernel(a, b, c_static)
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = out_kernel(a, b)  # output allocated from the graph's pool
        kernel(c, b, c_static)  # c_static = 2 * (2a + b) + b
    for _ in range(2):
        new_a, new_b = inputs()
        a.copy_(new_a)
        b.copy_(new_b)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(c, new_a * 2 + new_b)
        torch.testing.assert_close(c_static, (new_a * 2 + new_b) * 2 + new_b)


def test_profiler_on_the_gpu(out_kernel):
    prof = out_kernel.get_profiler()
    ins = prof._get_inputs()
    assert all(t.is_cuda for t in ins)
    prof.assert_allclose(lambda a, b: a * 2 + b)
    times = {}
    for backend in ("event", "cudagraph", "cupti", "wall"):
        ms = prof.do_bench(backend=backend, warmup=5, rep=20)
        assert isinstance(ms, float) and 0 < ms < 1000, (backend, ms)
        times[backend] = ms
    # CUPTI counts the kernel's own duration: no launch cost, no synchronization.
    assert times["cupti"] < times["wall"], times
    q = prof.do_bench(backend="event", warmup=5, rep=20, quantiles=[0.2, 0.5, 0.8])
    assert 0 < q[0] <= q[1] <= q[2]
    with pytest.raises(ValueError, match="unknown do_bench backend 'nvprof'; use one of 'event'"):
        prof.do_bench(backend="nvprof")


def test_do_bench_of_a_callable_times_the_gpu(kernel):
    a, b = inputs()
    c = torch.empty_like(a)
    flushed = do_bench(lambda: kernel(a, b, c), warmup=5, rep=20)
    graph = do_bench(lambda: kernel(a, b, c), warmup=5, rep=20, backend="cudagraph")
    assert isinstance(flushed, float) and flushed > 0
    assert isinstance(graph, float) and graph > 0
    torch.testing.assert_close(c, a * 2 + b)


def test_exported_kernel_runs_after_loading(out_kernel, tmp_path):
    path = tmp_path / "k.tlkernel"
    out_kernel.export_library(str(path))
    builds = tilelang._C.compile_count()
    loaded = load_kernel(str(path))
    assert tilelang._C.compile_count() == builds
    a, b = inputs()
    torch.testing.assert_close(loaded(a, b), a * 2 + b)


def test_kernel_for_an_older_arch_runs_through_ptx():
    # An sm_80 cubin cannot load on an sm_90 card: the runtime hands the driver PTX.
    major, minor = torch.cuda.get_device_capability()
    if major * 10 + minor <= 80:
        pytest.skip("needs a GPU newer than sm_80")
    k = tilelang.compile(scaled_add(4096), out_idx=[-1], target="cuda -arch=sm_80")
    a = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    torch.testing.assert_close(k(a, b), a * 2 + b)


def test_kernel_for_a_newer_arch_is_a_clear_error():
    major, minor = torch.cuda.get_device_capability()
    if major >= 10:
        pytest.skip("needs a GPU older than sm_100")
    k = tilelang.compile(scaled_add(4096), out_idx=[-1], target="cuda -arch=sm_100")
    a = torch.randn(4096, device="cuda")
    with pytest.raises(
        Exception, match=rf"built for sm_100.*cannot run on this GPU \(sm_{major}{minor}\)"
    ):
        k(a, a)


def test_the_core_answers_device_questions():
    """tilelang.utils.target asks the core's driver (one libcuda load per process)."""
    from tilelang.utils.target import cuda_device_attribute, has_cuda_device

    assert has_cuda_device()
    major, minor = torch.cuda.get_device_capability(0)
    assert (cuda_device_attribute(75), cuda_device_attribute(76)) == (major, minor)
    assert cuda_device_attribute(75, device=torch.cuda.device_count()) is None
