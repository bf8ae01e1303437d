// The 3D scene of animat's pages (report.html's replay, `animat play`'s live view): the scene format of
// animat.viz.scene (JSON + base64 binary buffers) decoded and drawn with three.js. World frame z up, SI units
// unless the scene says otherwise. Exports the decoder, the object builders and makeView (renderer, lights,
// ground grid, camera, orbit controls, scale bar).
import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";

export function decode(ref, buffers) {
  // ref {b: buffer index, dtype: f4|f2|n1|u4|i4, shape: [...]} -> a typed array (row-major; f2, n1 as float32),
  // also kept as ref.array (a live page writes new frames into it)
  if (ref === null || ref === undefined) return null;
  const bin = atob(buffers[ref.b]);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const T = { f4: Float32Array, u4: Uint32Array, i4: Int32Array }[ref.dtype];
  if (ref.dtype === "f2") ref.array = halfToFloat(new Uint16Array(bytes.buffer));
  else if (ref.dtype === "n1") ref.array = Float32Array.from(new Int8Array(bytes.buffer), (v) => v / 127);
  else ref.array = new T(bytes.buffer);
  return ref.array;
}

function halfToFloat(h) {
  // IEEE 754 binary16 -> float32
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) {
    const s = h[i] & 0x8000 ? -1 : 1, e = (h[i] >> 10) & 0x1f, m = h[i] & 0x3ff;
    out[i] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return out;
}

function colour(c) {
  return new THREE.Color(c[0], c[1], c[2]);
}

function material(spec, extra = {}) {
  const opacity = spec.opacity === undefined ? 1 : spec.opacity;
  return new THREE.MeshStandardMaterial({
    color: colour(spec.color || [0.6, 0.6, 0.6]), roughness: 0.7, metalness: 0.0, side: THREE.DoubleSide,
    transparent: opacity < 1, opacity, depthWrite: opacity >= 1, flatShading: !!spec.flat, ...extra,
  });
}

// per-frame slice of a (F, ...) array whose rows hold `width` numbers
function row(arr, width, f) {
  return arr.subarray(f * width, (f + 1) * width);
}

function buildMesh(spec, bufs, group) {
  const pos = decode(spec.positions, bufs), faces = decode(spec.faces, bufs), normals = decode(spec.normals, bufs);
  const V = spec.positions.shape[spec.positions.shape.length - 2];
  const animated = spec.positions.shape.length === 3;
  const geom = new THREE.BufferGeometry();
  geom.setAttribute("position", new THREE.BufferAttribute(new Float32Array(animated ? row(pos, 3 * V, 0) : pos), 3));
  geom.setIndex(new THREE.BufferAttribute(faces, 1));
  if (normals) geom.setAttribute("normal", new THREE.BufferAttribute(new Float32Array(row(normals, 3 * V, 0)), 3));
  else geom.computeVertexNormals();
  const mesh = new THREE.Mesh(geom, material(spec));
  group.add(mesh);
  if (spec.edges) {
    const wire = new THREE.LineSegments(new THREE.WireframeGeometry(geom), new THREE.LineBasicMaterial({ color: 0x333333, transparent: true, opacity: 0.25 }));
    mesh.add(wire);
  }
  return (f) => {
    if (!animated) return;
    geom.attributes.position.array.set(row(pos, 3 * V, f));
    geom.attributes.position.needsUpdate = true;
    if (normals && spec.normals.shape.length === 3) {
      geom.attributes.normal.array.set(row(normals, 3 * V, f));
      geom.attributes.normal.needsUpdate = true;
    } else if (!normals) geom.computeVertexNormals();
    geom.computeBoundingSphere();
  };
}

function primGeometry(kind, s) {
  // MuJoCo conventions: sizes are half-extents / radius (+ half-length); capsules and cylinders along local z
  if (kind === "box") return new THREE.BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2]);
  if (kind === "sphere") return new THREE.SphereGeometry(s[0], 20, 14);
  if (kind === "ellipsoid") return new THREE.SphereGeometry(1, 20, 14).scale(s[0], s[1], s[2]);
  const g = kind === "capsule" ? new THREE.CapsuleGeometry(s[0], 2 * s[1], 6, 16) : new THREE.CylinderGeometry(s[0], s[0], 2 * s[1], 16);
  return g.rotateX(Math.PI / 2);
}

