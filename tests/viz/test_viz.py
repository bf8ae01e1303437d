"""Plots write readable PNGs; animations write GIFs with one frame per input frame."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

from animat.errors import AnimatError
from animat.viz import (
    VizError,
    animate_body,
    box_faces,
    commanded_velocity_plot,
    fitness_plot,
    height_plot,
    path_views_plot,
    series_plot,
    topview_plot,
)

CORNERS = np.array(list(itertools.product((-1.0, 1.0), repeat=3))) * np.array([0.5, 0.2, 0.1])


def _png_ok(path):
    assert path.exists() and path.stat().st_size > 0
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert im.size[0] > 0 and im.size[1] > 0


def _body_frames(n, move=True):
    """A box with two wing triangles, translating and rotating about z when ``move``."""
    frames, trail = [], []
    for i in range(n):
        a = 0.4 * i if move else 0.0
        R = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        c = np.array([0.3 * i, 0.0, 2.0 - 0.1 * i]) if move else np.zeros(3)
        polys = [{"vertices": f, "color": "tab:blue", "alpha": 0.9} for f in box_faces(CORNERS @ R.T + c)]
        for s in (1, -1):
            tri = np.array([[0.2, 0.2 * s, 0.1], [-0.2, 0.2 * s, 0.1], [0.0, 0.9 * s, 0.1]]) @ R.T + c
            polys.append({"vertices": tri, "color": "tab:orange", "alpha": 0.7})
        frames.append(polys)
        trail.append(c)
    return frames, np.array(trail)


def _gif_frames(path):
    with Image.open(path) as im:
        out = []
        for k in range(im.n_frames):
            im.seek(k)
            out.append(np.asarray(im.convert("RGB")))
    return out


def test_fitness_plot_writes_png_and_tolerates_nan(tmp_path):
    rows = [
        {
            "generation": g,
            "best": float(g),
            "mean": (g / 2 if g != 2 else float("nan")),
            "median": g / 3,
            "crashes": g % 2,
        }
        for g in range(6)
    ]
    _png_ok(fitness_plot(rows, tmp_path / "plots" / "fitness.png"))
    # strings as read back from metrics.csv, no optional columns, all-NaN mean, one row
    _png_ok(fitness_plot([{"generation": "0", "best": "1.5", "mean": "nan"}], tmp_path / "one.png", title="x"))
    _png_ok(fitness_plot([], tmp_path / "empty.png"))
    assert not list(tmp_path.rglob("*.tmp"))


def test_height_topview_series_plots(tmp_path):
    t = np.linspace(0, 2, 50)
    z = 5 - t**2
    p = height_plot(t, z, tmp_path / "h.png", start=5.0, floor=3.0, body_length=1.0, title="Height")
    assert p == tmp_path / "h.png"
    _png_ok(p)
    _png_ok(height_plot(t, z, tmp_path / "h2.png"))
    _png_ok(topview_plot(np.cos(t), np.sin(t), tmp_path / "top.png", body_length=0.5))
    _png_ok(series_plot(t, {"left": np.sin(t), "right": np.cos(t)}, tmp_path / "s.png", ylabel="rad", title="Wings"))
    with pytest.raises(ValueError, match="same length"):
        height_plot(t, z[:-1], tmp_path / "bad.png")


def _near(path, rgb, tol=3):
    """Mask (H, W) of a PNG's pixels within ``tol`` (0–255, per channel) of the colour ``rgb``."""
    with Image.open(path) as im:
        pixels = np.asarray(im.convert("RGB"), dtype=int)
    return (np.abs(pixels - np.asarray(rgb)) <= tol).all(axis=-1)


C0, C1, C2 = (31, 119, 180), (255, 127, 14), (44, 160, 44)  # matplotlib's cycle: tab:blue, tab:orange, tab:green


def _shade(rgb, alpha=0.12):
    """``rgb`` drawn at ``alpha`` over white (the command spans)."""
    return tuple(255 - alpha * (255 - c) for c in rgb)


