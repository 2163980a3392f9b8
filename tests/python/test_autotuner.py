"""The autotuner on the CPU target: the search picks the fastest config and skips failing,
timing-out and wrong ones; results are cached on disk, reused by a fresh process and
safe under concurrent tuning; the imperative AutoTuner API and eager kernels."""

import json
import logging
import os
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import progress
from tilelang.autotuner import AutoTuneError, AutoTuner, compile_pool

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tilelang.__file__)))

FAST = [
    {"block_M": 32, "block_N": 32, "block_K": 32},
    {"block_M": 64, "block_N": 64, "block_K": 16},
]
SLOW = {"block_M": 32, "block_N": 32, "block_K": 32, "reps": 50}  # 50x the work
BAD_SHAPE = {"block_M": 32, "block_N": 32, "block_K": 32, "b_tile_k": 16}  # T.gemm mismatch
SLEEPS = {"block_M": 32, "block_N": 32, "block_K": 32, "sleep": 60}  # compile overruns
WRONG = {"block_M": 32, "block_N": 32, "block_K": 32, "wrong": True}  # drops the last K tile
TIMEOUT_S = 5


def ref_matmul(A, B):
    return A @ B


def gemm_factory(
    M, N, K, block_M=32, block_N=32, block_K=32, reps=1, b_tile_k=None, sleep=0, wrong=False
):
    if sleep:
        time.sleep(sleep)
    b_k = b_tile_k or block_K
    k_tiles = T.ceildiv(K, block_K) - (1 if wrong else 0)

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((b_k, block_N), "float32")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            for _ in T.serial(reps):
                T.clear(C_f)
                for k in T.serial(k_tiles):
                    T.copy(A[by * block_M, k * block_K], A_s)
                    T.copy(B[k * block_K, bx * block_N], B_s)
                    T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


@tilelang.autotune(
    configs=[*FAST, SLOW, BAD_SHAPE, SLEEPS, WRONG],
    warmup=5,
    rep=20,
    timeout=TIMEOUT_S,
    ref_prog=ref_matmul,
)
@tilelang.jit(out_idx=-1, target="cpu")
def tuned_gemm(M, N, K, **config):
    return gemm_factory(M, N, K, **config)


def scale_configs(A, factor=2.0):
    return [{"block": 16}, {"block": 64}, {"block": 16, "reps": 4096}]  # the last: slow


@tilelang.autotune(configs=scale_configs, warmup=5, rep=10, ref_prog=lambda A: A * 3.0)
@tilelang.jit(target="cpu")
def tuned_scale(A, factor=3.0, block=16, reps=1):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
        for i in T.serial(block):
            if bx * block + i < N:
                B[bx * block + i] = 0.0
        # Each rep adds its share, so no compiler can drop the repeats of the slow config.
        for _ in T.serial(reps):
            for i in T.serial(block):
                if bx * block + i < N:
                    B[bx * block + i] += A[bx * block + i] * (factor / reps)
    return B


def scaled_copy(scale=1.0):
    """B = A * scale: a simulated profiler reads each config's cost off what its kernel
    computes, so a kernel timed for the wrong config would show."""

    @T.prim_func
    def scaled(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(64):
                B[i] = A[i] * scale

    return scaled


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """A fresh disk cache (kernels and tuning results) for this module; the compile
    workers inherit it through the environment."""
    path = str(tmp_path_factory.mktemp("tlcache"))
    saved = {
        k: os.environ.get(k) for k in ("TILELANG_CACHE_DIR", "TILELANG_AUTO_TUNING_DISABLE_CACHE")
    }
    os.environ["TILELANG_CACHE_DIR"] = path
    os.environ.pop("TILELANG_AUTO_TUNING_DISABLE_CACHE", None)
    yield path
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def gemm_search():
    """The search over the planted configs: (kernel, result, log messages)."""
    handler = _Capture()
    logger = logging.getLogger("tilelang")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        kernel = tuned_gemm(100, 72, 80)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    return kernel, tuned_gemm.last_result, handler.messages


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _desc(config):
    return repr(dict(sorted(config.items())))


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PY_ROOT, HERE, env.get("PYTHONPATH", "")])
    return env


