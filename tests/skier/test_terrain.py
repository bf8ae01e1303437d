"""The skier's terrain (issue 49): the ground's closed forms against MuJoCo's contacts, the roller skis on the height
field, the skier placed on its slope, the course it is scored along, and bad terrain options."""

import base64
import math

import mujoco
import numpy as np
import pytest

from animat.skier import terrain as T
from animat.skier.model import G, SkierParams, build_model, build_spec

MOGULS = T.Terrain("moguls", bump_height=0.2, bump_spacing=2.5, irregularity=0.6, seed=3)


def _ground_spec(terrain: T.Terrain, timestep: float = 0.002) -> mujoco.MjSpec:
    """A world of only ``terrain``'s floor (the skier's ``floor`` geom, shaped by :func:`terrain.shape_floor`)."""
    spec = mujoco.MjSpec()
    spec.option.timestep = timestep
    floor = spec.worldbody.add_geom()
    floor.name, floor.type, floor.size = "floor", mujoco.mjtGeom.mjGEOM_PLANE, [0, 0, 0.1]
    T.shape_floor(spec, terrain)
    return spec


def _rest_heights(terrain: T.Terrain, probes: np.ndarray, ground: str, radius: float = 0.01) -> np.ndarray:
    """Where small spheres (``radius`` m, 0.05 kg) on vertical slides above the points ``probes`` (K, 2) m come to
    rest on ``terrain``'s ``ground``: "snow" (what the skier meets: the floor and the caps) or "moguls" (the height
    field); their centres' heights (K,) m after 1 s."""
    spec = _ground_spec(terrain)
    for k, (x, y) in enumerate(probes):
        body = spec.worldbody.add_body()
        body.pos = [x, y, float(terrain.height(x, y)) + radius + 0.02]
        slide = body.add_joint()
        slide.type, slide.axis = mujoco.mjtJoint.mjJNT_SLIDE, [0, 0, 1]
        g = body.add_geom()
        g.name, g.type, g.size, g.mass = f"probe{k}", mujoco.mjtGeom.mjGEOM_SPHERE, [radius, 0, 0], 0.05
        g.contype, g.conaffinity, g.condim = 0, 0, 1
        if ground == "snow":  # as the skier's body: the floor's contype and the caps' conaffinity
            g.contype = spec.geom("floor").conaffinity
            spec.geom("floor").contype = 1
        else:
            pair = spec.add_pair()
            pair.geomname1, pair.geomname2, pair.condim = "moguls", g.name, 1
    model = spec.compile()
    d = mujoco.MjData(model)
    mujoco.mj_step(model, d, 500)
    assert np.abs(d.qvel).max() < 1e-3  # at rest
    return model.body_pos[1:, 2] + d.qpos


def test_the_mogul_field_holds_its_bumps_where_the_options_say():
    centres, real = MOGULS.lattice()
    bumps = centres[real]
    assert bumps[:, 0].min() - MOGULS.bump_spacing / 2 >= T.CLEAR_X  # a flat start
    assert MOGULS.height(bumps[:, 0], bumps[:, 1]) == pytest.approx(0.2)  # each bump's top at its centre
    assert MOGULS.height(np.linspace(-5, T.CLEAR_X, 50), 0.0).max() == 0.0
    regular = T.Terrain("moguls", bump_height=0.2, bump_spacing=2.5).lattice()[0]
    jitter = np.abs(centres - regular)  # at most irregularity times a quarter pitch, along x and y
    assert jitter.max() <= 0.6 * 2.5 / 4 and jitter.max() > 0.5 * 0.6 * 2.5 / 4
    again = T.Terrain("moguls", bump_height=0.2, bump_spacing=2.5, irregularity=0.6, seed=3)
    assert np.array_equal(again.grid()[2], MOGULS.grid()[2])  # same seed, same field
    other = T.Terrain("moguls", bump_height=0.2, bump_spacing=2.5, irregularity=0.6, seed=4)
    assert not np.array_equal(other.grid()[2], MOGULS.grid()[2])


