"""The runtime's whole frame as one compiled call (numba): the ``"numba"`` backend of
:class:`animat.surrogate.runtime.Runtime`.

:func:`frame_kernel` does what :class:`animat.surrogate.runtime.NumpyFrame` does, from the same
folded matrices (:func:`animat.surrogate.runtime.fold`), in plain float32 loops:

1. network: one affine map per layer in "axpy" form (``out = bias; out += x_i * M[i]`` for each
   input i, eight inputs per pass), skipping inputs that are exactly 0 (after a ReLU about half of
   them; 0 * a finite weight adds nothing), ReLU after every layer but the last, which yields
   ``[z, 1, z A]``;
2. then, block by block of :data:`BLOCK` vertices so that a block's positions and normals stay in
   L1 cache while the basis streams through once: positions ``mean + U^T z``, the exact collision
   projection of :func:`animat.surrogate.collision.project` (spheres then capsules, each as in
   ``_push``/``_push_capsule``, the same fallback direction), raw normals ``[c, 1] B`` and their
   normalisation ``n / max(|n|, 1e-12)`` (as :func:`animat.surrogate.runtime.frame_step`).

The per-frame cost is streaming the basis U (k x 3V) and the normals factor B (r x 3V) from cache
(2.9 MB in float32 on the 51 x 51 sheet). They are stored as int16 with one step per row
(:func:`quantise`, half the bytes and less time per frame); the network and the mean stay float32. On
held-out frames of trained models this moves vertices by micrometres and turns normals by hundredths of a
degree (RESULTS.md, 'Measurements behind the code'). The frame is the float32 definition
evaluated with those stored rows, to float32 rounding (what the tests check).

The arrays are packed into one flat float32 ``weights`` array, one int16 ``basis`` array, one float32
``work`` array (buffers; the returned vertices and normals are views of it) and one int64 ``dims``
array (sizes, offsets), so a call passes 9 arrays (numba's dispatch costs ~50 ns per array argument).

NaN: comparisons with NaN are false, so a NaN vertex is never pushed and a NaN stays NaN through
the ReLU, the clamps and the normalisation, as in NumPy (no fastmath flag that assumes finite
values is used; only ``contract``, which lets LLVM fuse multiply-adds).

Also here, for the garment scenes' proxies: :func:`place_in_root`, the character's shapes placed in its root frame
(:class:`animat.surrogate.garment.RootShapes`).

Compilation (seconds; loading it from the cache is faster, both in RESULTS.md, 'Measurements behind the code'):
one explicit signature, compiled when this module is first imported
and cached on disk (numba's ``cache=True``: next to this file, else in ``NUMBA_CACHE_DIR`` or the
user's cache directory); where none of those is writable (checked on a read-only tree) it is
compiled in memory every time instead.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np

from animat.errors import ConfigError

BLOCK = 256  # vertices per block: 3 x 256 floats of positions + 3 x 256 of normals stay in L1

# indices into the int64 ``dims`` array
# sizes: subspace k, network input w, hidden width, layers, normals rank r, vertices V, blocks
K, NW, H, LAYERS, R, V, NBLOCKS = range(7)
# offsets in ``weights``: mean (3V,) xyz per vertex, normals intercept (3V,) as (3, count) per block, row steps (k + r,)
W_MEAN, W_INTERCEPT, W_STEPS = 7, 8, 9
Q_NRM = 10  # offset in ``basis`` of the normals rows (after the positions rows)
B_BIG, B_PING, B_ZC, B_COEF, B_X, B_N, B_RAW = 11, 12, 13, 14, 15, 16, 17  # offsets in ``work`` (see pack)
W_LAYER = 18  # offsets in ``weights`` of the layer matrices, LAYERS + 1 of them (the last: where the last matrix ends)

_SIGNATURE = (
    # z0, z1, w, spheres, capsules
    "float32[::1](float32[::1], float32[::1], float32[::1], float32[:, ::1], float32[:, ::1],"
    " float32[::1], int16[::1], int64[::1], float32[::1])"
)  # weights, basis, dims, work
_F32 = np.float32
_EPS_NORMAL, _EPS_DIST, _EPS_AXIS = (
    _F32(1e-12),
    _F32(1e-9),
    _F32(1e-12),
)  # as in frame_step and collision._push / _push_capsule
_FALLBACK_X, _FALLBACK_Y, _FALLBACK_Z = _F32(0.0), _F32(1.0), _F32(0.0)  # collision._FALLBACK
_ZERO, _ONE = _F32(0.0), _F32(1.0)
_SLACK = _F32(1.001)  # squared-distance prefilter margin (>> float32 rounding) before the exact test


def _jit(fn, signature: str = _SIGNATURE):
    """``numba.njit`` with the kernel's options, cached on disk where some cache directory is writable."""
    options = dict(nogil=True, error_model="numpy", fastmath={"contract"}, boundscheck=False)
    try:
        return numba.njit(signature, cache=True, **options)(fn)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available" (nothing writable)
        return numba.njit(signature, cache=False, **options)(fn)


