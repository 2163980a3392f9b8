"""The Metal code generator, read as text: which GEMM path a kernel takes and how its
simdgroups split the tile, the address spaces, the kernel signature, literals,
built-ins and errors. Nothing here runs a kernel (test_metal_emulated.py does)."""

import re

import pytest
import tilelang
import tilelang.language as T
from metal_kernels import axpb, gemm, histogram, row_reduce, special_values


def msl(func, target="metal"):
    return tilelang.compile(func, target=target).get_kernel_source(kernel_only=False)


def operand_tiles(source):
    """(tiles of A, tiles of B) one simdgroup loads per k-step on path 1."""
    a = re.search(r"simdgroup_\w+8x8 tl_a\[(\d+)\];", source)
    b = re.search(r"simdgroup_\w+8x8 tl_b\[(\d+)\];", source)
    return int(a.group(1)), int(b.group(1))


# (bm, bn, policy) -> simdgroups along (M, N) with 4 simdgroups, 8 x 8 tiles.
SPLITS = {
    (64, 64, 0): (2, 2),
    (64, 64, 1): (4, 1),
    (64, 64, 2): (1, 4),
    (32, 128, 0): (1, 4),
    (32, 128, 1): (4, 1),
    (128, 32, 0): (4, 1),
    (128, 32, 2): (1, 4),
}
MATRIX = {"float16": "half", "bfloat16": "bfloat", "float32": "float"}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("tile", sorted(SPLITS), ids=lambda t: f"{t[0]}x{t[1]}-policy{t[2]}")
def test_simdgroup_gemm_follows_the_warp_policy(tile, dtype):
    bm, bn, policy = tile
    wm, wn = SPLITS[tile]
    source = msl(gemm(256, 256, 64, bm=bm, bn=bn, bk=16, dtype=dtype, policy=policy))
    assert "#include <metal_simdgroup_matrix>" in source
    assert "MetalPerformancePrimitives" not in source
    assert operand_tiles(source) == (bm // wm // 8, bn // wn // 8)
    tiles = (bm // wm // 8) * (bn // wn // 8)
    assert f"simdgroup_float8x8 C_l[{tiles}];" in source
    assert f"simdgroup_{MATRIX[dtype]}8x8 tl_a[" in source
    assert "simdgroup_multiply_accumulate(C_l[" in source
    assert "make_filled_simdgroup_matrix<float, 8, 8>(0.00000000e+00f)" in source
    # The copy-out uses the same split: straight to device memory (the tile divides C).
    assert re.search(r"simdgroup_store\(C_l\[.*\(&C\[", source)
    assert "C_l_tg" not in source and "C_l_stage" not in source


def test_transposed_operands_load_transposed():
    source = msl(gemm(128, 128, 64, trans_a=True, trans_b=True))
    loads = re.findall(r"simdgroup_load\(tl_([ab])\[.*, (true|false)\);", source)
    assert sorted(set(loads)) == [("a", "true"), ("b", "true")]
    source = msl(gemm(128, 128, 64))
    loads = re.findall(r"simdgroup_load\(tl_([ab])\[.*, (true|false)\);", source)
    assert sorted(set(loads)) == [("a", "false"), ("b", "false")]


def test_epilogue_and_partial_tiles_go_through_threadgroup_memory():
    source = msl(gemm(100, 72, 40, bm=32, bn=64, bk=16, epilogue=True, out_dtype="float16"))
    # T.Parallel on the accumulator: written to its threadgroup copy first, and the
    # copy-out of a converted dtype goes element by element from there.
    assert "threadgroup float C_l_tg[2048];" in source
    assert re.search(r"simdgroup_store\(C_l\[.*\(&C_l_tg\[", source)
    source = msl(gemm(100, 72, 40, bm=32, bn=64, bk=16))
    # Tiles past the end of C: staged through the simdgroup's tile, with bounds checks.
    assert "threadgroup float C_l_stage[256];" in source
    assert "simdgroup_barrier(mem_flags::mem_threadgroup)" in source


def test_accumulator_in_shared_memory():
    source = msl(gemm(128, 128, 64, c_shared=True))
    assert "threadgroup float C_l[4096];" in source
    assert re.search(r"simdgroup_load\(C_l_sg\[.*\(&C_l\[", source)
    assert re.search(r"simdgroup_store\(C_l_sg\[.*\(&C_l\[", source)


@pytest.mark.parametrize(
    "target",
    [
        "metal -keys=metal4",
        '{"kind": "metal", "keys": ["metal4"]}',
        {"kind": "metal", "keys": ["metal4"]},
    ],
)
def test_metal4_uses_cooperative_tensors(target):
    source = msl(gemm(256, 256, 64, bk=32), target=target)
    assert "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>" in source
    assert "mpp::tensor_ops::matmul2d_descriptor(" in source
    assert "get_destination_cooperative_tensor" in source and "op.run(ca, cb, cc);" in source
    # Square split of 64 x 64 over 4 simdgroups in 16 x 32 blocks: 2 x 2.
    assert "tl_mpp_gemm<32, 32, 32, false, false, false, half, float>(" in source
    assert "simdgroup_multiply_accumulate" not in source


@pytest.mark.parametrize(
    "kwargs, expect",
    [
        ({"policy": 1}, "tl_mpp_gemm<16, 64, 32, false, false, false, half, float>"),
        (
            {"dtype": "bfloat16", "trans_b": True},
            "tl_mpp_gemm<32, 32, 32, false, true, false, bfloat, float>",
        ),
        (
            {"dtype": "float32", "trans_a": True},
            "tl_mpp_gemm<32, 32, 32, true, false, false, float, float>",
        ),
    ],
)
def test_metal4_templates(kwargs, expect):
    assert expect in msl(gemm(256, 256, 64, bk=32, **kwargs), target="metal -keys=metal4")


@pytest.mark.parametrize(
    "shape",
    [
        {"bn": 16},  # N of a simdgroup block is not a multiple of 32
        {"bk": 8},  # K is not a multiple of 16
        {"bm": 16, "bn": 32, "threads": 128},  # 16 x 32 cannot feed 4 simdgroups
    ],
)
def test_metal4_falls_back_to_simdgroup_matrices(shape):
    source = msl(gemm(128, 128, 64, **shape), target="metal -keys=metal4")
    assert "tl_mpp_gemm" not in source and "MetalPerformancePrimitives" not in source
    assert "simdgroup_multiply_accumulate" in source


def test_every_pointer_and_cast_names_its_address_space():
    sources = [
        msl(gemm(100, 72, 40, bm=32, bn=64, bk=16, epilogue=True)),
        msl(row_reduce(40, 200, "sum")),
        msl(histogram(100, 7)),
        msl(axpb()),
    ]
    for source in sources:
        kernel = source.split("#ifdef TL_EMULATE")[0]
        casts = re.findall(r"\(\s*((?:\w+\s+)*\w+)\s*\*\s*\)", kernel)
        assert casts, "expected pointer casts"
        for cast in casts:
            assert cast.split()[0] in ("device", "threadgroup", "thread", "constant"), cast
        for param in re.findall(r"^\s+(.*) \[\[buffer\(\d+\)\]\]", kernel, re.MULTILINE):
            assert param.startswith(("device ", "constant ")), param


def test_kernel_signature_and_argument_struct():
    source = msl(axpb())
    assert "struct main_args_t {\n  float alpha;\n  int bias;\n  int n;\n};" in source
    assert "[[kernel, max_total_threads_per_threadgroup(128)]] void main_kernel(" in source
    assert "    device half* X [[buffer(0)]],\n    device float* Y [[buffer(1)]]," in source
    assert "constant main_args_t& arg [[buffer(2)]]," in source
    for attr in (
        "uint3 blockIdx [[threadgroup_position_in_grid]]",
        "uint3 threadIdx [[thread_position_in_threadgroup]]",
        "uint simd_group_id [[simdgroup_index_in_threadgroup]]",
    ):
        assert attr in source
    assert "const float alpha = (float)arg.alpha;" in source
    assert "const int32_t n = (int32_t)arg.n;" in source
    # The emulator's entry packs the same struct from the argument slots.
    assert "main_args_t tl_args{(float)args[2].f, (int)args[3].i, (int)args[4].i};" in source


def test_literals_and_builtins():
    source = msl(special_values(128))
    assert "INFINITY" in source and "as_type<int32_t>(v)" in source
    assert "select(v, INFINITY, (bool)((v > 1.50000000e+00f)))" in source
    assert "isinf((float)clipped)" in source
    assert "5.00000000e-01h" in source
    assert "double" not in source.split("#ifdef TL_EMULATE")[0]


def test_vectorized_copies_and_barriers():
    source = msl(gemm(256, 256, 64))
    assert "*(threadgroup uint4*)(&A_s[" in source and "= *(device uint4*)(&A[" in source
    assert source.count("threadgroup_barrier(mem_flags::mem_threadgroup);") >= 2
    source = msl(row_reduce(40, 200, "max"))
    assert "*(thread float4*)(&x[" in source and "*(device float4*)(&X[" in source


def test_reductions_use_simd_collectives():
    shared = msl(row_reduce(40, 200, "sum", shared=True))
    assert "simd_sum(" in shared and "threadgroup float x[1600];" in shared
    assert "simd_max(" in msl(row_reduce(40, 200, "absmax", shared=True))
    assert "tl_xor_max(" in msl(row_reduce(40, 200, "max"))


def test_atomics():
    source = msl(histogram(100, 7))
    assert "atomic_fetch_add_explicit((device atomic_int*)(&Hist[" in source
    assert "atomic_fetch_add_explicit((device atomic_float*)(&Total[" in source
    assert "tl_atomic_fmax((device atomic_uint*)(&Peak[" in source


def test_kernel_only_source():
    kernel = tilelang.compile(axpb(), target="metal")
    only = kernel.get_kernel_source(kernel_only=True)
    assert only.startswith("[[kernel, max_total_threads_per_threadgroup(128)]] void main_kernel(")
    assert only.endswith("}\n") and "TL_EMULATE" not in only and "struct main_args_t" not in only
    full = kernel.get_kernel_source(kernel_only=False)
    assert (
        full.startswith("// Generated by tilelang-cpp")
        and only in full
        and "#ifdef TL_EMULATE" in full
    )


def test_float64_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((64,), "float64")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                A[i] = A[i] * 2

    with pytest.raises(tilelang.TileLangError, match="float64 is not supported on Metal"):
        tilelang.compile(main, target="metal")


def test_half_atomics_are_rejected():
    @T.prim_func
    def main(A: T.Tensor((64,), "float16"), S: T.Tensor((1,), "float16")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                T.atomic_add(S[0], A[i])

    with pytest.raises(
        tilelang.TileLangError, match="Metal has atomics only for 32-bit int, uint and float"
    ):
        tilelang.compile(main, target="metal")


def test_print_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            T.print(A[0], msg="a0")

    with pytest.raises(
        tilelang.TileLangError, match="T.print is not supported on the metal target"
    ):
        tilelang.compile(main, target="metal")