@pytest.mark.parametrize("ground, atol", [("snow", 6e-4), ("moguls", 3e-3)])
def test_a_body_resting_on_the_moguls_rests_at_the_closed_form_height(ground, atol):
    """Against the same sphere resting on flat ground (the soft contact's sink calibrated away): crests, flanks,
    hollows and the flat start. On the snow the skier meets (the plane and the buried spheres, exact) within 0.6 mm:
    a sphere of radius r on a vertical slide touches a flank off its axis, r (1 / cos(slope) - 1) < 0.53 mm higher
    on these caps (slope < 18 deg); on the drawn height field within 3 mm: it is flat on triangles between samples
    20 cm apart, so it also cuts a crest by up to d^2 / (2 cap_radius) = 2.5 mm (d = 14 cm from the nearest
    sample)."""
    centres, real = MOGULS.lattice()
    c = centres[real][:4]
    rng = np.random.default_rng(0)
    probes = np.concatenate([c, c + [0.6, 0.3], c + [1.25, 1.25], rng.uniform([4, -5], [40, 5], (6, 2)), [[0, 0]]])
    rest = _rest_heights(MOGULS, probes, ground)
    sink = rest[-1] - 0.01  # on the flat start: the contact's penetration (negative)
    assert abs(sink) < 2e-3
    want = MOGULS.height(probes[:, 0], probes[:, 1])
    assert want[:4] == pytest.approx(0.2) and want.max() - want.min() > 0.15  # crests and hollows both probed
    np.testing.assert_allclose(rest - 0.01 - sink, want, atol=atol)


@pytest.mark.parametrize("deg", [-20.0, 10.0])
def test_a_body_on_a_frictionless_slope_accelerates_at_g_sin_theta(deg):
    terrain = T.Terrain("slope", slope_deg=deg)
    spec = _ground_spec(terrain)
    body = spec.worldbody.add_body()
    theta = math.radians(deg)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    body.pos = normal * 0.05  # resting on the plane at the origin
    body.quat = spec.geom("floor").quat
    body.add_freejoint()
    g = body.add_geom()
    g.name, g.type, g.size, g.mass = "block", mujoco.mjtGeom.mjGEOM_BOX, [0.1, 0.1, 0.05], 1.0
    pair = spec.add_pair()
    pair.geomname1, pair.geomname2, pair.condim = "floor", "block", 1  # frictionless
    model = spec.compile()
    d = mujoco.MjData(model)
    mujoco.mj_step(model, d, 100)
    v0, t0 = d.qvel[:3].copy(), d.time
    mujoco.mj_step(model, d, 400)
    a = (d.qvel[:3] - v0) / (d.time - t0)
    downhill = -np.sign(deg) * np.array([math.cos(theta), 0.0, math.sin(theta)])  # towards -x uphill (deg > 0)
    assert a @ downhill == pytest.approx(G * abs(math.sin(theta)), rel=0.02)
    assert abs(a @ normal) < 1e-3 * G  # it stays on the plane


