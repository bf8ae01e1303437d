"""The residual network's input (:func:`network_input`), shared by training (JAX) and the runtime
(NumPy, folded into the first layer): kept free of JAX so that the runtime does not import it."""

from __future__ import annotations

import numpy as np

from animat.surrogate.frame import wind_in_frame


def network_input(stats: dict, z0, z1, w, xp=np):
    """``(zbar, x)``: the alpha/beta prediction ``zbar = alpha z1 + beta (z1 - z0)`` and the network's
    input ``x = [zbar, z1, w]`` before normalisation, for (..., k) states (NumPy or ``jax.numpy``).

    With a frame (``stats["frame_scale"]``: the state's last entry is ``c phi``, the flag's azimuth,
    :mod:`animat.surrogate.frame`) the network must not see where the flag points, only how it
    turns: the azimuth's entries of ``zbar`` and ``z1`` become ``zbar - z1`` and ``z1 - z0``, and
    the wind ``w`` is turned into the flag's frame by ``-phi_{t-1}``. Both entries are linear in
    ``z0, z1``, so the runtime folds them into the first layer
    (:func:`animat.surrogate.runtime.fold`)."""
    zbar = stats["alpha"] * z1 + stats["beta"] * (z1 - z0)
    if "frame_scale" not in stats:
        return zbar, xp.concatenate([zbar, z1, w], axis=-1)
    turn_a = xp.concatenate([zbar[..., :-1], zbar[..., -1:] - z1[..., -1:]], axis=-1)
    turn_b = xp.concatenate([z1[..., :-1], z1[..., -1:] - z0[..., -1:]], axis=-1)
    return zbar, xp.concatenate([turn_a, turn_b, wind_in_frame(w, z1[..., -1] / stats["frame_scale"], xp)], axis=-1)
