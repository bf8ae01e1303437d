"""The cape scene: a cloth attached to a capsule torso moving along random paths (Holden et al. 2019, section 6)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat import quaternions as quat
from animat.surrogate.sheet import SheetScene, smoothstep_move


def euler_to_quat(yaw: np.ndarray, pitch: np.ndarray, roll: np.ndarray) -> np.ndarray:
    """Z-Y-X (yaw about z, then pitch about y, then roll about x) angles rad (...) -> (..., 4) (w, x, y, z)."""
    x, y, z = np.eye(3)
    return quat.mul(quat.about_axis(z, yaw), quat.mul(quat.about_axis(y, pitch), quat.about_axis(x, roll)))


def cape_input(Y: np.ndarray) -> np.ndarray:
    """Cape external input (Holden et al. 2019, section 6: the character's motion seen from the
    cloth's moving frame). Y (T, 7) body position m and quaternion -> (T, 15) float32:

        [v_t, omega_t, g_t, v_t - v_{t-1}, omega_t - omega_{t-1}]

    v_t = R_t^T (p_t - p_{t-1}) m/frame, omega_t the rotation vector of R_{t-1}^T R_t rad/frame
    (both in the body frame), g_t = R_t^T (0, 0, -1) the gravity direction in the body frame. The
    body frame is the cloth's frame, so the attachment's own position and rotation in it are
    constant and left out. The first frame has zero velocity and change."""
    Y = np.asarray(Y, np.float64)
    q = Y[:, 3:7]
    dp = np.concatenate([np.zeros((1, 3)), np.diff(Y[:, :3], axis=0)])
    v = quat.rotate(quat.conj(q), dp)
    omega = np.concatenate([np.zeros((1, 3)), quat.log(quat.mul(quat.conj(q[:-1]), q[1:]))])  # log(q_{t-1}^* q_t)
    g = quat.rotate(quat.conj(q), np.array([0.0, 0.0, -1.0]))
    dv = np.concatenate([np.zeros((1, 3)), np.diff(v, axis=0)])
    domega = np.concatenate([np.zeros((1, 3)), np.diff(omega, axis=0)])
    return np.concatenate([v, omega, g, dv, domega], axis=-1).astype(np.float32)


@dataclass(frozen=True)
class CapeScene(SheetScene):
    """A cape: the cloth hangs behind a capsule "torso" (a mocap body) that walks, turns and leans
    along random smooth paths; its top row is attached to the torso by ``connect`` equality
    constraints (the vertices stay free bodies, so the torso's accelerations reach the cloth).

    X is recorded in the torso's frame (``R^T (x - p)``), Y (7,) is the torso's world position m
    and quaternion (w, x, y, z); :func:`cape_input` turns Y into the network input. The torso
    faces +y; the cape hangs in the local x-z plane ``gap_m`` behind the capsule's surface.
    """

    name: str = "cape"
    size: int = 21
    side_m: float = 0.8
    mass_kg: float = 0.3
    torso_radius_m: float = 0.15
    torso_half_m: float = 0.3  # half-length of the capsule's straight part (vertical)
    torso_height_m: float = 1.3
    gap_m: float = 0.03
    walk_m: float = 1.0  # waypoints within +-this of the origin (x, y)
    turn_deg: float = 90.0  # yaw change per segment within +-this
    lean_deg: float = 15.0  # pitch and roll within +-this
    move_seconds: tuple[float, float] = (0.6, 1.5)
    hold_seconds: tuple[float, float] = (0.0, 0.8)

    @property
    def pinned(self) -> np.ndarray:
        n = int(self.size)
        return np.arange(n) * n + (n - 1)  # the top row (attached to the torso)

    def _cloth_origin(self) -> tuple[float, float]:
        """Local (y, z) of the cloth grid's centre in the torso frame."""
        return -(self.torso_radius_m + self.gap_m), self.torso_half_m - self.side_m / 2

    def mjcf(self) -> str:
        n, sp = int(self.size), self.side_m / (int(self.size) - 1)
        y0, z0 = self._cloth_origin()
        h = self.torso_height_m
        torso = f"""    <body name="torso" mocap="true" pos="0 0 {h}">
      <geom type="capsule" size="{self.torso_radius_m} {self.torso_half_m}" rgba="0.3 0.4 0.8 1"/>
    </body>
"""
        anchors = "\n".join(
            f'    <connect body1="torso" body2="cloth_{i * n + n - 1}" anchor="{-self.side_m / 2 + i * sp:.6g} '
            f'{y0:.6g} {self.torso_half_m:.6g}" solref="0.01 1"/>'
            for i in range(n)
        )
        return self._mjcf(torso, (y0, h + z0), equality=anchors)

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(warmup + frames, 7) torso position and quaternion: smoothstep moves between random
        waypoints (position, yaw, lean) with random holds; the warm-up stands still."""
        total = frames + self.warmup_frames
        lean = np.radians(self.lean_deg)
        pose = np.array([0.0, 0.0, self.torso_height_m, 0.0, 0.0, 0.0])  # x, y, z, yaw, pitch, roll
        out, count = [np.repeat(pose[None], self.warmup_frames, axis=0)], self.warmup_frames
        while count < total:
            target = np.array(
                [
                    *rng.uniform(-self.walk_m, self.walk_m, 2),
                    self.torso_height_m + rng.uniform(-0.1, 0.1),
                    pose[3] + np.radians(rng.uniform(-self.turn_deg, self.turn_deg)),
                    *rng.uniform(-lean, lean, 2),
                ]
            )
            move = smoothstep_move(pose, target, self.move_seconds, self.fps, rng)
            hold = int(round(rng.uniform(*self.hold_seconds) * self.fps))
            out += [move, np.repeat(target[None], hold, axis=0)]
            pose, count = target, count + len(move) + hold
        path = np.concatenate(out)[:total]
        return np.concatenate([path[:, :3], euler_to_quat(path[:, 3], path[:, 4], path[:, 5])], axis=1)

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        d.mocap_pos[0] = y[:3]
        d.mocap_quat[0] = y[3:7] / np.linalg.norm(y[3:7])

    def record(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return quat.rotate(quat.conj(quat.normalize(y[3:7])), x - y[:3])

    def world(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Torso-frame X (V, 3) -> world positions (the inverse of :meth:`record`)."""
        y = np.asarray(y, np.float64)
        return quat.rotate(quat.normalize(y[3:7]), np.asarray(X, np.float64)) + y[:3]

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = self.torso_radius_m + self.contact_radius_m
        capsule = np.array([[0, 0, -self.torso_half_m, 0, 0, self.torso_half_m, r]], np.float32)  # torso frame
        return np.zeros((0, 4), np.float32), capsule
