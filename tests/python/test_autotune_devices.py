"""The autotuner on several devices (`devices="all" | [0, 1]`): one benchmark worker
process per device (on the cpu target a device is a CPU core), each config measured once,
the pick the same as on one device, a worker dying mid-measurement failing only its
config; bad `devices` refused naming the argument; measurements on one device never
overlap (a lock shared by tuner processes); each result records its device, clock and
the spread of every config's rounds, a config measured under contention measured again."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner, result_cache

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tilelang.__file__)))
N = 1 << 16
LOG_VAR = "TL_TEST_DEVICE_LOG"
WORKER_VAR = "TILELANG_AUTOTUNE_WORKER"
# reps: how many times a config does the whole work; the one-rep config is the fastest.
CONFIGS = [
    {"reps": 64},
    {"reps": 1},
    {"reps": 512},
    {"reps": 256},
]  # 64x apart at least: loaded CI machines
CRASH_REPS = 256  # the config whose measurement kills its worker in the crash test


def _desc(config):
    return repr(dict(sorted(config.items())))


def supply(params):
    """The inputs of one config's check: logs (pid, worker device, start, end) to the file
    named by TL_TEST_DEVICE_LOG, so a test sees who measured what, and when."""
    import torch

    t0 = time.time()
    time.sleep(0.2)  # a measurement long enough for another one to overlap it
    g = torch.Generator().manual_seed(5)
    inputs = [torch.randn(*[int(d) for d in p.shape], generator=g) for p in params]
    with open(os.environ[LOG_VAR], "a") as f:
        f.write(json.dumps([os.getpid(), os.environ.get(WORKER_VAR), t0, time.time()]) + "\n")
    return inputs


def ref_scale(A):
    return A * 1.5


def scale_factory(n, reps, crash=False):
    if crash and reps == CRASH_REPS and os.environ.get(WORKER_VAR) is not None:
        os._exit(3)  # this config's measurement kills the benchmark worker

    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=1) as bx:
            for i in T.serial(64):
                B[bx * 64 + i] = 0.0
            for _ in T.serial(reps):  # each rep adds its share: no compiler drops them
                for i in T.serial(64):
                    B[bx * 64 + i] += A[bx * 64 + i] * (1.5 / reps)

    return scale


def _tuned(devices):
    @tilelang.autotune(
        configs=CONFIGS, warmup=2, rep=10, supply_prog=supply, ref_prog=ref_scale, devices=devices
    )
    @tilelang.jit(out_idx=-1, target="cpu")
    def dev_scale(n, reps=1):
        return scale_factory(n, reps)

    return dev_scale


@tilelang.autotune(
    configs=CONFIGS,
    warmup=2,
    rep=10,
    supply_prog=supply,
    ref_prog=ref_scale,
    devices=[0, 1],
    early_stop=False,  # every config timed fully, for its record
)
@tilelang.jit(out_idx=-1, target="cpu")
def two_device_scale(n, reps=1):
    return scale_factory(n, reps)


@tilelang.autotune(configs=CONFIGS, warmup=2, rep=10, supply_prog=supply, ref_prog=ref_scale)
@tilelang.jit(out_idx=-1, target="cpu")
def one_device_scale(n, reps=1):
    return scale_factory(n, reps)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = str(tmp_path / "cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", path)
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_AUTOTUNE_RESULT_DIR", raising=False)
    monkeypatch.setenv(LOG_VAR, str(tmp_path / "measured.log"))
    return path


def _log():
    path = os.environ[LOG_VAR]
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f.read().splitlines()]


def _check_kernel(kernel):
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64) * 1.5, rtol=1e-5)


def test_two_devices_measure_each_config_once_and_pick_as_one_device(cache_dir):
    kernel = two_device_scale(N)
    result = two_device_scale.last_result
    _check_kernel(kernel)
    assert result.config == {"reps": 1}
    # Every config was checked and timed once, by a worker pinned to one of the two
    # devices (fresh interpreters: a module-level kernel), never by this process...
    log = _log()
    workers = [entry for entry in log if entry[1] is not None]
    assert len(workers) == len(CONFIGS) and {e[1] for e in workers} <= {"0", "1"}
    assert all(entry[0] != os.getpid() for entry in workers)
    # ... except the fastest ones, checked and timed again here before the pick.
    here = [entry for entry in log if entry[1] is None]
    assert all(entry[0] == os.getpid() for entry in here) and 1 <= len(here) <= 3
    assert set(result.timings) == {_desc(c) for c in CONFIGS} and not result.failures
    # The record: where each config was timed and the spread of its rounds.
    for config in CONFIGS:
        m = result.measurements[_desc(config)]
        assert m["min"] <= m["median"] <= m["max"] and m["rounds"] == 5
        assert m["device"].startswith(("cpu core", "cpu ("))
    best = result.measurements[_desc({"reps": 1})]
    assert best["device"].startswith("cpu (") and best["worker"]["device"].startswith("cpu core")
    assert result.latency == best["min"]
    assert result.device["name"] and "clock" in result.device
    with open(result.cache_path) as f:
        stored = json.load(f)
    assert stored["measurements"] == result.measurements and stored["device"] == result.device

    # One device (the default): the same pick, every config measured in this process.
    open(os.environ[LOG_VAR], "w").close()
    kernel = one_device_scale(N)
    _check_kernel(kernel)
    assert one_device_scale.last_result.config == {"reps": 1}
    log = _log()
    assert len(log) == len(CONFIGS) and all(e[0] == os.getpid() and e[1] is None for e in log)
    assert all(
        m["device"].startswith("cpu (") for m in one_device_scale.last_result.measurements.values()
    )


def test_a_worker_dying_mid_measurement_fails_only_its_config(cache_dir):
    # A closure's configs are benchmarked in forked workers; the config of CRASH_REPS kills
    # its worker while it is measured there.
    def crashing(n, reps=1):
        return scale_factory(n, reps, crash=True)

    start = time.monotonic()
    result = (
        AutoTuner.from_kernel(crashing, CONFIGS, devices="all")
        .set_compile_args(out_idx=-1, target="cpu")
        .set_profile_args(warmup=2, rep=10, supply_prog=supply, ref_prog=lambda A: A * 1.5)
        .run(N)
    )
    assert time.monotonic() - start < 120
    assert result.config == {"reps": 1}
    _check_kernel(result.kernel)
    crashed = _desc({"reps": CRASH_REPS})
    assert set(result.failures) == {crashed}
    assert "benchmark worker on cpu core" in result.failures[crashed]
    assert "died (exit code 3) while measuring it" in result.failures[crashed]
    others = {_desc(c) for c in CONFIGS} - {crashed}
    assert set(result.timings) == others  # no config lost
    # Each surviving config measured once by a worker (the crashed one logged nothing).
    workers = [e for e in _log() if e[1] is not None]
    cores = {str(i) for i in range(len(os.sched_getaffinity(0)))}  # devices="all"
    assert len(workers) == len(others) and {e[1] for e in workers} <= cores


@pytest.mark.parametrize(
    "devices, error, text",
    [
        (
            "some",
            ValueError,
            "devices='some': expected \"all\" or a list of device indices, given the string 'some'",
        ),
        (
            2,
            TypeError,
            'devices=2: expected "all" or a list of device indices, given int (for device 2 alone write [2])',
        ),
        (
            [],
            ValueError,
            'devices=[]: expected "all" or a non-empty list of device indices, given an empty list',
        ),
        ([0, "1"], TypeError, "devices=[0, '1']: expected integer device indices, given '1' (str)"),
        ([1, 1], ValueError, "devices=[1, 1]: expected each device once, given [1] more than once"),
    ],
)
def test_a_bad_devices_argument_is_refused(devices, error, text):
    with pytest.raises(error) as info:
        _tuned(devices)
    assert str(info.value).split("\n")[0] == f"autotune of 'dev_scale': {text}"
    with pytest.raises(error) as info:
        AutoTuner.from_kernel(scale_factory, CONFIGS).set_devices(devices)
    assert str(info.value).split("\n")[0] == f"autotune of 'scale_factory': {text}"


def test_a_device_index_out_of_range_is_refused_before_any_work(cache_dir):
    cores = len(os.sched_getaffinity(0))
    tuned = _tuned([0, cores + 5])
    with pytest.raises(ValueError) as info:
        tuned(N)
    assert str(info.value).split("\n")[0] == (
        f"autotune of 'dev_scale': devices=[0, {cores + 5}]: device {cores + 5} is out of "
        f"range: expected an index of the {cores} CPU core (the cpu target's device)(s) of "
        f"target cpu (0..{cores - 1}), given {cores + 5}"
    )
    assert _log() == []  # nothing was measured


def test_tuner_processes_never_measure_on_one_device_at_once(cache_dir, tmp_path):
    # Two processes tune at once on this machine's CPU (the default device): their
    # measurements take turns on the device lock under the shared cache directory.
    script = "import test_autotune_devices as t\nt._check_kernel(t.one_device_scale(t.N))\n"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PY_ROOT, HERE, env.get("PYTHONPATH", "")])
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, cwd=HERE) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    log = _log()
    assert len({e[0] for e in log}) == 2  # both measured (neither found the other's result)
    spans = sorted((e[2], e[3], e[0]) for e in log)
    for (_, e1, p1), (s2, _, p2) in zip(spans, spans[1:]):
        assert s2 >= e1 or p1 == p2, f"process {p2} measured while {p1} did"


def scaled_copy(scale=1.0):
    """B = A * scale: a simulated profiler reads each config's cost off its output."""

    @T.prim_func
    def scaled(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(64):
                B[i] = A[i] * scale

    return scaled


def test_a_config_measured_under_contention_is_measured_again(cache_dir, monkeypatch):
    from tilelang.profiler import Profiler

    calls = {}

    def noisy_bench(self, func=None, input_tensors=None, **kwargs):
        # A config's cost (ms) is its scale; the fastest config's third round lands on a
        # busy machine, 20x slower: its rounds spread beyond the limit.
        a, b = self.kernel.run(list(input_tensors))
        scale = round(float(np.dot(a, b) / np.dot(a, a)), 3)
        calls[scale] = calls.get(scale, 0) + 1
        return scale * (20.0 if scale == 1.0 and calls[scale] == 3 else 1.0)

    monkeypatch.setattr(Profiler, "do_bench", noisy_bench)
    monkeypatch.setenv("TILELANG_AUTOTUNE_SPREAD_LIMIT", "0.5")
    configs = [{"scale": 2.0}, {"scale": 1.0}, {"scale": 8.0}]
    result = (
        AutoTuner.from_kernel(scaled_copy, configs)
        .set_compile_args(out_idx=-1, target="cpu")
        .set_profile_args(warmup=1, rep=5, early_stop_ratio=None)
        .run()
    )
    assert result.config == {"scale": 1.0} and result.latency == 1.0
    m = result.measurements[_desc({"scale": 1.0})]
    assert m["disturbed"] == {"min": 1.0, "median": 1.0, "max": 20.0, "rounds": 5}
    assert (m["min"], m["median"], m["max"], m["rounds"]) == (1.0, 1.0, 1.0, 5)
    assert calls[1.0] == 10  # five rounds, then five again
    for scale in (2.0, 8.0):
        assert "disturbed" not in result.measurements[_desc({"scale": scale})]
        assert calls[scale] == 5
    cpu = result_cache._host_identity().split("; cpu ", 1)[1]
    assert result.device["name"] == cpu and result.device["device"] == "cpu"
    a = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a), a, rtol=0, atol=0)


