"""Independent tasks in worker processes: :func:`process_map`."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterator, Sequence


def process_map(fn: Callable[..., Any], args: Sequence[tuple], workers: int) -> Iterator[tuple[int, Any]]:
    """``(i, fn(*args[i]))`` for every task, as each finishes: in this process, in order, when
    ``workers <= 1`` or there is one task; else in ``min(workers, len(args))`` processes started
    with ``spawn`` (not ``fork``: the parent may already run JAX's threads, which a fork would copy
    half-alive), in order of completion. ``fn`` and the arguments must pickle."""
    if int(workers) <= 1 or len(args) <= 1:
        for i, a in enumerate(args):
            yield i, fn(*a)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(int(workers), len(args)), mp_context=context) as pool:
        futures = {pool.submit(fn, *a): i for i, a in enumerate(args)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
