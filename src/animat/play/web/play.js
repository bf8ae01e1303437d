// The page of `animat play`: draws the live scene the server sends (the report's scene, animat/scene3d.js), sends
// the user's keys, clicks and buttons back (messages: animat/play/protocol.py) and shows a HUD. Its latest state is
// window.animat.state: t (s), position, velocity, command, network, rtf (simulated over wall-clock time in the last
// second, over the session's rate: 1 = keeping up), lag_ms (from a key to the first state that took it), paused,
// and whatever more the system sends (the fly: direction, its command's unit vector).
import * as THREE from "three";
import { makeView } from "animat/scene3d.js";

const state = { t: 0, position: null, velocity: null, command: "", network: "", rtf: null, lag_ms: null, max_lag_ms: null, paused: false, dropped: 0, ended: false };
window.animat = { ready: false, connected: false, state, lags: [] };
const SPEED_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", " "]);
const message = (text) => { document.getElementById("message").textContent = text; };
const socket = new WebSocket(`ws://${location.host}/ws`);
const sent = new Map();  // id of a command -> performance.now() when its key went down
const samples = [];  // [wall ms, simulated s] of the last second's states
let nextId = 0, hello = null, view = null, trail = null, specs = {}, units = "";

function send(msg) {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(msg));
}

function command(name) {
  const id = nextId++;
  sent.set(id, performance.now());
  send({ type: "command", name, id });
}

function start(msg) {
  hello = msg;
  units = msg.scene.units;
  const box = document.getElementById("viewer"), canvas = document.getElementById("play-canvas");
  view = makeView(msg.scene, msg.buffers, box, canvas, { trails: true });
  msg.scene.objects.forEach((spec, k) => { specs[spec.name] = { spec, update: view.updates[k] }; });
  document.getElementById("scale-note").textContent = view.gridNote;
  document.getElementById("system").textContent = msg.system + (msg.rate < 1 ? ` (slowed down ${(1 / msg.rate).toFixed(0)}×)` : "");
  const keys = Object.entries(msg.keys).map(([k, c]) => `${k === " " ? "space" : k}: ${c}`);
  document.getElementById("keys").textContent = keys.join("   ") + (msg.targets ? "   click the ground: target" : "") + "   q: end";
  const geom = new THREE.BufferGeometry();
  geom.setAttribute("position", new THREE.BufferAttribute(new Float32Array(3 * 4000), 3));
  trail = new THREE.Line(geom, new THREE.LineBasicMaterial({ color: 0xd62728 }));
  trail.frustumCulled = false;
  trail.count = 0;
  view.world.add(trail);
  box.focus();
  requestAnimationFrame(draw);
}

function addTrail(p) {
  const arr = trail.geometry.attributes.position.array, n = arr.length / 3;
  if (trail.count === n) { arr.copyWithin(0, 3); trail.count--; }
  arr.set(p, 3 * trail.count++);
  trail.geometry.setDrawRange(0, trail.count);
  trail.geometry.attributes.position.needsUpdate = true;
}

function measure(msg, now) {
  samples.push([now, msg.t]);
  while (samples.length > 2 && now - samples[0][0] > 1000) samples.shift();
  const [w0, t0] = samples[0];
  if (now - w0 > 300) state.rtf = (msg.t - t0) / (hello.rate * (now - w0) / 1000);
  for (const [id, at] of sent) {
    if (id > msg.applied) continue;
    state.lag_ms = now - at;
    window.animat.lags.push(state.lag_ms);
    state.max_lag_ms = Math.max(state.max_lag_ms || 0, state.lag_ms);
    sent.delete(id);
  }
}

function update(msg) {
  const now = performance.now();
  if (msg.t < state.t) { trail.count = 0; samples.length = 0; }  // a reset
  const { type, objects, ...shown } = msg;  // t, position, velocity, command, network, paused, dropped, ...
  Object.assign(state, shown);
  measure(msg, now);
  for (const [name, fields] of Object.entries(objects)) {
    const o = specs[name];
    if (!o) continue;
    for (const [field, values] of Object.entries(fields)) o.spec[field].array.set(values);
    o.update(0);
  }
  if (msg.position) {
    const p = new THREE.Vector3(...msg.position);
    view.followTo(hello.scene.focus ? p : null);
    addTrail(msg.position);
  }
  hud();
  window.animat.ready = true;
}

function hud() {
  const f = (v) => (v === null || v === undefined ? "–" : v.map((x) => x.toFixed(2).padStart(7)).join(" "));
  const speed = state.velocity ? Math.hypot(...state.velocity) : 0;
  document.getElementById("hud").textContent = [
    `t         ${state.t.toFixed(2)} s${state.paused ? "   PAUSED" : ""}`,
    `position  ${f(state.position)} ${units}`,
    `speed     ${speed.toFixed(2)} ${units}/s`,
    `command   ${state.command}`,
    `network   ${state.network}`,
    `real time ${state.rtf === null ? "–" : state.rtf.toFixed(2)}×   lag ${state.lag_ms === null ? "–" : state.lag_ms.toFixed(0)} ms`,
  ].join("\n") + (state.dropped ? `\ndropped   ${state.dropped} messages` : "");
}

function draw() {
  view.controls.update();
  view.render();
  if (!state.ended) requestAnimationFrame(draw);
}

function clickTarget(ev) {
  // the point of the ground plane (z = the grid's height) under the mouse
  const canvas = ev.target, r = canvas.getBoundingClientRect();
  const ndc = new THREE.Vector2(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1);
  const ray = new THREE.Raycaster();
  ray.setFromCamera(ndc, view.camera);
  const ground = hello.scene.ground ?? hello.scene.bounds[0][2];
  const hit = ray.ray.intersectPlane(new THREE.Plane(new THREE.Vector3(0, 0, 1), -ground), new THREE.Vector3());
  if (!hit) return;
  const id = nextId++;
  sent.set(id, performance.now());
  send({ type: "target", x: hit.x, y: hit.y, id });
}

window.addEventListener("keydown", (ev) => {
  if (!hello || ev.repeat) return;
  if (ev.key === "q" || ev.key === "Q") { send({ type: "quit" }); return; }
  const name = hello.keys[ev.key];
  if (name === undefined) return;
  if (SPEED_KEYS.has(ev.key)) ev.preventDefault();
  command(name);
});
document.getElementById("play-canvas").addEventListener("click", (ev) => { if (hello && hello.targets) clickTarget(ev); });
document.getElementById("pause").addEventListener("click", (ev) => {
  send({ type: "pause", paused: !state.paused });
  ev.target.textContent = state.paused ? "pause" : "go on";
});
document.getElementById("reset").addEventListener("click", () => send({ type: "reset" }));
document.getElementById("quit").addEventListener("click", () => send({ type: "quit" }));
setInterval(() => { if (state.rtf !== null) send({ type: "stats", rtf: state.rtf, lag_ms: state.lag_ms }); }, 1000);

socket.addEventListener("open", () => { window.animat.connected = true; });
socket.addEventListener("message", (ev) => {
  const msg = JSON.parse(ev.data);
  if (msg.type === "hello") start(msg);
  else if (msg.type === "state" && view) update(msg);
});
socket.addEventListener("close", (ev) => {
  state.ended = true;
  window.animat.connected = false;
  message(ev.code === 1008 ? `refused: ${ev.reason}` : "the play has ended: the server writes its run directory (see the terminal)");
});
