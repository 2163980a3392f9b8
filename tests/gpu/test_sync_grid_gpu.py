"""T.sync_grid() on the present GPU against torch (the kernels of
tests/python/test_sync_grid.py, which run them on the cpu target and the emulators in
CI): grids of two blocks per SM, the barrier reused round after round and launch after
launch, launches of one kernel on two streams at once (the runtime orders them: they
share the module's arrival word), and a grid too large to be resident at once."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_sync_grid import doubled_then_shifted, normalize_by_total, rotate


def sms():
    return torch.cuda.get_device_properties(0).multi_processor_count


def test_blocks_read_the_partial_sums_of_all_blocks():
    blocks, threads = 2 * sms(), 64
    kernel = tilelang.compile(normalize_by_total(blocks, threads), target="cuda")
    for _ in range(3):  # the arrival word carries over from launch to launch
        a = torch.rand(blocks * threads, device="cuda") + 0.5
        partial = torch.full((blocks,), float("nan"), device="cuda")
        b = torch.zeros_like(a)
        kernel(a, partial, b)
        torch.testing.assert_close(
            partial, a.view(blocks, threads).double().sum(1).float(), rtol=1e-5, atol=0
        )
        torch.testing.assert_close(b, (a.double() / a.double().sum()).float(), rtol=1e-5, atol=0)


def test_the_barrier_is_reused_round_after_round():
    blocks, steps = 2 * sms(), 101
    kernel = tilelang.compile(rotate(blocks, steps), target="cuda")
    buf = torch.zeros(2, blocks, 32, dtype=torch.int32, device="cuda")
    buf[0] = torch.randint(-1000, 1000, (blocks, 32), dtype=torch.int32, device="cuda")
    start = buf[0].clone()
    kernel(buf)
    torch.testing.assert_close(buf[steps % 2], torch.roll(start, -steps, 0) + steps)


def test_tile_level_blocks_meet_at_the_barrier():
    blocks = 2 * sms()
    kernel = tilelang.compile(doubled_then_shifted(blocks), target="cuda")
    a = torch.randn(blocks, 48, device="cuda")
    doubled = 2 * a
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.testing.assert_close(a, doubled)
    torch.testing.assert_close(b, torch.roll(doubled, -1, 0) + doubled[0])


def test_launches_on_two_streams_do_not_share_a_barrier():
    blocks, steps = sms(), 301
    kernel = tilelang.compile(rotate(blocks, steps), target="cuda")
    bufs, starts = [], []
    for _ in range(4):
        buf = torch.zeros(2, blocks, 32, dtype=torch.int32, device="cuda")
        buf[0] = torch.randint(-1000, 1000, (blocks, 32), dtype=torch.int32, device="cuda")
        bufs.append(buf)
        starts.append(buf[0].clone())
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()
    for i, buf in enumerate(bufs):
        with torch.cuda.stream(streams[i % 2]):
            kernel(buf)
    torch.cuda.synchronize()
    for buf, start in zip(bufs, starts):
        torch.testing.assert_close(buf[steps % 2], torch.roll(start, -steps, 0) + steps)


def test_a_grid_that_does_not_fit_at_once_is_refused():
    blocks = 64 * sms()  # blocks of 1024 threads: at most 2 per SM
    kernel = tilelang.compile(rotate(blocks, 1, threads=1024), target="cuda")
    buf = torch.zeros(2, blocks, 1024, dtype=torch.int32, device="cuda")
    with pytest.raises(
        tilelang.TileLangError,
        match=rf"calls T.sync_grid\(\), so every block of its grid must be resident on the GPU at once, but its "
        rf"grid \({blocks}, 1, 1\) has {blocks} blocks and at most \d+ fit \(\d+ per SM x {sms()} SMs, with 1024 "
        r"threads",
    ):
        kernel(buf)
    torch.cuda.synchronize()  # nothing was launched: the context is sound
