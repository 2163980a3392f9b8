"""`tilelang.env` as TileLang has it: the settings object (values set on it, else the
environment, else defaults), its queries, and the pass timing that tl.pass_profile /
TILELANG_PASS_PROFILE turn on."""

import importlib
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.env import Environment, EnvVar, resolve_pass_profile_threshold_ms


@pytest.fixture
def fresh(monkeypatch):
    """Each setting's value set on the object is restored after the test."""
    saved = {n: v._forced_value for n, v in vars(Environment).items() if isinstance(v, EnvVar)}
    yield
    for name, value in saved.items():
        vars(Environment)[name]._forced_value = value


def test_env_is_the_settings_object_and_the_module_still_imports(fresh, monkeypatch, tmp_path):
    assert type(tilelang.env).__name__ == "Environment"
    assert tilelang.env.env is tilelang.env
    module = importlib.import_module("tilelang.env")
    assert module.env is tilelang.env and module.cache_dir is tilelang.env.cache_dir
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "a"))
    assert str(tmp_path / "a") == tilelang.env.TILELANG_CACHE_DIR
    assert os.path.join(str(tmp_path / "a"), "tmp") == tilelang.env.TILELANG_TMP_DIR
    # A value set on the object sets the variable, which the core reads too.
    tilelang.env.TILELANG_CACHE_DIR = str(tmp_path / "b")
    assert os.environ["TILELANG_CACHE_DIR"] == str(tmp_path / "b")
    assert tilelang.env.cache_dir() == str(tmp_path / "b")
    assert os.path.join(str(tmp_path / "b"), "tmp") == tilelang.env.TILELANG_TMP_DIR
    tilelang.env.TILELANG_CACHE_DIR = None
    assert "TILELANG_CACHE_DIR" not in os.environ
    with pytest.raises(AttributeError, match="no setting 'TILELANG_CACHEDIR'"):
        tilelang.env.TILELANG_CACHEDIR = "x"


def test_an_unknown_setting_read_or_assigned_lists_the_settings(fresh):
    """Reading and assigning a name the object has no setting of give one message, which
    names the setting asked for and every setting there is."""
    with pytest.raises(AttributeError) as read:
        _ = tilelang.env.TILELANG_CACHEDIR
    with pytest.raises(AttributeError) as assigned:
        tilelang.env.TILELANG_CACHEDIR = "x"
    assert str(read.value) == str(assigned.value)
    message = str(read.value)
    assert message.startswith("tilelang.env has no setting 'TILELANG_CACHEDIR'; it has ")
    listed = message.split("; it has ", 1)[1].split(", ")
    assert {"TILELANG_CACHE_DIR", "TILELANG_PASS_PROFILE", "TILELANG_TIME_PASSES"} <= set(listed)
    assert all(name.startswith("TILELANG_") for name in listed)


def test_defaults_and_switches(fresh, monkeypatch):
    for name in (
        "TILELANG_PRINT_ON_COMPILATION",
        "TILELANG_DISABLE_CACHE",
        "TILELANG_PASS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    assert tilelang.env.TILELANG_PRINT_ON_COMPILATION == "1"
    assert tilelang.env.is_print_on_compilation_enabled()
    assert not tilelang.env.is_cache_globally_disabled()
    assert not tilelang.env.is_pass_profile_enabled()
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "True")
    assert tilelang.env.is_pass_profile_enabled()
    monkeypatch.setenv("TILELANG_PRINT_ON_COMPILATION", "off")
    assert not tilelang.env.is_print_on_compilation_enabled()