def _combine(out, x, rows, count, matrix, stride):
    """``out += sum_q x[rows[q]] * matrix[rows[q] * stride :][: out.size]`` over q < count (matrix
    float32 or int16), eight rows per pass over ``out`` (an eighth of its loads and stores; faster than four
    per pass: RESULTS.md, 'Measurements behind the code')."""
    m = out.size
    q = 0
    while q + 8 <= count:
        i0, i1, i2, i3 = rows[q], rows[q + 1], rows[q + 2], rows[q + 3]
        i4, i5, i6, i7 = rows[q + 4], rows[q + 5], rows[q + 6], rows[q + 7]
        c0, c1, c2, c3, c4, c5, c6, c7 = x[i0], x[i1], x[i2], x[i3], x[i4], x[i5], x[i6], x[i7]
        r0, r1 = matrix[i0 * stride : i0 * stride + m], matrix[i1 * stride : i1 * stride + m]
        r2, r3 = matrix[i2 * stride : i2 * stride + m], matrix[i3 * stride : i3 * stride + m]
        r4, r5 = matrix[i4 * stride : i4 * stride + m], matrix[i5 * stride : i5 * stride + m]
        r6, r7 = matrix[i6 * stride : i6 * stride + m], matrix[i7 * stride : i7 * stride + m]
        for j in range(m):
            out[j] += ((c0 * _F32(r0[j]) + c1 * _F32(r1[j])) + (c2 * _F32(r2[j]) + c3 * _F32(r3[j]))) + (
                (c4 * _F32(r4[j]) + c5 * _F32(r5[j])) + (c6 * _F32(r6[j]) + c7 * _F32(r7[j]))
            )
        q += 8
    while q < count:
        i0 = rows[q]
        c0, r0 = x[i0], matrix[i0 * stride : i0 * stride + m]
        for j in range(m):
            out[j] += c0 * _F32(r0[j])
        q += 1


def _affine(x, matrix, out, relu, rows):
    """``out = x @ M + bias`` (then ReLU if ``relu``) with ``matrix`` the flat row-major
    (n_in + 1, n_out) ``[M; bias]``; x (n_in,), out (n_out,); ``rows`` (>= n_in,) int scratch."""
    n_in, n_out = x.size, out.size
    count = 0
    for i in range(n_in):  # branch-free: after a ReLU, 0 or not comes at random
        rows[count] = i
        count += x[i] != _ZERO  # 0 * a finite weight adds nothing: skip the row (NaN is not 0: kept)
    out[:] = matrix[n_in * n_out :]
    _combine(out, x, rows, count, matrix, n_out)
    if relu:
        for j in range(n_out):
            if out[j] < _ZERO:  # NaN stays NaN
                out[j] = _ZERO


def _push(X, v, nx, ny, nz, radius):
    """Vertex v of X (3 n,) moved onto distance ``radius`` of (nx, ny, nz) if closer (collision._push)."""
    ox, oy, oz = X[3 * v] - nx, X[3 * v + 1] - ny, X[3 * v + 2] - nz
    dist = np.float32(math.sqrt(ox * ox + oy * oy + oz * oz))
    if dist < radius:
        if dist > _EPS_DIST:
            ux, uy, uz = ox / dist, oy / dist, oz / dist
        else:
            ux, uy, uz = _FALLBACK_X, _FALLBACK_Y, _FALLBACK_Z
        X[3 * v], X[3 * v + 1], X[3 * v + 2] = nx + radius * ux, ny + radius * uy, nz + radius * uz


