"""The autotuner's shared result directory (result_dir= / TILELANG_AUTOTUNE_RESULT_DIR):
tuners sharing it measure each config once and pick the same config; claims of dead or
silent tuners are taken over; damaged files are ignored with a warning; results export to
one file and import back (`python -m tilelang autotune export|import`), a newer local
result kept."""

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import __main__ as cli
from tilelang.autotuner import AutoTuner, result_cache

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tilelang.__file__)))
CONFIGS = [{"block": 16}, {"block": 32}, {"block": 64}]
N = 2048
LOG_VAR = "TL_TEST_MEASURE_LOG"


def supply(params):
    """The inputs of one config's measurement; each call is one measured config, logged
    (pid) to the file named by TL_TEST_MEASURE_LOG."""
    import torch

    with open(os.environ[LOG_VAR], "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(0.3)  # keeps a measurement in progress while another tuner looks
    g = torch.Generator().manual_seed(11)
    return [torch.randn(*[int(d) for d in p.shape], generator=g) for p in params]


def ref_scale(A):
    return A * 2.5


def scale_factory(n, block):
    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=1) as bx:
            for i in T.serial(block):
                B[bx * block + i] = A[bx * block + i] * 2.5

    return scale


@tilelang.autotune(configs=CONFIGS, warmup=1, rep=5, supply_prog=supply, ref_prog=ref_scale)
@tilelang.jit(out_idx=-1, target="cpu")
def shared_scale(n, block=16):
    return scale_factory(n, block)


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PY_ROOT, HERE, env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _measured(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [int(line) for line in f.read().split()]


def _desc(config):
    return repr(dict(sorted(config.items())))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = str(tmp_path / "cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", path)
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_AUTOTUNE_RESULT_DIR", raising=False)
    monkeypatch.setenv(LOG_VAR, str(tmp_path / "measured.log"))
    return path


def _tuner(result_dir):
    return (
        AutoTuner.from_kernel(shared_scale, CONFIGS, result_dir=result_dir)
        .set_compile_args(out_idx=-1, target="cpu")
        .set_profile_args(warmup=1, rep=5, supply_prog=supply, ref_prog=ref_scale)
    )


def _check_kernel(kernel):
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64) * 2.5, rtol=1e-6)