def test_default_target_compile_timeout_and_threshold_parsing(fresh, monkeypatch):
    monkeypatch.delenv("TILELANG_DEFAULT_TARGET", raising=False)
    assert tilelang.env.get_default_target() == "auto"
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", '{"kind": "cuda", "arch": "sm_90a"}')
    assert tilelang.env.get_default_target() == {"kind": "cuda", "arch": "sm_90a"}
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "{kind: cuda}")
    with pytest.raises(
        ValueError, match="TILELANG_DEFAULT_TARGET looks like a dict but is not JSON"
    ):
        tilelang.env.get_default_target()
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", "abc")
    with pytest.raises(
        ValueError, match="TILELANG_COMPILE_TIMEOUT_SECONDS must be a positive number"
    ):
        tilelang.env.get_compile_timeout_seconds()
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT_SECONDS", " 2.5 ")
    assert tilelang.env.get_compile_timeout_seconds() == 2.5
    for bad in ("-1", "nan", "inf", "x"):
        monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", bad)
        with pytest.raises(ValueError, match="THRESHOLD_MS must be a finite non-negative number"):
            tilelang.env.get_pass_profile_threshold_ms()
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", " 1.5 ")
    assert tilelang.env.get_pass_profile_threshold_ms() == 1.5
    key = tilelang.PassConfigKey.TL_PASS_PROFILE_THRESHOLD_MS
    assert resolve_pass_profile_threshold_ms({key: 0}, key, lambda: 10.0) == 0.0
    assert resolve_pass_profile_threshold_ms({}, key, lambda: 10.0) == 10.0


def _scale(n):
    @T.prim_func
    def scale(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] * 3.0

    return scale


def _compile(n, **configs):
    kernel = tilelang.compile(_scale(n), target="cpu", pass_configs=configs)
    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    b = np.zeros(n, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)


@pytest.fixture
def no_cache():
    was = tilelang.is_cache_enabled()
    tilelang.disable_cache()
    yield
    if was:
        tilelang.enable_cache()


def _pass_lines(err):
    return [line for line in err.splitlines() if line.startswith("[tilelang] pass ")]


def test_pass_profile_prints_each_pass_over_the_threshold(no_cache, monkeypatch, capfd):
    for name in (
        "TILELANG_PASS_PROFILE",
        "TILELANG_PASS_PROFILE_THRESHOLD_MS",
        "TILELANG_TIME_PASSES",
    ):
        monkeypatch.delenv(name, raising=False)
    _compile(97)
    assert _pass_lines(capfd.readouterr().err) == []
    _compile(97, **{"tl.pass_profile": True})
    lines = _pass_lines(capfd.readouterr().err)
    names = [line.split()[2] for line in lines]
    assert names[0] == "legalize_negative_indices" and "lower_tile_ops" in names
    assert all(line.endswith(" ms") for line in lines)
    # A threshold no pass reaches prints none; the config's 0 overrides the environment's.
    _compile(97, **{"tl.pass_profile": True, "tl.pass_profile_threshold_ms": 1e9})
    assert _pass_lines(capfd.readouterr().err) == []
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "1")
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", "1e9")
    _compile(97)
    assert _pass_lines(capfd.readouterr().err) == []
    _compile(97, **{"tl.pass_profile_threshold_ms": 0})
    assert len(_pass_lines(capfd.readouterr().err)) == len(lines)


def test_pass_profile_refuses_bad_thresholds(no_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "1")
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", "abc")
    with pytest.raises(
        tilelang.TileLangError, match="TILELANG_PASS_PROFILE_THRESHOLD_MS must be a finite"
    ):
        _compile(33)
    monkeypatch.delenv("TILELANG_PASS_PROFILE_THRESHOLD_MS")
    with pytest.raises(
        tilelang.TileLangError, match="'tl.pass_profile_threshold_ms' must be a finite"
    ):
        _compile(33, **{"tl.pass_profile_threshold_ms": -2.0})


def test_each_compile_is_announced_at_info_unless_turned_off(no_cache, monkeypatch, caplog):
    monkeypatch.delenv("TILELANG_PRINT_ON_COMPILATION", raising=False)
    with caplog.at_level(logging.INFO, logger="tilelang"):
        _compile(65)
    assert "compiling kernel 'scale' for cpu" in [r.getMessage() for r in caplog.records]
    caplog.clear()
    monkeypatch.setenv("TILELANG_PRINT_ON_COMPILATION", "0")
    with caplog.at_level(logging.INFO, logger="tilelang"):
        _compile(65)
    assert "compiling kernel 'scale' for cpu" not in [r.getMessage() for r in caplog.records]


_ON = ("1", "true", "YES", " on ")
_OFF = ("0", "false", "No", "off", "")


def _switch_error(name, value):
    return f"{name} must be 1, true, yes or on (or 0, false, no, off, empty), got '{value}'"


