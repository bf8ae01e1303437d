"""JAX's host devices (:mod:`animat.host_devices`) and the drosophila population split over them
(:func:`animat.fly.drosophila.rollout.simulate_population`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from animat import host_devices


def test_the_count_comes_from_the_variable_else_the_cores():
    assert host_devices.wanted({host_devices.ENV: "3"}) == 3
    assert host_devices.wanted({}) == host_devices.cores() >= 1
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(ValueError, match=host_devices.ENV):
            host_devices.wanted({host_devices.ENV: bad})


def test_configure_adds_the_flag_and_keeps_the_user_s():
    env = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false", host_devices.ENV: "4"}
    assert host_devices.configure(env) == 4
    assert env["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=4"
    mine = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", host_devices.ENV: "4"}
    assert host_devices.configure(mine) == 2 and mine["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", host_devices.ENV)}
    return {**env, **extra}


def test_the_command_line_asks_for_the_devices_and_refuses_a_bad_count():
    """``animat`` configures the devices before JAX starts (here 2, from the variable); a bad count is a one-line error
    with exit 2."""
    probe = (
        "import sys; from animat import cli; import jax;"
        "sys.argv = ['animat', '--version'];\n"
        "try: cli.main()\nexcept SystemExit: pass\nprint(jax.device_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_clean_env(ANIMAT_HOST_DEVICES="2"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "2"
    bad = subprocess.run(
        [sys.executable, "-c", "import sys; from animat import cli; sys.argv = ['animat', '--version']; cli.main()"],
        env=_clean_env(ANIMAT_HOST_DEVICES="many"),
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert host_devices.ENV in bad.stderr


SPLIT = """
from animat import host_devices
host_devices.configure()
import json, jax, numpy as np
from animat.evolve import network
from animat.fly.drosophila import rollout as R
from animat.fly.drosophila.model import DrosophilaParams
params, layers = DrosophilaParams(), [R.N_INPUTS, 20, 20, R.N_OUTPUTS]
nets = network.unflatten(network.init_genes(jax.random.PRNGKey(3), 5, layers, 0.5), layers)
starts = R.start_states(params, 2, 1)
one = R.simulate_population(params, nets, ("tanh",) * 3, 0.03, starts, devices=jax.devices()[:1])
two = R.simulate_population(params, nets, ("tanh",) * 3, 0.03, starts)
single = R.simulate_population(params, jax.tree_util.tree_map(lambda a: a[4:], nets), ("tanh",) * 3, 0.03, starts)
print(json.dumps({
    "devices": jax.device_count(),
    "same": [bool(np.array_equal(a, b, equal_nan=True)) for a, b in zip(one, two)],
    "single": [bool(np.array_equal(a[4:], b, equal_nan=True)) for a, b in zip(one, single)],
    "moved": float(np.abs(one.pos[:, :, -1]).max()),
}))
"""


def test_the_drosophila_population_split_over_two_devices_flies_number_for_number_as_on_one():
    """Five networks from two starts on two host devices (parts of 3 and 2 networks, each on its own core) give every
    recorded array exactly as one device does; so does one network alone (a part of one is flown doubled)."""
    done = subprocess.run(
        [sys.executable, "-c", SPLIT], env=_clean_env(ANIMAT_HOST_DEVICES="2"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["devices"] == 2 and all(got["same"]) and all(got["single"]) and got["moved"] > 0