def test_best_config_is_the_fastest_and_correct(gemm_search):
    kernel, result, _ = gemm_search
    assert kernel.config in FAST and result.config == kernel.config
    assert result.kernel is kernel and not result.from_cache
    # every config that ran has a time; the best is the minimum, the slow one far above
    assert set(result.timings) == {_desc(c) for c in [*FAST, SLOW]}
    assert kernel.latency == min(result.timings.values()) > 0
    assert result.timings[_desc(SLOW)] > 2 * kernel.latency
    assert result.ref_latency is not None and result.ref_latency > 0
    rng = np.random.default_rng(7)
    a = rng.standard_normal((100, 80)).astype(np.float32)
    b = rng.standard_normal((80, 72)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_failing_timing_out_and_wrong_configs_are_reported_and_skipped(gemm_search):
    _, result, messages = gemm_search
    assert set(result.failures) == {_desc(BAD_SHAPE), _desc(SLEEPS), _desc(WRONG)}
    bad = result.failures[_desc(BAD_SHAPE)]
    assert bad.startswith("compile error: TileLangError: ")
    assert "test_autotuner.py" in bad and "T.gemm shape mismatch" in bad and "(32 vs 16)" in bad
    assert result.failures[_desc(SLEEPS)] == f"compile timed out after {TIMEOUT_S} s"
    assert result.failures[_desc(WRONG)].startswith("wrong result: output 'C': ")
    skipped = [m for m in messages if " skipped: " in m]
    assert len(skipped) == 3 and all("\n" not in m for m in skipped)
    assert f"autotune 'tuned_gemm': config {_desc(SLEEPS)} skipped: compile timed out" in "\n".join(
        skipped
    )
    text = "\n".join(messages)
    assert "worker process(es) (subprocess)" in text
    assert "compiled 4/6 config(s) (1 failed, 1 timed out)" in text
    assert "checked and timed 3 config(s) (1 wrong, 0 failed" in text
    assert f"best config {_desc(result.config)}" in text


def test_a_fresh_process_reuses_the_cached_result(gemm_search, cache_dir):
    kernel, result, _ = gemm_search
    entry = _read_json(result.cache_path)
    assert result.cache_path.startswith(os.path.join(cache_dir, "autotuner", ""))
    assert entry["config"] == _desc(kernel.config) and entry["latency"] == kernel.latency
    script = (
        "import json, logging, sys\n"
        "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
        "import tilelang.profiler, tilelang.autotuner.compile_pool as pool\n"
        "def forbidden(*a, **k): raise RuntimeError('benchmarked or compiled configs')\n"
        "tilelang.profiler.Profiler.do_bench = forbidden\n"
        "pool.compile_all = forbidden\n"
        "import test_autotuner as t\n"
        "k = t.tuned_gemm(100, 72, 80)\n"
        "r = t.tuned_gemm.last_result\n"
        "print(json.dumps([k.config, k.latency, r.from_cache]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    config, latency, from_cache = json.loads(out.stdout.strip().splitlines()[-1])
    assert (config, latency, from_cache) == (kernel.config, kernel.latency, True)
    assert "from the result cache" in out.stderr and "no benchmarking" in out.stderr


def test_concurrent_processes_share_one_result(cache_dir):
    script = (
        "import json\n"
        "import numpy as np\n"
        "import test_autotuner as t\n"
        "out = t.tuned_scale(np.arange(300, dtype=np.float32))\n"
        "assert np.allclose(out, np.arange(300) * 3.0)\n"
        "print(json.dumps(t.tuned_scale.last_result.config))\n"
    )
    env = dict(_env(), TILELANG_AUTO_TUNING_CPU_COUNTS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    configs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        configs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert all(c == configs[0] for c in configs), configs
    assert configs[0] in [{"block": 16}, {"block": 64}]
    directory = os.path.join(cache_dir, "autotuner")
    entries = [_read_json(os.path.join(directory, f)) for f in os.listdir(directory)]
    assert not [f for f in os.listdir(directory) if f.startswith(".tmp")]
    scale = [e for e in entries if e["function"] == "tuned_scale"]
    assert len(scale) == 1 and scale[0]["config"] == _desc(configs[0])
    # and this process, tuning the same problem, takes the published result
    out = tuned_scale(np.ones(300, np.float32))
    np.testing.assert_allclose(out, np.full(300, 3.0))
    assert tuned_scale.last_result.from_cache
    assert tuned_scale.last_result.kernel.config == configs[0]


def test_eager_kernel_runs_the_best_config_with_a_progress_bar(monkeypatch):
    bars = []

    class FakeBar:
        def __init__(self, total, desc, unit, file, ncols, nrows):
            self.total, self.desc, self.n, self.postfix = total, desc, 0, ""
            self.postfixes = []
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix_str(self, text):
            self.postfix = text
            self.postfixes.append(text)

        def set_description(self, desc):
            self.desc = desc

        def close(self):
            pass

    fake = types.ModuleType("tqdm")
    fake.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", fake)
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    a = np.random.default_rng(3).standard_normal(77).astype(np.float32)
    out = tuned_scale(a)  # a shape no other test tunes
    np.testing.assert_allclose(out, a * 3.0, rtol=1e-6)
    result = tuned_scale.last_result
    assert result.config in [{"block": 16}, {"block": 64}] and not result.from_cache
    assert result.kernel.config == result.config and result.kernel.latency == result.latency
    # The timing bar counts 5 rounds of each config (a config stopped early takes its
    # rounds at once), and shows the best config so far.
    assert [(b.desc, b.total, b.n) for b in bars] == [
        ("autotune tuned_scale: compiling", 3, 3),
        ("autotune tuned_scale: timing round 5/5", 15, 15),
    ]
    assert bars[0].postfix == ""
    best = f"best {result.latency:.4g} ms {_desc(result.config)}"
    assert bars[1].postfix.startswith(best), bars[1].postfix
    assert all(p.startswith("best ") for p in bars[1].postfixes if p), bars[1].postfixes


def test_a_load_burst_while_the_best_config_is_timed_does_not_pick_a_slower_one(monkeypatch):
    # The machine is busy (other processes compiling) while the first two configs are
    # timed: each of those timings is 100 ms too long. The configs, timed one after
    # another, must still rank by what they cost when the machine is quiet.
    from tilelang.profiler import Profiler

    seen = []  # the scale each timed kernel really computes

    def simulated_bench(self, func=None, input_tensors=None, **kwargs):
        assert func is None, "no ref_prog here: only kernels are timed"
        a, b = self.kernel.run(list(input_tensors))
        scale = round(float(np.dot(a, b) / np.dot(a, a)), 3)  # its config, read off its output
        seen.append(scale)
        return scale + (100.0 if len(seen) <= 2 else 0.0)  # ms: the config's cost, or loaded

    monkeypatch.setattr(Profiler, "do_bench", simulated_bench)
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "1")
    configs = [{"scale": 1.0}, {"scale": 2.0}, {"scale": 50.0}]
    result = (
        AutoTuner.from_kernel(scaled_copy, configs)
        .set_compile_args(out_idx=[-1], target="cpu")
        .set_profile_args(warmup=1, rep=3, timeout=60)
        .run()
    )
    assert result.config == {"scale": 1.0} and result.latency == 1.0
    assert result.timings == {_desc(c): c["scale"] for c in configs}
    assert set(seen) == {1.0, 2.0, 50.0}
    a = np.random.default_rng(11).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a), a, rtol=0, atol=0)


