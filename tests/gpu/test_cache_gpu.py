"""The kernel cache on a GPU: CUDA modules of evicted kernels are unloaded when their
last user goes (and a user's kernel keeps its module), and a cache entry whose cubin
passes the check but is not a cubin is removed and rebuilt."""

import json
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

from test_cache import resign, worker_env

torch = pytest.importorskip("torch")

SCRIPT = r"""
import gc, json, logging, sys
logging.basicConfig(level=logging.WARNING)
import torch
import tilelang, tilelang.language as T

def make(scale):
    @T.prim_func
    def scaled_gpu(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * scale
    return scaled_gpu

a = torch.randn(256, device="cuda")
kept = tilelang.compile(make(0.5), out_idx=-1, target="cuda")
ok = True
loaded_after = []
for i in range(int(sys.argv[1])):
    scale = 1.0 + i / 8
    k = tilelang.compile(make(scale), out_idx=-1, target="cuda")
    ok = ok and torch.allclose(k(a), a * scale)
    del k
    gc.collect()  # a dropped kernel's module goes with the kernel object, cycles included
    torch.cuda.synchronize()
    loaded_after.append(tilelang._C.cuda_modules_loaded())
ok = ok and torch.allclose(kept(a), a * 0.5)  # evicted long ago, still held: still loaded
again = tilelang.compile(make(1.0), out_idx=-1, target="cuda")  # unloaded, loaded again
ok = ok and torch.allclose(again(a), a)
print(json.dumps({"ok": bool(ok), "held": tilelang._C.memory_cache_size(), "loaded": loaded_after,
                  "key": again.cache_key, "warnings": []}))
"""


def run(tmp_path, count, **env):
    script = tmp_path / "gpu_kernels.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(count)],
        env=worker_env(tmp_path / "cache", **env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_evicted_cuda_kernels_unload_their_modules(tmp_path):
    result, _ = run(tmp_path, 96, TILELANG_MEMORY_CACHE_MAX_KERNELS="4")
    assert result["ok"] and result["held"] == 4
    # Modules of dropped kernels go: at most the memory cache's 4 kernels (the one kept
    # aside has not run yet) and the newest hold a CUDA module, not one per kernel made.
    # (Counted by the runtime, not as device memory, which the other tests sharing the
    # GPU move.)
    loaded = result["loaded"]
    assert max(loaded) <= 5 and loaded[-1] == 4, loaded


def test_an_entry_whose_cubin_is_not_one_is_removed_and_rebuilt(tmp_path):
    first, _ = run(tmp_path, 1)
    entry = tmp_path / "cache" / "kernels" / first["key"]
    (entry / "kernel.cubin").write_bytes(b"not a cubin " * 100)
    resign(entry, (tmp_path / "cache" / "hmac.key").read_bytes())
    second, stderr = run(tmp_path, 1)
    assert second["ok"]
    assert f"the cache entry {entry} failed to load (kernel.cubin is not an ELF file)" in stderr, (
        stderr
    )
    assert (entry / "kernel.cubin").read_bytes()[:4] == b"\x7fELF"
