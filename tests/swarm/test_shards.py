"""The pair forces split over two JAX devices (ListSpec.shards = 2) agree with one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.swarm.flocking import FlockParams
from animat.swarm.simulate import simulate_flock

# the device count is fixed when jax initialises, so the two-device run needs its own process
TWO_DEVICES = textwrap.dedent(
    """
    import json, numpy as np, jax, jax.numpy as jnp
    from animat.swarm.flocking import FlockParams
    from animat.swarm.simulate import simulate_flock
    from animat.swarm.verlet import ListSpec, alpha_accel_list, new_list
    rng = np.random.default_rng(11)
    n = 700  # two blocks of 350 agents for the force evaluation, one per device
    q0 = rng.uniform(0, 7 * n ** 0.5, (n, 2)).astype(np.float32)
    p0 = rng.normal(size=(n, 2)).astype(np.float32)
    prm = FlockParams.build(algorithm=2)
    spec = ListSpec(2.0, 32, 32, 4 * n, shards=2)
    nl = jax.jit(new_list, static_argnums=(1, 2))(jnp.asarray(q0), prm, spec)
    force = jax.jit(alpha_accel_list, static_argnums=(3, 4))
    u1, u2 = (np.asarray(force(jnp.asarray(q0), jnp.asarray(p0), nl.idx, prm, k)) for k in (1, 2))
    runs = [simulate_flock(q0, p0, prm, 40, record_every=20, width=32, capacity=32, shards=k) for k in (1, 2)]
    print(json.dumps({"devices": jax.device_count(), "overflow": bool(nl.overflow), "blocks": nl.idx.shape[0],
                      "du": float(np.abs(u1 - u2).max()), "u": float(np.abs(u1).max()),
                      "dq": float(np.abs(runs[0].positions - runs[1].positions).max()),
                      "dp": float(np.abs(runs[0].velocities - runs[1].velocities).max()),
                      "q": float(np.abs(runs[0].positions).max()), "p": float(np.abs(runs[0].velocities).max()), \
"events": runs[0].events + runs[1].events}))
    """
)


def test_two_devices_agree_with_one():
    """Same list, forces on one and on two devices: equal to 1e-5 (relative to the largest force);
    a 40-step rollout: positions and velocities within 1e-5 of their largest magnitude (float32
    spacing at |q| ~ 350 is 3e-5, and the rollouts differ by about one ulp)."""
    env = {
        **os.environ,
        "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip(),
    }
    out = subprocess.run([sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["devices"] == 2 and res["blocks"] == 2 and not res["overflow"] and not res["events"]
    assert res["u"] > 1.0  # real forces
    assert res["du"] <= 1e-5 * res["u"]
    assert res["dq"] <= 1e-5 * res["q"] and res["dp"] <= 1e-5 * res["p"]


def test_shards_need_the_devices():
    q0 = np.random.default_rng(0).uniform(0, 40, (50, 2)).astype(np.float32)
    with pytest.raises(ConfigError, match="shards must be >= 1"):
        simulate_flock(q0, np.zeros_like(q0), FlockParams.build(), 10, shards=0)
    if jax.device_count() < 2:
        with pytest.raises(ConfigError, match="xla_force_host_platform_device_count=2"):
            simulate_flock(q0, np.zeros_like(q0), FlockParams.build(), 10, shards=2)