def test_pass_profile_and_time_passes_read_one_rule_in_python_and_the_core(monkeypatch, capfd):
    """TILELANG_PASS_PROFILE and TILELANG_TIME_PASSES take the words tilelang.env takes; a
    value neither on nor off is refused with the same message by Python and by the core
    (before, the core took any value but 0 as TILELANG_TIME_PASSES on, and a misspelt
    TILELANG_PASS_PROFILE as off)."""
    for name in ("TILELANG_PASS_PROFILE_THRESHOLD_MS", "TILELANG_TIME_PASSES"):
        monkeypatch.delenv(name, raising=False)
    for word in _ON + _OFF:
        monkeypatch.setenv("TILELANG_PASS_PROFILE", word)
        tilelang.lower(_scale(97), target="cpu")
        printed = bool(_pass_lines(capfd.readouterr().err))
        assert tilelang.env.is_pass_profile_enabled() == printed == (word in _ON), repr(word)
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "yess")
    with pytest.raises(ValueError) as python_error:
        tilelang.env.is_pass_profile_enabled()
    assert str(python_error.value) == _switch_error("TILELANG_PASS_PROFILE", "yess")
    with pytest.raises(tilelang.TileLangError) as core_error:
        tilelang.lower(_scale(97), target="cpu")
    assert str(core_error.value) == _switch_error("TILELANG_PASS_PROFILE", "yess")

    monkeypatch.delenv("TILELANG_PASS_PROFILE")
    for word in _ON + _OFF:
        monkeypatch.setenv("TILELANG_TIME_PASSES", word)
        tilelang.lower(_scale(97), target="cpu")
        assert bool(_pass_lines(capfd.readouterr().err)) == (word in _ON), repr(word)
    monkeypatch.setenv("TILELANG_TIME_PASSES", "2")
    with pytest.raises(tilelang.TileLangError) as core_error:
        tilelang.lower(_scale(97), target="cpu")
    assert str(core_error.value) == _switch_error("TILELANG_TIME_PASSES", "2")
    assert _pass_lines(capfd.readouterr().err) == []


def test_print_on_compilation_reads_one_rule_in_python_and_the_core(
    no_cache, monkeypatch, caplog, capfd
):
    """Unset or on: each compile is logged at INFO (and printed when set on); off, empty
    included, as in TileLang: DEBUG only; anything else is refused by both sides."""
    for word, python_says, logged, printed in (
        (None, True, True, False),
        ("on", True, True, True),
        ("", False, False, False),
        ("No", False, False, False),
    ):
        if word is None:
            monkeypatch.delenv("TILELANG_PRINT_ON_COMPILATION", raising=False)
        else:
            monkeypatch.setenv("TILELANG_PRINT_ON_COMPILATION", word)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="tilelang"):
            _compile(65)
        messages = [r.getMessage() for r in caplog.records]
        assert ("compiling kernel 'scale' for cpu" in messages) == logged, (word, messages)
        assert ("tilelang: compiling scale for cpu" in capfd.readouterr().out) == printed, word
        assert tilelang.env.is_print_on_compilation_enabled() == python_says, word
    monkeypatch.setenv("TILELANG_PRINT_ON_COMPILATION", "verbose")
    message = _switch_error("TILELANG_PRINT_ON_COMPILATION", "verbose")
    with pytest.raises(ValueError) as python_error:
        tilelang.env.is_print_on_compilation_enabled()
    assert str(python_error.value) == message
    with pytest.raises(tilelang.TileLangError) as core_error:
        _compile(65)
    assert str(core_error.value) == message


def test_a_misspelt_leak_warning_switch_warns_at_import(tmp_path):
    """TILELANG_NB_LEAK_WARNINGS, read as the extension loads: a value neither on nor off
    is a warning naming it (the import goes on, the leak check stays off); before, any
    value but 1 was off without a word."""
    env = dict(os.environ, TILELANG_NB_LEAK_WARNINGS="maybe", TILELANG_CACHE_DIR=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-c", "import tilelang; print(tilelang._C.compile_count())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0 and r.stdout == "0\n", r
    assert r.stderr == (
        "[tilelang] " + _switch_error("TILELANG_NB_LEAK_WARNINGS", "maybe") + "; the leak "
        "warnings stay off\n"
    )
    env["TILELANG_NB_LEAK_WARNINGS"] = "off"
    r = subprocess.run(
        [sys.executable, "-c", "import tilelang"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0 and r.stderr == "", r
