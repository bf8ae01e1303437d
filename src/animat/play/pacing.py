"""Simulated time on wall time: how many steps are due now, slowing the simulation down (never skipping a step or
a command) when the machine cannot keep up."""

from __future__ import annotations

import math


class Pacer:
    """Steps of ``step_s`` wall-clock s each (the simulation's dt over its rate) due by the wall-clock time ``now``
    (s, any monotonic clock). At most ``most`` steps are due at once: a debt beyond that is forgiven, so that a
    slow machine runs the simulation slower than real time instead of racing through steps the page never sees.
    Paused, no step is due and the pause is not owed afterwards."""

    def __init__(self, step_s: float, now: float, most: int = 10):
        if not (math.isfinite(step_s) and step_s > 0):
            raise ValueError(f"a step must last a finite time > 0, got {step_s}")
        self.step_s, self.most = float(step_s), max(1, int(most))
        self.next = float(now)  # wall-clock time of the next step
        self.paused = False
        self.forgiven = 0  # steps dropped from the schedule (slowed down), all told

    def due(self, now: float) -> int:
        """Steps to take now (then :meth:`wait` says how long until the next)."""
        if self.paused or now < self.next:
            return 0
        n = int((now - self.next) // self.step_s) + 1
        if n > self.most:
            self.forgiven += n - self.most
            self.next = now - (self.most - 1) * self.step_s
            n = self.most
        self.next += n * self.step_s
        return n

    def wait(self, now: float) -> float:
        """Seconds until the next step is due (0 if it is; one step's time while paused)."""
        return self.step_s if self.paused else max(0.0, self.next - now)

    def pause(self, paused: bool, now: float) -> None:
        """Pause or go on; going on, the next step is due now."""
        if self.paused and not paused:
            self.next = float(now)
        self.paused = bool(paused)
