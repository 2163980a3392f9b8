"""Hopper TMA copies and mbarriers (device/cuda/tma.cuh) without a GPU: the test
kernels of tma_kernels.cu run on the CPU through the emulator's twins
(device/emu/tma_emu.h) with maps from tl::encode_tensor_map(emulate=True), and are
compared with numpy: boxes that run past the tensor on either side, every swizzle
mode, element strides, ranks 1 to 5, clipped stores, and a two-stage pipeline whose
barriers go through several phases. The emulator's own checks (a phase that can
never complete, a store tile rewritten too early, a map not made for it) report
failures. The same file compiles with NVRTC for sm_90 and sm_90a, and the encoder
rejects bad maps naming the argument. tests/gpu/test_tma_gpu.py runs the shared
tests on the GPU with maps from the driver."""

import concurrent.futures
import ctypes
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest
import tilelang
from test_device_sm80 import build_emulated, needs_nvrtc, nvrtc_compile, take_failure

HERE = pathlib.Path(__file__).parent
KERNELS = HERE / "tma_kernels.cu"
TILE_BYTES = 8192  # test::kTileBytes
rng = np.random.default_rng(90)


def random_tensor(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def encode(tensor, base, emulate, box, swizzle=0, elem_strides=(), nan_fill=False):
    """The map of numpy `tensor` (outermost axis first) at address `base`: TMA lists
    dimensions innermost first, and the byte strides of dimensions 1.."""
    return tilelang._C.encode_tensor_map(
        str(tensor.dtype),
        base,
        list(reversed(tensor.shape)),
        list(reversed(tensor.strides))[1:],
        list(box),
        list(elem_strides),
        swizzle,
        0,
        nan_fill,
        emulate,
    )


def line_bytes(n):
    return (n + 127) // 128 * 128


def swizzled_offsets(n, span, row_bytes=None):
    """Where the copy puts the byte at linear offset 0..n of the box in a tile that
    starts a pattern: rows narrower than the swizzle span start a span apart (as the
    H200 lays them out), then the 16-byte chunk bits 4.. XOR bits 7.. (1, 2, 3 bits
    for 32, 64, 128)."""
    a = np.arange(n)
    if span and row_bytes and row_bytes < span:
        a = a // row_bytes * span + a % row_bytes
    return a if span == 0 else a ^ (((a >> 7) & (span // 16 - 1)) << 4)


def tile_bytes(n, span, row_bytes):
    """The shared bytes of an n-byte box whose rows are row_bytes long."""
    return n // row_bytes * span if span and row_bytes < span else n


def aligned_down(coord, dtype):
    """coord rounded down to a whole number of 16-byte units of dtype: the GPU
    refuses other innermost coordinates."""
    unit = 16 // np.dtype(dtype).itemsize
    return coord // unit * unit


def box_reference(tensor, coords, box, elem_strides=()):
    """The box at coords (dimension 0 first) as TMA lays it out in shared memory
    (outermost axis first), out-of-bounds elements zero; also the tensor indices of
    its elements, for stores."""
    rank = tensor.ndim
    steps = [1] + [elem_strides[d] if elem_strides else 1 for d in range(1, rank)]
    index = [coords[d] + steps[d] * np.arange(-(-box[d] // steps[d])) for d in range(rank)]
    inside = [(index[d] >= 0) & (index[d] < tensor.shape[rank - 1 - d]) for d in range(rank)]
    out = np.zeros([len(i) for i in reversed(index)], tensor.dtype)
    dst = np.ix_(*[np.flatnonzero(inside[d]) for d in reversed(range(rank))])
    src = np.ix_(*[index[d][inside[d]] for d in reversed(range(rank))])
    out[dst] = tensor[src]
    return out, dst, src


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """The test kernels built for the CPU against the emulation shims."""
    return build_emulated(tmp_path_factory, KERNELS, "tma")


def launch(lib, entry, tensor, map_kw, args, buf, map_bytes=None):
    """Runs entry on the CPU with an emulator map of `tensor`; returns the failure
    the emulator recorded, or None."""
    if map_bytes is None:
        map_bytes = encode(tensor, tensor.ctypes.data, True, **map_kw)
    holder = np.zeros(128 + 64, np.uint8)  # a 64-byte aligned CUtensorMap
    start = -holder.ctypes.data % 64
    holder[start : start + 128] = np.frombuffer(map_bytes, np.uint8)
    fn = getattr(lib, entry)
    fn.restype = None
    fn(
        *[
            ctypes.c_void_p(a)
            for a in (holder.ctypes.data + start, args.ctypes.data, buf.ctypes.data)
        ]
    )
    return take_failure(lib)


@pytest.fixture(scope="module")
def run(emu):
    """run(entry, tensor, map_kw, args, buf): one block of entry on a map of
    `tensor` built with map_kw; tensor and buf are updated in place.
    tests/gpu/test_tma_gpu.py runs the same tests with a GPU `run`."""

    def run_emulated(entry, tensor, map_kw, args, buf):
        failure = launch(emu, entry, tensor, map_kw, np.asarray(args, np.int32), buf)
        assert failure is None, f"{entry}: {failure}"

    return run_emulated


def load_and_check(run, tensor, coords, box, swizzle=0, elem_strides=()):
    ref, _, _ = box_reference(tensor, coords, box, elem_strides)
    linear = ref.reshape(-1).view(np.uint8)
    row_bytes = box[0] * tensor.itemsize
    footprint = tile_bytes(linear.size, swizzle, row_bytes)
    assert footprint <= TILE_BYTES
    buf = np.zeros(line_bytes(footprint), np.uint8)
    args = [tensor.ndim, linear.size, *coords, *[0] * (5 - tensor.ndim), footprint]
    run(
        "load_box",
        tensor,
        {"box": box, "swizzle": swizzle, "elem_strides": elem_strides},
        args,
        buf,
    )
    got = (
        buf[swizzled_offsets(linear.size, swizzle, row_bytes)].view(tensor.dtype).reshape(ref.shape)
    )
    np.testing.assert_array_equal(got, ref)


# ---- loads


# (dtype, numpy shape, box (dim 0 first), swizzle span): the inner row of each box
# fills its swizzle span.
LOAD_2D = [
    ("float16", (40, 72), (24, 16), 0),
    ("float16", (40, 72), (16, 16), 32),
    ("float16", (40, 72), (32, 16), 64),
    ("float16", (40, 72), (64, 16), 128),
    ("bfloat16", (33, 80), (64, 24), 128),
    ("float32", (50, 36), (16, 32), 64),
    ("uint8", (70, 112), (32, 40), 32),
    ("int8", (70, 208), (128, 8), 128),
]


@pytest.mark.parametrize("dtype, shape, box, swizzle", LOAD_2D)
@pytest.mark.parametrize("where", ["inside", "low", "high"])
def test_load_2d(run, dtype, shape, box, swizzle, where):
    tensor = random_tensor(shape, getattr(ml_dtypes, dtype, dtype))
    rows, cols = shape
    # Innermost coordinates in whole 16-byte units (test_misaligned_coordinate_is_refused).
    unit = 16 // tensor.itemsize
    coords = {
        "inside": (aligned_down(cols - box[0] - 1, tensor.dtype), rows - box[1] - 2),
        "low": (-unit, -(box[1] // 2) + 1),  # before the start of both dimensions
        "high": (-aligned_down(box[0] // 2 - cols, tensor.dtype), rows - 5),  # past the end of both
    }[where]
    load_and_check(run, tensor, coords, box, swizzle)


@pytest.mark.parametrize(
    "shape, box, coords, swizzle",
    [
        ((5, 12, 20), (8, 4, 3), (16, 10, -1), 32),  # out of bounds in every dimension
        ((5, 12, 20), (16, 8, 2), (-8, 2, 1), 64),
        ((3, 9, 40), (32, 9, 3), (12, -4, 1), 128),
    ],
)
def test_load_3d(run, shape, box, coords, swizzle):
    load_and_check(run, random_tensor(shape, np.float32), coords, box, swizzle)


def test_load_3d_element_strides(run):
    # Dimension 0 is dense whatever its step; dimensions 1 and 2 take every 2nd / 3rd.
    tensor = random_tensor((9, 14, 24), np.float16)
    load_and_check(run, tensor, (8, 3, -1), (16, 7, 8), 32, elem_strides=(4, 2, 3))


@pytest.mark.parametrize(
    "shape, box, coords",
    [
        ((100,), (32,), (80,)),
        ((2, 3, 2, 5, 24), (16, 4, 2, 2, 2), (12, 3, -1, 1, 1)),
        ((3, 2, 4, 8), (8, 5, 2, 2), (-4, 2, 1, 2)),
    ],
)
def test_load_ranks(run, shape, box, coords):
    load_and_check(run, random_tensor(shape, np.int32), coords, box)


@pytest.mark.parametrize(
    "dtype, box, swizzle",
    [("float16", (32, 16), 128), ("uint8", (32, 16), 64), ("uint8", (32, 8), 128)],
)
def test_load_inner_row_narrower_than_swizzle_span(run, dtype, box, swizzle):
    """Rows narrower than the swizzle span (64 bytes under the 128-byte swizzle, 32
    under 64 or 128): each row starts a span after the last, the rest of the span
    left alone, as the H200 lays them out (2026-12-01); the mbarrier counts the
    box's own bytes."""
    load_and_check(run, random_tensor((40, 208), dtype), (16, 4), box, swizzle)


# ---- stores


@pytest.mark.parametrize(
    "dtype, shape, box, coords, swizzle",
    [
        ("float16", (40, 72), (64, 16), (16, 30), 128),  # clipped past the end of both dimensions
        ("float16", (40, 72), (24, 16), (64, 5), 0),
        ("float32", (6, 20, 32), (16, 8, 3), (20, 14, 4), 64),
        ("uint8", (50, 48), (32, 20), (16, 50), 32),  # entirely past dim 1: nothing written
        # Rows narrower than the swizzle span: the tile holds them a span apart, as
        # loads land them (measured on the H200, 2026-12-01).
        ("uint8", (40, 208), (32, 16), (16, 4), 64),
        ("float16", (40, 72), (32, 16), (8, 30), 128),
    ],
)
def test_store_clips_to_the_tensor(run, dtype, shape, box, coords, swizzle):
    tensor = random_tensor(shape, dtype)
    expected = tensor.copy()
    box_shape, dst, src = box_reference(tensor, coords, box)
    values = random_tensor(box_shape.shape, dtype)
    expected[src] = values[dst]
    linear = values.reshape(-1).view(np.uint8)
    row_bytes = box[0] * tensor.itemsize
    footprint = tile_bytes(linear.size, swizzle, row_bytes)
    buf = np.zeros(line_bytes(footprint), np.uint8)
    buf[swizzled_offsets(linear.size, swizzle, row_bytes)] = linear
    # store_box copies args[1] bytes of buf to the tile.
    args = [tensor.ndim, footprint, *coords, *[0] * (5 - tensor.ndim)]
    run("store_box", tensor, {"box": box, "swizzle": swizzle}, args, buf)
    np.testing.assert_array_equal(tensor, expected)


# ---- mbarrier phases


def test_two_stage_pipeline(run):
    """5 tiles through 2 stages: each stage's full and empty barriers complete 2 or
    3 phases; the last tile runs past the tensor and reads zeros."""
    tiles, rows, cols = 5, 16, 64
    tensor = random_tensor((tiles * rows - 6, cols), np.float16)
    tile_bytes = rows * cols * 2
    buf = np.zeros(tiles * tile_bytes, np.uint8)
    run("pipeline", tensor, {"box": (cols, rows)}, [tiles, tile_bytes, rows], buf)
    expected = np.zeros((tiles * rows, cols), np.float16)
    expected[: tensor.shape[0]] = tensor
    np.testing.assert_array_equal(buf.view(np.float16).reshape(-1, cols), expected)


# ---- the emulator's model and checks (undefined behaviour or a hang on the GPU)


def test_loads_land_when_the_phase_completes(emu):
    """Reading the tile before the phase completes (an arrival is still pending)
    sees the old contents, as the GPU may; after the wait, the box."""
    tensor = random_tensor((16, 32), np.float32)
    ref, _, _ = box_reference(tensor, (0, 0), (32, 16))
    n = ref.nbytes
    buf = np.full(2 * n, 7, np.uint8)
    args = np.array([2, n, 0, 0, 0, 0, 0], np.int32)
    assert launch(emu, "read_before_phase", tensor, {"box": (32, 16)}, args, buf) is None
    np.testing.assert_array_equal(buf[:n], 0)  # fresh shared memory
    np.testing.assert_array_equal(buf[n:].view(np.float32).reshape(16, 32), ref)


@pytest.mark.parametrize(
    "kind, words",
    [
        (0, ["threads 0-63 wait for parity 0", "expects 1 of 2 arrivals and 0 transaction bytes"]),
        (1, ["threads 0-63 wait for parity 0", "expects 0 of 1 arrivals and 16 transaction bytes"]),
        (2, ["threads 0-63 wait for parity 1", "expects 1 of 1 arrivals"]),
    ],
)
def test_deadlock_is_reported(emu, kind, words):
    tensor = random_tensor((16, 32), np.float32)
    buf = np.zeros(64, np.uint8)
    args = np.array([kind, 16 * 32 * 4, 0, 0, 0, 0, 0], np.int32)
    message = launch(emu, "deadlock", tensor, {"box": (32, 16)}, args, buf)
    assert message is not None and message.startswith("mbarrier deadlock"), message
    for w in words + ["mbarrier at shared offset 16384"]:
        assert w in message, message
    np.testing.assert_array_equal(buf, 0)  # no thread got past its wait


def test_store_tile_rewritten_before_its_wait(emu):
    tensor = random_tensor((16, 32), np.float32)
    buf = random_tensor(16 * 32 * 4, np.uint8)
    args = np.array([2, buf.size, 0, 0, 0, 0, 0], np.int32)
    message = launch(emu, "store_then_overwrite", tensor, {"box": (32, 16)}, args, buf)
    assert message is not None and "written before the tma_store_wait" in message, message


def test_map_not_encoded_for_the_emulator(emu):
    tensor = random_tensor((16, 32), np.float32)
    buf = np.zeros(line_bytes(2048), np.uint8)
    args = np.array([2, 2048, 0, 0, 0, 0, 0, 2048], np.int32)
    message = launch(emu, "load_box", tensor, {}, args, buf, map_bytes=bytes(128))
    assert message is not None and "not encoded for the emulator" in message, message


# The coordinates the H200 refuses with an illegal instruction (measured 2026-12-01,
# build/prof-style probes of these kernels): the emulator reports them instead.


@pytest.mark.parametrize(
    "entry, coords, words",
    [
        (
            "load_box",
            (3, 0),
            "tma_load: the innermost coordinate 3 (6 bytes of 2-byte elements) is not a multiple of 16",
        ),
        ("load_box", (-4, 2), "tma_load: the innermost coordinate -4 (-8 bytes"),
        ("store_box", (12, 0), "tma_store: the innermost coordinate 12 (24 bytes"),
        (
            "store_box",
            (8, -5),
            "tma_store: coordinate 1 is negative (-5); a store's box must start inside",
        ),
        ("store_box", (-8, 0), "tma_store: coordinate 0 is negative (-8)"),
    ],
)
def test_coordinates_the_gpu_refuses(emu, entry, coords, words):
    tensor = random_tensor((40, 72), np.float16)
    n = 16 * 24 * 2
    buf = np.zeros(line_bytes(n), np.uint8)
    args = np.array([2, n, *coords, 0, 0, 0, n], np.int32)
    message = launch(emu, entry, tensor, {"box": (24, 16)}, args, buf)
    assert message is not None and words in message, message
    assert "illegal instruction" in message, message


# ---- encode_tensor_map


def test_emulator_encoding():
    tensor = random_tensor((6, 20, 32), np.float16)
    m = encode(tensor, tensor.ctypes.data, True, box=(32, 8, 2), swizzle=64, elem_strides=(1, 2, 1))
    assert len(m) == 128
    magic, rank, elem, swizzle, nan = np.frombuffer(m[:8], "<u4,u1,u1,u1,u1")[0]
    assert (magic, rank, elem, swizzle, nan) == (0x4D544C54, 3, 2, 64, 0)
    words = np.frombuffer(m[8:96], "<u8")
    assert words[0] == tensor.ctypes.data
    np.testing.assert_array_equal(words[1:4], [32, 20, 6])  # dims
    np.testing.assert_array_equal(words[6:9], [2, 64, 1280])  # byte strides
    np.testing.assert_array_equal(np.frombuffer(m[96:102], "<u2"), [32, 8, 2])  # box
    np.testing.assert_array_equal(np.frombuffer(m[106:109], "u1"), [1, 2, 1])  # element strides


def test_gpu_encoding_needs_the_driver():
    tensor = random_tensor((16, 32), np.float32)
    if tilelang._C.present_gpu_arch():
        assert len(encode(tensor, 1 << 20, False, box=(32, 16))) == 128
        return
    with pytest.raises(Exception, match="needs the CUDA driver"):
        encode(tensor, 1 << 20, False, box=(32, 16))


GOOD = {"dtype": "float16", "base": 1 << 20, "dims": [64, 32], "strides": [128], "box": [64, 16]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"dtype": "int4"}, "dtype int4 has no TMA element type"),
        ({"dims": [], "strides": [], "box": []}, "rank 1 to 5; dims [] has rank 0"),
        ({"dims": [2] * 6, "strides": [16] * 5, "box": [8] * 6}, "has rank 6"),
        (
            {"strides": []},
            "strides gives the byte strides of dimensions 1.. (1 for rank 2); got []",
        ),
        ({"box": [64]}, "box needs one size per dimension (2); got [64]"),
        ({"elem_strides": [1]}, "elem_strides needs one step per dimension (2) or none; got [1]"),
        ({"base": (1 << 20) + 8}, "base must be a 16-byte aligned address; got 0x100008"),
        ({"dims": [64, 0]}, "dims[1] must be in [1, 2^32]; got 0"),
        ({"dims": [64, (1 << 32) + 1]}, "dims[1] must be in [1, 2^32]; got 4294967297"),
        (
            {"strides": [136]},
            "strides[0] (the byte stride of dimension 1) must be a multiple of 16",
        ),
        ({"strides": [1 << 40]}, "below 2^40; got 1099511627776"),
        ({"box": [64, 257]}, "box[1] must be in [1, 256]; got 257"),
        (
            {"box": [12, 16]},
            "inner row (box[0] * 2 bytes of float16 = 24 bytes) must be a multiple of 16",
        ),
        ({"elem_strides": [1, 9]}, "elem_strides[1] must be in [1, 8]; got 9"),
        (
            {"swizzle": 64},
            "inner row (128 bytes) must fit in the 64-byte swizzle span; use box[0] <= 32",
        ),
        ({"swizzle": 16}, "swizzle is the span in bytes: 0 (none), 32, 64 or 128; got 16"),
        (
            {"l2_promotion": 32},
            "l2_promotion is a fetch size in bytes: 0 (none), 64, 128 or 256; got 32",
        ),
        (
            {"dtype": "int16", "nan_fill": True},
            "the NaN out-of-bounds fill needs a float dtype; got int16",
        ),
    ],
)
def test_encode_rejects_bad_maps(change, message):
    kw = {**GOOD, **change}
    with pytest.raises(Exception, match=re.escape(message)):
        tilelang._C.encode_tensor_map(**kw, emulate=True)


# ---- NVRTC


@pytest.fixture(scope="module")
def nvrtc_logs():
    source = KERNELS.read_text()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        archs = ("sm_90", "sm_90a")
        return dict(zip(archs, pool.map(lambda a: nvrtc_compile(a, source), archs)))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_kernels_compile_with_nvrtc(nvrtc_logs, arch):
    ok, log = nvrtc_logs[arch]
    assert ok, log
    entries = set(re.findall(r"Compiling entry function '(\w+)'", log))
    assert {"load_box", "store_box", "pipeline", "deadlock"} <= entries, log


@needs_nvrtc
def test_ptx_has_the_tma_instructions():
    ok, log, ptx = nvrtc_compile("compute_90", KERNELS.read_text(), want_ptx=True)
    assert ok, log
    for rank in range(1, 6):
        assert (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes"
            in ptx
        )
        assert f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group" in ptx
    for instr in [
        "mbarrier.init.shared::cta.b64",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "fence.mbarrier_init.release.cluster",
        "fence.proxy.async.shared::cta",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read 0",
        "prefetch.tensormap",
    ]:
        assert instr in ptx, instr


@needs_nvrtc
def test_tma_needs_sm90():
    source = """#include "tl_cuda.cuh"
extern "C" __global__ void k(const __grid_constant__ tl::TensorMap map, uint64_t* bar) {
  tl::tma_load<2>(bar + 1, &map, bar, 0, 0);
}
"""
    ok, log = nvrtc_compile("sm_80", source)
    assert not ok, "a tma_load compiled for sm_80"
    assert "need sm_90 or later" in log, log
    ok, log = nvrtc_compile("sm_90", source)
    assert ok, log