def _roller_ski_model(terrain: T.Terrain, yaw_deg: float, mu=(0.05, 0.6), mass: float = 20.0) -> mujoco.MjModel:
    """A lone ski on the skier's roller-ski wheels (:func:`terrain.roller_ski`) with a ``mass`` kg weight, yawed
    ``yaw_deg`` about z, free to translate along its own axes (qvel[0] along the ski, [1] across, [2] up)."""
    spec = _ground_spec(terrain)
    body = spec.worldbody.add_body()
    body.name = "ski_body"
    yaw = math.radians(yaw_deg)
    body.pos = [0.0, 0.0, 0.02 + T.WHEEL_RADIUS]
    body.quat = [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
    for axis in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
        j = body.add_joint()
        j.type, j.axis = mujoco.mjtJoint.mjJNT_SLIDE, list(axis)
    ski = body.add_geom()
    ski.name, ski.type, ski.size, ski.fromto, ski.mass = (
        "x_ski",
        mujoco.mjtGeom.mjGEOM_CAPSULE,
        [0.02, 0, 0],
        [-0.78, 0, 0, 0.78, 0, 0],
        mass,
    )
    ski.contype = ski.conaffinity = 0
    pair = spec.add_pair()
    pair.name, pair.geomname1, pair.geomname2 = "x_ski_floor", "floor", "x_ski"
    sensor = spec.add_sensor()
    sensor.name, sensor.type = "x_ski_force", mujoco.mjtSensor.mjSENS_CONTACT
    sensor.intprm[0], sensor.intprm[1], sensor.intprm[2] = 2, 3, 1  # as the skier's (model.add_ski_sensors)
    T.roller_ski(spec, "ski_body", "x_ski", mu)
    return spec.compile()


@pytest.mark.parametrize("yaw", [0.0, 35.0])
def test_roller_skis_glide_along_and_grip_across_whatever_their_yaw(yaw):
    """On the mogul field's flat start a ski on wheels decelerates at about mu_long g along its length (rolling
    friction) and at mu_lat g across it (the wheels' grip), whatever its yaw: what a capsule ski gets from MuJoCo
    only on a plane, and the wheels get on the caps too. The grip is isotropic but for the pyramidal friction cone
    (the skier's default), whose edges lie along the contact frame's tangents, fixed in the world for a sphere: it
    holds mu / (|cos yaw| + |sin yaw|) across a ski yawed ``yaw`` from them (0.72 mu at 35 deg)."""
    along, across = [], []
    for v, out in (((2.0, 0, 0), along), ((0, 2.0, 0), across)):
        model = _roller_ski_model(MOGULS, yaw)
        d = mujoco.MjData(model)
        mujoco.mj_step(model, d, 100)  # settle
        d.qvel[:3] = v
        d.qvel[3:] = v[0] / T.WHEEL_RADIUS  # the wheels rolling with the ski
        mujoco.mj_step(model, d, 50)
        out.append(-(d.qvel[:2] - v[:2]) / 0.1 / G)  # in g, ski frame
    # mu_long = 0.05; it rolls on straight, but for a sideways pull of the pyramidal cone's world-fixed corners
    assert 0.025 < along[0][0] < 0.075 and abs(along[0][1]) < 0.03, along
    grip = 0.6 / (abs(math.cos(math.radians(yaw))) + abs(math.sin(math.radians(yaw))))  # mu_lat = 0.6
    assert across[0][1] == pytest.approx(grip, rel=0.08) and abs(across[0][0]) < 0.01, across


def test_flat_terrain_leaves_the_skiers_model_as_it_was():
    """The flat world is the skier's model before terrains: shaping it changes nothing, and the other terrain options
    are not read (tests/test_golden.py pins the runs)."""
    spec = build_spec(SkierParams())
    before = spec.to_xml()
    T.shape_world(spec, T.Terrain(), (0.05, 0.6), 0.6)
    assert spec.to_xml() == before
    others = SkierParams(slope_deg=30.0, bump_height=0.5, bump_spacing=2.0, irregularity=1.0, terrain_seed=7)
    assert build_spec(others).to_xml() == before and others.ground().height(3.0, 0.0) == 0.0


@pytest.mark.parametrize("deg", [-6.0, 3.0])
def test_the_skier_starts_standing_on_the_slope_and_glides_down_it_at_g_sin_minus_mu_cos(deg):
    """Standing still on its skis (mu_long 0.05 along them), the skier's centre of mass accelerates down the slope at
    g (sin - mu cos) where the slope is steeper than atan(mu) (3 deg: 0.0524 > 0.05, barely)."""
    model = build_model(SkierParams(terrain="slope", slope_deg=deg))
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    skis = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, f"{s}_ski") for s in ("left", "right")]
    theta = math.radians(deg)
    for g in skis:  # each ski's running surface on the plane along its whole length
        centre = d.geom_xpos[g]
        assert centre[2] - centre[0] * math.tan(theta) == pytest.approx(0.02 / math.cos(theta), abs=1e-6)
    down = -np.sign(deg) * np.array([math.cos(theta), 0.0, math.sin(theta)])  # as in the block's test
    t, s = [], []
    for _ in range(150):
        mujoco.mj_step(model, d)
        t.append(d.time)
        s.append(d.subtree_com[1] @ down)  # the centre of mass, m down the slope
    a = 2 * np.polyfit(t[30:], s[30:], 2)[0]  # after the servos settle
    want = G * (abs(math.sin(theta)) - 0.05 * math.cos(theta))
    assert a == pytest.approx(want, abs=0.05 * G * 0.05)
    assert SkierParams(terrain="slope", slope_deg=deg).ground().course(np.array([math.cos(theta), 0, 0])) == 1.0


