"""The garment scenes on the moving character (issue 48): pins, the root frame, the capsule projection, the
character's path, stability."""

import numpy as np
import pytest

from animat import quaternions as quat
from animat.character.bones import body_ids, body_shapes, place_shapes
from animat.surrogate.collision import Projector, penetration_depth, project
from animat.surrogate.root_frame import bodies_in_root, body_frames, from_root, to_root

GARMENTS = ("cape-character", "skirt-character")
PIN_BODY = {"cape-character": 1, "skirt-character": 0}  # chest, pelvis: their index among the 15 bodies
FAST = {"warmup_frames": 10}


def _scene(name: str, **options):
    from animat.surrogate.scenes import get_scene

    return get_scene(name, **{**FAST, **options})


@pytest.fixture(scope="module")
def episodes():
    """40 recorded frames of each garment (seeded), with its scene."""
    out = {}
    for name in GARMENTS:
        scene = _scene(name)
        out[name] = scene, scene.simulate(40, seed=5)
    return out


def test_root_frame_round_trips_and_matches_the_closed_form():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    p, q = rng.normal(size=3), quat.normalize(rng.normal(size=4))
    assert np.allclose(from_root(to_root(x, p, q), p, q), x, atol=1e-12)
    assert np.allclose(to_root(from_root(x, p, q), p, q), x, atol=1e-12)
    assert np.allclose(to_root(p, p, q), 0.0, atol=1e-12)
    # a root at p turned 90 degrees about +z: the world's +x is the root's -y
    turned = quat.about_axis(np.array([0.0, 0.0, 1.0]), np.pi / 2)
    assert np.allclose(to_root(p + [1.0, 0.0, 0.0], p, turned), [0.0, -1.0, 0.0], atol=1e-12)
    assert np.allclose(to_root(p + [0.0, 0.0, 2.0], p, turned), [0.0, 0.0, 2.0], atol=1e-12)


def test_body_frames_in_the_root_frame():
    rng = np.random.default_rng(1)
    pos, rot = rng.normal(size=(15, 3)), quat.normalize(rng.normal(size=(15, 4)))
    y = np.concatenate([pos, rot], axis=1).ravel()
    got_pos, got_rot = bodies_in_root(y)
    assert np.allclose(got_pos[0], 0.0) and np.allclose(np.abs(got_rot[0]), [1.0, 0.0, 0.0, 0.0])
    assert np.allclose(from_root(got_pos, pos[0], rot[0]), pos, atol=1e-12)
    assert np.allclose(np.abs(np.sum(quat.mul(rot[0], got_rot) * rot, axis=1)), 1.0, atol=1e-12)


def test_shapes_of_the_humanoid():
    """Spheres: root, chest, neck and wrists; capsules: thighs, shins, upper and lower arms, feet (boxes)."""
    sh = body_shapes()
    assert sh.sphere_body.tolist() == [0, 1, 2, 8, 14]
    assert sh.capsule_body.tolist() == [3, 4, 5, 6, 7, 9, 10, 11, 12, 13]
    thigh = sh.capsule_body.tolist().index(3)
    assert np.allclose(sh.capsule_a[thigh], [0, 0, -0.36]) and np.allclose(sh.capsule_b[thigh], [0, 0, -0.06])
    assert np.isclose(sh.capsule_radius[thigh], 0.055)
    foot = sh.capsule_body.tolist().index(5)  # the box 0.177 x 0.055 x 0.09 (DeepMimic's x, y, z)
    assert np.isclose(sh.capsule_radius[foot], 0.0275) and np.isclose(
        np.linalg.norm(sh.capsule_b[foot] - sh.capsule_a[foot]), 0.177 - 2 * 0.0275
    )


