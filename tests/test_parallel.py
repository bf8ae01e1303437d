"""animat.parallel: the chunking, the process pool, and that no worker outlives a command killed with kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from animat.parallel import WATCH_THREAD, chunk_spans, process_map

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_chunk_spans_cover_the_rows_in_order_with_sizes_within_one():
    for n in range(0, 40):
        for chunks in (1, 2, 3, 5, 7, 64):
            spans = chunk_spans(n, chunks)
            assert len(spans) == min(n, chunks)
            assert [i for a, b in spans for i in range(a, b)] == list(range(n))  # contiguous, in order, each row once
            sizes = [b - a for a, b in spans]
            assert all(s >= 1 for s in sizes) and (not sizes or max(sizes) - min(sizes) <= 1)


def _square(x):
    return x * x


def test_process_map_gives_every_result_once_whatever_the_workers():
    args = [(i,) for i in range(7)]
    assert list(process_map(_square, args, 1)) == [(i, i * i) for i in range(7)]  # in process, in order
    assert sorted(process_map(_square, args, 2)) == [(i, i * i) for i in range(7)]


# --------------------------------------------------------------------------------------------
# kill -9 of the command: its workers must not survive it
# --------------------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _descendants(root: int) -> dict[int, str]:
    """``{pid: start time}`` of every live descendant of ``root`` (the start time tells a reused pid)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat(int(name))) is not None:
            children.setdefault(int(fields[1]), []).append((int(name), fields[19]))
    found, todo = {}, [root]
    while todo:
        for pid, start in children.get(todo.pop(), []):
            found[pid] = start
            todo.append(pid)
    return found


def _alive(pid: int, start: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X") and fields[19] == start


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _watching(pid: int) -> bool:
    """Whether pool worker ``pid`` runs its parent-watch thread (it has then armed its death signal too)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == WATCH_THREAD:
                    return True
        except OSError:
            pass
    return False


def _pool_worker(pid: int) -> bool:
    return "spawn_main" in _cmdline(pid) and _watching(pid)


def _ray_worker(pid: int) -> bool:
    cmd = _cmdline(pid)
    return cmd.startswith("ray::") and "Agent" not in cmd


def _kill_and_list_survivors(
    cmd: list[str], is_worker, workers: int, tmp_path, start_s: float = 300.0, grace_s: float = 10.0
) -> list[str]:
    """Run ``cmd``; once ``workers`` of its descendants satisfy ``is_worker(pid)``, ``kill -9`` it and
    return the command lines of its descendants still alive ``grace_s`` s later (polled; [] as soon as
    none is). The survivors are killed before returning."""
    log = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + start_s
        while True:
            found = _descendants(proc.pid)
            seen.update(found)
            if sum(bool(is_worker(p)) for p in found) >= workers:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.close()
                if "timed out during startup" in (tmp_path / "stderr.txt").read_text():
                    pytest.skip("Ray could not start its node within its 30 s on this machine (overloaded)")
                pytest.fail(
                    f"the workers never appeared (exit {proc.poll()}): {(tmp_path / 'stderr.txt').read_text()[-2000:]}"
                )
            time.sleep(0.2)
        time.sleep(1.0)  # let the workers get going
        seen.update(_descendants(proc.pid))
    finally:
        proc.kill()  # SIGKILL: the command gets no chance to clean up
        proc.wait()
        log.close()
    deadline = time.monotonic() + grace_s
    while (left := [p for p, start in seen.items() if _alive(p, start)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [f"{p}: {_cmdline(p)}" for p in left]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return survivors


_POOL_SCRIPT = """
import time
from animat.parallel import process_map

def nap(i):
    time.sleep(600)

if __name__ == "__main__":
    for _ in process_map(nap, [(i,) for i in range(2)], 2):
        pass
"""


@linux_only
def test_kill_9_of_a_process_pool_leaves_no_worker(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(_POOL_SCRIPT)
    survivors = _kill_and_list_survivors([sys.executable, str(script)], _pool_worker, 2, tmp_path)
    assert survivors == []


@linux_only
def test_kill_9_of_surrogate_generate_leaves_no_worker(tmp_path):
    """Before the fix its two pool workers (and multiprocessing's resource tracker) stayed, idle, for good."""
    cmd = [
        sys.executable,
        "-m",
        "animat.cli",
        "surrogate",
        "generate",
        "sheet",
        "--episodes",
        "4",
        "--frames",
        "100000",
        "--size",
        "11",
        "--workers",
        "2",
        "--out",
        str(tmp_path / "data"),
    ]
    survivors = _kill_and_list_survivors(cmd, _pool_worker, 2, tmp_path)
    assert survivors == []


@linux_only
@pytest.mark.slow
def test_kill_9_of_fly_train_on_local_ray_leaves_no_process(tmp_path):
    """The fly's multi-process path is its Ray backend. Before the fix Ray's dashboard and runtime-env
    agents outlived the killed command by a minute."""
    pytest.importorskip("ray")
    cmd = [
        sys.executable,
        "-m",
        "animat.cli",
        "fly",
        "train",
        "--backend",
        "ray",
        "--generations",
        "1000",
        "--population",
        "8",
        "--seconds",
        "0.2",
        "--out",
        str(tmp_path / "run"),
    ]
    survivors = _kill_and_list_survivors(cmd, _ray_worker, 2, tmp_path)
    assert survivors == []


def test_a_ray_pool_checks_its_settings_before_importing_ray(monkeypatch):
    from animat.errors import ConfigError
    from animat.parallel import RayPool

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` would raise ImportError
    for kwargs, message in (
        (dict(workers=0), "num_workers must be >= 1"),
        (dict(chunks=0), "chunks must be >= 1"),
        (dict(max_retries=-1), "max_retries must be >= 0"),
        ({}, r"pip install 'animat\[distributed\]'"),
    ):
        with pytest.raises(ConfigError, match=message):
            RayPool(**kwargs)
