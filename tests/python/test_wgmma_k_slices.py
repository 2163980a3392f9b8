"""Register gemms on K slices of shared tiles: T.gemm / T.wgmma_gemm(A_s[:, j*kt:(j+1)*kt], ...)
with j a loop variable (or a constant slice inside a swizzle row) keeps the
accumulator in registers and runs on wgmma.mma_async on sm_90a, mma.sync with
ldmatrix on sm_80 (before, such a gemm moved its accumulator to shared memory and
took the block-wide tl::gemm_mma path; T.wgmma_gemm refused it). The device
functions take the whole tile and the slice's K offset (tl::wgmma_gemm_ss / _rs and
tl::gemm_ss / _rs with KTileA / KTileB and ka0 / kb0); the emulator decodes the
wgmma descriptors as the hardware does, so a wrong start address or swizzle gives
wrong products here as on the GPU. Offsets not provably a multiple of the
instruction's K (32 bytes) keep the shared-memory path for T.gemm and are an error
for T.wgmma_gemm."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM90A = "cuda -arch=sm_90a -emulate"
SM80 = "cuda -arch=sm_80 -emulate"


def sliced_gemm(
    M,
    N,
    K,
    kt,
    dtype="float16",
    trans_A=False,
    trans_B=True,
    threads=128,
    explicit=False,
    step=None,
    pipelined=False,
    a_regs=False,
):
    """C = sum over j of A[:, slice j] @ B[slice j, :], each slice a K slice of whole
    shared tiles; `step` the slice's start per j (kt by default)."""
    step = kt if step is None else step
    nk = (K - kt) // step + 1
    a_shape = (K, M) if trans_A else (M, K)
    b_shape = (N, K) if trans_B else (K, N)

    def a_slice(s, j):
        return s[j * step : j * step + kt, :] if trans_A else s[:, j * step : j * step + kt]

    def b_slice(s, j):
        return s[:, j * step : j * step + kt] if trans_B else s[j * step : j * step + kt, :]

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared(a_shape, dtype)
            B_s = T.alloc_shared(b_shape, dtype)
            C_l = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            if a_regs:
                A_r = T.alloc_fragment((M, kt), dtype)
                for j in T.serial(nk):
                    T.copy(A_s[:, j * step : j * step + kt], A_r)
                    T.gemm(A_r, b_slice(B_s, j), C_l, transpose_B=trans_B)
            else:
                gemm = T.wgmma_gemm if explicit else T.gemm
                loop = T.Pipelined(nk, num_stages=2) if pipelined else T.serial(nk)
                for j in loop:
                    gemm(
                        a_slice(A_s, j),
                        b_slice(B_s, j),
                        C_l,
                        transpose_A=trans_A,
                        transpose_B=trans_B,
                    )
                if explicit:
                    T.wait_wgmma(0)
            T.copy(C_l, C)

    def reference(a, b):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        am = a64.T if trans_A else a64
        bm = b64.T if trans_B else b64
        out = np.zeros((M, N))
        for j in range(nk):
            ks = slice(j * step, j * step + kt)
            out += am[:, ks] @ bm[ks, :]
        return out

    return main, a_shape, b_shape, reference


def operands(a_shape, b_shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, a_shape).astype(np.float32)
    b = rng.integers(-3, 4, b_shape).astype(np.float32)
    if dtype == "bfloat16":
        import ml_dtypes

        return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    return a.astype(dtype), b.astype(dtype)


def run(target, *args, **kw):
    f, a_shape, b_shape, reference = sliced_gemm(*args, **kw)
    kernel = tilelang.compile(f, target=target)
    dtype = kw.get("dtype", "float16")
    a, b = operands(a_shape, b_shape, dtype)
    c = np.zeros((args[0], args[1]), np.float32)
    kernel(a, b, c)
    # small integers: the products and their sums are exact in float32
    np.testing.assert_array_equal(c, reference(a, b))
    return kernel.get_kernel_source()


WGMMA_K = "tl::wgmma_gemm_ss<"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_loop_k_slices_every_transpose(dtype, trans_A, trans_B):
    src = run(SM90A, 64, 64, 64, 16, dtype=dtype, trans_A=trans_A, trans_B=trans_B)
    ta, tb = str(trans_A).lower(), str(trans_B).lower()
    assert f"{WGMMA_K}64, 64, 16, 1, 1, {ta}, {tb}, 0, true, 64, 64>" in src
    assert "(j * 16), (j * 16))" in src
    assert "tl::gemm_ss<" not in src and "gemm_mma" not in src


