"""Logging and progress: tilelang.set_log_level and TILELANG_LOG_LEVEL set the `tilelang`
logger's level (WARNING by default) and refuse a bad value by name; an autotune and a
par_compile show progress bars (the best config so far) when stderr is a terminal, with
tqdm or the plain one-line fallback, and print nothing without one."""

import fcntl
import logging
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import textwrap
import time

import pytest
import tilelang
from tilelang import progress

PY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tilelang.__file__)))

# An autotune of three configs and a par_compile of three kernels on the cpu target.
SCRIPT = """
import numpy as np
import tilelang
import tilelang.language as T


def scale(N, block=16):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
            for i in T.serial(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] * 3.0

    return main


tuned = tilelang.autotune(
    configs=[{"block": 16}, {"block": 32}, {"block": 64}],
    warmup=1,
    rep=5,
    ref_prog=lambda A: A * 3.0,
)(tilelang.jit(out_idx=-1, target="cpu")(scale))
a = np.random.default_rng(0).standard_normal(300).astype(np.float32)
np.testing.assert_allclose(tuned(300)(a), a * 3.0, rtol=1e-6)
kernels = tilelang.jit(out_idx=-1, target="cpu")(scale).par_compile(
    [(200, 16), (200, 32), (200, 64)]
)
for k in kernels:
    np.testing.assert_allclose(k(a[:200]), a[:200] * 3.0, rtol=1e-6)
print("DONE")
"""

NO_TQDM = "import sys\nsys.modules['tqdm'] = None  # as if tqdm were not installed\n"


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PY_ROOT, env.get("PYTHONPATH", "")])
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    env["TILELANG_AUTO_TUNING_DISABLE_CACHE"] = "1"  # tune every time: a cached result shows no bar
    env.pop("TILELANG_LOG_LEVEL", None)
    env.update(extra)
    return env


def _script(tmp_path, prefix=""):
    path = tmp_path / "tune_script.py"
    path.write_text(prefix + textwrap.dedent(SCRIPT))
    return str(path)


def _run_in_terminal(args, env, timeout=240):
    """(exit code, everything written to the terminal) of a process whose stdin, stdout
    and stderr are a pseudo-terminal."""
    master, slave = pty.openpty()
    # 200 columns: tqdm cuts its line at the terminal's width.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return proc.returncode, b"".join(chunks).decode(errors="replace")


def test_set_log_level_takes_names_and_numbers():
    logger = logging.getLogger("tilelang")
    old = logger.level
    try:
        tilelang.set_log_level("INFO")
        assert logger.level == logging.INFO
        tilelang.set_log_level("debug")
        assert logger.level == logging.DEBUG
        tilelang.set_log_level(logging.ERROR)
        assert logger.level == logging.ERROR
        tilelang.set_log_level(" Warning ")
        assert logger.level == logging.WARNING
        tilelang.set_log_level(25)
        assert logger.level == 25
    finally:
        logger.setLevel(old)


@pytest.mark.parametrize("bad", ["LOUD", "", -5, 2.5, True, None])
def test_set_log_level_refuses_a_bad_level_by_name(bad):
    logger = logging.getLogger("tilelang")
    old = logger.level
    with pytest.raises(ValueError) as info:
        tilelang.set_log_level(bad)
    assert str(info.value).split("\n")[0] == (
        "tilelang.set_log_level(level) must be a logging level: DEBUG, INFO, WARNING, ERROR "
        f"or CRITICAL (any case), or a number such as logging.INFO (20); got {bad!r}"
    )
    assert logger.level == old


def _level_at_import(tmp_path, value):
    env = _env(tmp_path)
    if value is not None:
        env["TILELANG_LOG_LEVEL"] = value
    code = "import logging, tilelang; print(logging.getLogger('tilelang').getEffectiveLevel())"
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "value, level",
    [(None, logging.WARNING), ("", logging.WARNING), ("info", logging.INFO), ("10", 10)],
)
def test_tilelang_log_level_is_read_at_import(tmp_path, value, level):
    out = _level_at_import(tmp_path, value)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(level)


