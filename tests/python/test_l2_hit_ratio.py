"""T.annotate_l2_hit_ratio: TileLang's L2 persistence hint for global buffers. It is
checked (global buffers, ratios from 0 to 1) and changes no result; the kernel that
carries it computes what the same kernel without it computes."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

N = 256
BLOCK = 64


def add(hint):
    @T.prim_func
    def main(
        A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)
    ):
        with T.Kernel(N // BLOCK, threads=BLOCK) as bx:
            if hint:
                T.annotate_l2_hit_ratio({B: 0.8, A: 1})
            for i in T.Parallel(BLOCK):
                C[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i] * 2.0

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_the_hint_changes_no_result(target):
    rng = np.random.default_rng(1810)
    a, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    c = np.empty(N, np.float32)
    tilelang.compile(add(True), target=target)(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) + 2.0 * b.astype(np.float64), rtol=1e-6)
    assert "annotate_l2_hit_ratio" in T.__all__


@pytest.mark.parametrize(
    "body, expected",
    [
        ("T.annotate_l2_hit_ratio([A, 0.5])", "T.annotate_l2_hit_ratio takes a dict of global buffers to hit ratios such as {B: 0.8}"),
        ("T.annotate_l2_hit_ratio({S: 0.5})", "'S' is a shared.dyn buffer; the L2 persistence window applies to global buffers"),
        ("T.annotate_l2_hit_ratio({A: 1.5})", "the hit ratio of 'A' must be a number from 0 to 1, got 1.5"),
        ("T.annotate_l2_hit_ratio({'A': 0.5})", "the keys are buffers, got 'A'"),
    ],
)  # fmt: skip
def test_misuse_is_named_at_the_users_line(body, expected, tmp_path):
    src = tmp_path / "l2_kernel.py"
    src.write_text(
        "import tilelang.language as T\n\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((4,), 'float32')):\n"
        "    with T.Kernel(1, threads=4):\n"
        "        S = T.alloc_shared((4,), 'float32')\n"
        f"        {body}\n"
        "        A[0] = S[0]\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("l2_kernel", src)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(tilelang.TileLangError) as info:
        spec.loader.exec_module(module)
    assert "l2_kernel.py:7:" in str(info.value)
    assert expected in str(info.value), str(info.value)