SHAPES = [
    (64, 64, 128, 32, 128),
    (128, 64, 64, 32, 256),
    (64, 128, 256, 64, 256),
    (128, 128, 128, 64, 128),
]


@pytest.mark.parametrize("M,N,K,kt,threads", SHAPES)
def test_loop_k_slices_shapes(M, N, K, kt, threads):
    """TileLang's sliced-operand cases: slices crossing and inside swizzle rows, 1 and 2 warpgroups."""
    src = run(SM90A, M, N, K, kt, threads=threads)
    assert f"{WGMMA_K}{M}, {N}, {kt}," in src and f", {K}, {K}>" in src


def test_explicit_wgmma_gemm_on_k_slices():
    """TileLang's language/wgmma_gemm sliced-operand kernel: T.wgmma_gemm in a loop over K slices."""
    src = run(SM90A, 64, 64, 64, 16, explicit=True)
    assert f"{WGMMA_K}64, 64, 16, 1, 1, false, true, 1, true, 64, 64>" in src
    assert "tl::wgmma_wait<0>();" in src


def test_constant_slice_inside_a_swizzle_row():
    """A[:, 16:32] of a 64-wide tile: the descriptor starts 32 bytes into the 128-byte rows."""
    src = run(SM90A, 64, 64, 48, 16, step=16)
    assert f"{WGMMA_K}64, 64, 16, 1, 1, false, true, 0, true, 48, 48>" in src


def test_slice_offset_not_a_multiple_of_the_instruction_k():
    """j * 8 halves: k16 steps would start mid-chunk. T.gemm keeps the shared-memory path; T.wgmma_gemm says why."""
    src = run(SM90A, 64, 64, 64, 16, step=8)
    assert WGMMA_K not in src and "tl::gemm_mma<" in src
    assert "tl::gemm_mma<" in run(SM80, 64, 64, 64, 16, step=8)
    with pytest.raises(
        tilelang.TileLangError, match="only along K, starting at a multiple of the instruction's K"
    ):
        f, *_ = sliced_gemm(64, 64, 64, 16, step=8, explicit=True)
        tilelang.compile(f, target=SM90A)


def test_pipelined_loop_over_k_slices():
    src = run(SM90A, 64, 64, 128, 32, pipelined=True)
    assert WGMMA_K in src