def test_command_plots_colour_each_command(tmp_path):
    """Each command keeps one colour of matplotlib's cycle, in order of first appearance (up: tab:blue, forward:
    tab:orange), however often it comes back: read from the PNGs' pixels. The velocity plot shades the first
    and last thirds of its time axis (up) in tab:blue at alpha 0.12 and the middle third (forward) in
    tab:orange; the path is drawn in those two line colours and no third one (a colour per stretch, not per
    command, would draw the second up in tab:green)."""
    t = np.arange(1, 301) * 0.01
    labels = np.array(["up"] * 100 + ["forward"] * 100 + ["up"] * 100)
    commanded = np.where((labels == "up")[:, None], [0.0, 0.0, 2.0], [0.0, 2.0, 0.0])
    velocity = commanded + 0.1 * np.sin(t)[:, None]
    v = commanded_velocity_plot(t, velocity, commanded, labels, tmp_path / "v.png", unit="u")
    _png_ok(v)
    up, forward = _near(v, _shade(C0), 2), _near(v, _shade(C1), 2)
    assert up.sum() > 2000 and forward.sum() > 1000, (up.sum(), forward.sum())
    assert not _near(v, _shade(C2), 2).any()
    cols = lambda mask: np.flatnonzero(mask.sum(axis=0) > 100)  # a span runs down 3 panels, a legend patch is small
    span = np.concatenate([cols(up), cols(forward)])
    third = (span.max() - span.min()) / 3
    lo, hi = span.min() + third, span.max() - third
    assert abs(cols(forward).min() - lo) < 6 and abs(cols(forward).max() - hi) < 6, (cols(forward)[[0, -1]], lo, hi)
    assert (cols(up) < lo + 3).any() and (cols(up) > hi - 3).any()
    assert not ((cols(up) > lo + 6) & (cols(up) < hi - 6)).any()
    p = path_views_plot(np.cumsum(velocity * 0.01, axis=0), labels, tmp_path / "p.png", body_length=4.0)
    _png_ok(p)
    assert _near(p, C0).sum() > 200 and _near(p, C1).sum() > 100 and not _near(p, C2).any()
    with pytest.raises(VizError, match="same length") as err:
        path_views_plot(np.zeros((5, 3)), labels, tmp_path / "bad.png")
    assert "\n" not in str(err.value)
    assert not list(tmp_path.rglob("*.tmp"))


def test_box_faces_cover_the_cuboid():
    faces = box_faces(CORNERS)
    assert len(faces) == 6
    seen = set()
    for f in faces:
        assert f.shape == (4, 3)
        idx = {int(np.flatnonzero((CORNERS == v).all(axis=1))[0]) for v in f}
        assert len(idx) == 4
        # a face of a cuboid: its 4 corners share one coordinate
        assert any(np.ptp(f[:, k]) == 0 for k in range(3))
        # cyclic order: consecutive corners are edges (differ in exactly one coordinate)
        for a, b in zip(f, np.roll(f, -1, axis=0)):
            assert np.count_nonzero(a != b) == 1
        seen |= idx
    assert seen == set(range(8))
    with pytest.raises(VizError, match=r"shape \(8, 3\)") as err:
        box_faces(np.zeros((4, 3)))
    assert str(err.value) and "\n" not in str(err.value)


def test_animate_body_gif_frames(tmp_path):
    frames, trail = _body_frames(5)
    out = animate_body(
        frames, tmp_path / "media" / "body.gif", fps=10, trail=trail, times=np.arange(5) / 10, title="test", dpi=40
    )
    assert out == tmp_path / "media" / "body.gif"
    imgs = _gif_frames(out)
    assert len(imgs) == 5
    assert imgs[0].shape[0] > 0 and imgs[0].shape[1] > 0
    assert not np.array_equal(imgs[0], imgs[-1])
    with Image.open(out) as im:
        assert im.info.get("loop") == 0
    assert not list(tmp_path.rglob("*.tmp"))


