"""animat.jax_cache: where JAX's persistent compilation cache lives, and that a command's programs land there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from animat import jax_cache

PROGRAM = """
import jax, jax.numpy as jnp
from animat import jax_cache
print(jax_cache.configure())
print(jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((64, 64))).sum())
"""


def test_the_folder_is_the_users_cache_unless_named_or_off(tmp_path):
    assert jax_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "animat" / "jax"
    assert jax_cache.cache_dir({jax_cache.ENV: str(tmp_path / "c")}) == tmp_path / "c"
    assert jax_cache.cache_dir({jax_cache.ENV: "off", "XDG_CACHE_HOME": str(tmp_path)}) is None
    assert jax_cache.cache_dir({"HOME": "x"}).parts[-3:] == (".cache", "animat", "jax")


def _run(tmp_path: Path, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")} | env
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=environ, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_a_compiled_program_is_stored_and_the_users_own_settings_win(tmp_path):
    folder = tmp_path / "cache"
    # the user's minimum compile time (0 s) overrides animat's 0.5 s, so this small program is stored
    first = _run(tmp_path, ANIMAT_JAX_CACHE=str(folder), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    assert first[0] == str(folder)
    stored = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert stored, "nothing was written to the cache"
    second = _run(tmp_path, ANIMAT_JAX_CACHE=str(folder), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    assert second == first  # the program loaded from the cache computes the same
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == stored


def test_off_stores_nothing(tmp_path):
    out = _run(tmp_path, ANIMAT_JAX_CACHE="off", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert out[0] == "None"
    assert not (tmp_path / "xdg").exists()
