"""JAX's persistent compilation cache for animat: compiled XLA programs kept on disk between commands.

A fresh process compiles every jitted rollout again (seconds to tens of seconds on 2 cores) although the
program is the same as last time; with the cache the second run of a command loads it instead.
JAX reads its settings from ``JAX_*`` environment variables when it is first imported and from
``jax.config`` after, so :func:`configure` sets both.

The folder is ``$ANIMAT_JAX_CACHE`` when set (``off`` turns the cache off), else
``$XDG_CACHE_HOME/animat/jax`` (``~/.cache/animat/jax``). Its size is capped
(:data:`MAX_BYTES`): JAX then evicts the least recently used programs and guards the folder with a
file lock, so concurrent commands (and parallel test workers) share it safely.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "ANIMAT_JAX_CACHE"
MAX_BYTES = 2 * 1024**3
MIN_COMPILE_SECONDS = 0.5  # programs that compile faster are not worth a disk read


def cache_dir(environ: dict[str, str] | None = None) -> Path | None:
    """The cache folder (``None``: the cache is off), from ``ANIMAT_JAX_CACHE`` or the user's cache folder."""
    env = os.environ if environ is None else environ
    chosen = env.get(ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = env.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "animat" / "jax"


def configure() -> Path | None:
    """Point JAX's persistent compilation cache at :func:`cache_dir`; settings the user gave win.

    Returns the folder in use, or ``None`` when the cache is off or the folder cannot be made.
    """
    folder = cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    settings = {
        "jax_compilation_cache_dir": str(folder),
        "jax_compilation_cache_max_size": MAX_BYTES,
        "jax_persistent_cache_min_compile_time_secs": MIN_COMPILE_SECONDS,
    }
    for name, value in settings.items():
        os.environ.setdefault(name.upper(), str(value))
    if "jax" in sys.modules:  # imported already: the environment is read too late
        import jax

        for name, value in settings.items():
            if os.environ[name.upper()] == str(value):
                jax.config.update(name, value)
    return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
