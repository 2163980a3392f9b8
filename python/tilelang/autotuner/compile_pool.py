"""Compiles the configs of a tuning run in parallel worker processes, each config with a
time limit. A worker that overruns is killed and replaced; one that dies is replaced; a
config's failure is recorded, never raised. Results: {index: Outcome}."""

import multiprocessing
import multiprocessing.connection as mpc
import os
import subprocess
import sys
import tempfile
import time
from collections import deque

from . import _worker

_GIB = 1 << 30
_STARTUP_TIMEOUT_S = 300.0  # importing the user's module in a fresh interpreter


class Outcome:
    """What happened to one config: status "ok", "error", "timeout" or "crash"."""

    __slots__ = ("cache_key", "detail", "message", "seconds", "status")

    def __init__(self, status, message="", detail="", cache_key=None, seconds=0.0):
        self.status, self.message, self.detail = status, message, detail
        self.cache_key, self.seconds = cache_key, seconds


class WorkerStartError(RuntimeError):
    """A fresh worker could not load the kernel function (the caller falls back)."""


def available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def worker_count(n_tasks):
    """min(cores, TILELANG_AUTO_TUNING_CPU_COUNTS, available memory / 1 GiB, tasks)."""
    n = os.cpu_count() or 1
    text = os.environ.get("TILELANG_AUTO_TUNING_CPU_COUNTS", "").strip()
    if text:
        try:
            limit = int(text)
        except ValueError:
            limit = 0
        if limit <= 0:
            raise ValueError(
                f"TILELANG_AUTO_TUNING_CPU_COUNTS must be a positive integer, got {text!r}"
            )
        n = min(n, limit)
    memory = available_memory()
    if memory:
        n = min(n, max(1, memory // _GIB))
    return max(1, min(n, n_tasks))


_BOOT = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from tilelang.autotuner._worker import subprocess_main; "
    "subprocess_main(int(sys.argv[1]), int(sys.argv[2]))"
)


class _Worker:
    """A worker process: a compile worker, or a benchmark worker when its recipe (or, for
    a fork, its `live` tuple) carries a benchmark setup (bench_pool)."""

    def __init__(self, mode, recipe, live):
        self.task = None
        self.info = None  # what a benchmark worker's "ready" message says of its device
        self.started = 0.0
        self.ready = False
        self.launched = time.monotonic()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (closed in stop())
        if mode == "subprocess":
            self._start_subprocess(recipe)
        else:
            self._start_fork(live)

    def _start_subprocess(self, recipe):
        from multiprocessing.connection import Connection

        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = None
        if recipe.get("env"):  # a benchmark worker's device pinning (CUDA_VISIBLE_DEVICES)
            env = {**os.environ, **recipe["env"]}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT.format(root=root), str(to_r), str(from_w)],
            pass_fds=(to_r, from_w),
            stdin=subprocess.DEVNULL,
            env=env,
            stdout=self.log,
            stderr=self.log,
        )
        os.close(to_r)
        os.close(from_w)
        self.send_conn = Connection(to_w, readable=False)
        self.recv_conn = Connection(from_r, writable=False)
        self.sentinel = self.recv_conn  # EOF when the process dies
        self.send_conn.send(recipe)

    def _start_fork(self, live):
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker.fork_main, args=(child, *live), daemon=True)
        self.proc.start()
        child.close()
        self.send_conn = self.recv_conn = parent
        self.sentinel = self.proc.sentinel

    def exit_code(self):
        return self.proc.poll() if isinstance(self.proc, subprocess.Popen) else self.proc.exitcode

    def wait_exit(self):
        """After the pipe closed: lets the process finish exiting (so exit_code() is set)."""
        try:
            if isinstance(self.proc, subprocess.Popen):
                self.proc.wait(timeout=5)
            else:
                self.proc.join(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines=3):
        try:
            self.log.seek(0)
            text = self.log.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return " | ".join(text[-lines:])

    def stop(self, kill=False):
        try:
            if kill:
                self.proc.kill()
            else:
                self.send_conn.send(None)
        except (OSError, ValueError):
            pass
        try:
            if isinstance(self.proc, subprocess.Popen):
                self.proc.wait(timeout=None if kill else 5)
            else:
                self.proc.join(None if kill else 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not isinstance(self.proc, subprocess.Popen) and self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        for conn in {
            id(self.send_conn): self.send_conn,
            id(self.recv_conn): self.recv_conn,
        }.values():
            conn.close()
        self.log.close()


def compile_all(mode, recipe, live, tasks, timeout, n_workers, on_done):
    """Compiles `tasks` [(index, args, kwargs, config)] in `n_workers` processes.
    `mode` is "subprocess" (recipe: how a fresh interpreter finds the function) or "fork"
    (live: (kind, fn, options)). Calls on_done(index, Outcome) as results arrive."""
    pending = deque(tasks)
    workers = [_Worker(mode, recipe, live) for _ in range(min(n_workers, len(pending)))]
    try:
        while pending or any(w.task is not None for w in workers):
            dispatch_and_wait(workers, pending, timeout, lambda task: task)
            now = time.monotonic()
            for i, w in enumerate(workers):
                replace = False
                message = _poll(w)
                if message is not None:
                    kind, index, payload = message
                    if kind == "ready":
                        w.ready = True
                    elif kind == "init_error":
                        raise WorkerStartError(payload[0] + "\n" + payload[1])
                    else:
                        seconds = now - w.started
                        if kind == "ok":
                            on_done(index, Outcome("ok", cache_key=payload, seconds=seconds))
                        else:
                            on_done(index, Outcome("error", payload[0], payload[1], None, seconds))
                        w.task = None
                elif message is None and w.exit_code() is not None:
                    if not w.ready:
                        raise WorkerStartError(
                            f"a compile worker exited with code {w.exit_code()} while starting: "
                            f"{w.log_tail()}"
                        )
                    if w.task is not None:
                        reason = f"the compile worker died (exit code {w.exit_code()})"
                        tail = w.log_tail()
                        on_done(w.task[0], Outcome("crash", reason + (f": {tail}" if tail else "")))
                        w.task = None
                    replace = True
                elif w.task is not None and now - w.started >= timeout:
                    on_done(
                        w.task[0],
                        Outcome(
                            "timeout", f"timed out after {timeout:g} s", seconds=now - w.started
                        ),
                    )
                    w.task = None
                    replace = True
                elif not w.ready and now - w.launched >= _STARTUP_TIMEOUT_S:
                    raise WorkerStartError(
                        f"a compile worker did not start within {_STARTUP_TIMEOUT_S:g} s"
                    )
                if replace:
                    w.stop(kill=True)
                    workers[i] = _Worker(mode, recipe, live) if pending else None
            workers = [w for w in workers if w is not None]
            if pending and not workers:
                workers.append(_Worker(mode, recipe, live))
    finally:
        for w in workers:
            w.stop(kill=w.task is not None or not w.ready)


def dispatch_and_wait(workers, pending, timeout, message):
    """One step of a worker pool's loop: hands the next pending task to each started,
    idle worker (sending `message(task)`), then waits until a worker replies or exits,
    or the first deadline passes (a task's `timeout`, a start's _STARTUP_TIMEOUT_S)."""
    for w in workers:
        if w.ready and w.task is None and pending:
            w.task = pending.popleft()
            w.started = time.monotonic()
            w.send_conn.send(message(w.task))
    deadlines = [
        (w.started + timeout) if w.ready else (w.launched + _STARTUP_TIMEOUT_S)
        for w in workers
        if w.task is not None or not w.ready
    ]
    wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
    watched = {id(o): o for w in workers for o in (w.recv_conn, w.sentinel)}
    mpc.wait(list(watched.values()), wait_s)


def _poll(w):
    """The worker's next message, or None (nothing yet, or the pipe closed)."""
    try:
        if w.recv_conn.poll():
            return w.recv_conn.recv()
    except (EOFError, OSError):
        w.wait_exit()
    return None