def tile_sliced_gemm(M, N, K, bM, bN, bK, slices, stages=3, threads=256, ws=True):
    """C = A @ B through a T.Pipelined loop over bK-wide tiles, each tile's product as
    `slices` register gemms on K slices at an unrolled loop offset (MLA's way of walking
    a resident tile); bench/sliced_gemm_cuda.py's kernel."""
    width = bK // slices

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                for j in T.unroll(slices):
                    T.gemm(
                        A_s[:, j * width : (j + 1) * width],
                        B_s[j * width : (j + 1) * width, :],
                        C_l,
                    )
            T.copy(C_l, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("slices", [2, 4])
@pytest.mark.parametrize("ws", [True, False])
def test_k_slices_of_a_pipelined_tile_stay_in_flight(slices, ws):
    """The slices of each pipelined tile are issued back to back and left in flight into
    the next step, as one gemm on the whole tile is (tl::wgmma_gemm_ss<..., Pending =
    slices, ...>: the last one's wgmma_wait<slices> completes the previous step's), the
    previous step's stage released after them; no wgmma_wait inside the steady-state
    loop. The emulator runs each committed group at its wait, so a stage released or
    overwritten too early reads wrong values."""
    M, N, K = 128, 128, 512
    configs = {} if ws else {"tl.disable_warp_specialized": True}
    kernel = tilelang.compile(
        tile_sliced_gemm(M, N, K, 64, 128, 128, slices, threads=128),
        target=SM90A,
        pass_configs=configs,
    )
    src = kernel.get_kernel_source()
    width = 128 // slices
    assert f"tl::wgmma_gemm_ss<64, 128, {width}, 1, 1, false, false, {slices}," in src
    start = src.index("{", src.index("for (int32_t k_1"))
    depth, end = 0, start
    for end in range(start, len(src)):  # the steady-state loop's body, braces matched
        depth += {"{": 1, "}": -1}.get(src[end], 0)
        if depth == 0:
            break
    steady = src[start:end]
    assert "wgmma_wait" not in steady and steady.count("tl::wgmma_gemm_ss<") == slices, steady
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_register_a_with_a_sliced_b():
    """A copied into registers per slice, B a K slice of its tile: tl::wgmma_gemm_rs with KTileB / kb0."""
    src = run(SM90A, 64, 64, 64, 16, a_regs=True)
    assert "tl::wgmma_gemm_rs<64, 64, 16, 1, 1, true, 0, true, 64>" in src


@pytest.mark.parametrize("dtype", ["float32", "float8_e4m3fn"])
def test_k_major_only_types(dtype):
    """tf32 (k8 steps) and fp8 (k32 steps) read K-major slices too."""
    kt = 32 if dtype == "float8_e4m3fn" else 8
    f, a_shape, b_shape, reference = sliced_gemm(64, 64, 4 * kt, kt, dtype=dtype)
    kernel = tilelang.compile(f, target=SM90A)
    src = kernel.get_kernel_source()
    assert f"{WGMMA_K}64, 64, {kt}, 1, 1, false, true, 0, true, {4 * kt}, {4 * kt}>" in src
    rng = np.random.default_rng(1)
    if dtype == "float32":
        a = rng.integers(-3, 4, a_shape).astype(np.float32)
        b = rng.integers(-3, 4, b_shape).astype(np.float32)
    else:
        import ml_dtypes

        a = rng.integers(-3, 4, a_shape).astype(ml_dtypes.float8_e4m3fn)
        b = rng.integers(-3, 4, b_shape).astype(ml_dtypes.float8_e4m3fn)
    c = np.zeros((64, 64), np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, reference(a, b))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_sm80_loop_k_slices_every_transpose(dtype, trans_A, trans_B):
    src = run(SM80, 64, 64, 64, 16, dtype=dtype, trans_A=trans_A, trans_B=trans_B)
    ta, tb = str(trans_A).lower(), str(trans_B).lower()
    assert f"tl::gemm_ss<64, 64, 16, 2, 2, {ta}, {tb}, 64, 64>" in src
    assert "(j * 16), (j * 16))" in src and "tl::gemm_mma<" not in src


def test_sm80_k_slices_tf32():
    """float32 operands (tf32 mma, k8 steps): slices at multiples of 8."""
    src = run(SM80, 64, 64, 32, 8, dtype="float32")
    assert "tl::gemm_ss<64, 64, 8, 2, 2, false, true, 32, 32>" in src


def test_sm80_pipelined_and_register_a():
    assert "tl::gemm_ss<" in run(SM80, 64, 64, 128, 32, pipelined=True)
    assert "tl::gemm_rs<64, 64, 16, 4, 1, true, 64>" in run(SM80, 64, 64, 64, 16, a_regs=True)


def mn_sliced_gemm(m0, n0, k_loop=False):
    """C = A_s[m0:m0+64, ks] @ B_s[ks, n0:n0+64] from a 128 x 64 A tile and a 64 x 128 B
    tile (K whole, or in 16-wide slices over a loop)."""

    @T.prim_func
    def main(
        A: T.Tensor((128, 64), "float16"),
        B: T.Tensor((64, 128), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            if k_loop:
                for j in T.serial(4):
                    T.gemm(
                        A_s[m0 : m0 + 64, j * 16 : j * 16 + 16],
                        B_s[j * 16 : j * 16 + 16, n0 : n0 + 64],
                        C_l,
                    )
            else:
                T.gemm(A_s[m0 : m0 + 64, :], B_s[:, n0 : n0 + 64], C_l)
            T.copy(C_l, C)

    return main


MN_SLICES = [(64, 64, False), (16, 0, False), (8, 64, True), (0, 8, False)]


@pytest.mark.parametrize("m0,n0,k_loop", MN_SLICES)
def test_sm80_m_and_n_slices(m0, n0, k_loop):
    """M / N slices that start a swizzle pattern (8 rows; 128 bytes = 64 halves of a row)
    are read in place by mma.sync with the tile's row length (tl::gemm_ss's LdA / LdB);
    others (n0 = 8) keep the shared-memory path; every result exact."""
    kernel = tilelang.compile(mn_sliced_gemm(m0, n0, k_loop), target=SM80)
    src = kernel.get_kernel_source()
    if n0 % 64 == 0:
        kk = 16 if k_loop else 64
        assert f"tl::gemm_ss<64, 64, {kk}, 2, 2, false, false, 64, 128>" in src, src
        assert "tl::gemm_mma<" not in src
    else:
        assert "tl::gemm_mma<" in src
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (128, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 128)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel(a, b, c)
    ref = a[m0 : m0 + 64].astype(np.float32) @ b[:, n0 : n0 + 64].astype(np.float32)
    np.testing.assert_array_equal(c, ref)