def _segment_parameter(X, v, ax, ay, az, bx, by, bz, ab2):
    """Where on the segment a -> a + b (|b|^2 = ab2, >= 1e-12) vertex v of X is nearest: t in [0, 1]
    (NaN for a NaN vertex), as collision._push_capsule."""
    t = ((X[3 * v] - ax) * bx + (X[3 * v + 1] - ay) * by + (X[3 * v + 2] - az) * bz) / ab2
    if t < _ZERO:
        t = _ZERO
    elif t > _ONE:
        t = _ONE
    return t


def _project_block(X, spheres, capsules, d2):
    """Vertices X (3 n,) (x, y, z each) pushed out of every sphere, then every capsule, in turn
    (collision.project). Per proxy, a branch-free pass (vectorised) puts each vertex's squared
    distance to the proxy's core into the scratch ``d2`` (>= n,); only vertices within the radius
    (with a margin far above float32 rounding) then go through the exact push."""
    count = X.size // 3
    for i in range(spheres.shape[0]):
        cx, cy, cz, radius = spheres[i, 0], spheres[i, 1], spheres[i, 2], spheres[i, 3]
        for v in range(count):
            ox, oy, oz = X[3 * v] - cx, X[3 * v + 1] - cy, X[3 * v + 2] - cz
            d2[v] = ox * ox + oy * oy + oz * oz
        limit = radius * radius * _SLACK
        for v in range(count):
            if d2[v] < limit:
                _push(X, v, cx, cy, cz, radius)
    for i in range(capsules.shape[0]):
        ax, ay, az, radius = capsules[i, 0], capsules[i, 1], capsules[i, 2], capsules[i, 6]
        bx, by, bz = capsules[i, 3] - ax, capsules[i, 4] - ay, capsules[i, 5] - az
        ab2 = bx * bx + by * by + bz * bz
        if ab2 < _EPS_AXIS:
            ab2 = _EPS_AXIS
        for v in range(count):
            t = _segment_parameter(X, v, ax, ay, az, bx, by, bz, ab2)
            ox, oy, oz = X[3 * v] - (ax + t * bx), X[3 * v + 1] - (ay + t * by), X[3 * v + 2] - (az + t * bz)
            d2[v] = ox * ox + oy * oy + oz * oz
        limit = radius * radius * _SLACK
        for v in range(count):
            if d2[v] < limit:
                t = _segment_parameter(X, v, ax, ay, az, bx, by, bz, ab2)
                _push(X, v, ax + t * bx, ay + t * by, az + t * bz, radius)


def _normalise_block(raw, N, n_vert, v0, length):
    """Raw normals ``raw`` (3 n,) as x..., y..., z... -> unit vectors into N (3 n_vert,) (rows x, y, z)
    at vertices v0 .. v0 + n: ``n / max(|n|, 1e-12)``; ``length`` (>= n,) scratch."""
    count = raw.size // 3
    for j in range(count):
        nx, ny, nz = raw[j], raw[count + j], raw[2 * count + j]
        norm = np.float32(math.sqrt(nx * nx + ny * ny + nz * nz))
        length[j] = norm if not norm < _EPS_NORMAL else _EPS_NORMAL  # NaN stays NaN
    for c in range(3):  # one loop per component: two loads and a store each, which vectorises
        src, dst = raw[c * count : (c + 1) * count], N[c * n_vert + v0 : c * n_vert + v0 + count]
        for j in range(count):
            dst[j] = src[j] / length[j]


