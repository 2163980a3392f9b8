"""tilelang.tools: the Analyzer's FLOPs and global bytes against hand counts (the
quickstart GEMM, an element-wise kernel), its roofline placement from the ARCH_PEAKS
table and its errors; plot_layout's cells (threads, places, banks), its errors, the
ImportError naming the extra without matplotlib, and the PNG/SVG files it draws
(checked by size and pixel colours where matplotlib is installed)."""

import importlib.util
import os
import sys
import types

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.layout import (
    Fragment,
    make_full_bank_swizzled_layout,
    make_gemm_fragment_8x8,
    make_linear_layout,
)
from tilelang.tools import Analyzer, plot_layout
from tilelang.tools.analyzer import ARCH_PEAKS
from tilelang.tools.plot_layout import kernel_layout_cells, layout_cells

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_quickstart():
    spec = importlib.util.spec_from_file_location(
        "quickstart_example", os.path.join(ROOT, "examples", "quickstart.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quickstart = _load_quickstart()

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(
    not HAS_MATPLOTLIB, reason="matplotlib (plot_layout's optional extra) is not installed"
)


def quickstart_hand_count(M, N, K, bm, bn, bk):
    """(FLOPs, global bytes) of examples/quickstart.py's GEMM + ReLU, by hand: each of
    the grid's blocks copies a bm x bk tile of A and a bk x bn tile of B (float16) per
    step of K and writes its bm x bn tile of C; 2 FLOPs per multiply-add, one per ReLU."""
    blocks = (M // bm) * (N // bn)
    steps = K // bk
    reads = blocks * steps * (bm * bk + bk * bn) * 2
    writes = M * N * 2
    return 2 * M * N * K + M * N, reads + writes


@pytest.mark.parametrize("sizes", [(512, 512, 512, 128, 128, 32), (256, 384, 640, 64, 128, 64)])
def test_analyzer_counts_the_quickstart_gemm_as_by_hand(sizes):
    func = quickstart.matmul.get_tir(*sizes)
    flops, nbytes = quickstart_hand_count(*sizes)
    result = Analyzer.analysis(func, "cuda -arch=sm_80")
    assert result.total_flops == flops
    assert result.total_global_bytes == nbytes
    M, N, K = sizes[:3]
    assert result.flops_by_kind == {"fp16": 2 * M * N * K, "fp32": M * N}
    assert result.global_write_bytes == M * N * 2


def test_analyzer_places_the_gemm_on_the_roofline_of_each_arch():
    func = quickstart.matmul.get_tir(1024, 1024, 1024, 128, 128, 32)
    M = N = K = 1024
    flops, nbytes = quickstart_hand_count(M, N, K, 128, 128, 32)
    for device, arch in [("cuda -arch=sm_80", "sm_80"), ("sm_90a", "sm_90"), ("8.9", "sm_89")]:
        peaks = ARCH_PEAKS[arch]
        compute = 2 * M * N * K / (peaks.tflops["fp16"] * 1e12) + M * N / (
            peaks.tflops["fp32"] * 1e12
        )
        memory = nbytes / (peaks.bandwidth_gbps * 1e9)
        r = Analyzer.analysis(func, device)
        assert r.arch == arch and r.part == peaks.part
        assert r.compute_time == pytest.approx(compute, rel=1e-12)
        assert r.memory_time == pytest.approx(memory, rel=1e-12)
        assert r.estimated_time == max(r.compute_time, r.memory_time)
        assert r.bound == ("compute" if compute >= memory else "memory")
        assert r.expected_tflops == peaks.tflops["fp16"]
        assert r.expected_bandwidth_GBps == peaks.bandwidth_gbps
        assert str(r).startswith(
            f"gemm_relu on {arch} ({peaks.part}): {flops / 1e9:.4g} GFLOP, {nbytes / 1e6:.4g} MB "
            f"global, {flops / nbytes:.4g} FLOP/B: "
        )
        assert f"{r.bound}-bound, expected {r.estimated_time * 1e6:.4g} us" in str(r)


def test_analyzer_takes_an_arch_object_and_a_compiled_kernel():
    carver_like = types.SimpleNamespace(compute_capability="90")
    func = quickstart.matmul.get_tir(256, 256, 256, 128, 128, 32)
    by_object = Analyzer.analysis(func, carver_like)
    assert by_object.arch == "sm_90"
    kernel = quickstart.matmul(256, 256, 256, 128, 128, 32)  # the default target: cpu here
    by_kernel = Analyzer.analysis(kernel, "sm_90a")
    assert by_kernel.total_flops == by_object.total_flops
    assert by_kernel.total_global_bytes == by_object.total_global_bytes


def conv_kernel(N, C, HW, F, K, bm, bn, bk):
    OHW = HW  # stride 1, dilation 1, padding K // 2
    kdim = K * K * C

    @T.prim_func
    def conv(
        data: T.Tensor((N, HW, HW, C), "float16"),
        weight: T.Tensor((kdim, F), "float16"),
        out: T.Tensor((N * OHW * OHW, F), "float16"),
    ):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OHW * OHW, bm), threads=128) as (bx, by):
            patch = T.alloc_shared((bm, bk), "float16")
            w = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(kdim, bk), num_stages=2):
                T.im2col(data, patch, by, k, K, 1, 1, K // 2)
                T.copy(weight[k * bk, bx * bn], w)
                T.gemm(patch, w, acc)
            T.copy(acc, out[by * bm, bx * bn])

    return conv


def test_analyzer_counts_an_im2col_convolution_by_its_patch_tiles():
    N, C, HW, F, K, bm, bn, bk = 2, 16, 8, 64, 3, 32, 32, 16
    rows, kdim = N * HW * HW, K * K * C
    blocks, steps = (rows // bm) * (F // bn), kdim // bk
    r = Analyzer.analysis(conv_kernel(N, C, HW, F, K, bm, bn, bk), "sm_80")
    assert r.total_flops == 2 * rows * F * kdim
    # Each step gathers one bm x bk patch tile (not the whole input) and a bk x bn tile.
    assert r.global_read_bytes == blocks * steps * (bm * bk + bk * bn) * 2
    assert r.global_write_bytes == rows * F * 2


def scale_kernel(N, block):
    @T.prim_func
    def scale(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
            for i in T.serial(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] * 3.0 + 1.0

    return scale


def test_analyzer_counts_an_element_wise_kernel_on_the_cpu_target_with_given_peaks():
    N, block = 1000, 64
    blocks = -(-N // block)
    func = scale_kernel(N, block)
    # Both branches of a condition count: the guarded tail is counted in full.
    r = Analyzer.analysis(func, "cpu", peak_tflops=0.5, bandwidth_gbps=20)
    assert r.total_flops == 2 * blocks * block
    assert r.total_global_bytes == 2 * 4 * blocks * block
    assert r.compute_time == pytest.approx(2 * blocks * block / 0.5e12)
    assert r.memory_time == pytest.approx(8 * blocks * block / 20e9)
    assert r.bound == "memory" and r.part == ""
    # The result is numbers, checked against numpy: the kernel computes what was counted.
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    tilelang.compile(func, target="cpu")(a, out)
    np.testing.assert_allclose(out, a.astype(np.float64) * 3.0 + 1.0, rtol=1e-6)


def test_analyzer_needs_peaks_for_a_device_not_in_the_table():
    func = scale_kernel(256, 64)
    with pytest.raises(ValueError) as info:
        Analyzer.analysis(func, "cpu")
    assert str(info.value).split("\n")[0] == (
        "Analyzer has no peaks for 'cpu'; the table (tilelang.tools.analyzer.ARCH_PEAKS) has "
        "sm_80, sm_89, sm_90, sm_100, metal, gfx942. Pass peak_tflops= and bandwidth_gbps= for this device"
    )
    with pytest.raises(ValueError, match="Analyzer has no peaks for 'sm_75'"):
        Analyzer.analysis(func, "cuda -arch=sm_75")


def test_analyzer_refuses_a_symbolic_trip_count_by_name():
    n = T.dynamic("n")

    @T.prim_func
    def dyn(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i] + 1.0

    with pytest.raises(tilelang._C.TileLangError) as info:
        Analyzer.analysis(dyn, "sm_80")
    text = str(info.value)
    assert "cannot count the cost of this kernel: the trip count of the loop over 'i' is n" in text
    assert "analyze the kernel at constant sizes" in text
    assert "test_tools.py" in text  # the user's line


def test_analyzer_refuses_what_is_not_a_kernel():
    with pytest.raises(TypeError, match="Analyzer takes a T.prim_func .*got int"):
        Analyzer.analysis(3, "sm_80")


# ---- plot_layout


def test_fragment_cells_name_the_thread_and_local_index_of_each_element():
    frag = make_gemm_fragment_8x8()
    cells = layout_cells(frag)
    assert (cells.rows, cells.cols, cells.keys) == (8, 8, 32)
    for i in range(8):
        for j in range(8):
            key, label = cells.grid[i][j]
            assert key == i * 4 + j // 2  # the documented mma fragment: lane 4*i + j//2
            assert label == f"T{i * 4 + j // 2}\nL{j % 2}"


def test_replicated_fragment_cells_list_every_thread():
    frag = Fragment((2, 4), forward_thread_fn=lambda i, j, r: i * 4 + j + 8 * r, replicate=2)
    cells = layout_cells(frag)
    assert cells.grid[1][2] == (6, "T6/T14\nL(1, 2)")


def banks_of_column(layout, rows, cols, element_bits):
    """The bank-key sets of each logical column of a rows x cols tile's 16-byte chunks."""
    cells = layout_cells(layout, element_bits=element_bits)
    return [{cells.grid[r][c][0] // 4 for r in range(rows)} for c in range(0, cols, 8)]


def test_swizzled_cells_are_coloured_by_bank_and_spread_a_column_over_all_banks():
    # float16, 8 x 64: one row is 128 bytes, all 32 banks. Unswizzled, a column of 8
    # rows sits in one 4-bank group (an 8-way conflict); the full-bank swizzle puts
    # each row's 16-byte chunk in a different group.
    swizzled = make_full_bank_swizzled_layout(8, 64, 16)
    linear = make_linear_layout(8, 64)
    assert all(len(groups) == 8 for groups in banks_of_column(swizzled, 8, 64, 16))
    assert all(len(groups) == 1 for groups in banks_of_column(linear, 8, 64, 16))
    cells = layout_cells(swizzled, element_bits=16)
    for r in range(8):
        for c in range(64):
            place = swizzled.map_forward_index([r, c])
            flat = place[0] * 64 + place[1] if len(place) == 2 else place[0]
            assert cells.grid[r][c] == (flat * 2 // 4 % 32, f"{flat}\nb{flat * 2 // 4 % 32}")


def test_output_view_names_the_element_at_each_place():
    layout = T.Layout((4, 4), lambda i, j: [j, i])
    cells = layout_cells(layout, view="output")
    assert cells.grid[1][3][1] == "3,1"
    grid = layout_cells(layout, grid_shape=(2, 8))
    assert (grid.rows, grid.cols) == (2, 8) and grid.grid[1][0][1] == "2"  # element (2, 0)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"formats": "jpg"}, ValueError,
         "plot_layout formats must be among pdf, png, svg or 'all'; got 'jpg'"),
        ({"formats": ["png"]}, TypeError,
         "plot_layout formats must be a string such as 'png', 'pdf,svg' or 'all', got list"),
        ({"view": "sideways"}, ValueError,
         "plot_layout view must be 'input' or 'output', got 'sideways'"),
        ({"grid_shape": (3, 5)}, ValueError,
         ("plot_layout grid_shape must be (rows, cols) of positive sizes whose product is "
          "the layout's 16 elements, got (3, 5)")),
        ({"element_bits": 0}, ValueError, "plot_layout element_bits must be a positive int, got 0"),
    ],
)  # fmt: skip
def test_plot_layout_refuses_bad_arguments_by_name(tmp_path, kwargs, error, message):
    layout = T.Layout((4, 4), lambda i, j: [j, i])
    with pytest.raises(error) as info:
        plot_layout(layout, str(tmp_path), **kwargs)
    assert str(info.value).split("\n")[0] == message
    assert not os.listdir(tmp_path)


def test_plot_layout_refuses_what_is_not_a_layout(tmp_path):
    with pytest.raises(TypeError) as info:
        plot_layout([[0, 1]], str(tmp_path))
    assert (
        str(info.value).split("\n")[0] == "plot_layout takes a T.Layout or a T.Fragment, got list"
    )


def test_without_matplotlib_plot_layout_names_the_extra(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(ImportError) as info:
        plot_layout(make_gemm_fragment_8x8(), str(tmp_path), formats="png")
    assert str(info.value).split("\n")[0] == (
        "tilelang.tools.plot_layout draws with matplotlib, which is not installed: pip "
        "install matplotlib (or install tilelang with its 'plot' extra: pip install "
        "'tilelang-cpp[plot]')"
    )


CELL_PX, TITLE_PX = 50, 40  # plot_layout's geometry at its 100 dpi


def pixel(image, r, c):
    """The colour near the top-left corner of cell (r, c), away from its label."""
    return tuple(image[TITLE_PX + r * CELL_PX + 6, c * CELL_PX + 6][:3])


@needs_matplotlib
def test_fragment_png_has_one_colour_per_thread(tmp_path):
    from matplotlib.image import imread

    paths = plot_layout(make_gemm_fragment_8x8(), str(tmp_path), "frag", formats="png,svg")
    assert paths == [str(tmp_path / "frag.png"), str(tmp_path / "frag.svg")]
    image = imread(paths[0])
    assert image.shape[:2] == (TITLE_PX + 8 * CELL_PX, 8 * CELL_PX)
    # (0, 0) and (0, 1) are both thread 0; (0, 2) is thread 1, (7, 7) thread 31.
    assert pixel(image, 0, 0) == pixel(image, 0, 1)
    assert pixel(image, 0, 0) != pixel(image, 0, 2)
    assert pixel(image, 0, 0) != pixel(image, 7, 7)
    with open(paths[1]) as f:
        svg = f.read()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


@needs_matplotlib
def test_swizzle_png_colours_cells_by_bank(tmp_path):
    from matplotlib.image import imread

    layout = make_full_bank_swizzled_layout(8, 64, 16)
    (path,) = plot_layout(layout, str(tmp_path), "swizzle", formats="png", element_bits=16)
    image = imread(path)
    assert image.shape[:2] == (TITLE_PX + 8 * CELL_PX, 64 * CELL_PX)
    cells = layout_cells(layout, element_bits=16)
    by_bank = {}
    for r in range(8):
        for c in range(0, 64, 5):
            by_bank.setdefault(cells.grid[r][c][0], set()).add(pixel(image, r, c))
    assert all(len(colours) == 1 for colours in by_bank.values())  # one colour per bank
    assert len({next(iter(c)) for c in by_bank.values()}) == len(by_bank)  # distinct banks


# ---- kernel.plot_layouts: the layouts the lowering chose


def small_gemm(M, N, K, bm, bn, bk):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bm, bx * bn])

    return gemm


@pytest.fixture(scope="module")
def emulated_gemm():
    """A 64x64x64 GEMM compiled for sm_80 (run by the emulator), checked against numpy."""
    kernel = tilelang.compile(
        small_gemm(64, 64, 64, 64, 64, 32), target="cuda -arch=sm_80 -emulate"
    )
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)
    return kernel


def test_kernel_layouts_give_the_mma_accumulator_layout(emulated_gemm):
    found = {
        name: (cells, fragment) for name, cells, fragment in kernel_layout_cells(emulated_gemm)
    }
    assert set(found) == {"acc", "A_s", "B_s"}
    cells, fragment = found["acc"]
    assert fragment and (cells.rows, cells.cols, cells.keys) == (64, 64, 128)
    per_thread = {}
    for r in range(64):
        for c in range(64):
            key, label = cells.grid[r][c]
            thread, register = label.split("\n")
            assert thread == f"T{key}" and register.startswith("L")
            # PTX's m16n8 accumulator: lane 4 * (row % 8) + (col % 8) // 2 holds (row, col).
            assert key % 32 == 4 * (r % 8) + (c % 8) // 2
            per_thread.setdefault(key, set()).add(register)
    # 128 threads, each holding 64 * 64 / 128 elements in distinct registers.
    assert len(per_thread) == 128 and all(len(regs) == 32 for regs in per_thread.values())


def test_kernel_layouts_give_each_shared_stage_a_permutation_without_ldmatrix_conflicts(
    emulated_gemm,
):
    found = {name: cells for name, cells, fragment in kernel_layout_cells(emulated_gemm)}
    cells = found["A_s"]  # 2 stages of a 64 x 32 float16 tile: 128 rows of 32
    assert (cells.rows, cells.cols, cells.keys) == (128, 32, 32)
    places = [int(cells.grid[r][c][1].split("\n")[0]) for r in range(128) for c in range(32)]
    assert sorted(places) == list(range(128 * 32))
    for r0 in range(0, 128, 8):
        for chunk in range(4):
            # ldmatrix reads 8 rows of one 16-byte chunk: 8 distinct groups of 4 banks.
            groups = {cells.grid[r0 + i][chunk * 8][0] // 4 for i in range(8)}
            assert len(groups) == 8, (r0, chunk, groups)


def test_a_cpu_kernel_has_no_inferred_layouts():
    kernel = tilelang.compile(small_gemm(64, 64, 64, 64, 64, 32), target="cpu")
    assert kernel_layout_cells(kernel) == []


@needs_matplotlib
def test_plot_layouts_writes_one_png_per_buffer(emulated_gemm, tmp_path):
    from matplotlib.image import imread

    paths = emulated_gemm.plot_layouts(str(tmp_path))
    assert sorted(os.path.basename(p) for p in paths) == ["A_s.png", "B_s.png", "acc.png"]
    image = imread(str(tmp_path / "acc.png"))
    assert image.shape[:2] == (TITLE_PX + 64 * CELL_PX, 64 * CELL_PX)
    # (0, 0) and (0, 1) are thread 0's; (0, 2) is thread 1's.
    assert pixel(image, 0, 0) == pixel(image, 0, 1) != pixel(image, 0, 2)
