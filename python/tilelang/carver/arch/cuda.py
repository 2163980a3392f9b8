"""`tilelang.carver.arch.cuda`, as TileLang's code imports it: the CUDA device and its
compute-capability predicates."""

import re

from .device import CUDA, has_mma_support, is_ampere_arch, is_cuda_arch, is_hopper_arch

__all__ = ["CUDA", "check_sm_version", "has_mma_support", "is_ada_arch", "is_ampere_arch",
           "is_cuda_arch", "is_hopper_arch", "is_volta_arch"]  # fmt: skip


def check_sm_version(arch):
    """The compute capability of "sm_90a", "sm_80" or "90" (90, 80, 90), or -1 when
    `arch` is not of that form (a HIP "gfx942")."""
    m = re.fullmatch(r"(?:sm_)?(\d+)[a-zA-Z]*", str(arch))
    return int(m.group(1)) if m else -1


def is_volta_arch(arch):
    return is_cuda_arch(arch) and 70 <= arch.sm_version < 80


def is_ada_arch(arch):
    return is_cuda_arch(arch) and arch.sm_version == 89