def test_the_skier_on_moguls_rolls_on_its_wheels_with_every_pair_far_from_mujocos_limit():
    """Standing 0.5 s on the mogul field's start, then rolling over the first bump at 3.5 m/s: at most a few contacts
    per geom pair (MuJoCo keeps 50), nothing sinking 1 cm (the wheels landing behind the crest), the skier upright
    beyond the crest."""
    params = SkierParams(terrain="moguls", bump_height=0.2, bump_spacing=2.5)
    model = build_model(params)
    d = mujoco.MjData(model)
    mujoco.mj_step(model, d, 50)
    d.qvel[0] = 3.5
    most, deepest = 0, 0.0
    for _ in range(200):
        mujoco.mj_step(model, d)
        pairs = [(c.geom1, c.geom2) for c in d.contact[: d.ncon]] if d.ncon else []
        most = max([most] + [pairs.count(p) for p in set(pairs)])
        deepest = min([deepest] + [c.dist for c in d.contact[: d.ncon]] if d.ncon else [deepest])
    crest = params.ground().lattice()[0][0, :, 0].min()
    assert d.qpos[0] > crest + 0.5 and params.ground().clearance(d.qpos[:3]) > 0.8  # over the first bump, upright
    assert most <= 4 and deepest > -0.01


@pytest.mark.parametrize(
    "table, message",
    [
        ("bump_height = -0.1", "skier bump_height must be >= 0, got -0.1"),
        ("slope_deg = 45.0", "skier slope_deg must be in (-45, 45), got 45.0"),
        ("slope_deg = -60", "skier slope_deg must be in (-45, 45), got -60"),
        ('terrain = "glacier"', "skier terrain must be one of"),
    ],
)
def test_bad_terrain_options_are_one_line_errors_and_write_nothing(table, message, animat_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "bad.toml"
    config.write_text(f"generations = 1\npopulation = 6\nelites = 2\nparent_probs = [0.5, 0.5]\n[skier]\n{table}\n")
    code, _, err = animat_cli("skier", "train", "--config", str(config), "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()  # nothing written


def test_a_replay_on_moguls_plots_and_draws_the_ground_under_the_skier(tmp_path):
    """The replay's side view (plots/terrain.png) and the report scene's snow: a mesh of the closed-form surface, the
    pelvis path on it."""
    from animat.skier import report
    from animat.skier.replay import write_replay

    params = SkierParams(terrain="moguls", bump_height=0.2, bump_spacing=2.5)
    write_replay(params, np.zeros((10, 12), dtype=np.int64), 0.5, tmp_path, anim_seconds=0.0)
    assert (tmp_path / "plots" / "terrain.png").is_file()
    scene = report.build(tmp_path, params=params)
    snow = [o for o in scene.objects if o["name"] == "snow"]
    assert len(snow) == 1 and snow[0]["type"] == "mesh"
    vertices = np.frombuffer(base64.b64decode(scene._buffers[snow[0]["positions"]["b"]]), np.float16).reshape(-1, 3)
    want = params.ground().height(vertices[:, 0].astype(float), vertices[:, 1].astype(float))
    assert np.abs(vertices[:, 2] - want).max() < 2e-3 and want.max() == pytest.approx(0.2, abs=0.01)  # float16
    assert scene.ground == pytest.approx(float(vertices[:, 2].min()), abs=1e-3)