SCRIPT = """
import logging, sys
import numpy as np
import tilelang
import test_autotune_devices as t

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")


def script_ref(A):  # a callback of the script (its __main__), the kernel of a module
    return A * 1.5


tuned = tilelang.autotune(
    configs=t.CONFIGS, warmup=2, rep=10, supply_prog=t.supply, ref_prog=script_ref,
    devices=[0, 1],
)(tilelang.jit(out_idx=-1, target="cpu")(t.scale_factory))

if __name__ == "__main__":
    t._check_kernel(tuned(t.N))
    print(tuned.last_result.config)
"""


def test_a_scripts_callbacks_reach_fresh_benchmark_workers(cache_dir, tmp_path):
    # ref_prog lives in the tuning script, the kernel in a module: the fresh workers load
    # both (the script without running its main part), and measure every config.
    script = tmp_path / "tune_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PY_ROOT, HERE, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "{'reps': 1}"
    assert "one subprocess worker each" in out.stderr
    assert "could not start" not in out.stderr and "instead" not in out.stderr
    workers = [e for e in _log() if e[1] is not None]
    assert len(workers) == len(CONFIGS) and {e[1] for e in workers} <= {"0", "1"}


def test_a_shared_result_directory_records_each_configs_measurement(cache_dir, tmp_path):
    shared = tmp_path / "shared"
    result = (
        AutoTuner.from_kernel(two_device_scale, CONFIGS, result_dir=str(shared), devices=[0, 1])
        .set_compile_args(out_idx=-1, target="cpu")
        .set_profile_args(warmup=2, rep=10, supply_prog=supply, ref_prog=ref_scale)
        .run(N, early_stop=False)
    )
    assert result.config == {"reps": 1}
    (sub,) = [p for p in shared.iterdir() if p.name.endswith(".d")]
    records = [json.loads((sub / f"{i}.json").read_text()) for i in range(len(CONFIGS))]
    for config, record in zip(CONFIGS, records):
        m = record["measurement"]
        assert record["status"] == "ok" and record["config"] == _desc(config)
        assert m["min"] <= m["median"] <= m["max"] and m["rounds"] == 5
        assert m["device"].startswith(("cpu core", "cpu ("))
        assert result.measurements[_desc(config)]["min"] == m["min"]
    (pick,) = [p for p in shared.iterdir() if p.suffix == ".json"]
    assert json.loads(pick.read_text())["device"] == result.device


