// The 3D replay of report.html: reads the scene (JSON + base64 binary buffers) from the page and
// draws it with three.js (inlined by animat.viz.report from the npm package `three`).
// World frame z up, SI units unless the scene says otherwise. Frames are the samples in scene.times.
import * as THREE from "three";
import { decode, makeView } from "animat/scene3d.js";

const state = { frame: 0, playing: true, speed: 1, time: 0, trails: true, follow: false, firstFrameMs: null };
window.__replay = { ready: false, state };

function main() {
  const scene = JSON.parse(document.getElementById("scene-json").textContent);
  const bufs = JSON.parse(document.getElementById("scene-buffers").textContent);
  const box = document.getElementById("viewer");
  const canvas = document.getElementById("replay-canvas");
  const times = decode(scene.times, bufs);
  const F = times.length;
  const view = makeView(scene, bufs, box, canvas, state);
  const { updates, follow, render } = view;
  document.getElementById("scale-note").textContent = view.gridNote;
  state.follow = !!(follow && scene.focus);
  const captions = scene.captions || null;

  const slider = document.getElementById("timeline"), clock = document.getElementById("clock");
  const playBtn = document.getElementById("play"), speedSel = document.getElementById("speed");
  slider.max = String(F - 1);

  function show(f) {
    f = Math.max(0, Math.min(F - 1, f | 0));
    state.frame = f;
    for (const u of updates) u(f);
    view.followTo(follow && state.follow ? new THREE.Vector3(follow[3 * f], follow[3 * f + 1], follow[3 * f + 2]) : null);
    slider.value = String(f);
    clock.textContent = `t = ${times[f].toFixed(2)} s` + (captions ? `   ${captions[f]}` : "");
  }

  function setFrame(f) {
    state.time = times[Math.max(0, Math.min(F - 1, f | 0))];
    show(f);
    render();
  }

  slider.addEventListener("input", () => {
    state.playing = false;
    playBtn.textContent = "play";
    setFrame(+slider.value);
  });
  playBtn.addEventListener("click", () => {
    state.playing = !state.playing;
    if (state.playing && state.frame >= F - 1) state.time = times[0];
    playBtn.textContent = state.playing ? "pause" : "play";
  });
  speedSel.addEventListener("change", () => { state.speed = +speedSel.value; });
  document.getElementById("trails").addEventListener("change", (e) => { state.trails = e.target.checked; show(state.frame); });
  const followBox = document.getElementById("follow");
  followBox.disabled = !follow;
  followBox.checked = state.follow;
  followBox.addEventListener("change", (e) => { state.follow = e.target.checked; });

  state.time = times[0];
  let last = null;
  function tick(now) {
    if (state.playing && last !== null && F > 1) {
      state.time += state.speed * (now - last) / 1000;
      if (state.time > times[F - 1]) state.time = times[0] + (state.time - times[F - 1]) % Math.max(times[F - 1] - times[0], 1e-9);
      let f = state.frame;
      if (times[f] > state.time) f = 0;
      while (f + 1 < F && times[f + 1] <= state.time) f++;
      show(f);
    }
    last = now;
    view.controls.update();
    render();
    if (state.firstFrameMs === null) {
      state.firstFrameMs = performance.now();
      window.__replay.ready = true;
    }
    requestAnimationFrame(tick);
  }
  show(0);
  window.__replay.setFrame = setFrame;
  window.__replay.pause = () => { state.playing = false; playBtn.textContent = "play"; };
  window.__replay.frames = F;
  requestAnimationFrame(tick);
}

try {
  main();
} catch (err) {
  document.getElementById("viewer-error").textContent = `3D replay failed: ${err}`;
  throw err;
}
