"""tilelang.contrib.nvcc: compute versions of CUDA targets and of the GPU, as TileLang
scripts ask for them."""

import pytest
import tilelang
from tilelang.contrib import nvcc
from tilelang.utils.target import cuda_device_attribute, has_cuda_device


@pytest.mark.parametrize(
    "target, version",
    [
        ("cuda -arch=sm_90a", "9.0"),
        ("cuda -arch=sm_80 -emulate", "8.0"),
        ("sm_89", "8.9"),
        ("cuda -arch=sm_120", "12.0"),
    ],
)
def test_the_compute_version_of_a_named_target(target, version):
    assert nvcc.get_target_compute_version(target) == version
    assert tilelang.contrib.nvcc is nvcc  # reachable as an attribute after import tilelang


def test_without_a_named_arch_the_gpu_answers():
    if has_cuda_device():
        want = f"{cuda_device_attribute(75)}.{cuda_device_attribute(76)}"
        assert nvcc.get_target_compute_version() == want
        assert nvcc.get_target_compute_version("cuda") == want
    else:
        with pytest.raises(ValueError, match="no target given and no CUDA GPU to ask"):
            nvcc.get_target_compute_version()
    with pytest.raises(ValueError, match="no compute capability in target 'cpu'"):
        nvcc.get_target_compute_version("cpu")


def test_versions_parse_and_name_their_features():
    assert nvcc.parse_compute_version("9.0") == (9, 0)
    assert nvcc.parse_compute_version("12.1") == (12, 1)
    assert nvcc.get_target_arch("9.0") == "90" and nvcc.get_target_arch_name("9.0") == "sm_90a"
    assert nvcc.get_target_arch_name("8.6") == "sm_86"
    assert nvcc.have_tensorcore("8.0") and not nvcc.have_tensorcore("6.1")
    assert nvcc.have_tensorcore(target="cuda -arch=sm_90a")
    assert nvcc.have_bf16("8.0") and not nvcc.have_bf16("7.5")
    assert nvcc.have_fp8("8.9") and not nvcc.have_fp8("8.6")
    assert nvcc.have_fp16("5.3") and nvcc.have_int8("6.1") and not nvcc.have_int8("6.0")
    assert nvcc.have_tma("9.0") and not nvcc.have_tma("8.9")
    with pytest.raises(
        ValueError, match="expected a compute version 'major.minor' such as '9.0', got 'sm_90'"
    ):
        nvcc.parse_compute_version("sm_90")
