"""The real-scale fruit fly (preset ``drosophila``): constants, body frame and wing planform, SI units.

Constants and their sources:
- body mass 1.10 mg, wing length 2.41 mm, wing area 2.00 mm² (one wing): wild-type Canton S in
  Barton, Ayer, Heymann, Maughan, Lehmann & Vigoreaux (2005, J. Exp. Biol. 208, 549–560), table 3
  (Lehmann's wild-type table; flybody's MuJoCo model has 0.985 mg). The same table gives 221 Hz and
  176° stroke amplitude at maximum force.
- body length 2.5 mm, modelled as a prolate spheroid of diameter 0.9 mm (Drosophila melanogaster's
  body is about 2.5 mm long; the diameter is a round estimate of the thorax width).
- body drag coefficient 1.0 on the spheroid's projected areas: Bennet-Clark & Alder (1979,
  J. Exp. Biol. 82, 105–121) measured C_D ≈ 1 for insect bodies without wings at Re ≈ 100.
- hover posture: body pitched 45° nose up with a horizontal stroke plane (Fry, Sayaman & Dickinson
  2005, J. Exp. Biol. 208, 2303–2318: body angle ≈ 45–50° and a near-horizontal stroke plane in
  hover), so the stroke plane is fixed in the body at ``stroke_plane_angle`` = 45°.
- planform: Ellington's (1984, Phil. Trans. R. Soc. B 305, 17–40) beta-distribution chord
  ``c(r) = c̄ r̂^(p−1) (1−r̂)^(q−1) / B(p, q)`` with mean chord ``c̄ = S / R`` and p, q set by the radii
  of the first and second moments of area, ``r̂2 = 0.55`` (typical of Diptera in Ellington's survey; not
  a measured Drosophila planform) and ``r̂1 = (r̂2 / 0.929)^(1 / 0.732)`` (Ellington's fit).
- pitching (span) axis at ``x̂0 = 0.25`` chords behind the leading edge, so Sane & Dickinson's (2002)
  theoretical rotational coefficient ``π (3/4 − x̂0)`` is 1.57, beside their measured 1.55.
- ρ = 1.2 kg/m³, g = 9.81 m/s².

- wing moment of inertia about the hinge ``wing_inertia`` = m_w (r̂2 R)² ≈ 4.2 × 10⁻¹⁵ kg m² per wing: a
  wing mass m_w ≈ 2.4 µg (≈ 0.2 % of the body mass, the order of the Drosophila wing masses behind
  Lehmann & Dickinson's 1997 inertial-power estimates, J. Exp. Biol. 200, 1133–1143) spread like the
  planform's area (radius of gyration r̂2 R). An estimate, not a measured value: it enters only the
  inertial power (:mod:`animat.fly.drosophila.power`).

- ``thorax_resonance_hz`` f_r (default 0: no elastic storage): an elastic flight motor whose stiffness
  ``k = I (2π f_r)²`` resonates with the wings' inertia, so beating at f_r costs no inertial power
  (:func:`animat.fly.drosophila.power.inertial_power`). The Drosophila flight motor is resonant through the
  elasticity of its muscles more than its thorax (Pons, Perl, Ben-Dov, Maya & Beatus 2023, arXiv
  2209.13365; Pons 2023, J. R. Soc. Interface 20, 20230421); ``configs/fly_drosophila_hover.toml`` sets
  218 Hz, the wingbeat of hovering flies (Fry, Sayaman & Dickinson 2003, 2005). A model of that motor,
  not a measured resonance.
- ``induced_power_factor`` k (default 0: none): the induced power of the downwash, ``k W √(W / (2 ρ Φ R²))``
  (Ellington 1984's actuator disc, k ≈ 1.2; :func:`animat.fly.drosophila.power.induced_power`), counted in
  the power but not in the forces: the quasi-steady coefficients are the forces, the wake only costs power.

The wings are massless in the dynamics: their inertia acts on neither the body's motion nor the
aerodynamic power; the inertial power of accelerating them is computed beside it, from the pattern
(:mod:`animat.fly.drosophila.power`). Body frame: x forward (head), y left, z dorsal; the right wing's hinge is at −y.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

import numpy as np
from scipy.special import roots_jacobi

from animat.config import check_known, is_finite_number, is_int
from animat.errors import ConfigError

#: the pattern generator's parameters, in this order (see :mod:`animat.fly.drosophila.pattern`)
N_PATTERN = 11


@dataclass(frozen=True)
class DrosophilaParams:
    """Physical and numerical parameters of the fruit fly (hashable: a jit static argument). SI units,
    angles in rad."""

    mass: float = 1.10e-6  # kg
    body_length: float = 2.5e-3  # m, spheroid's long axis (along body x)
    body_diameter: float = 0.9e-3  # m
    hinge: tuple[float, float, float] = (0.25e-3, -0.45e-3, 0.25e-3)  # right hinge, body frame, m (left: y mirrored)
    stroke_plane_angle: float = math.radians(45.0)  # stroke plane tilt in the body (= hover body pitch), rad
    wing_length: float = 2.41e-3  # m
    wing_area: float = 2.00e-6  # m², one wing
    r2_hat: float = 0.55  # radius of the second moment of area / wing length
    wing_inertia: float = 4.2e-15  # kg m², one wing about the hinge (inertial power only)
    thorax_resonance_hz: float = (
        0.0  # the flight motor's elastic resonance with the wings' inertia (0: no elastic storage), Hz
    )
    induced_power_factor: float = 0.0  # k of the actuator disc's induced power (0: left out; Ellington 1984: 1.2)
    pitch_axis: float = 0.25  # span axis behind the leading edge, chords
    n_stations: int = 8  # blade elements per wing (Gauss–Jacobi nodes of the planform)
    rho: float = 1.2  # kg/m³
    gravity: float = 9.81  # m/s²
    cd_body: float = 1.0
    translational: bool = True  # Dickinson, Lehmann & Sane (1999) lift and drag
    rotational: bool = True  # Sane & Dickinson (2002) rotational circulation
    added_mass: bool = True
    dt: float = 1.0e-4  # physics step, s
    sample_dt: float = 5.0e-3  # the rollout records the flight this often (the fitness reads these samples), s
    control_dt: float = 0.0  # the network acts at the first beat end in each control_dt (0: at every beat end), s
    rotation_sharpness: float = 3.0  # C in tanh(C sin ψ) / tanh(C): wing rotation at stroke reversal
    max_speed: float = 20.0  # |v| above this (m/s) is a crash (runaway)
    max_angular_speed: float = 1.0e4  # |ω| above this (rad/s) is a crash

    def __post_init__(self):
        if not (self.dt > 0 and self.sample_dt > 0):
            raise ConfigError(f"dt and sample_dt must be > 0 s, got dt={self.dt}, sample_dt={self.sample_dt}")
        ratio = self.sample_dt / self.dt
        if abs(ratio - round(ratio)) > 1e-6 or round(ratio) < 1:
            raise ConfigError(f"sample_dt ({self.sample_dt} s) must be a whole multiple of dt ({self.dt} s)")
        pace = self.control_dt / self.dt
        if not self.control_dt >= 0 or abs(pace - round(pace)) > 1e-6:
            raise ConfigError(
                f"control_dt ({self.control_dt} s) must be 0 (every beat) or a whole multiple of dt ({self.dt} s)"
            )
        if self.dt > 1e-4 + 1e-12:
            raise ConfigError(f"dt must be <= 1e-4 s (>= 40 steps per wingbeat at 250 Hz), got {self.dt}")
        if min(self.mass, self.body_length, self.body_diameter, self.wing_length, self.wing_area) <= 0:
            raise ConfigError("mass, body_length, body_diameter, wing_length and wing_area must be > 0")
        if (
            self.rho < 0
            or self.cd_body < 0
            or self.gravity < 0
            or self.wing_inertia < 0
            or self.thorax_resonance_hz < 0
            or self.induced_power_factor < 0
        ):
            raise ConfigError(
                "rho, cd_body, gravity, wing_inertia, thorax_resonance_hz and induced_power_factor must be >= 0"
            )
        if not 0.2 < self.r2_hat < 0.7:
            raise ConfigError(f"r2_hat must be within (0.2, 0.7) for a beta planform, got {self.r2_hat}")
        if not 0.0 <= self.pitch_axis <= 1.0:
            raise ConfigError(f"pitch_axis must be within [0, 1] chords, got {self.pitch_axis}")
        if not isinstance(self.n_stations, int) or self.n_stations < 1:
            raise ConfigError(f"n_stations must be an integer >= 1, got {self.n_stations!r}")

    @property
    def steps_per_control(self) -> int:
        return int(round(self.control_dt / self.dt))

    @property
    def steps_per_sample(self) -> int:
        return int(round(self.sample_dt / self.dt))

    @property
    def weight(self) -> float:
        """Body weight, N."""
        return self.mass * self.gravity

    def inertia(self) -> np.ndarray:
        """Principal moments of the uniform prolate spheroid about its centre, ``(3,)`` kg m²:
        ``(2 m b², m (a² + b²), m (a² + b²)) / 5`` with semi-axes a (long) and b."""
        a, b = self.body_length / 2, self.body_diameter / 2
        return self.mass / 5.0 * np.array([2 * b * b, a * a + b * b, a * a + b * b])

    def body_areas(self) -> np.ndarray:
        """The spheroid's projected areas across the body x, y, z axes, ``(3,)`` m²."""
        a, b = self.body_length / 2, self.body_diameter / 2
        return np.array([math.pi * b * b, math.pi * a * b, math.pi * a * b])

    def with_(self, **changes) -> DrosophilaParams:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """The parameters as JSON-ready values (a run's ``config.json`` and genome files hold them)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> DrosophilaParams:
        """Parameters from :meth:`to_dict`'s form (or a config's overrides); unknown keys are a ConfigError."""
        check_known((f.name for f in fields(cls)), values, "drosophila parameter")
        for f in fields(cls):
            if f.name in values and not _fits(values[f.name], f.default):
                raise ConfigError(f"drosophila parameter {f.name} must be like {f.default!r}, got {values[f.name]!r}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def _fits(value, default) -> bool:
    """Whether ``value`` (from TOML or JSON) has the type of the parameter's ``default``."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return is_int(value)
    if isinstance(default, tuple):
        return (
            isinstance(value, (list, tuple)) and len(value) == len(default) and all(is_finite_number(v) for v in value)
        )
    return is_finite_number(value)


