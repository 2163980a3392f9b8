"""Every Python example runs and verifies itself against numpy on the CPU."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path):
    env = dict(os.environ, TILELANG_DEFAULT_TARGET="cpu")
    out = subprocess.run(
        [sys.executable, str(path)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "match" in out.stdout, out.stdout
