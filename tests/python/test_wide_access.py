"""T.ldg32 ... T.ldg256, T.stg32 ... T.stg256, T.lds32 ... T.lds128, T.sts32 ... T.sts128
and T.__ldg (python/tilelang/language/vector.py, device/common/wide_access.h): one
access of 4 to 32 bytes of global or shared memory, with an optional predicate, its
value a uint32 or a vector of uint32 lanes that T.reinterpret and slice stores take."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
N = 128
BITS = [32, 64, 128, 256]


def rand_f32(seed, n=N):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def copy_kernel(bits, with_pred, via_shared):
    """Each block moves one access's worth of float32 from X to Y: through registers
    (ldg / stg), or through shared memory as well (sts / lds)."""
    w = bits // 32
    ldg = {32: T.ldg32, 64: T.ldg64, 128: T.ldg128, 256: T.ldg256}[bits]
    stg = {32: T.stg32, 64: T.stg64, 128: T.stg128, 256: T.stg256}[bits]
    lds = {32: T.lds32, 64: T.lds64, 128: T.lds128}.get(bits)
    sts = {32: T.sts32, 64: T.sts64, 128: T.sts128}.get(bits)
    live = N // w // 2  # blocks whose predicate holds

    @T.prim_func
    def copy(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N // w, threads=32) as b:
            S = T.alloc_shared((N,), "float32")
            if with_pred:
                v = ldg(X[b * w : b * w + w], pred=b < live)
            else:
                v = ldg(X[b * w : b * w + w])
            if via_shared:
                sts(S[b * w : b * w + w], v)
                T.sync_threads()
                v = lds(S[b * w : b * w + w])
            if with_pred:
                stg(
                    Y[b * w : b * w + w], v, pred=b < live + 1
                )  # one block stores the zeros it loaded
            else:
                stg(Y[b * w : b * w + w], v)

    return copy, live


# Shared-memory accesses go up to 128 bits, as TileLang's.
COPY_CASES = [
    (b, m) for b in BITS for m in ("plain", "pred", "shared") if not (m == "shared" and b == 256)
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bits, mode", COPY_CASES)
def test_wide_copy_matches_numpy(target, bits, mode):
    func, live = copy_kernel(bits, mode == "pred", mode == "shared")
    kernel = tilelang.compile(func, target=target)
    x = rand_f32(bits)
    y = np.full(N, 7.0, np.float32)
    kernel(x, y)
    w = bits // 32
    ref = x.copy()
    if mode == "pred":
        ref[live * w :] = 7.0  # stores skipped
        ref[live * w : (live + 1) * w] = 0.0  # a false load predicate gives zeros
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("target", TARGETS)
def test_lanes_reinterpret_to_halves_and_store_into_a_slice(target):
    """ldg64 of four float16 (two words), reinterpreted as float16x4 and as one uint64, and
    a float32 scalar packed by stg32."""

    @T.prim_func
    def halves(
        H: T.Tensor((N,), "float16"),
        G: T.Tensor((N,), "float16"),
        U: T.Tensor((N // 4,), "uint64"),
        X: T.Tensor((N,), "float32"),
        Y: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(N // 4, threads=32) as b:
            h = T.ldg64(H[b * 4 : b * 4 + 4])
            G[b * 4 : b * 4 + 4] = T.reinterpret(h, "float16x4")
            U[b] = T.reinterpret(h, "uint64")
            for j in T.serial(4):
                T.stg32(Y[b * 4 + j], X[b * 4 + j] * 2.0)

    kernel = tilelang.compile(halves, target=target)
    h = np.random.default_rng(5).standard_normal(N).astype(np.float16)
    x = rand_f32(6)
    g = np.zeros(N, np.float16)
    u = np.zeros(N // 4, np.uint64)
    y = np.zeros(N, np.float32)
    kernel(h, g, u, x, y)
    np.testing.assert_array_equal(g.view(np.uint16), h.view(np.uint16))
    np.testing.assert_array_equal(u, h.view(np.uint64))
    np.testing.assert_array_equal(y, x * np.float32(2))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
def test_ldg_readonly_load(target, dtype):
    @T.prim_func
    def readonly(x: T.Tensor((N,), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(N // 32, threads=32) as b:
            t = T.get_thread_binding()
            y[b * 32 + t] = T.__ldg(x[b * 32 + t])

    kernel = tilelang.compile(readonly, target=target)
    if "cuda" in target:
        assert "__ldg(&(x[" in kernel.get_kernel_source()
    bits = np.random.default_rng(7).integers(0, 2**16, N, dtype=np.uint16)
    np_type = {"float32": np.float32, "float16": np.float16, "int8": np.int8}.get(dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        x = (bits & 0x7F7F).view(ml_dtypes.bfloat16)  # finite values
    elif dtype == "float32":
        x = rand_f32(8)
    else:
        x = (
            (bits & 0x7BFF).astype(np.uint16).view(np.float16)
            if dtype == "float16"
            else bits.astype(np_type)
        )
    y = np.zeros_like(x)
    kernel(x, y)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


def _kernel_error(body):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((N,), "float32")
                body(X, Y, S)

    msg = str(info.value)
    assert "test_wide_access.py" in msg
    return msg


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            lambda X, Y, S: T.ldg64(S[0:2]),
            "T.ldg64 accesses global memory, but buffer 'S' is in 'shared.dyn' memory",
        ),
        (
            lambda X, Y, S: T.sts32(Y[0], T.uint32(1)),
            "T.sts32 accesses shared memory, but buffer 'Y' is in 'global'",
        ),
        (
            lambda X, Y, S: T.ldg128(X[0:2]),
            "T.ldg128 moves 16 bytes, but the slice of 'X' holds 2 float32 element(s) (8 bytes)",
        ),
        (
            lambda X, Y, S: T.stg64(Y[0:2], X[0]),
            "T.stg64: the value must have 64 bits, got 1 lane(s) of float32 (32 bits)",
        ),
        (lambda X, Y, S: T.ldg32(X[0], pred=1.5), "T.ldg32: pred must be a condition"),
        (
            lambda X, Y, S: T.__ldg(S[0]),
            "T.__ldg loads through the read-only cache of global memory, but buffer 'S'",
        ),
        (
            lambda X, Y, S: T.reinterpret(T.ldg64(X[0:2]), "float32x4"),
            "T.reinterpret needs types of equal size, got uint32x2 (64 bits) to float32x4 (128 bits)",
        ),
    ],
)
def test_misuse_is_reported_at_the_users_line(body, expected):
    assert expected in _kernel_error(body)


def test_slice_store_needs_one_element_per_lane():
    def body(X, Y, S):
        Y[0:4] = T.reinterpret(T.ldg64(X[0:2]), "float32x2")

    assert (
        "storing a float32x2 value (2 lanes) into Y[0:0 + 4]: the slice has 4 element(s)"
        in _kernel_error(body)
    )


def test_metal_refuses_with_the_target_named():
    @T.prim_func
    def on_metal(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N // 2, threads=32) as b:
            T.stg64(Y[b * 2 : b * 2 + 2], T.ldg64(X[b * 2 : b * 2 + 2]))

    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(on_metal, target="metal -emulate")
    msg = str(info.value)
    assert (
        "(tl::load_global_64) are available on the cpu and cuda targets, not on the target 'metal"
        in msg
    )
    assert "test_wide_access.py" in msg