def test_a_malformed_spread_limit_is_refused_before_any_work(cache_dir, monkeypatch):
    monkeypatch.setenv("TILELANG_AUTOTUNE_SPREAD_LIMIT", "a lot")
    with pytest.raises(ValueError) as info:
        _tuned([0, 1])(N)
    assert str(info.value).split("\n")[0] == (
        "TILELANG_AUTOTUNE_SPREAD_LIMIT must be a number >= 0 (a fraction), got 'a lot'"
    )
    assert _log() == []


def test_devices_on_a_machine_without_gpus_are_refused(monkeypatch):
    from tilelang.autotuner import devices

    monkeypatch.setattr(devices, "is_gpu", lambda target: True)
    monkeypatch.setattr(devices, "available", lambda target: 0)
    with pytest.raises(ValueError) as info:
        devices.resolve([1], "cuda", "matmul")
    assert str(info.value).split("\n")[0] == (
        "autotune of 'matmul': devices=[1]: expected indices of the CUDA GPUs of target "
        "cuda, found none"
    )
    with pytest.raises(ValueError) as info:
        devices.resolve("all", "cuda", "matmul")
    assert str(info.value).split("\n")[0] == (
        "autotune of 'matmul': devices=\"all\": expected at least one CUDA GPU for target "
        "cuda, found none"
    )