def test_shapes_placed_from_body_frames_are_mujocos_geoms():
    """In a random pose of the MuJoCo humanoid, the spheres and capsules placed from its body frames (skeleton order,
    :func:`body_ids`) are its geoms: the same centres, segment ends and radii (the feet's boxes: a capsule along
    the box's long side through its centre)."""
    import mujoco

    from animat.character.model import build_model

    m = build_model(ball_actuators=False)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    d.qpos[:3], d.qpos[3:7] = rng.normal(size=3), quat.normalize(rng.normal(size=4))
    for j in range(1, m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            d.qpos[a : a + 4] = quat.normalize(rng.normal(size=4))
        else:
            d.qpos[a] = rng.uniform(-1.5, 0.0)
    mujoco.mj_kinematics(m, d)
    ids, sh = body_ids(m), body_shapes()
    spheres, capsules = place_shapes(d.xpos[ids], d.xquat[ids])
    geom = m.body_geomadr[ids]
    assert np.allclose(spheres[:, :3], d.geom_xpos[geom[sh.sphere_body]], atol=1e-6)
    assert np.allclose(spheres[:, 3], m.geom_size[geom[sh.sphere_body], 0])
    for k, g in enumerate(geom[sh.capsule_body]):
        assert np.allclose((capsules[k, :3] + capsules[k, 3:6]) / 2, d.geom_xpos[g], atol=1e-6)
        capsule = m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE
        axis = d.geom_xmat[g].reshape(3, 3)[:, 2 if capsule else np.argmax(m.geom_size[g])]  # a box: its long side
        half = capsules[k, 3:6] - d.geom_xpos[g]
        assert np.isclose(abs(half @ axis), np.linalg.norm(half), atol=1e-6)  # along it
        if capsule:
            assert np.isclose(np.linalg.norm(half), m.geom_size[g, 1], atol=1e-6)
            assert np.isclose(capsules[k, 6], m.geom_size[g, 0])


def _proxies_at_a_pose(seed: int):
    """The humanoid's proxies in a random pose (random body frames near the origin), padded by 1 cm."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-0.3, 0.3, size=(15, 3))
    return place_shapes(pos, quat.normalize(rng.normal(size=(15, 4))), pad=0.01)


def _core_distance(x, proxy, sphere: bool):
    if sphere:
        return np.linalg.norm(x - proxy[:3], axis=-1)
    a, ab = proxy[:3].astype(np.float64), (proxy[3:6] - proxy[:3]).astype(np.float64)
    s = np.clip((x - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(x - (a + s[:, None] * ab), axis=-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_projection_leaves_outside_vertices_and_puts_inside_ones_on_the_surface(seed):
    spheres, capsules = _proxies_at_a_pose(seed)
    X = np.random.default_rng(10 + seed).uniform(-0.6, 0.6, size=(20000, 3)).astype(np.float32)
    inside = penetration_depth(X, spheres, capsules) > 0
    proxies = [(p, True) for p in spheres] + [(p, False) for p in capsules]
    inside_each = np.stack([_core_distance(X, p, s) < p[-1] for p, s in proxies])
    got = project(X.copy(), spheres, capsules)
    assert np.array_equal(got[~inside], X[~inside])  # outside every proxy: not touched, bit for bit
    fast = Projector(len(X))(X.copy(), spheres, capsules)
    assert np.allclose(fast, got, atol=1e-6)
    # a vertex inside exactly one proxy, whose way out does not lead into another, ends on that proxy's surface
    only = inside_each.sum(0) == 1
    checked = 0
    for k, (p, sphere) in enumerate(proxies):
        rows = np.flatnonzero(only & inside_each[k])
        rows = rows[penetration_depth(got[rows], spheres, capsules) <= 1e-6]
        assert np.allclose(_core_distance(got[rows].astype(np.float64), p, sphere), p[-1], atol=2e-6)
        checked += len(rows)
    assert checked > 200 and inside.sum() > checked / 2


@pytest.mark.deepmimic
@pytest.mark.parametrize("name", GARMENTS)
def test_pinned_vertices_follow_their_bone_exactly(episodes, name):
    scene, ep = episodes[name]
    X, Y = ep["X"], ep["Y"]
    assert ep["dropped"] == 0 and X.shape == (40, scene.n_vertices, 3) and Y.shape == (40, 105)
    import mujoco

    from animat.character.model import build_model

    b = PIN_BODY[name]
    m = build_model(ball_actuators=False)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)  # the standing pose, in which the garment is made
    bone = body_ids(m)[b]
    standing = d.xpos[bone].copy(), d.xquat[bone].copy()
    local = to_root(scene.mesh()[0][scene.pinned], *standing)  # the pins in the bone's frame
    moved = 0.0
    for f in range(len(X)):
        bp, bq = body_frames(Y[f])
        world = scene.world(X[f, scene.pinned], Y[f])
        assert np.abs(world - from_root(local, bp[b], bq[b])).max() < 2e-6  # float32 storage
        moved = max(moved, float(np.linalg.norm(bp[b] - standing[0])))
    assert moved > 0.3  # the bone went places


@pytest.mark.deepmimic
def test_the_character_path_is_seeded_stands_for_the_warm_up_and_chains_the_clips():
    scene = _scene("skirt-character", warmup_frames=30)
    path = scene.controls(300, np.random.default_rng(7))
    assert path.shape == (330, 77) and np.isfinite(path).all()
    assert np.array_equal(path, scene.controls(300, np.random.default_rng(7)))
    assert not np.allclose(path, scene.controls(300, np.random.default_rng(8)))
    standing = path[:30]  # the rest pose (qpos0), still
    assert np.allclose(standing[:, :3], [0.0, 0.0, 0.9]) and np.allclose(standing[:, 43:], 0.0)
    root_quats = path[:, 3:7]
    assert np.all(np.sum(root_quats[1:] * root_quats[:-1], axis=1) > 0)  # one hemisphere frame to frame
    step = np.linalg.norm(np.diff(path[:, :3], axis=0), axis=1) * scene.fps  # m/s, the root's speed
    assert step.max() < 12.0 and step[30:].mean() > 0.3  # moving, without jumps


@pytest.mark.deepmimic
def test_garment_scene_options_and_topology():
    cape = _scene("cape-character", size=7, rows=9)
    assert cape.n_vertices == 63 and cape.pinned.tolist() == list(range(7))
    topo = cape.topology()
    assert topo["rest"].shape == (63, 3) and topo["triangles"].shape == (2 * 6 * 8, 3)
    skirt = _scene("skirt-character", size=10, rows=4)
    tri = skirt.topology()["triangles"]
    assert tri.shape == (2 * 10 * 3, 3) and tri.max() == 39  # the band wraps around
    rest = skirt.topology()["rest"]
    top = rest[skirt.pinned]
    assert np.allclose(np.linalg.norm(top[:, :2], axis=1), skirt.top_radius_m, atol=1e-6)


@pytest.mark.slow
@pytest.mark.deepmimic
@pytest.mark.parametrize("name", GARMENTS)
def test_reference_is_stable_over_long_chains(name):
    """2000 frames (33 s of chained clips) with the default resolution and time step: no frame dropped (no NaN,
    no edge past 3x its rest length, no MuJoCo reset), and the cloth stays near its rest lengths."""
    from animat.surrogate.scenes import get_scene

    scene = get_scene(name)
    result = scene.simulate(2000, seed=11)
    assert result["dropped"] == 0 and np.isfinite(result["X"]).all()
    edges = scene.topology()["edges"]
    X = result["X"].astype(np.float64)
    x0 = scene.topology()["rest"].astype(np.float64)
    rest = np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=-1)
    stretch = np.linalg.norm(X[:, edges[:, 0]] - X[:, edges[:, 1]], axis=-1) / rest
    assert np.percentile(stretch.max(axis=1), 99) < 1.6


@pytest.mark.deepmimic
def test_model_qpos_puts_the_character_and_cloth_where_they_were_recorded(episodes):
    import mujoco

    scene, ep = episodes["skirt-character"]
    path = scene.controls(40, np.random.default_rng(5))[scene.warmup_frames :]  # as simulate(40, seed=5) drew it
    m = scene.model()
    d = mujoco.MjData(m)
    for f, q in enumerate(scene.model_qpos(m, ep["X"], ep["Y"], path)):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        pos, _ = body_frames(ep["Y"][f])
        assert np.abs(d.xpos[body_ids(m)] - pos).max() < 1e-6
        assert np.abs(d.flexvert_xpos - scene.world(ep["X"][f], ep["Y"][f])).max() < 1e-9


@pytest.mark.deepmimic
def test_garment_video_shows_the_cloth(episodes, tmp_path):
    from animat.surrogate.video import garment_video
    from animat.viz.mujoco_render import gl_available

    if not gl_available():
        pytest.skip("no offscreen GL context (EGL or OSMesa) here")
    import imageio.v3 as iio

    scene, ep = episodes["cape-character"]
    path = scene.controls(40, np.random.default_rng(5))[scene.warmup_frames :]
    written = garment_video(scene, ep["X"][:8], ep["Y"][:8], path[:8], tmp_path / "cape.gif", fps=30.0)
    frames = iio.imread(written[0], index=None)
    assert frames.shape == (4, 360, 480, 3)  # every second frame of 60 fps
    red = (frames[..., 0] > 150) & (frames[..., 1] < 90) & (frames[..., 2] < 90)  # the cloth's colour
    assert red.mean() > 0.005


@pytest.mark.deepmimic
def test_the_warm_up_state_is_the_recorded_standing_character():
    from animat.surrogate.scenes import rest_frame, start_state

    scene = _scene("cape-character")
    y = start_state(scene)
    pos, rot = body_frames(y)
    assert y.shape == (105,) and np.allclose(pos[0], [0.0, 0.0, 0.9]) and np.allclose(rot, [1.0, 0.0, 0.0, 0.0])
    assert np.allclose(pos[[1, 3, 9]], [[0, 0, 1.136151], [0, -0.084887, 0.9], [0, 0.084887, 0.9]])  # skeleton order
    standing = scene.simulate(1, seed=0)["Y"][0]  # the first recorded frame still stands (the blend starts)
    assert np.allclose(standing, y, atol=1e-6)
    rest, _ = rest_frame(scene)
    assert np.allclose(rest, scene.topology()["rest"] - [0.0, 0.0, 0.9], atol=1e-6)  # the root frame


@pytest.mark.deepmimic
@pytest.mark.parametrize("name", GARMENTS)
def test_the_reference_cloth_stays_outside_the_proxies_of_its_frames(episodes, name):
    """The runtime's proxies (the scene's, from Y) agree with what the reference collided with: the cloth touches
    them, and its deepest vertex lies less than 1 cm inside them in most frames (MuJoCo's contacts are soft: the
    skirt rests on the thighs a few mm deep, and a fast limb dents the cloth for a few frames)."""
    scene, ep = episodes[name]
    deepest = [penetration_depth(x, *scene.proxies(y)).max() for x, y in zip(ep["X"], ep["Y"])]
    assert np.median(deepest) < 0.01 and max(deepest) > 0.0
