"""tests/python/test_rng.py's draws on the GPU: T.rng_rand / T.rng_rand_float give
cuRAND's Philox4x32-10 and MRG32k3a numbers (checked against that file's independent reference);
float32 normals use the fast __sincosf, as cuRAND's device code does."""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from test_rng import GENERATORS, check_draws, compile_draws, draw_outputs


@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_draws_match_curand_on_the_gpu(generator):
    seed = int(np.random.default_rng(3).integers(2**53, 2**63))
    types = {"uint32": torch.uint32, "float32": torch.float32, "float64": torch.float64}
    out = draw_outputs(lambda n, t: torch.zeros(n, dtype=types[t], device="cuda"))
    compile_draws("cuda", seed, generator)(*out)
    check_draws([o.cpu().numpy() for o in out], seed, normal_tol=1e-4, generator=generator)