def test_a_bad_tilelang_log_level_is_an_error_naming_the_variable(tmp_path):
    out = _level_at_import(tmp_path, "verbose")
    assert out.returncode != 0
    assert (
        "ValueError: TILELANG_LOG_LEVEL must be a logging level: DEBUG, INFO, WARNING, ERROR or "
        "CRITICAL (any case), or a number such as logging.INFO (20); got 'verbose'"
    ) in out.stderr


def test_messages_go_to_stderr_at_the_set_level(tmp_path):
    code = (
        "import logging, tilelang\n"
        "log = logging.getLogger('tilelang')\n"
        "log.info('not shown at WARNING')\n"
        "log.warning('a warning %d', 7)\n"
        "tilelang.set_log_level('INFO')\n"
        "log.info('an info line')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 2, out.stderr
    assert lines[0].endswith("[tilelang WARNING] a warning 7")
    assert lines[1].endswith("[tilelang INFO] an info line")


def test_an_application_handler_gets_each_message_once(tmp_path):
    code = (
        "import logging, sys, tilelang\n"
        "logging.basicConfig(stream=sys.stderr, format='app: %(name)s %(message)s')\n"
        "logging.getLogger('tilelang').warning('once')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == "app: tilelang once\n"


def _check_terminal_output(text):
    # The compile bar of the autotune, its timing bar with the best config so far, and
    # the par_compile bar, each at its end.
    assert "autotune scale: compiling" in text, text
    assert "autotune scale: timing round 5/5" in text, text
    best = [
        line for line in text.split("\r") if "autotune scale: timing" in line and "best " in line
    ]
    assert best, text
    assert any("{'block': " in line and " ms " in line for line in best), best
    assert "par_compile scale: compiling" in text, text
    assert "DONE" in text


def test_an_autotune_in_a_terminal_shows_progress_with_the_best_config(tmp_path):
    rc, text = _run_in_terminal([sys.executable, _script(tmp_path)], _env(tmp_path))
    assert rc == 0, text
    _check_terminal_output(text)


def test_without_tqdm_the_plain_progress_line_is_shown(tmp_path):
    rc, text = _run_in_terminal([sys.executable, _script(tmp_path, NO_TQDM)], _env(tmp_path))
    assert rc == 0, text
    _check_terminal_output(text)
    # The plain line: 'desc done/total units [seconds] note', redrawn in place.
    assert "autotune scale: compiling 3/3 configs [" in text, text
    assert "par_compile scale: compiling 3/3 kernels [" in text, text
    final = [s for s in text.split("\r\x1b[K") if s.startswith("autotune scale: timing round 5/5")]
    assert final and final[-1].startswith("autotune scale: timing round 5/5 15/15 rounds ["), final
    assert "best " in final[-1]


@pytest.mark.parametrize("prefix", ["", NO_TQDM])
def test_without_a_terminal_nothing_is_shown(tmp_path, prefix):
    out = subprocess.run(
        [sys.executable, _script(tmp_path, prefix)],
        check=False,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "DONE\n"
    assert out.stderr == ""


def test_info_level_gives_one_line_summaries_without_a_bar(tmp_path):
    out = subprocess.run(
        [sys.executable, _script(tmp_path)],
        check=False,
        env=_env(tmp_path, TILELANG_LOG_LEVEL="INFO"),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr
    assert "[tilelang INFO] autotune 'scale': best config {'block': " in out.stderr
    assert "[tilelang INFO] par_compile scale: compiled 3 kernel(s) (0 failed)" in out.stderr


def test_a_log_line_is_written_above_a_plain_bar(monkeypatch, capsys):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "_tqdm", lambda: None)
    with progress.Progress("job", 4, "step") as bar:
        bar.advance()
        progress.write_line("a message")
        bar.note("halfway")
        bar.advance(3)
    err = capsys.readouterr().err
    # The bar's line is cleared, the message written on its own line, the bar redrawn.
    assert "\r\x1b[Ka message\n\r\x1b[Kjob 1/4 steps [" in err
    assert err.endswith("job 4/4 steps [0s] halfway\n")