def beta_shape(r2_hat: float) -> tuple[float, float, float]:
    """Ellington's (1984) beta planform from ``r̂2``: returns ``(r̂1, p, q)``."""
    r1 = (r2_hat / 0.929) ** (1.0 / 0.732)
    k = r1 * (1.0 - r1) / (r2_hat**2 - r1**2) - 1.0
    return r1, r1 * k, (1.0 - r1) * k


def chord(params: DrosophilaParams, r: np.ndarray) -> np.ndarray:
    """Chord ``c(r)`` (m) at span stations ``r`` (m from the hinge): the beta planform of area ``wing_area``."""
    from scipy.special import beta as beta_fn

    _, p, q = beta_shape(params.r2_hat)
    x = np.clip(np.asarray(r, np.float64) / params.wing_length, 0.0, 1.0)
    mean_chord = params.wing_area / params.wing_length
    return mean_chord * x ** (p - 1) * (1 - x) ** (q - 1) / beta_fn(p, q)


def stations(params: DrosophilaParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blade elements of one wing: span positions ``r (N,)`` m, chords ``c (N,)`` m and strip areas
    ``A (N,)`` m² (``Σ A g(r) ≈ ∫ c(r) g(r) dr``).

    The nodes and weights are Gauss–Jacobi quadrature for the beta planform's own weight
    ``r̂^(p−1) (1−r̂)^(q−1)``, so ``Σ A_i g(r_i)`` is exact for polynomials ``g`` of degree up to
    ``2N − 1`` — the area, ``∫ c r² dr = S R² r̂2²`` behind the lift, and ``∫ c r³ dr`` among them.
    Terms with ``c²`` (rotational force, added mass) use ``c(r_i) A_i``, which is approximate."""
    _, p, q = beta_shape(params.r2_hat)
    x, w = roots_jacobi(params.n_stations, q - 1.0, p - 1.0)  # weight (1 − x)^(q−1) (1 + x)^(p−1) on [−1, 1]
    r_hat = (x + 1.0) / 2.0
    area = params.wing_area * w / w.sum()
    r = r_hat * params.wing_length
    return r, chord(params, r), area