def test_a_config_may_carry_pass_configs_for_its_compile(monkeypatch):
    # TileLang's autotuner takes a config's "pass_configs" as pass configs for that
    # config's compile, merged over the compile's own (its gemm pass_configs example).
    from tilelang import PassConfigKey
    from tilelang.profiler import Profiler

    ws, tma = PassConfigKey.TL_DISABLE_WARP_SPECIALIZED, PassConfigKey.TL_DISABLE_TMA_LOWER
    seen = {}  # per timed kernel: the scale it computes -> its pass configs

    def simulated_bench(self, func=None, input_tensors=None, **kwargs):
        a, b = self.kernel.run(list(input_tensors))
        scale = round(float(np.dot(a, b) / np.dot(a, a)), 3)
        seen[scale] = {str(k): v for k, v in self.kernel.pass_configs.items()}
        return scale

    monkeypatch.setattr(Profiler, "do_bench", simulated_bench)
    configs = [
        {"scale": 2.0, "pass_configs": {ws: True}},
        {"scale": 1.0, "pass_configs": {ws: False}},
    ]
    result = (
        AutoTuner.from_kernel(scaled_copy, configs)
        .set_compile_args(out_idx=[-1], target="cpu", pass_configs={tma: True})
        .set_profile_args(warmup=1, rep=3, timeout=60)
        .run()
    )
    assert result.config == configs[1]
    assert seen[2.0] == {str(ws): True, str(tma): True}
    assert seen[1.0] == {str(ws): False, str(tma): True}
    a = np.random.default_rng(12).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a), a, rtol=0, atol=0)
    with pytest.raises(
        TypeError, match=r"'pass_configs' must be a dict of pass configs .* got list"
    ):
        AutoTuner.from_kernel(scaled_copy, [{"scale": 1.0, "pass_configs": [ws]}]).set_compile_args(
            out_idx=[-1], target="cpu"
        ).run()


