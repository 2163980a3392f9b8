"""tilelang.intrinsics: TileLang's warp-level mma.sync emitter (TensorCoreIntrinEmitter)
and its index maps.

The GEMM below is written the way TileLang's examples/gemm/example_gemm_intrinsics.py
and the MMA-intrinsic kernel tests write theirs (tiles copied to swizzled shared memory,
ldmatrix_a / ldmatrix_b / mma per k step into T.alloc_local registers, stmatrix into a
shared tile, a T.Parallel store to C). It runs on both CUDA emulators against numpy,
compiles with NVRTC for sm_80 and sm_90a, and, where nvcc is installed, ptxas shows
mma.sync with the fragments kept in registers (no local memory)."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import _native
from tilelang.intrinsics import (
    TensorCoreIntrinEmitter,
    get_ldmatrix_offset,
    get_swizzle_layout,
    make_mma_swizzle_layout,
    mma_layout,
    mma_store_index_map,
)
from tilelang.utils.target import available_targets

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)

EMULATORS = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
NP = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
    "float32": np.float32,
    "int32": np.int32,
}
needs_nvrtc = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC (libnvrtc.so) is not on this machine"
)


def intrinsics_gemm(
    M,
    N,
    K,
    in_dtype,
    out_dtype,
    accum_dtype,
    a_transposed=False,
    b_transposed=True,
    block_row_warps=2,
    block_col_warps=2,
    warp_row_tiles=32,
    warp_col_tiles=32,
    chunk=32,
    stage=2,
    store="shared4",
    layout="mma",
    atoms=False,
):
    """C = op(A) @ op(B) through the emitter. store: "shared4" (stmatrix into a
    (tiles_m, tiles_n, 16, n) shared tile), "shared2" (a 2-D shared tile) or "global"
    (stmatrix straight into C with pid_m / pid_n). atoms: mma_atom over
    T.grid(mma_num_inst_m, mma_num_inst_n) with k_inner = ki instead of mma()."""
    emitter = TensorCoreIntrinEmitter(
        a_dtype=in_dtype,
        b_dtype=in_dtype,
        accum_dtype=accum_dtype,
        a_transposed=a_transposed,
        b_transposed=b_transposed,
        block_row_warps=block_row_warps,
        block_col_warps=block_col_warps,
        warp_row_tiles=warp_row_tiles,
        warp_col_tiles=warp_col_tiles,
        chunk=chunk,
    )
    mx, ny, kk = emitter.micro_size_x, emitter.micro_size_y, emitter.micro_size_k
    bM, bN, bK = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles, chunk
    a_shape = (K, M) if a_transposed else (M, K)
    b_shape = (N, K) if b_transposed else (K, N)
    a_tile = (bK, bM) if a_transposed else (bM, bK)
    b_tile = (bN, bK) if b_transposed else (bK, bN)
    c_tile = (bM // mx, bN // ny, mx, ny) if store == "shared4" else (bM, bN)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, in_dtype),
        B: T.Tensor(b_shape, in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=emitter.threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, in_dtype, scope="shared.dyn")
            B_shared = T.alloc_shared(b_tile, in_dtype, scope="shared.dyn")
            C_shared = T.alloc_shared(c_tile, out_dtype, scope="shared.dyn")
            A_local = T.alloc_local((emitter.warp_rows * emitter.local_size_a), in_dtype)
            B_local = T.alloc_local((emitter.warp_cols * emitter.local_size_b), in_dtype)
            C_local = T.alloc_local(
                (emitter.warp_rows * emitter.warp_cols * emitter.local_size_out), accum_dtype
            )
            if layout == "mma":
                T.annotate_layout(
                    {
                        A_shared: make_mma_swizzle_layout(A_shared),
                        B_shared: make_mma_swizzle_layout(B_shared),
                    }
                )
            else:  # "rotated": each row turned by one element, no 16-byte run stays aligned
                T.annotate_layout(
                    {
                        A_shared: T.Layout(a_tile, lambda i, j: [i, (j + 1) % a_tile[1]]),
                        B_shared: T.Layout(b_tile, lambda i, j: [i, (j + 1) % b_tile[1]]),
                    }
                )
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(K // bK, num_stages=stage):
                if a_transposed:
                    for k, i in T.Parallel(bK, bM):
                        A_shared[k, i] = A[ko * bK + k, by * bM + i]
                else:
                    for i, k in T.Parallel(bM, bK):
                        A_shared[i, k] = A[by * bM + i, ko * bK + k]
                if b_transposed:
                    for j, k in T.Parallel(bN, bK):
                        B_shared[j, k] = B[bx * bN + j, ko * bK + k]
                else:
                    for k, j in T.Parallel(bK, bN):
                        B_shared[k, j] = B[ko * bK + k, bx * bN + j]
                for ki in T.serial(0, bK // kk):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    if atoms:
                        for i, j in T.grid(emitter.mma_num_inst_m, emitter.mma_num_inst_n):
                            emitter.mma_atom(A_local, B_local, C_local, i, j, ki)
                    else:
                        emitter.mma(A_local, B_local, C_local)
            if store == "global":
                emitter.stmatrix(C_local, C, pid_m=by, pid_n=bx)
            else:
                emitter.stmatrix(C_local, C_shared)
                for i, j in T.Parallel(bM, bN):
                    if store == "shared4":
                        C[by * bM + i, bx * bN + j] = C_shared[i // mx, j // ny, i % mx, j % ny]
                    else:
                        C[by * bM + i, bx * bN + j] = C_shared[i, j]

    return main


def operands(M, N, K, in_dtype, a_transposed, b_transposed, seed=0):
    rng = np.random.default_rng(seed)
    a_shape = (K, M) if a_transposed else (M, K)
    b_shape = (N, K) if b_transposed else (K, N)
    if in_dtype == "int8":
        a = rng.integers(-128, 128, a_shape).astype(np.int8)
        b = rng.integers(-128, 128, b_shape).astype(np.int8)
    else:
        a = rng.standard_normal(a_shape).astype(NP[in_dtype])
        b = rng.standard_normal(b_shape).astype(NP[in_dtype])
    af, bf = a.astype(np.float64), b.astype(np.float64)
    return a, b, (af.T if a_transposed else af) @ (bf.T if b_transposed else bf)


def check_result(c, ref, in_dtype, accum_dtype):
    if in_dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int64))
    elif accum_dtype == "float16":
        # f16 accumulation (and an f16 result) round every partial sum to 11 bits
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=0.15)
    else:
        # exact products, float32 sums
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-4, atol=1e-3)


CASES = {
    # id: (M, N, K, in, out, accum, a_t, b_t, extra options)
    "f16_nt": (64, 64, 64, "float16", "float32", "float32", False, True, {}),
    "f16_tn": (64, 64, 64, "float16", "float32", "float32", True, False, {}),
    "bf16_tt": (64, 64, 64, "bfloat16", "float32", "float32", True, True, {}),
    "f16acc_nn": (64, 64, 64, "float16", "float16", "float16", False, False, {}),
    "int8": (64, 64, 128, "int8", "int32", "int32", False, True, {"chunk": 64}),
    # warp_col_tiles = 8: single n8 fragments; 1 x 4 warps; C stored by stmatrix directly
    "f16_n8_global": (
        32,
        64,
        64,
        "float16",
        "float32",
        "float32",
        False,
        True,
        {
            "block_row_warps": 2,
            "block_col_warps": 4,
            "warp_row_tiles": 16,
            "warp_col_tiles": 8,
            "store": "global",
        },
    ),
    # two m tiles x four n tiles per warp, a 2-D shared C tile
    "f16_wide_warp": (
        64,
        128,
        64,
        "float16",
        "float32",
        "float32",
        False,
        True,
        {
            "block_row_warps": 2,
            "block_col_warps": 1,
            "warp_row_tiles": 32,
            "warp_col_tiles": 64,
            "store": "shared2",
        },
    ),
}
CASES["f16_tn_rotated"] = (*CASES["f16_tn"][:-1], {"layout": "rotated"})
CASES["int8_rotated"] = (*CASES["int8"][:-1], {"chunk": 64, "layout": "rotated"})
# TileLang's atom-level interface (language/atom_mma's test): one mma_atom per (i, j).
CASES["bf16_tt_atoms"] = (*CASES["bf16_tt"][:-1], {"atoms": True})
# Every case on sm_80's emulator; a spread of them on sm_90a's.
RUNS = [(EMULATORS[0], name) for name in CASES] + [
    (EMULATORS[1], name) for name in ("f16_nt", "bf16_tt", "f16acc_nn", "int8")
]


@pytest.mark.parametrize("target, case", RUNS, ids=[f"{t.split()[1]}-{c}" for t, c in RUNS])
def test_emitter_gemm_matches_numpy(target, case):
    M, N, K, ind, outd, accd, a_t, b_t, extra = CASES[case]
    kernel = tilelang.compile(
        intrinsics_gemm(M, N, K, ind, outd, accd, a_t, b_t, **extra), target=target
    )
    a, b, ref = operands(M, N, K, ind, a_t, b_t)
    c = np.zeros((M, N), NP[outd])
    kernel(a, b, c)
    check_result(c, ref, ind, accd)


@pytest.mark.parametrize(
    "case, loads",
    [
        ("f16_nt", ["tl::ldmatrix_frag<4, false>"]),  # A (m, k), B (n, k): plain
        ("f16_tn", ["tl::ldmatrix_frag<4, true>"]),  # A (k, m), B (k, n): .trans
        ("int8", ["tl::ldmatrix_frag<4, false>"]),
        ("f16_n8_global", ["tl::ldmatrix_frag<4, false>", "tl::ldmatrix_frag<2, false>"]),
        ("f16_tn_rotated", []),  # the layout breaks 16-byte runs: element loads
        ("int8_rotated", []),
    ],
)
def test_operands_come_through_ldmatrix_where_the_layout_keeps_16_byte_runs(case, loads):
    M, N, K, ind, outd, accd, a_t, b_t, extra = CASES[case]
    src = tilelang.compile(
        intrinsics_gemm(M, N, K, ind, outd, accd, a_t, b_t, **extra), target=EMULATORS[0]
    ).get_kernel_source()
    body = src[src.index("__global__") :]
    for name in loads:
        assert f"{name}(" in body
    if not loads:
        assert "ldmatrix_frag" not in body and "TL_SMEM(A_shared" in body


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", ["f16_nt", "bf16_tt", "f16acc_nn", "int8"])
def test_emitter_gemm_compiles_with_nvrtc(arch, case):
    _, _, _, ind, outd, accd, a_t, b_t, extra = CASES[case]
    kernel = tilelang.compile(
        intrinsics_gemm(256, 256, 256, ind, outd, accd, a_t, b_t, **extra),
        target=f"cuda -arch={arch}",
    )
    src = kernel.get_kernel_source()
    # warp_rows * warp_cols * 2 calls of the m16n8 instruction per k step, on registers
    # (the pipeline's steady loop and its drain each hold a copy of the step)
    calls = src.count("tl::mma_sync_frag(")
    assert calls >= 2 * 2 * 2 and calls % (2 * 2 * 2) == 0
    assert "tl::mma_sync_frag((&C_local[0]), (&A_local[0]), (&B_local[0]))" in src


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptxas_keeps_fragments_in_registers(arch, nvcc, tmp_path):  # noqa: F811
    """The PTX has the mma.sync instructions and no local memory: the register arrays,
    whose addresses tl::mma_sync_frag takes, are registers after inlining."""
    kernel = tilelang.compile(
        intrinsics_gemm(
            256, 256, 256, "float16", "float32", "float32", warp_row_tiles=64, warp_col_tiles=64
        ),
        target=f"cuda -arch={arch}",
    )
    cu = tmp_path / "kernel.cu"
    cu.write_text(kernel.get_kernel_source())
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    ptx = tmp_path / "kernel.ptx"
    cmd = [nvcc, f"-arch={arch}", "-ptx", "--std=c++17", "-allow-unsupported-compiler"]
    done = subprocess.run(
        [*cmd, f"-I{include}", "-o", str(ptx), str(cu)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = ptx.read_text()
    # 4 x 4 warp tiles of 16 x 16, two m16n8k16 each, per k step (in the pipeline's
    # steady loop and in its drain)
    mmas = text.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert mmas >= 32 and mmas % 32 == 0
    assert "ld.local" not in text and "st.local" not in text


def test_cpu_target_is_refused():
    func = intrinsics_gemm(
        32,
        32,
        32,
        "float16",
        "float32",
        "float32",
        block_row_warps=1,
        block_col_warps=1,
        warp_row_tiles=16,
        warp_col_tiles=16,
        chunk=16,
    )
    with pytest.raises(
        tilelang.TileLangError,
        match=r"TensorCoreIntrinEmitter emits warp-level mma.sync code: compile this kernel for "
        r"a CUDA target .*the cpu and metal targets have no warps",
    ):
        tilelang.compile(func, target="cpu")


def test_metal_target_is_refused():
    func = intrinsics_gemm(
        32,
        32,
        32,
        "float16",
        "float32",
        "float32",
        block_row_warps=1,
        block_col_warps=1,
        warp_row_tiles=16,
        warp_col_tiles=16,
        chunk=16,
    )
    with pytest.raises(
        tilelang.TileLangError,
        match=r"'tl::(mma_sync_frag|ldmatrix_frag<4, false>)' has no Metal version",
    ):
        tilelang.compile(func, target="metal -emulate")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"a_dtype": "float64"}, "a_dtype must be one of float16, bfloat16, .*; got float64"),
        ({"a_dtype": "float16", "b_dtype": "bfloat16"}, "a_dtype=float16, b_dtype=bfloat16"),
        (
            {"a_dtype": "bfloat16", "b_dtype": "bfloat16", "accum_dtype": "float16"},
            "accum_dtype for bfloat16 operands must be float32; got float16",
        ),
        (
            {"a_dtype": "int8", "b_dtype": "int8", "accum_dtype": "float32", "b_transposed": True},
            "accum_dtype for int8 operands must be int32; got float32",
        ),
        (
            {
                "a_dtype": "int8",
                "b_dtype": "int8",
                "accum_dtype": "int32",
                "b_transposed": False,
                "chunk": 32,
            },
            "b_transposed must be True for b_dtype int8, got False",
        ),
        (
            {
                "a_dtype": "int8",
                "b_dtype": "int8",
                "accum_dtype": "int32",
                "a_transposed": True,
                "b_transposed": True,
                "chunk": 32,
            },
            "a_transposed must be False for a_dtype int8",
        ),
        ({"warp_row_tiles": 24}, "warp_row_tiles must be a multiple of 16, got 24"),
        ({"warp_col_tiles": 12}, "warp_col_tiles must be a multiple of 8, got 12"),
        ({"block_row_warps": 0}, "block_row_warps must be a positive int, got 0"),
        ({"chunk": 24}, "chunk must be a multiple of 16, got 24"),
        (
            {
                "a_dtype": "int8",
                "b_dtype": "int8",
                "accum_dtype": "int32",
                "b_transposed": True,
                "chunk": 16,
            },
            "chunk must be a multiple of 32, got 16",
        ),
    ],
)
def test_constructor_checks_its_arguments(kwargs, message):
    base = {"accum_dtype": "float32", "warp_row_tiles": 16, "warp_col_tiles": 16, "chunk": 32}
    with pytest.raises(ValueError, match=message):
        TensorCoreIntrinEmitter(**{**base, **kwargs})


def misuse(kind):
    emitter = TensorCoreIntrinEmitter(
        a_dtype="float16",
        b_dtype="float16",
        accum_dtype="float32",
        b_transposed=True,
        block_row_warps=1,
        block_col_warps=1,
        warp_row_tiles=16,
        warp_col_tiles=16,
        chunk=16,
    )

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((16, 16), "float16")
            A_local = T.alloc_local((8,), "float16")
            B_local = T.alloc_local((8,), "float16")
            C_local = T.alloc_local((8,), "float32")
            small = T.alloc_local((4,), "float16")
            wrong = T.alloc_local((8,), "bfloat16")
            frag = T.alloc_fragment((16, 16), "float32")
            if kind == "small":
                emitter.ldmatrix_a(small, A_shared, 0)
            elif kind == "dtype":
                emitter.ldmatrix_b(wrong, A_shared, 0)
            elif kind == "global_tile":
                emitter.ldmatrix_a(A_local, A, 0)
            elif kind == "fragment":
                emitter.mma(A_local, B_local, frag)
            elif kind == "atom_index":
                emitter.mma_atom(A_local, B_local, C_local, 0, 1)
            elif kind == "pid":
                emitter.stmatrix(C_local, C, pid_m=0)
            elif kind == "c_dims":
                emitter.stmatrix(C_local, small)

    return main


@pytest.mark.parametrize(
    "kind, message",
    [
        ("small", "ldmatrix_a: A_local_buf '.*' must hold at least 8 elements per thread, got 4"),
        ("dtype", "ldmatrix_b: B_local_buf '.*' must have dtype float16, got bfloat16"),
        ("global_tile", "ldmatrix_a: A_shared_buf 'A' must be in 'shared' or 'shared.dyn' memory"),
        ("fragment", "mma: C_local_buf must be a T.alloc_local .* of scope 'local.fragment'"),
        ("atom_index", "mma_atom: inst_n_idx must be in \\[0, 1\\), got 1"),
        ("pid", "stmatrix: pid_m and pid_n go together .* got pid_m=0, pid_n=None"),
        ("c_dims", "stmatrix: C_buf must have 2 or 4 dimensions, got shape \\[4\\]"),
    ],
)
def test_methods_check_their_buffers(kind, message):
    with pytest.raises(tilelang.TileLangError, match=message):
        misuse(kind)


def test_index_maps_agree_with_each_other():
    """The fragment maps are each other's inverses and follow the PTX layouts."""
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for e in range(8):
            m, k = mma_layout.mma_load_a_32x8_to_shared_16x16_layout(lane, e)
            assert (m, k) == (g + 8 * ((e // 2) % 2), 2 * t + 8 * (e // 4) + e % 2)
            assert mma_layout.shared_16x16_to_mma_32x8_layout_sr_a(m, k) == (lane, e)
            n, k = mma_layout.mma_load_b_32x8_to_shared_16x16_layout(lane, e)
            assert (n, k) == (g + 8 * (e // 4), 2 * t + 8 * ((e // 2) % 2) + e % 2)
            assert mma_layout.shared_16x16_to_mma_32x8_layout_sr_b(n, k) == (lane, e)
            row, col = mma_store_index_map(lane, e)
            assert (row, col) == (g + 8 * ((e % 4) // 2), 2 * t + e % 2 + 8 * (e // 4))
        for e in range(16):
            m, k = mma_layout.mma_load_a_32x16_to_shared_16x32_layout(lane, e)
            assert mma_layout.shared_16x32_to_mma_32x16_layout_sr_a(m, k) == (lane, e)
            n, k = mma_layout.mma_load_b_32x16_to_shared_16x32_layout(lane, e)
            assert mma_layout.shared_16x32_to_mma_32x16_layout_sr_b(n, k) == (lane, e)
    # ldmatrix.x4: lane 8q + r supplies row r of matrix q; the A fragment's registers
    # are the matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15), rows first
    assert [get_ldmatrix_offset("A", lane, 0, 64) for lane in (0, 7, 8, 16, 31)] == [
        0,
        7 * 64,
        8 * 64,
        8,
        15 * 64 + 8,
    ]
    assert [get_ldmatrix_offset("B", lane, 0, 64, transposed=True) for lane in (0, 8, 16, 24)] == [
        0,
        8,
        8 * 64,
        8 * 64 + 8,
    ]
    with pytest.raises(ValueError, match="8-bit operands load with ldmatrix only as A"):
        get_ldmatrix_offset("B", 0, 0, 64, "int8", transposed=False)


def test_swizzle_layout():
    # 64-byte rows (32 halves): 16-byte chunk XOR (row // 2) % 4; 128-byte rows: row % 8
    # (TMA's 64 and 128-byte swizzle modes)
    assert get_swizzle_layout(1, 0, 32, "float16") == (1, 0)
    assert get_swizzle_layout(2, 0, 32, "float16") == (2, 8)
    assert get_swizzle_layout(3, 9, 32, "float16") == (3, 1)
    assert get_swizzle_layout(5, 0, 64, "float16") == (5, 40)
    assert get_swizzle_layout(5, 0, 64, "float16", swizzle_bytes=64) == (5, 16)
    assert get_swizzle_layout(5, 0, 64, "float16", swizzle_bytes=32) == (5, 8)
    for row in range(8):
        cols = sorted(get_swizzle_layout(row, c, 64, "int8")[1] for c in range(64))
        assert cols == list(range(64))  # a permutation of each row
    with pytest.raises(ValueError, match="multiple of 32 bytes; got 8 elements of float16"):
        get_swizzle_layout(0, 0, 8, "float16")


def test_store_and_load_fragments_match_the_registers():
    """make_mma_store_layout / make_mma_load_layout say which thread and register hold
    each element: the same places stmatrix and ldmatrix_a / ldmatrix_b use."""
    emitter = TensorCoreIntrinEmitter(
        a_dtype="float16",
        b_dtype="float16",
        accum_dtype="float32",
        b_transposed=True,
        block_row_warps=2,
        block_col_warps=2,
        warp_row_tiles=32,
        warp_col_tiles=32,
        chunk=32,
    )
    layouts = {}

    @T.prim_func
    def main(C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            C_frag = T.alloc_fragment((64, 64), "float32")
            A_frag = T.alloc_fragment((64, 32), "float16")
            B_frag = T.alloc_fragment((64, 32), "float16")
            layouts["store"] = emitter.make_mma_store_layout(C_frag)
            layouts["a"] = emitter.make_mma_load_layout(A_frag, "A")
            layouts["b"] = emitter.make_mma_load_layout(B_frag, "B")
            T.annotate_layout(
                {C_frag: layouts["store"], A_frag: layouts["a"], B_frag: layouts["b"]}
            )
            T.clear(C_frag)
            T.copy(C_frag, C)

    assert main is not None
    store, load_a, load_b = layouts["store"], layouts["a"], layouts["b"]
    assert store.get_thread_size() == 128
    for tid in (0, 37, 70, 127):
        lane, warp_n, warp_m = emitter.extract_thread_binding(tid)
        for e in range(16):  # warp tile (e // 8, 0), element e % 8
            row, col = mma_store_index_map(lane, e % 8)
            i, j = warp_m * 32 + (e // 8) * 16 + row, warp_n * 32 + col
            assert store.map_forward_thread([i, j]) == tid
            assert store.map_forward_index([i, j]) == [(e // 8) * 2 * 8 + e % 8]
            m, k = mma_layout.mma_load_a_32x8_to_shared_16x16_layout(lane, e % 8)
            a_i, a_k = warp_m * 32 + (e // 8) * 16 + m, 16 + k  # second k step
            assert load_a.map_forward_thread([a_i, a_k], warp_n) == tid
            assert load_a.map_forward_index([a_i, a_k]) == [(2 + e // 8) * 8 + e % 8]
            n, k = mma_layout.mma_load_b_32x8_to_shared_16x16_layout(lane, e % 8)
            b_n, b_k = warp_n * 32 + (e // 8) * 16 + n, k
            assert load_b.map_forward_thread([b_n, b_k], warp_m) == tid
            assert load_b.map_forward_index([b_n, b_k]) == [(e // 8) * 8 + e % 8]


@needs_nvrtc
def test_tiles_read_by_ldmatrix_are_not_loaded_by_a_producer_warpgroup():
    """On sm_90a the tile loads become TMA copies of a pipeline without a producer
    warpgroup: the mma.sync consumers use 255 registers, so the extra warpgroup would
    halve the blocks per SM (10 % slower on the H200; docs/design/hopper.md)."""
    kernel = tilelang.compile(
        intrinsics_gemm(
            256,
            256,
            256,
            "float16",
            "float32",
            "float32",
            warp_row_tiles=64,
            warp_col_tiles=64,
            chunk=64,
        ),
        target="cuda -arch=sm_90a",
    )
    src = kernel.get_kernel_source()
    assert "tl::tma_load" in src and "setmaxnreg" not in src
