"""`driver.get_num_sms()` and friends, as TileLang kernels size persistent grids with
them. On a machine without a CUDA GPU they describe the cpu target instead: its
workers are the host's hardware threads."""

import os

from tilelang.utils.target import cuda_device_attribute

__all__ = ["get_max_dynamic_shared_size_bytes", "get_num_sms"]

_MULTIPROCESSOR_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
_MAX_SHARED_PER_BLOCK_OPTIN = 97  # CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN


def get_num_sms(device_id=0):
    """Streaming multiprocessors of CUDA GPU `device_id`; the host's hardware threads
    when there is no GPU (the blocks the cpu target runs at once)."""
    count = cuda_device_attribute(_MULTIPROCESSOR_COUNT, device_id)
    return count if count is not None else (os.cpu_count() or 1)


def get_max_dynamic_shared_size_bytes(device_id=0):
    """The most shared memory one thread block of GPU `device_id` may ask for (opt-in),
    or None without a GPU."""
    return cuda_device_attribute(_MAX_SHARED_PER_BLOCK_OPTIN, device_id)