@pytest.mark.parametrize("early_stop, stopped", [(True, True), (False, False)])
def test_early_stop_switch_and_factor(monkeypatch, early_stop, stopped):
    # TileLang's early_stop / early_stop_factor: a config whose single call is over
    # factor x the best so far is not timed further (here every single call takes 1 s);
    # early_stop=False times them all.
    from tilelang.autotuner import tuner as tuner_module
    from tilelang.profiler import Profiler

    timed = set()

    def simulated_bench(self, func=None, input_tensors=None, **kwargs):
        a, b = self.kernel.run(list(input_tensors))
        timed.add(round(float(np.dot(a, b) / np.dot(a, a)), 3))
        return 1.0

    monkeypatch.setattr(Profiler, "do_bench", simulated_bench)
    monkeypatch.setattr(tuner_module, "_time_once", lambda fn: (fn(), 1000.0)[1])
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "1")
    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")  # tune both times
    configs = [{"scale": 1.0}, {"scale": 2.0}, {"scale": 3.0}]
    tuner = AutoTuner.from_kernel(scaled_copy, configs).set_compile_args(out_idx=[-1], target="cpu")
    tuner.set_profile_args(warmup=1, rep=3, timeout=60)
    tuner.run(early_stop=early_stop, early_stop_factor=1.5)
    assert (len(timed) < 3) == stopped, timed

    @tilelang.autotune(configs=configs, early_stop=True, early_stop_factor=4.0)
    @tilelang.jit(out_idx=[-1], target="cpu")
    def decorated(scale=1.0):
        return scaled_copy(scale)

    assert decorated.tuner.profile_args.early_stop_ratio == 4.0
    with pytest.raises(ValueError, match=r"early_stop_factor must be >= 1.0, got 0.5"):
        tilelang.autotune(configs=configs, early_stop=True, early_stop_factor=0.5)


