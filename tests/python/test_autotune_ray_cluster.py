"""executor="ray" against an existing Ray cluster: a head node started apart with `ray
start --head` (its own process group and temp dir, on a free port), joined by address
with `ray.init(address=...)` as a user of a cluster does, from a driver process of its
own (this file run as a script), so that nothing of another Ray instance in the test
process (its token authentication, its connection) is shared. The tuner's compile and
benchmark tasks run on the cluster's workers (other processes) and pick the fastest
config, as on a local instance (tests/python/test_autotune_ray.py)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from tilelang.autotuner import AutoTuner

ray = pytest.importorskip("ray")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_autotune_ray import (
    BENCH,
    CONFIGS,
    LOG_VAR,
    PY_ROOT,
    N,
    _desc,
    _log,
    ref_scale,
    scale,
    supply,
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A one-node cluster started by `ray start --head --block`: two CPUs, two
    "bench_gpu" slots. Its temp dir is its own (short: Ray's socket paths must fit), so
    no other `ray.init()` on the machine takes it for the current cluster; it is stopped
    by signalling its process group, which leaves any other Ray instance alone."""
    cache = str(tmp_path_factory.mktemp("raycache"))
    log = str(tmp_path_factory.mktemp("raylog") / "measured.log")
    temp_dir = tempfile.mkdtemp(prefix="rc", dir="/tmp")
    port = _free_port()
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.pathsep.join([PY_ROOT, HERE, os.environ.get("PYTHONPATH", "")]),
        "TILELANG_CACHE_DIR": cache,
        LOG_VAR: log,
        "RAY_USAGE_STATS_ENABLED": "0",
        # The head and the driver agree on no token (a local ray.init() elsewhere on the
        # machine writes ~/.ray/auth_token, which either would otherwise pick up).
        "RAY_AUTH_MODE": "disabled",
    })  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
         '--resources={"bench_gpu": 2}', "--include-dashboard=false", f"--temp-dir={temp_dir}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # the head answers once its GCS listens
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if head.poll() is not None or time.monotonic() > deadline:
                    out = head.stdout.read().decode(errors="replace") if head.stdout else ""
                    pytest.fail(f"`ray start --head` did not come up on {address}:\n{out[-3000:]}")
                time.sleep(0.5)
        yield address, log, env
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # --block: the head stops its node's processes
        try:
            head.wait(timeout=10)  # then the whole group goes: nothing else of Ray is in it
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def tune_on(address):
    """The driver: joins the cluster at `address`, tunes, checks the kernel it picked and
    prints what the test compares (JSON)."""
    ray.init(address=address, log_to_driver=False)
    try:
        resources = ray.cluster_resources()
        tuner = AutoTuner.from_kernel(scale, CONFIGS).set_compile_args(out_idx=-1, target="cpu")
        tuner.set_profile_args(warmup=2, rep=10, supply_prog=supply, ref_prog=ref_scale)
        tuner.set_executor("ray", BENCH)
        result = tuner.run(N, early_stop=False)
    finally:
        ray.shutdown()
    a = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a), a.astype(np.float64) * 1.5, rtol=1e-5)
    print(json.dumps({
        "pid": os.getpid(),
        "resources": {k: resources.get(k) for k in ("CPU", "bench_gpu")},
        "config": result.config,
        "failures": result.failures,
        "timings": sorted(result.timings),
    }))  # fmt: skip


def test_ray_tunes_on_an_existing_cluster_joined_by_address(cluster):
    address, log, env = cluster
    env = dict(env, TILELANG_AUTO_TUNING_DISABLE_CACHE="1")
    run = subprocess.run(
        [sys.executable, os.path.abspath(__file__), address],
        check=False, env=env, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["resources"] == {"CPU": 2, "bench_gpu": 2}
    assert out["config"] == {"reps": 1}
    assert not out["failures"] and out["timings"] == sorted(_desc(c) for c in CONFIGS)
    # Each config was measured once, by a worker of the cluster (not the driver).
    rows = [e for e in _log(log) if e[1] == "ray"]
    assert len(rows) == len(CONFIGS) and all(e[0] != out["pid"] for e in rows)


if __name__ == "__main__":
    tune_on(sys.argv[1])