def test_two_processes_sharing_a_result_directory_measure_each_config_once(tmp_path):
    shared = tmp_path / "shared"
    log = str(tmp_path / "measured.log")
    script = (
        "import json\n"
        "import test_autotune_store as t\n"
        "k = t.shared_scale(t.N)\n"
        "t._check_kernel(k)\n"
        "r = t.shared_scale.last_result\n"
        "print(json.dumps([r.config, r.latency]))\n"
    )
    procs = []
    for i in range(2):
        env = _env(
            TILELANG_CACHE_DIR=str(tmp_path / f"cache{i}"),  # two machines' local caches
            TILELANG_AUTOTUNE_RESULT_DIR=str(shared),
            TILELANG_AUTO_TUNING_CPU_COUNTS="1",  # one config per claim
            **{LOG_VAR: log},
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", script],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    picks = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        assert p.returncode == 0, stderr
        picks.append(json.loads(stdout.strip().splitlines()[-1]))
    measured = _measured(log)
    assert len(measured) == len(CONFIGS), measured  # every config once across both
    assert picks[0] == picks[1] and picks[0][0] in CONFIGS, picks
    finals = [f for f in os.listdir(shared) if f.endswith(".json")]
    assert len(finals) == 1
    with open(shared / finals[0]) as f:
        final = json.load(f)
    assert final["config"] == _desc(picks[0][0]) and final["latency"] == picks[0][1]
    assert set(final["timings"]) == {_desc(c) for c in CONFIGS}
    sub = shared / finals[0].replace(".json", ".d")
    names = sorted(os.listdir(sub))
    assert names == ["0.json", "1.json", "2.json"], names  # no claim or temporary left
    # each local cache holds the same pick
    for i in range(2):
        local = tmp_path / f"cache{i}" / "autotuner" / finals[0]
        with open(local) as f:
            assert json.load(f)["config"] == final["config"]


def test_damaged_shared_files_are_ignored_with_a_warning(cache_dir, tmp_path, caplog):
    shared = str(tmp_path / "shared")
    log = os.environ[LOG_VAR]
    first = _tuner(shared).run(N)
    assert len(_measured(log)) == 3
    key = os.path.basename(first.cache_path)[: -len(".json")]
    os.remove(first.cache_path)  # forget the local result
    with open(os.path.join(shared, f"{key}.json"), "w") as f:
        f.write('{"format": 1, "index": 0, "con')  # a half-copied entry
    with open(os.path.join(shared, f"{key}.d", "1.json"), "w") as f:
        f.write("\x00\x00garbage")
    with caplog.at_level(logging.WARNING, logger="tilelang"):
        second = _tuner(shared).run(N)
    text = caplog.text
    assert f"ignoring the damaged result file {os.path.join(shared, key)}.json" in text
    outcome = os.path.join(shared, f"{key}.d", "1.json")
    assert f"ignoring the damaged config outcome file {outcome}" in text
    # only the damaged config is measured again; the pick is still made over all three
    assert len(_measured(log)) == 4
    assert second.config in CONFIGS and set(second.timings) == {_desc(c) for c in CONFIGS}
    _check_kernel(second.kernel)
    with open(os.path.join(shared, f"{key}.json")) as f:
        assert json.load(f)["config"] == _desc(second.config)  # the damaged entry replaced


def test_stale_claims_are_taken_over_and_live_ones_waited_for(
    cache_dir, tmp_path, monkeypatch, caplog
):
    shared = tmp_path / "shared"
    log = os.environ[LOG_VAR]
    tuner = _tuner(str(shared))
    key = tuner.generate_cache_key(tuner.signature.parameters, {"n": N})
    sub = shared / f"{key}.d"
    sub.mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    # config 0: claimed by an exited process of this host; config 1: by another host,
    # not refreshed for 60 s; config 2: by another host, live (its outcome arrives later)
    (sub / "0.claim").write_text(
        json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "time": 0})
    )
    (sub / "1.claim").write_text(json.dumps({"host": "other-host", "pid": 1, "time": 0}))
    old = time.time() - 60
    os.utime(sub / "1.claim", (old, old))
    (sub / "2.claim").write_text(json.dumps({"host": "other-host", "pid": 2, "time": 0}))
    monkeypatch.setenv("TILELANG_AUTOTUNE_CLAIM_TIMEOUT", "30")

    def other_host_finishes():
        # once this tuner has measured configs 0 and 1, so that it waits for config 2
        while not ((sub / "0.json").exists() and (sub / "1.json").exists()):
            time.sleep(0.05)
        time.sleep(0.5)
        record = {
            "index": 2,
            "config": _desc(CONFIGS[2]),
            "status": "ok",
            "latency": 1e-6,  # faster than any measured here: it must win
            "host": "other-host",
            "pid": 2,
            "time": time.time(),
        }
        result_cache.write_atomic(str(sub / "2.json"), record, shared=True)
        os.unlink(sub / "2.claim")

    thread = threading.Thread(target=other_host_finishes)
    thread.start()
    with caplog.at_level(logging.INFO, logger="tilelang"):
        result = tuner.run(N)
    thread.join()
    text = caplog.text
    assert f"process {int(dead.stdout)} of this host, has exited" in text
    assert re.search(r"its claim \(other-host pid 1\) was not refreshed for \d+ s", text)
    assert "waiting for 1 config(s) measured by other tuners" in text
    assert len(_measured(log)) == 2  # configs 0 and 1 here, config 2 on "other-host"
    assert result.config == CONFIGS[2] and result.latency == 1e-6
    _check_kernel(result.kernel)  # compiled here, not measured
    assert sorted(os.listdir(sub)) == ["0.json", "1.json", "2.json"]
    with open(sub / "0.json") as f:
        assert json.load(f)["pid"] == os.getpid()


def test_bad_claim_timeout_is_named(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_AUTOTUNE_CLAIM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="TILELANG_AUTOTUNE_CLAIM_TIMEOUT must be a positive"):
        _tuner(str(tmp_path / "shared")).run(N)


