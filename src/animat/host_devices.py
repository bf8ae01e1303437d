"""JAX's CPU devices for animat: one host device per core this process may use.

XLA runs one jitted call on one device, and on CPU a scan of small elementwise steps (a population of flies
stepped 10 000 times a simulated second) runs on one core however many the machine has. Work split over several
devices runs on as many cores: the drosophila population is (:func:`animat.fly.drosophila.rollout.simulate_population`).
JAX makes a CPU into several devices only when told before its backend starts, by
``XLA_FLAGS=--xla_force_host_platform_device_count=N``; :func:`configure` (called by the command line before anything
runs) sets it to the cores available, or to ``$ANIMAT_HOST_DEVICES`` when that is set (``1``: one device, as JAX
does by default). A flag the user already put in ``XLA_FLAGS`` wins. Work that is not split runs on the first device,
as before.
"""

from __future__ import annotations

import os
import re

ENV = "ANIMAT_HOST_DEVICES"
FLAG = "--xla_force_host_platform_device_count"


def cores() -> int:
    """The CPU cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


def wanted(environ: dict[str, str] | None = None) -> int:
    """The host devices to ask for: ``$ANIMAT_HOST_DEVICES`` when set (a positive integer), else :func:`cores`;
    ValueError for anything else in the variable."""
    env = os.environ if environ is None else environ
    text = env.get(ENV, "").strip()
    if not text:
        return cores()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{ENV} must be a positive integer (host devices for JAX), got {text!r}")
    return int(text)


def configure(environ: dict[str, str] | None = None) -> int:
    """Put :data:`FLAG` = :func:`wanted` into ``XLA_FLAGS`` of ``environ`` (default ``os.environ``) unless it names
    one already; returns the count the flag gives. It takes effect only if JAX's backend has not started yet."""
    env = os.environ if environ is None else environ
    flags = env.get("XLA_FLAGS", "")
    given = re.search(re.escape(FLAG) + r"=(\d+)", flags)
    if given:
        return int(given.group(1))
    count = wanted(env)
    env["XLA_FLAGS"] = f"{flags} {FLAG}={count}".strip()
    return count
