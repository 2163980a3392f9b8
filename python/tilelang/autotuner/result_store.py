"""A tuning result directory shared by several tuners, possibly on other machines over
a network file system (`@tilelang.autotune(result_dir=...)`,
TILELANG_AUTOTUNE_RESULT_DIR), and the export / import of results as one file.

Layout under the directory, for the result-cache key K of a tuning problem:
`K.json` the chosen config (as in the local result cache); `K.d/<i>.json` the measured
outcome of config i; `K.d/<i>.claim` the claim of a tuner measuring config i (its host,
pid and start time). Every file is written to a temporary name and renamed into place,
so a reader sees a whole file or none; a damaged one is ignored with a warning. A claim
is an exclusive create: one tuner measures a config, the others wait for its outcome. A
claim whose claimant is a dead process of this host, or whose file has not been
refreshed for the claim timeout (the claimant refreshes it while it works), is taken
over."""

import contextlib
import json
import logging
import os
import socket
import threading
import time

from tilelang.env import cache_dir

from . import result_cache

logger = logging.getLogger("tilelang")

ENV_DIR = "TILELANG_AUTOTUNE_RESULT_DIR"
ENV_CLAIM_TIMEOUT = "TILELANG_AUTOTUNE_CLAIM_TIMEOUT"
DEFAULT_CLAIM_TIMEOUT = 120.0
EXPORT_FORMAT = "tilelang-autotune-results"
EXPORT_VERSION = 1
_POLL_S = 0.2


def shared_dir(given):
    """The shared result directory of a run: `given` (result_dir=), else
    TILELANG_AUTOTUNE_RESULT_DIR, else None."""
    path = given if given is not None else os.environ.get(ENV_DIR, "").strip() or None
    return os.path.abspath(os.path.expanduser(os.fspath(path))) if path else None


def claim_timeout():
    text = os.environ.get(ENV_CLAIM_TIMEOUT, "").strip()
    if not text:
        return DEFAULT_CLAIM_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{ENV_CLAIM_TIMEOUT} must be a positive number of seconds, got {text!r}")
    return value


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


class SharedRun:
    """The per-config claims and outcomes of one tuning problem in a shared directory."""

    def __init__(self, directory, key, configs):
        self.directory = directory
        self.final_path = os.path.join(directory, f"{key}.json")
        self.sub = os.path.join(directory, f"{key}.d")
        self.configs = configs
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.timeout = claim_timeout()
        self._held = set()
        self._warned = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = None

    def _record_path(self, index):
        return os.path.join(self.sub, f"{index}.json")

    def _claim_path(self, index):
        return os.path.join(self.sub, f"{index}.claim")

    # ---- outcomes
    def _outcome(self, index):
        """The measured outcome of config `index`, or None; a damaged file is ignored,
        with one warning."""
        path = self._record_path(index)
        try:
            with open(path) as f:
                record = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            record, why = None, str(exc)
        else:
            why = "incomplete"
        ok = (
            isinstance(record, dict)
            and record.get("index") == index
            and record.get("config") == result_cache.describe(self.configs[index])
            and record.get("status") in ("ok", "early", "failed")
        )
        if ok and record["status"] != "failed":
            value = record.get("latency")
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            return record
        if path not in self._warned:
            self._warned.add(path)
            logger.warning("autotune: ignoring the damaged config outcome file %s (%s)", path, why)
        return None

    def outcomes(self):
        """{index: outcome} of the configs measured so far (damaged files skipped)."""
        found = {}
        for index in range(len(self.configs)):
            record = self._outcome(index)
            if record is not None:
                found[index] = record
        return found

    def publish_outcome(self, index, status, value, measurement=None):
        """Writes config `index`'s outcome; `measurement`: the device it was timed on and
        the spread of its rounds (what the result's `measurements` holds)."""
        record = {
            "index": index,
            "config": result_cache.describe(self.configs[index]),
            "status": status,
            "host": self.host,
            "pid": self.pid,
            "time": time.time(),
        }
        if status == "failed":
            record["reason"] = value
        else:
            record["latency"] = value
        if measurement is not None:
            record["measurement"] = measurement
        try:
            result_cache.write_atomic(self._record_path(index), record, shared=True)
        except OSError as exc:
            logger.warning("autotune: could not write %s (%s)", self._record_path(index), exc)

    # ---- claims
    def _try_create(self, index):
        path = self._claim_path(index)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump({"host": self.host, "pid": self.pid, "time": time.time()}, f)
        with self._lock:
            self._held.add(index)
        return True

    def _stale(self, path):
        """(stale, why, the claim file's bytes) of an existing claim file."""
        try:
            age = time.time() - os.stat(path).st_mtime
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return False, None, None
        claim = None
        with contextlib.suppress(ValueError):
            claim = json.loads(raw)
        if isinstance(claim, dict) and claim.get("host") == self.host:
            pid = claim.get("pid")
            if isinstance(pid, int) and pid != self.pid and not _pid_alive(pid):
                return True, f"its claimant, process {pid} of this host, has exited", raw
        if age > self.timeout:
            who = (
                f"{claim.get('host')} pid {claim.get('pid')}"
                if isinstance(claim, dict)
                else "an unreadable claim"
            )
            return True, f"its claim ({who}) was not refreshed for {age:.0f} s", raw
        return False, None, raw

    def _take_over(self, index):
        path = self._claim_path(index)
        stale, why, raw = self._stale(path)
        if not stale:
            return False
        aside = f"{path}.stale-{self.host}-{self.pid}"
        try:
            os.rename(path, aside)  # one taker wins the rename
        except OSError:
            return False
        try:
            with open(aside, "rb") as f:
                moved = f.read()
        except OSError:
            moved = raw
        if moved != raw:
            # Another taker replaced the stale claim with its own between our look and
            # the rename: put that live claim back and leave the config to it.
            with contextlib.suppress(OSError):
                os.link(aside, path)
            with contextlib.suppress(OSError):
                os.unlink(aside)
            return False
        with contextlib.suppress(OSError):
            os.unlink(aside)
        logger.warning(
            "autotune: taking over config %s: %s",
            result_cache.describe(self.configs[index]),
            why,
        )
        return self._try_create(index)

    def claim(self, missing, limit):
        """Claims up to `limit` of the `missing` config indices; returns them."""
        os.makedirs(self.sub, exist_ok=True)
        got = []
        for index in missing:
            if len(got) >= limit:
                break
            if self._try_create(index) or self._take_over(index):
                if self._outcome(index) is not None:  # finished meanwhile
                    self.release([index])
                    continue
                got.append(index)
        if got and self._beat is None:
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()
        return got

    def release(self, indices):
        for index in indices:
            with self._lock:
                self._held.discard(index)
            with contextlib.suppress(OSError):
                os.unlink(self._claim_path(index))

    def _heartbeat(self):
        while not self._stop.wait(max(self.timeout / 4, 0.05)):
            with self._lock:
                held = list(self._held)
            for index in held:
                with contextlib.suppress(OSError):
                    os.utime(self._claim_path(index))

    def close(self):
        self._stop.set()
        with self._lock:
            held = list(self._held)
        self.release(held)

    def wait(self):
        time.sleep(_POLL_S)