def _kernel(z0, z1, w, spheres, capsules, weights, basis, dims, work):
    """One frame: (z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), spheres (S, 4), capsules (C, 7) ->
    z_t (k,) (a new array); vertices (V, 3) m and normals (3, V) written into ``work``."""
    k, nw, hidden, layers, rank, n_vert = dims[K], dims[NW], dims[H], dims[LAYERS], dims[R], dims[V]
    if spheres.shape[1] != 4 or capsules.shape[1] != 7:
        raise ValueError("proxies must be spheres (S, 4) and capsules (C, 7)")
    n_u = 2 * k + nw
    rows = np.empty(hidden + n_u + k, np.int64)  # row indices for _combine
    big = work[dims[B_BIG] : dims[B_BIG] + hidden + n_u]  # [h, z0, z1, w]
    big[hidden : hidden + k] = z0
    big[hidden + k : hidden + 2 * k] = z1
    big[hidden + 2 * k :] = w
    zc = work[dims[B_ZC] : dims[B_ZC] + k + 1 + rank]  # [z, 1, c]
    ping = dims[B_PING]
    src = big[hidden:]
    for layer in range(layers):
        matrix = weights[dims[W_LAYER + layer] : dims[W_LAYER + layer + 1]]
        if layer == layers - 1:
            _affine(big if layers > 1 else src, matrix, zc, False, rows)  # -> [z, 1, z A]
        else:
            dst = (
                big[:hidden]
                if layer == layers - 2
                else work[ping + (layer % 2) * hidden : ping + (layer % 2 + 1) * hidden]
            )
            _affine(src, matrix, dst, True, rows)
            src = dst
    coef, steps = work[dims[B_COEF] : dims[B_COEF] + k + rank], weights[dims[W_STEPS] : dims[W_STEPS] + k + rank]
    for i in range(k):
        coef[i] = zc[i] * steps[i]  # z_i times row i's quantisation step
    for i in range(rank):
        coef[k + i] = zc[k + 1 + i] * steps[k + i]
    for i in range(max(k, rank)):
        rows[i] = i
    zs, cs = coef[:k], coef[k:]
    X, N = work[dims[B_X] : dims[B_X] + 3 * n_vert], work[dims[B_N] : dims[B_N] + 3 * n_vert]
    raw_all, scratch = (
        work[dims[B_RAW] : dims[B_RAW] + 3 * BLOCK],
        work[dims[B_RAW] + 3 * BLOCK : dims[B_RAW] + 4 * BLOCK],
    )
    mean = weights[dims[W_MEAN] : dims[W_MEAN] + 3 * n_vert]
    intercept = weights[dims[W_INTERCEPT] : dims[W_INTERCEPT] + 3 * n_vert]
    positions, normals = basis[: dims[Q_NRM]], basis[dims[Q_NRM] :]
    for b in range(dims[NBLOCKS]):  # block b: rows of 3 count values, stored one after the other
        v0 = b * BLOCK
        n3 = 3 * min(BLOCK, n_vert - v0)
        Xb = X[3 * v0 : 3 * v0 + n3]
        Xb[:] = mean[3 * v0 : 3 * v0 + n3]
        _combine(Xb, zs, rows, k, positions[3 * v0 * k : (3 * v0 + n3) * k], n3)
        _project_block(Xb, spheres, capsules, scratch)
        raw = raw_all[:n3]
        raw[:] = intercept[3 * v0 : 3 * v0 + n3]
        _combine(raw, cs, rows, rank, normals[3 * v0 * rank : (3 * v0 + n3) * rank], n3)
        _normalise_block(raw, N, n_vert, v0, scratch)
    return zc[:k].copy()


_HELPER = dict(error_model="numpy", fastmath={"contract"})
for _name in (
    "_push",
    "_segment_parameter",
    "_project_block",
    "_normalise_block",
):  # small: compiled inline into the kernel
    globals()[_name] = numba.njit(inline="always", **_HELPER)(globals()[_name])
for _name in ("_combine", "_affine"):  # called (once per type): a third less compile time than inline, as fast
    globals()[_name] = numba.njit(**_HELPER)(globals()[_name])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", numba.NumbaWarning)
    frame_kernel = _jit(_kernel)


def _turn_wind(w, phi, out):
    """The flag's input w (6,) = [wind, its change] turned by ``-phi`` into the flag's frame, into
    ``out`` (as :func:`animat.surrogate.frame.wind_in_frame`)."""
    c, s = math.cos(phi), math.sin(phi)
    for j in (0, 3):
        out[j] = c * w[j] + s * w[j + 1]
        out[j + 1] = c * w[j + 1] - s * w[j]
        out[j + 2] = w[j + 2]


def _turn_to_world(X, N, phi, px, py):
    """Vertices X (V, 3) turned by ``phi`` about the vertical axis through (px, py), normals N (V, 3)
    about the vertical, in place (the flag's frame -> the world, :mod:`animat.surrogate.frame`)."""
    c, s = math.cos(phi), math.sin(phi)
    for i in range(X.shape[0]):
        dx, dy = X[i, 0] - px, X[i, 1] - py
        X[i, 0] = c * dx - s * dy + px
        X[i, 1] = s * dx + c * dy + py
        nx, ny = N[i, 0], N[i, 1]
        N[i, 0] = c * nx - s * ny
        N[i, 1] = s * nx + c * ny