def test_imperative_api_tunes_a_closure(caplog):
    M, N, K = 64, 48, 40

    def kernel(block_M=32, block_N=32, block_K=32):
        return gemm_factory(M, N, K, block_M, block_N, block_K)

    tuner = (
        AutoTuner.from_kernel(kernel, configs=[FAST[0], {**FAST[0], "block_K": 16}])
        .set_compile_args(out_idx=[-1], target="cpu")
        .set_profile_args(warmup=5, rep=10, ref_prog=ref_matmul, timeout=60)
    )
    with caplog.at_level(logging.INFO, logger="tilelang"):
        result = tuner.run()
    assert "worker process(es) (fork)" in caplog.text  # a closure cannot be found by name
    assert result.config in [FAST[0], {**FAST[0], "block_K": 16}]
    assert result.latency > 0 and result.kernel.latency == result.latency
    a = np.random.default_rng(5).standard_normal((M, K)).astype(np.float32)
    b = np.random.default_rng(6).standard_normal((K, N)).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_all_configs_failing_is_one_clear_error():
    tuner = AutoTuner.from_kernel(
        tuned_gemm, [BAD_SHAPE, {**BAD_SHAPE, "b_tile_k": 8}]
    ).set_profile_args(timeout=60)
    with pytest.raises(AutoTuneError, match="all 2 config") as info:
        tuner.run(100, 72, 80)
    text = str(info.value)
    assert f"{_desc(BAD_SHAPE)}: compile error: TileLangError:" in text
    assert "(32 vs 8)" in text and "(32 vs 16)" in text
    assert isinstance(info.value, tilelang.TileLangError)


def test_a_single_failing_config_raises_its_own_error_at_the_kernel_line():
    # One config leaves nothing to choose from: the kernel's own error comes back,
    # with the line it points at, rather than the summary of all failures.
    tuner = AutoTuner.from_kernel(tuned_gemm, [BAD_SHAPE]).set_profile_args(timeout=60)
    with pytest.raises(tilelang.TileLangError) as info:
        tuner.run(100, 72, 80)
    assert not isinstance(info.value, AutoTuneError)
    assert "(32 vs 8)" in str(info.value) or "(32 vs 16)" in str(info.value), str(info.value)
    assert "test_autotuner.py:" in str(info.value)


def test_misuse_is_reported():
    with pytest.raises(TypeError, match=r"config \{'blk': 32\} names \['blk'\], which are not"):
        AutoTuner.from_kernel(gemm_factory, [{"blk": 32}]).run(1, 2, 3)
    with pytest.raises(TypeError, match=r"needs configs="):
        tilelang.autotune(configs=None)(gemm_factory)
    with pytest.raises(
        TypeError, match=r"set_profile_args\(\) got unknown argument\(s\) \['wramup'\]"
    ):
        AutoTuner.from_kernel(gemm_factory, FAST).set_profile_args(wramup=3)
    with pytest.raises(TypeError, match=r"do_not_specialize names \['Q'\]"):
        AutoTuner(gemm_factory, FAST, do_not_specialize=["Q"])


def test_disabled_result_cache_and_worker_bounds(monkeypatch, cache_dir):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")
    before = sorted(os.listdir(os.path.join(cache_dir, "autotuner")))
    result = (
        AutoTuner.from_kernel(tuned_gemm, FAST[:1])
        .set_profile_args(warmup=2, rep=5)
        .run(100, 72, 80)
    )
    assert not result.from_cache and result.cache_path is None and result.config == FAST[0]
    assert sorted(os.listdir(os.path.join(cache_dir, "autotuner"))) == before
    # a config key given in the call: that call is compiled as given, not tuned
    # (tests/python/test_autotune_explicit.py)
    tuner = AutoTuner.from_kernel(tuned_gemm, FAST).set_profile_args(warmup=2, rep=5)
    given = tuner.run(100, 72, 80, block_K=16)
    assert given.config == {"block_K": 16} and not given.tuned and given.latency is None
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "1")
    assert compile_pool.worker_count(10) == 1
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "many")
    with pytest.raises(ValueError, match="TILELANG_AUTO_TUNING_CPU_COUNTS must be a positive"):
        compile_pool.worker_count(10)