def test_animate_body_captions_each_frame(tmp_path):
    frames, trail = _body_frames(3, move=False)
    gif = lambda name, captions: _gif_frames(
        animate_body(frames, tmp_path / name, dpi=40, view_size=2.0, times=np.arange(3) / 10, captions=captions)
    )
    a, b, plain = gif("a.gif", ["up", "up", "left"]), gif("b.gif", ["up"] * 3), gif("c.gif", None)
    assert np.array_equal(a[0], b[0]) and not np.array_equal(
        a[2], b[2]
    )  # the frame whose caption differs, and it alone
    assert not np.array_equal(a[0], plain[0])
    with pytest.raises(VizError, match="captions"):
        animate_body(frames, tmp_path / "b.gif", captions=["up"])


def test_animate_body_without_trail_or_times(tmp_path):
    frames, _ = _body_frames(3, move=False)
    out = animate_body(frames, tmp_path / "still.gif", dpi=40, view_size=2.0)
    # a still body still yields one GIF frame per input frame (the frame counter changes)
    assert len(_gif_frames(out)) == 3


def test_animate_body_rejects_bad_input(tmp_path):
    frames, trail = _body_frames(2)
    with pytest.raises(ValueError, match=r"\.gif or \.mp4"):
        animate_body(frames, tmp_path / "body.txt")
    with pytest.raises(AnimatError):
        animate_body(frames, tmp_path / "body.avi")
    with pytest.raises(ValueError, match="trail"):
        animate_body(frames, tmp_path / "a.gif", trail=trail[:1])
    with pytest.raises(ValueError, match="times"):
        animate_body(frames, tmp_path / "a.gif", times=[0.0])
    with pytest.raises(ValueError, match="at least one frame"):
        animate_body([], tmp_path / "a.gif")
    assert not list(tmp_path.iterdir())


def test_mp4_without_ffmpeg_names_the_package(tmp_path, monkeypatch):
    import animat.viz.animate as anim

    monkeypatch.setattr(anim, "ffmpeg_available", lambda: False)
    frames, _ = _body_frames(2)
    with pytest.raises(VizError, match="imageio-ffmpeg"):
        animate_body(frames, tmp_path / "a.mp4")


def test_write_animation_puts_the_same_frames_as_mp4_beside_the_gif(tmp_path):
    """The MP4 (where imageio-ffmpeg is installed) holds as many frames of the same size as the GIF, and its
    pictures are the GIF's up to the video codec's loss: a red, a green and a blue 30x20 frame."""
    import imageio.v3 as iio

    from animat.viz.animate import ffmpeg_available, write_animation

    if not ffmpeg_available():
        pytest.skip("imageio-ffmpeg is not installed")
    images = [np.zeros((20, 30, 3), np.uint8) for _ in range(3)]
    for k, im in enumerate(images):
        im[..., k] = 255
    written = write_animation(images, tmp_path / "media" / "a.gif", fps=5)
    assert written == [tmp_path / "media" / "a.gif", tmp_path / "media" / "a.mp4"]
    video = iio.imread(written[1], plugin="FFMPEG")
    assert video.shape == (3, 20, 30, 3)
    assert [int(np.argmax(frame.reshape(-1, 3).mean(axis=0))) for frame in video] == [0, 1, 2]
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == ["a.gif", "a.mp4"]  # no temporary left


def test_write_animation_without_ffmpeg_writes_the_gif_and_says_why_there_is_no_mp4(tmp_path, monkeypatch, capsys):
    import animat.viz.animate as anim

    monkeypatch.setattr(anim, "ffmpeg_available", lambda: False)
    images = [np.full((20, 30, 3), 100, np.uint8)] * 2
    assert anim.write_animation(images, tmp_path / "a.gif", fps=5) == [tmp_path / "a.gif"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.gif"]
    note = capsys.readouterr().out
    assert "no a.mp4" in note and "imageio-ffmpeg" in note
    with pytest.raises(VizError, match=r"\.gif"):
        anim.write_animation(images, tmp_path / "b.mp4", fps=5)
    assert not (tmp_path / "b.mp4").exists()