def _rotate(qw, qx, qy, qz, vx, vy, vz):
    """(vx, vy, vz) rotated by the unit quaternion (qw, qx, qy, qz): ``v + w t + u x t``, ``t = 2 u x v``
    (:func:`animat.quaternions.rotate`)."""
    tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    return vx + qw * tx + qy * tz - qz * ty, vy + qw * ty + qz * tx - qx * tz, vz + qw * tz + qx * ty - qy * tx


def _place_in_root(frames, body, local, spheres, capsules):
    """The character's shape points in the root frame (:class:`animat.surrogate.garment.RootShapes`): point ``p`` of
    body ``b = body[p]`` at ``local[p]`` (m) in its frame goes to ``R_0^T (R_b local[p] + x_b - x_0)``, with the body
    frames ``frames`` (B, 7) (position, quaternion, normalised here); the sphere centres into ``spheres[:, :3]``, then
    the capsules' ends a into ``capsules[:, :3]`` and b into ``capsules[:, 3:6]``."""
    n0 = math.sqrt(frames[0, 3] ** 2 + frames[0, 4] ** 2 + frames[0, 5] ** 2 + frames[0, 6] ** 2)
    w0, x0, y0, z0 = frames[0, 3] / n0, -frames[0, 4] / n0, -frames[0, 5] / n0, -frames[0, 6] / n0  # R_0^T
    S, C = spheres.shape[0], capsules.shape[0]
    for p in range(body.shape[0]):
        b = body[p]
        n = math.sqrt(frames[b, 3] ** 2 + frames[b, 4] ** 2 + frames[b, 5] ** 2 + frames[b, 6] ** 2)
        qw, qx, qy, qz = frames[b, 3] / n, frames[b, 4] / n, frames[b, 5] / n, frames[b, 6] / n
        vx, vy, vz = _rotate(qw, qx, qy, qz, local[p, 0], local[p, 1], local[p, 2])
        vx += frames[b, 0] - frames[0, 0]
        vy += frames[b, 1] - frames[0, 1]
        vz += frames[b, 2] - frames[0, 2]
        rx, ry, rz = _rotate(w0, x0, y0, z0, vx, vy, vz)
        out, row, col = (spheres, p, 0) if p < S else ((capsules, p - S, 0) if p < S + C else (capsules, p - S - C, 3))
        out[row, col], out[row, col + 1], out[row, col + 2] = rx, ry, rz