function buildPrims(spec, bufs, group) {
  const sizes = decode(spec.sizes, bufs), pos = decode(spec.pos, bufs), quat = decode(spec.quat, bufs);
  const colors = decode(spec.colors, bufs);
  const G = spec.kinds.length, animated = spec.pos.shape.length === 3;
  const meshes = spec.kinds.map((kind, g) => {
    const c = colors ? Array.from(colors.subarray(4 * g, 4 * g + 4)) : [...(spec.color || [0.6, 0.6, 0.6]), spec.opacity ?? 1];
    const m = new THREE.Mesh(primGeometry(kind, sizes.subarray(3 * g, 3 * g + 3)), material({ color: c, opacity: c[3] * (spec.opacity ?? 1) }));
    group.add(m);
    return m;
  });
  return (f) => {
    const k = animated ? f : 0;
    for (let g = 0; g < G; g++) {
      const p = 3 * (k * G + g), q = 4 * (k * G + g);
      meshes[g].position.set(pos[p], pos[p + 1], pos[p + 2]);
      if (quat) meshes[g].quaternion.set(quat[q + 1], quat[q + 2], quat[q + 3], quat[q]); // stored w, x, y, z
    }
  };
}

function buildPoints(spec, bufs, group, named) {
  const pos = decode(spec.positions, bufs);
  const N = spec.positions.shape[1];
  const mesh = new THREE.InstancedMesh(new THREE.SphereGeometry(spec.radius, 12, 8), material(spec), N);
  group.add(mesh);
  const m = new THREE.Matrix4();
  named[spec.name] = { pos, N };
  return (f) => {
    for (let i = 0; i < N; i++) {
      const p = 3 * (f * N + i);
      m.makeTranslation(pos[p], pos[p + 1], pos[p + 2]);
      mesh.setMatrixAt(i, m);
    }
    mesh.instanceMatrix.needsUpdate = true;
    mesh.computeBoundingSphere();
  };
}

function buildLinks(spec, bufs, group, named) {
  // neighbour links: pairs (K, 2) of indices into the points `spec.points`, frame f's rows offsets[f]..offsets[f+1]
  const pairs = decode(spec.pairs, bufs), offsets = decode(spec.offsets, bufs);
  let most = 1;
  for (let f = 0; f + 1 < offsets.length; f++) most = Math.max(most, offsets[f + 1] - offsets[f]);
  const geom = new THREE.BufferGeometry();
  geom.setAttribute("position", new THREE.BufferAttribute(new Float32Array(6 * most), 3));
  const lines = new THREE.LineSegments(geom, new THREE.LineBasicMaterial({ color: colour(spec.color || [0.4, 0.4, 0.4]), transparent: true, opacity: spec.opacity ?? 0.5 }));
  lines.frustumCulled = false;
  group.add(lines);
  return (f) => {
    const pts = named[spec.points], out = geom.attributes.position.array;
    const a = offsets[f], b = offsets[f + 1];
    for (let k = a; k < b; k++) {
      for (let e = 0; e < 2; e++) {
        const p = 3 * (f * pts.N + pairs[2 * k + e]);
        out.set(pts.pos.subarray(p, p + 3), 6 * (k - a) + 3 * e);
      }
    }
    geom.setDrawRange(0, 2 * (b - a));
    geom.attributes.position.needsUpdate = true;
  };
}

function buildPath(spec, bufs, group, named, view) {
  // a point's path (F, 3): the whole path faint, the trail up to the current frame bright
  const pos = decode(spec.positions, bufs);
  const F = spec.positions.shape[0];
  const geom = new THREE.BufferGeometry();
  geom.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  const c = colour(spec.color || [0.8, 0.2, 0.2]);
  const full = new THREE.Line(geom, new THREE.LineBasicMaterial({ color: c, transparent: true, opacity: 0.2 }));
  const trail = new THREE.Line(geom.clone(), new THREE.LineBasicMaterial({ color: c }));
  full.frustumCulled = trail.frustumCulled = false;
  group.add(full, trail);
  return (f) => {
    trail.visible = view.trails;
    const from = spec.tail ? Math.max(0, f - spec.tail) : 0;
    trail.geometry.setDrawRange(from, Math.min(F, f + 1) - from);
  };
}

export const BUILDERS = { mesh: buildMesh, prims: buildPrims, points: buildPoints, links: buildLinks, path: buildPath };

export function niceStep(x) {
  // the largest of 1, 2, 5 x 10^k not above x
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  return [5, 2, 1].map((m) => m * p).find((v) => v <= x) || p;
}

export function formatLength(v, unit) {
  return `${+v.toPrecision(3)} ${unit}`;
}


