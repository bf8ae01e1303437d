"""Independent tasks in other processes: a process pool (:func:`process_map`) and Ray (:class:`RayPool`,
whose :meth:`~RayPool.map_chunks` is the one chunked, retried Ray map of the fly's and the skier's
generations; the surrogate's episodes use its :meth:`~RayPool.map`).

Worker processes end with the command that started them, however it ends (``kill -9`` included):

- a pool worker asks the kernel to kill it when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``)
  and, on any system, watches its parent's id from a thread and exits when it changes;
- a local Ray started here has a reaper: a small process that follows the tree of the processes Ray
  started (GCS, raylet, agents, workers) and, when its pipe from this process closes (this process
  ended, or :meth:`RayPool.close` ran), kills those still alive. Ray takes down its GCS, raylet and
  workers on its own, but its dashboard and runtime-env agents outlive a killed driver by a minute
  (they wait 60 s to report the raylet's death to the dead GCS). The reaper reads ``/proc``, so it
  runs on Linux only; elsewhere Ray's own clean-up applies.

Ray is an optional extra (``pip install 'animat[distributed]'``), imported only when a pool is made.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np

from animat.errors import ConfigError

BACKENDS = ("local", "ray")
_RAY_MISSING = "--backend ray needs the 'distributed' extra: pip install 'animat[distributed]'"
_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15  # from <linux/prctl.h>
WATCH_THREAD = "animat-watch"  # the name of a pool worker's parent-watch thread (/proc/<pid>/task/<tid>/comm)


# --------------------------------------------------------------------------------------------
# process pool
# --------------------------------------------------------------------------------------------


def process_map(fn: Callable[..., Any], args: Sequence[tuple], workers: int) -> Iterator[tuple[int, Any]]:
    """``(i, fn(*args[i]))`` for every task, as each finishes: in this process, in order, when
    ``workers <= 1`` or there is one task; else in ``min(workers, len(args))`` processes started
    with ``spawn`` (not ``fork``: the parent may already run JAX's threads, which a fork would copy
    half-alive), in order of completion. ``fn`` and the arguments must pickle. The workers end when
    this process does (:func:`die_with_parent`); iterate from one thread that outlives the map (the
    kernel's parent-death signal follows the thread that started the workers: the first to iterate)."""
    if int(workers) <= 1 or len(args) <= 1:
        for i, a in enumerate(args):
            yield i, fn(*a)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=min(int(workers), len(args)),
        mp_context=context,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        futures = {pool.submit(fn, *a): i for i, a in enumerate(args)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def die_with_parent(parent: int, poll_s: float = 1.0) -> None:
    """Make this (worker) process end when process ``parent`` does: SIGKILL from the kernel on Linux,
    and on any system a daemon thread that exits the process within ``poll_s`` s of its parent id
    changing (the orphan is adopted by init or a subreaper). A pool initializer: a worker whose parent
    dies while it is still starting (importing the parent's main module) ends once it reaches this."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc symbol: the thread below still works
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, poll_s), name="animat-parent-watch", daemon=True).start()


def _watch_parent(parent: int, poll_s: float) -> None:
    if sys.platform.startswith("linux"):  # name the thread for ps/top (and tests): "animat-watch"
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_NAME, ctypes.c_char_p(WATCH_THREAD.encode()), 0, 0, 0)
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)


# --------------------------------------------------------------------------------------------
# Ray
# --------------------------------------------------------------------------------------------


def import_ray():
    """The ray module; ConfigError (how to install it) where the optional extra is missing."""
    try:
        import ray
    except ImportError as err:
        raise ConfigError(_RAY_MISSING) from err
    return ray


def probe_address(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an unreachable ``host:port`` (``ray.init`` itself retries for minutes).

    ``"auto"``/``"local"`` and addresses without a port are left to ``ray.init``.
    """
    import socket

    target = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        raise ConfigError(f"cannot reach Ray cluster at {address!r}: {err}") from None


def chunk_spans(n: int, chunks: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: ``range(n)`` cut into ``min(chunks, n)`` contiguous, non-empty spans of
    sizes differing by at most one (none when ``n == 0``)."""
    if n <= 0:
        return []
    bounds = np.linspace(0, n, min(int(chunks), n) + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


# The reaper (see the module docstring), run as ``python -c _REAPER <pid of the RayPool's process>``. It
# notes that process's children, prints "ok", and after the line "ready" (ray.init has returned) takes
# the new children as Ray's and, once a second, adds every descendant of theirs to the processes it
# tracks; when its stdin ends (close() or the process died) it kills those still alive. A start time
# goes with each pid, so that a pid the system has reused is never killed.
_REAPER = r"""
import os, signal, sys, threading

def table():
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            procs[int(name)] = (int(fields[1]), fields[19])
    return procs

def children(procs, parent):
    return {(pid, start) for pid, (ppid, start) in procs.items() if ppid == parent and pid != os.getpid()}

parent = int(sys.argv[1])
before = children(table(), parent)
print("ok", flush=True)
sys.stdin.readline()
tracked = children(table(), parent) - before
ended = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), ended.set()), daemon=True).start()
while True:
    procs = table()
    kids = {}
    for pid, (ppid, start) in procs.items():
        kids.setdefault(ppid, []).append((pid, start))
    todo = [pid for pid, start in tracked if procs.get(pid, (0, None))[1] == start]
    while todo:
        for kid in kids.get(todo.pop(), []):
            if kid not in tracked:
                tracked.add(kid)
                todo.append(kid[0])
    if ended.wait(1.0):
        break
