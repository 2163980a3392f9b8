"""A fixed set of seeds of the differential fuzzer (tests/fuzz/fuzz.py): random tile
programs of every family (elementwise, reduce, gemm, pipeline, dynamic, views), each run
on the cpu target, the emulated CUDA sm_80 and sm_90a targets and the emulated Metal
target, and compared with numpy. A failure prints the seed, the target, the generated
program and its first mismatches; `python tests/fuzz/fuzz.py --seed N --target T`
re-runs it alone."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fuzz"))
import fuzz

# Three seeds per family, chosen to cover between them every dtype, all four transposes,
# num_stages 0..4, gemm_rs, odd tiles, clear=False, reshape / view / bit views, a dynamic K
# that is 0 for one call (seed 207: a pipelined loop that runs no iteration).
SEEDS = {
    "elementwise": [14, 86, 165],
    "reduce": [1, 54, 335],
    "gemm": [16, 45, 518],
    "pipeline": [41, 61, 293],
    "dynamic": [5, 194, 207],
    "views": [20, 103, 135],
}
CASES = [(seed, fam) for fam, seeds in SEEDS.items() for seed in seeds]


@pytest.mark.parametrize("target", list(fuzz.TARGETS))
@pytest.mark.parametrize("seed, family", CASES, ids=[f"{f}-{s}" for s, f in CASES])
def test_seed(seed, family, target):
    case = fuzz.generate(seed)
    assert case.family == family
    try:
        fuzz.run_case(case, target)
    except fuzz.Failure as e:
        pytest.fail(fuzz.report(case, target, str(e)), pytrace=False)


def test_seeds_cover_every_family_and_feature():
    sources = {seed: fuzz.generate(seed).source for seed, _ in CASES}
    text = "\n".join(sources.values())
    for feature in [
        "num_stages=0",
        "num_stages=1",
        "num_stages=2",
        "num_stages=3",
        "num_stages=4",
        "transpose_A=True",
        "transpose_B=True",
        "T.gemm(A_f",
        "clear=False",
        "T.reshape",
        "T.view",
        "T.dynamic('k_')",
        "'bfloat16'",
        "'float16'",
        "'int32'",
    ]:
        assert feature in text, feature


def test_a_case_is_determined_by_its_seed():
    a, b = fuzz.generate(1234), fuzz.generate(1234)
    assert a.source == b.source and a.family == b.family
    for ca, cb in zip(a.checks, b.checks):
        for x, y in zip(ca.args, cb.args):
            assert np.array_equal(x, y)
    assert fuzz.generate(1235).source != a.source


def test_a_wrong_result_is_reported_with_the_seed_and_program():
    case = fuzz.generate(16)
    ref, _ = next(iter(case.checks[0].expected.values()))
    ref[0, 0] += 1.0  # one element of the reference off by far more than its tolerance
    with pytest.raises(fuzz.Failure, match=r"1 of \d+ elements differ\n  at \(0, 0\)") as e:
        fuzz.run_case(case, "cpu")
    text = fuzz.report(case, "cpu", str(e.value))
    assert "FAIL seed=16 family=gemm target=cpu (cpu)" in text
    assert "re-run: python tests/fuzz/fuzz.py --seed 16 --target cpu" in text
    assert case.source in text