// Everything a page draws a scene with: the renderer on `canvas` (inside the element `box`, which also holds the
// labels and the #scale bar), lights, the objects (updates[k](f) shows frame f of object k), a ground grid from
// the scene's bounds, a z-up camera looking at its centre (or at its first followed point) with orbit controls.
// `view.trails` says whether paths show their trail. render() draws and moves the labels and the scale bar.
export function makeView(scene, bufs, box, canvas, view) {
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  const world = new THREE.Scene();
  world.background = new THREE.Color(scene.background || [0.93, 0.95, 0.97]);
  world.add(new THREE.HemisphereLight(0xffffff, 0x8899aa, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 1.8);
  sun.position.set(1, -2, 3);
  world.add(sun);

  const group = new THREE.Group();
  world.add(group);
  const named = {};
  const updates = scene.objects.map((spec) => BUILDERS[spec.type](spec, bufs, group, named, view));

  // ground grid from the scene's bounds (lo, hi: 3 numbers each, scene units) and the size of what to look at
  const [lo, hi] = [scene.bounds[0], scene.bounds[1]];
  const extent = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-6);
  const focus = scene.focus || extent;
  const cell = niceStep(Math.max(extent / 40, Math.min(extent, 2 * focus) / 10));  // at most about 40 squares a side
  const cx = 0.5 * (lo[0] + hi[0]), cy = 0.5 * (lo[1] + hi[1]);
  const span = Math.max(hi[0] - lo[0], hi[1] - lo[1]) + 4 * cell;
  const divisions = Math.min(400, Math.max(2, Math.ceil(span / cell)));
  const grid = new THREE.GridHelper(divisions * cell, divisions, 0x8a96a3, 0xc5ccd3);
  grid.rotation.x = Math.PI / 2;
  const ground = scene.ground === null || scene.ground === undefined ? lo[2] : scene.ground;
  grid.position.set(Math.round(cx / cell) * cell, Math.round(cy / cell) * cell, ground);
  world.add(grid);

  const follow = scene.follow ? decode(scene.follow, bufs) : null;
  const camera = new THREE.PerspectiveCamera(45, 1, focus / 200, extent * 100);
  camera.up.set(0, 0, 1);
  const centre = follow ? new THREE.Vector3(follow[0], follow[1], follow[2]) : new THREE.Vector3(cx, cy, 0.5 * (lo[2] + hi[2]));
  const dir = scene.view || [-0.9, -1.6, 0.9];
  const dist = 2.0 * focus / Math.hypot(...dir);
  camera.position.set(centre.x + dir[0] * dist, centre.y + dir[1] * dist, centre.z + dir[2] * dist);
  const controls = new OrbitControls(camera, canvas);
  controls.target.copy(centre);
  controls.enableDamping = false;
  controls.update();
  const scaleBar = box.querySelector("#scale-bar"), scaleText = box.querySelector("#scale-text");

  function updateScaleBar() {
    // a length that is about 100 px long at the orbit centre's distance
    if (!scaleBar) return;
    const d = camera.position.distanceTo(controls.target);
    const perPx = (2 * d * Math.tan(THREE.MathUtils.degToRad(camera.fov) / 2)) / canvas.clientHeight;
    const len = niceStep(120 * perPx);
    scaleBar.style.width = `${len / perPx}px`;
    scaleText.textContent = formatLength(len, scene.units);
  }

  const labels = (scene.labels || []).map((l) => {
    const el = document.createElement("div");
    el.className = "label";
    el.textContent = l.text;
    box.appendChild(el);
    return { el, at: new THREE.Vector3(...l.pos) };
  });

  function resize() {
    const w = box.clientWidth, h = Math.max(240, Math.round(w * 0.56));
    renderer.setSize(w, h, false);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }
  window.addEventListener("resize", resize);
  resize();

  function render() {
    renderer.render(world, camera);
    updateScaleBar();
    const w = canvas.clientWidth, h = canvas.clientHeight;
    for (const l of labels) {
      const p = l.at.clone().project(camera);
      l.el.style.display = p.z < 1 ? "block" : "none";
      l.el.style.left = `${(0.5 + 0.5 * p.x) * w}px`;
      l.el.style.top = `${(0.5 - 0.5 * p.y) * h}px`;
    }
  }

  // move the camera and its orbit centre by the step from the last followed point to `p` (a THREE.Vector3)
  let lastFollow = null;
  function followTo(p) {
    if (p && lastFollow) {
      const d = p.clone().sub(lastFollow);
      camera.position.add(d);
      controls.target.add(d);
    }
    lastFollow = p ? p.clone() : null;
  }

  return { world, camera, controls, updates, named, follow, cell, render, followTo, gridNote: `Grid squares ${formatLength(cell, scene.units)}.` };
}