procs = table()
for pid, start in tracked:
    if procs.get(pid, (0, None))[1] == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


class RayPool:
    """Ray for one command: :meth:`map` and :meth:`map_chunks` run tasks on its workers; a task whose
    worker dies (process killed, node lost) is retried up to ``max_retries`` times. An exception raised
    by the task itself is not retried and propagates as Ray's ``RayTaskError`` (also an instance of the
    original exception's class); a task that still fails after its retries raises ``RuntimeError``.

    ``address``: ``None`` starts a local Ray (``num_cpus=workers`` if given), which :meth:`close` shuts
    down and whose processes end with this one (module docstring); else joins ``ray.init(address=...)``
    (``"auto"``, ``"host:port"``, ``"ray://host:10001"``), failing fast on an unreachable ``host:port``.
    If Ray is already initialised in this process it is used as is (``address`` ignored) and left
    running. ``chunks``: the number of tasks of :meth:`map_chunks` (default ``workers``, else the
    cluster's CPU count). Settings are checked (ConfigError) before Ray is imported.
    """

    def __init__(
        self, *, address: str | None = None, workers: int | None = None, chunks: int | None = None, max_retries: int = 3
    ):
        for name, value in (("num_workers", workers), ("chunks", chunks)):
            if value is not None and int(value) < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if int(max_retries) < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        self._ray = ray = import_ray()
        self.max_retries = int(max_retries)
        self._owns_ray, self._reaper, self._remotes = False, None, {}
        if not ray.is_initialized():
            self._init_ray(address, workers)
        self.chunks = int(chunks or workers or int(ray.cluster_resources().get("CPU", 1)) or 1)

    def _init_ray(self, address: str | None, workers: int | None) -> None:
        ray = self._ray
        # JAX on a GPU node would preallocate 75% of device memory in every worker; Ray leaves
        # CUDA_VISIBLE_DEVICES alone for tasks that ask for no GPU, so keep workers from hogging it.
        env = {"XLA_PYTHON_CLIENT_PREALLOCATE": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false")}
        kwargs = dict(log_to_driver=False, runtime_env={"env_vars": env})
        try:
            if address is None:
                with self._reaped():
                    ray.init(num_cpus=workers, include_dashboard=False, **kwargs)
            else:
                probe_address(address)
                ray.init(address=address, **kwargs)
        except ConfigError:
            raise
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
            self._stop_reaper()
            where = "a local Ray instance" if address is None else f"Ray cluster at {address!r}"
            raise ConfigError(f"cannot start/connect to {where}: {_first_line(err)}") from None
        self._owns_ray = True

    @contextlib.contextmanager
    def _reaped(self):
        """Start the reaper around the start of a local Ray (Linux; elsewhere nothing): the processes
        started inside this context are Ray's."""
        if not (sys.platform.startswith("linux") and os.path.isdir("/proc")):
            yield
            return
        self._reaper = subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._reaper.stdout.readline()  # "ok": it has noted the children we had before Ray
        yield
        self._reaper.stdin.write(b"ready\n")
        self._reaper.stdin.flush()

    def _stop_reaper(self) -> None:
        """Close the reaper's pipe (it then kills what is left of our Ray) and wait for it."""
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.stdin.close()
            try:
                reaper.wait(timeout=30)
            except subprocess.TimeoutExpired:
                reaper.kill()

    def put(self, value: Any):
        """``value`` in the object store once (an ObjectRef that tasks receive as the value itself)."""
        return self._ray.put(value)

    def _remote(self, fn: Callable):
        if fn not in self._remotes:
            self._remotes[fn] = self._ray.remote(max_retries=self.max_retries, retry_exceptions=False)(fn)
        return self._remotes[fn]

    def map(
        self, fn: Callable[..., Any], args: Sequence[tuple], name: Callable[[int], str] | None = None
    ) -> Iterator[tuple[int, Any]]:
        """``(i, fn(*args[i]))`` for every task, in order of completion (ObjectRefs among the arguments
        arrive as their values). ``name(i)`` names a task in the error of one that failed after its
        retries (default ``"task i"``). On a failure the other tasks are left to finish and their results
        dropped: cancelling them (``ray.cancel``) races with task retries in Ray 2.x and can abort the
        driver ("Tried to complete task that was not pending"), as the evolve Ray tests showed."""
        ray, remote = self._ray, self._remote(fn)
        index = {remote.remote(*a): i for i, a in enumerate(args)}
        pending = list(index)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            i = index[ready[0]]
            try:
                value = ray.get(ready[0])
            except ray.exceptions.RayTaskError:
                raise  # the task itself raised: not retried, propagate its error
            except ray.exceptions.RayError as err:
                what = name(i) if name is not None else f"task {i}"
                raise RuntimeError(
                    f"Ray {what} failed after {self.max_retries} retries: {type(err).__name__}: {_first_line(err)}"
                ) from err
            yield i, value

    def actor(self, cls: type, *args: Any):
        """A Ray actor of class ``cls`` made with ``args`` (ObjectRefs arrive as their values); it is not
        restarted when its process dies (its state would be lost), so calls to a lost actor raise."""
        return self._ray.remote(max_restarts=0)(cls).remote(*args)

    def get(self, refs: list) -> list:
        """The values of ObjectRefs (e.g. of actor calls), in order."""
        return self._ray.get(list(refs))

    def kill(self, actor) -> None:
        """End an actor made by :meth:`actor`."""
        self._ray.kill(actor)

    def map_chunks(self, fn: Callable[..., Any], rows: Sequence, *shared: Any, what: str = "rows") -> list:
        """``[fn(rows[a:b], *shared) for (a, b) in chunk_spans(len(rows), self.chunks)]``, one task per
        chunk, in chunk order (never completion order), so the result does not depend on which worker
        ran what; ``[]`` for no rows. Pass large shared arguments through :meth:`put` once. The error of a
        chunk that failed names its rows: ``"chunk of <what> [a, b)"``."""
        spans = chunk_spans(len(rows), self.chunks)
        out: list = [None] * len(spans)
        for i, value in self.map(
            fn,
            [(rows[a:b], *shared) for a, b in spans],
            name=lambda i: f"chunk of {what} [{spans[i][0]}, {spans[i][1]})",
        ):
            out[i] = value
        return out

    def close(self) -> None:
        """Shut Ray down if this pool started it (and reap its processes); safe to call twice."""
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_ray = False
        self._stop_reaper()

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
