"""Each scheme's default size, time step and length (a module of its own so the CLI's help reads it
without loading the simulation code)."""

DEFAULTS = {
    "consensus": dict(agents=8, dt=0.49, steps=300),
    "second-order": dict(agents=8, dt=0.2, steps=600),
    "ellipse": dict(agents=20, dt=1.0, steps=600),
    "segment": dict(agents=10, dt=1.0, steps=400),
    "circle": dict(agents=13, dt=0.05, steps=600),
    "flocking": dict(agents=150, dt=0.01, steps=6000),
}


def per_scheme(name: str) -> str:
    """'consensus 8, second-order 8, ...': one default of every scheme, for help texts."""
    return ", ".join(f"{scheme} {values[name]:g}" for scheme, values in DEFAULTS.items())