# ---- export / import
def _entries(directory):
    """{key: entry} of the complete result entries in a result directory."""
    found = {}
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return found
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(directory, name)
        entry = result_cache.read_json(path)
        if entry is None:
            continue
        if result_cache.valid_entry(entry):
            found[name[: -len(".json")]] = entry
        else:
            logger.warning("autotune: ignoring the incomplete result file %s", path)
    return found


def default_dir():
    return os.path.join(cache_dir(), "autotuner")


def export_results(path, directory=None):
    """Writes every result of `directory` (default: the local result cache) to the file
    `path`; returns how many."""
    entries = _entries(directory or default_dir())
    data = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "results": [{"key": k, "entry": e} for k, e in sorted(entries.items())],
    }
    result_cache.write_atomic(os.path.abspath(path), data, shared=True)
    return len(entries)


def import_results(path, directory=None):
    """Adds the results of an exported file to `directory` (default: the local result
    cache). Where the directory has a result for the same key already, the one tuned
    later (its `tuned_at` time; an entry without one counts as oldest) is kept, so an
    older file never replaces a newer local result. Returns (added, replaced, kept)
    counts; raises ValueError for a file that is not an export."""
    directory = directory or default_dir()
    try:
        with open(path) as f:
            data = json.load(f)
    except ValueError as exc:
        raise ValueError(f"{path} is not an exported tuning result file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise ValueError(
            f'{path} is not an exported tuning result file (no "format": {EXPORT_FORMAT!r})'
        )
    if data.get("version") != EXPORT_VERSION:
        raise ValueError(
            f"{path} has version {data.get('version')!r} of the export format; this tilelang "
            f"reads version {EXPORT_VERSION}"
        )
    added = replaced = kept = 0
    shared = os.path.abspath(directory) != os.path.abspath(default_dir())
    for item in data.get("results") or []:
        key = item.get("key") if isinstance(item, dict) else None
        entry = item.get("entry") if isinstance(item, dict) else None
        if not isinstance(key, str) or not key.isalnum() or not result_cache.valid_entry(entry):
            logger.warning("autotune: %s: skipping an incomplete result %r", path, key)
            continue
        target = os.path.join(directory, f"{key}.json")
        local = result_cache.read_json(target)
        if result_cache.valid_entry(local):
            if _tuned_at(local) >= _tuned_at(entry):
                kept += 1
                continue
            replaced += 1
        else:
            added += 1
        result_cache.write_atomic(target, entry, shared=shared)
    return added, replaced, kept


def _tuned_at(entry):
    value = entry.get("tuned_at")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
