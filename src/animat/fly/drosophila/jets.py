"""Second-order jets: a quantity with its first and second time derivatives, and the arithmetic that carries
them (the product rule ``(ab)'' = a''b + 2a'b' + ab''``), for the wings' frames and their rates
(:func:`animat.fly.drosophila.aero.kinematics`) without differentiating through trigonometric functions."""

from __future__ import annotations

import jax.numpy as jnp

from animat.fly.drosophila.fusion import once


class Jet:
    """``v`` (a quantity), ``d`` (its rate, per s) and ``dd`` (its second rate, per s²): arrays of one shape.
    Adds, subtracts and multiplies with jets and with constants (numbers or arrays without rates)."""

    __slots__ = ("v", "d", "dd")

    def __init__(self, v, d, dd):
        self.v, self.d, self.dd = v, d, dd

    def __add__(self, other):
        if isinstance(other, Jet):
            return Jet(self.v + other.v, self.d + other.d, self.dd + other.dd)
        return Jet(self.v + other, self.d, self.dd)

    __radd__ = __add__

    def __neg__(self):
        return Jet(-self.v, -self.d, -self.dd)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, Jet):
            return Jet(
                self.v * other.v,
                self.d * other.v + self.v * other.d,
                self.dd * other.v + 2.0 * self.d * other.d + self.v * other.dd,
            )
        return Jet(self.v * other, self.d * other, self.dd * other)

    __rmul__ = __mul__


def sincos(x: Jet) -> tuple[Jet, Jet]:
    """``sin x`` and ``cos x`` as jets: one sine and one cosine of ``x.v`` (:func:`~animat.fly.drosophila.fusion.once`),
    the rates by the chain rule."""
    s, c = once((jnp.sin(x.v), jnp.cos(x.v)))
    d2 = x.d * x.d
    return Jet(s, c * x.d, c * x.dd - s * d2), Jet(c, -s * x.d, -s * x.dd - c * d2)