def test_export_import_round_trip_keeps_a_newer_local_result(
    cache_dir, tmp_path, monkeypatch, capsys
):
    log = os.environ[LOG_VAR]
    tuned = _tuner(None).run(N)
    assert len(_measured(log)) == 3 and not tuned.from_cache
    export = str(tmp_path / "results.json")
    assert cli.main(["autotune", "export", export]) == 0
    assert "exported 1 tuning result(s)" in capsys.readouterr().out

    # another machine: a fresh cache takes the file and tunes nothing
    other = str(tmp_path / "other-cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", other)
    assert cli.main(["autotune", "import", export]) == 0
    assert "1 new, 0 replacing" in capsys.readouterr().out
    again = _tuner(None).run(N)
    assert again.from_cache and again.config == tuned.config
    assert again.latency == tuned.latency and len(_measured(log)) == 3
    _check_kernel(again.kernel)

    # a local result tuned later than the file's is kept; an older one is replaced
    path = again.cache_path
    with open(path) as f:
        local = json.load(f)
    newer = dict(local, tuned_at=local["tuned_at"] + 100, latency=local["latency"] * 7)
    result_cache.write_atomic(path, newer)
    assert cli.main(["autotune", "import", export]) == 0
    assert "0 new, 0 replacing older ones; kept 1" in capsys.readouterr().out
    with open(path) as f:
        assert json.load(f) == newer
    result_cache.write_atomic(path, dict(newer, tuned_at=local["tuned_at"] - 100))
    assert cli.main(["autotune", "import", export]) == 0
    assert "0 new, 1 replacing older ones; kept 0" in capsys.readouterr().out
    with open(path) as f:
        assert json.load(f) == local

    # a file that is not an export is refused, naming it
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": []}')
    assert cli.main(["autotune", "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad} is not an exported tuning result file" in err


def test_a_claim_taken_over_meanwhile_by_another_tuner_is_left_to_it(tmp_path, monkeypatch):
    from tilelang.autotuner import result_store

    run = result_store.SharedRun(str(tmp_path), "k", CONFIGS)
    os.makedirs(run.sub)
    claim = os.path.join(run.sub, "0.claim")
    with open(claim, "w") as f:
        json.dump({"host": "gone-host", "pid": 7, "time": 0}, f)
    old = time.time() - 10 * run.timeout
    os.utime(claim, (old, old))
    seen = run._stale(claim)
    assert seen[0] and "gone-host pid 7" in seen[1]
    # between this tuner's look and its rename, another tuner took the claim over
    live = json.dumps({"host": "other-taker", "pid": 8, "time": time.time()})
    with open(claim, "w") as f:
        f.write(live)
    monkeypatch.setattr(run, "_stale", lambda path: seen)
    assert run.claim([0], limit=1) == []
    with open(claim) as f:
        assert f.read() == live  # the live claim is back in place
    assert sorted(os.listdir(run.sub)) == ["0.claim"]
    run.close()


def test_the_result_key_names_the_compiler_and_driver_not_paths(monkeypatch):
    import hashlib

    from tilelang import _native

    C = _native.load()
    with open(C.__file__, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    compiler = result_cache.compiler_identity()
    assert digest in compiler and tilelang.__version__ in compiler
    assert os.path.dirname(C.__file__) not in compiler  # equal installs share keys
    host = result_cache.driver_identity("cpu")
    version = C.host_compiler_id().split(" | ")[1]
    assert host.startswith("host compiler ") and version in host and "; cpu " in host
    monkeypatch.setattr(result_cache, "is_emulation_enabled", lambda: True)
    assert result_cache.driver_identity("cuda -arch=sm_80") == host  # the emulator: the host
    monkeypatch.setattr(result_cache, "is_emulation_enabled", lambda: False)
    assert result_cache.driver_identity("cuda -arch=sm_80").startswith("CUDA driver ")

    tuner = _tuner(None)
    key = tuner.generate_cache_key(tuner.signature.parameters, {"n": N})
    monkeypatch.setattr(result_cache, "driver_identity", lambda target: "CUDA driver 12.8, GPU X")
    other_gpu = tuner.generate_cache_key(tuner.signature.parameters, {"n": N})
    monkeypatch.setattr(result_cache, "compiler_identity", lambda: "tilelang 9.9, core 9.9, 0")
    other_build = tuner.generate_cache_key(tuner.signature.parameters, {"n": N})
    assert len({key, other_gpu, other_build}) == 3