_rotate = numba.njit(inline="always", **_HELPER)(_rotate)
place_in_root = _jit(
    _place_in_root, "void(float64[:, ::1], int64[::1], float64[:, ::1], float32[:, ::1], float32[:, ::1])"
)
turn_wind = _jit(_turn_wind, "void(float32[::1], float64, float32[::1])")
turn_to_world = _jit(_turn_to_world, "void(float32[:, :], float32[:, :], float64, float64, float64)")


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (n, m) -> (int16 (n, m), float32 steps (n,)) with ``rows ~= q * step[:, None]``: each row
    rounded on 65535 levels spanning +-its largest magnitude (error <= step / 2 per entry).
    ConfigError for non-finite rows."""
    rows = np.asarray(rows, np.float64)
    if not np.isfinite(rows).all():
        raise ConfigError("the runtime's basis or normals regression holds NaN or infinite values")
    peak = np.abs(rows).max(axis=1)
    step = np.where(peak > 0, peak / 32767, 1.0)
    return np.round(rows / step[:, None]).astype(np.int16), step.astype(np.float32)


def pack(
    mats: list[np.ndarray], positions: np.ndarray, normals: np.ndarray, n_inputs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The folded matrices of :func:`animat.surrogate.runtime.fold` -> (weights float32 (n,), basis
    int16 (m,), dims int64, work size).

    ``mats``: the layer matrices, the last one (n, k + 1 + r) yielding ``[z, 1, z A]``;
    ``positions`` (k + 1, 3V) rows ``[U; mean]`` (vertex-major xyz); ``normals`` (r + 1, 3V) rows
    ``[B_r; intercept]`` laid out as x..., y..., z... (V each); ``n_inputs`` = 2k + w_dim.
    ``basis``: U and B_r quantised (:func:`quantise`), block by block of BLOCK vertices, each block's
    rows contiguous (positions (k, 3 count) xyz per vertex, normals (r, 3, count)); ``weights``: the
    layer matrices, the mean, the intercept (as (3, count) per block), the rows' steps."""
    k, r = positions.shape[0] - 1, normals.shape[0] - 1
    n_vert = positions.shape[1] // 3
    hidden = mats[0].shape[1] if len(mats) > 1 else 0
    blocks = -(-n_vert // BLOCK)
    U, u_step = quantise(positions[:k])
    B, b_step = quantise(normals[:r])
    B, intercept = B.reshape(r, 3, n_vert), normals[r].reshape(3, n_vert)
    starts_v = range(0, n_vert, BLOCK)
    basis = np.concatenate(
        [U[:, 3 * v : 3 * (v + BLOCK)].reshape(-1) for v in starts_v]
        + [B[:, :, v : v + BLOCK].reshape(-1) for v in starts_v]
    )
    blocked_intercept = np.concatenate([intercept[:, v : v + BLOCK].reshape(-1) for v in starts_v])
    parts = [m.reshape(-1) for m in mats] + [positions[k], blocked_intercept, np.concatenate([u_step, b_step])]
    starts = np.cumsum([0] + [p.size for p in parts])
    weights = np.ascontiguousarray(np.concatenate(parts), np.float32)
    # work: big [h, z0, z1, w], ping-pong hidden, zc [z, 1, c], coef, X, N, raw normals + scratch
    work_sizes = [hidden + n_inputs, 2 * hidden, k + 1 + r, k + r, 3 * n_vert, 3 * n_vert, 4 * BLOCK]
    work_starts = np.cumsum([0] + work_sizes)
    dims = np.array(
        [
            k,
            n_inputs - 2 * k,
            hidden,
            len(mats),
            r,
            n_vert,
            blocks,
            *starts[-4:-1],
            U.size,  # W_MEAN, W_INTERCEPT, W_STEPS, Q_NRM
            *work_starts[:-1],
            *starts[: len(mats) + 1],
        ],
        np.int64,
    )
    return weights, np.ascontiguousarray(basis, np.int16), dims, int(work_starts[-1])


class NumbaFrame:
    """:class:`animat.surrogate.runtime.NumpyFrame`'s frame as one :func:`frame_kernel` call (float32
    arithmetic; the basis and normals rows stored as int16, see the module docstring).

    The returned vertices (V, 3) and normals (V, 3) are views of one internal buffer, overwritten by
    the next call (copy them to keep them); the normals are the transpose of a C-contiguous (3, V)
    array (component arrays, as for NumpyFrame); ``z`` is a new array. Inputs that are not
    C-contiguous writable float32 are converted (a slower path: one failed dispatch, then a copy)."""

    def __init__(
        self,
        mats: list[np.ndarray],
        positions: np.ndarray,
        normals: np.ndarray,
        n_inputs: int,
        turn: tuple[float, float, float] | None = None,
    ):
        self.weights, self.basis, self.dims, size = pack(mats, positions, normals, n_inputs)
        self.work = np.zeros(size, np.float32)
        n_vert = int(self.dims[V])
        self.X = self.work[self.dims[B_X] : self.dims[B_X] + 3 * n_vert].reshape(n_vert, 3)
        self.N = self.work[self.dims[B_N] : self.dims[B_N] + 3 * n_vert].reshape(3, n_vert).T
        self.turn = turn  # (frame_scale, pole x, pole y): the flag's frame (animat.surrogate.frame), or None
        self._w = np.zeros(int(self.dims[NW]), np.float32)

    def __call__(self, z0, z1, w, spheres, capsules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), proxies -> (z_t (k,), vertices (V, 3) m, normals (V, 3)).
        With ``turn``: w is the world's wind, turned here into the flag's frame, and the cloth decoded
        in that frame is turned back by the new azimuth (after the kernel, so proxies would be
        projected in the flag's frame: a scene with a frame has none)."""
        if self.turn is not None:
            turn_wind(np.require(w, np.float32, "C"), float(z1[-1]) / self.turn[0], self._w)
            w = self._w
        try:
            z = frame_kernel(z0, z1, w, spheres, capsules, self.weights, self.basis, self.dims, self.work)
        except TypeError:  # another dtype or layout: convert and retry
            z0, z1, w, spheres, capsules = (
                np.require(a, np.float32, ("C", "W")) for a in (z0, z1, w, spheres, capsules)
            )
            z = frame_kernel(z0, z1, w, spheres, capsules, self.weights, self.basis, self.dims, self.work)
        if self.turn is not None:
            turn_to_world(self.X, self.N, float(z[-1]) / self.turn[0], self.turn[1], self.turn[2])
        return z, self.X, self.N
