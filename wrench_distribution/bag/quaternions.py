"""Vectorised quaternion and pose algebra, ``[qx, qy, qz, qw]`` order (ROS)."""
from __future__ import annotations

import numpy as np


def normalize(q: np.ndarray) -> np.ndarray:
    """Return unit quaternions (..., 4)."""
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` (rotation ``b`` first, then ``a``)."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, float), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=-1)


def conjugate(q: np.ndarray) -> np.ndarray:
    """Inverse of unit quaternions."""
    q = np.asarray(q, float)
    return np.concatenate([-q[..., :3], q[..., 3:]], axis=-1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors (..., 3) by unit quaternions (..., 4)."""
    q = np.asarray(q, float)
    v = np.asarray(v, float)
    u, w = q[..., :3], q[..., 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def slerp(q0: np.ndarray, q1: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation, shortest arc, ``s`` in [0, 1] of shape (...,)."""
    q0 = normalize(q0)
    q1 = normalize(q1)
    s = np.asarray(s, float)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    small = sin < 1e-9
    safe = np.where(small, 1.0, sin)
    w0 = np.where(small, 1.0 - s, np.sin((1.0 - s) * theta) / safe)
    w1 = np.where(small, s, np.sin(s * theta) / safe)
    return normalize(w0 * q0 + w1 * q1)


def compose(p_ab: np.ndarray, p_bc: np.ndarray) -> np.ndarray:
    """Pose of c in a from poses (..., 7) ``[x, y, z, qx, qy, qz, qw]`` of b in a and c in b."""
    q = multiply(p_ab[..., 3:], p_bc[..., 3:])
    t = p_ab[..., :3] + rotate(p_ab[..., 3:], p_bc[..., :3])
    return np.concatenate([t, q], axis=-1)


def invert(p: np.ndarray) -> np.ndarray:
    """Pose of a in b from the pose (..., 7) of b in a."""
    qi = conjugate(p[..., 3:])
    return np.concatenate([-rotate(qi, p[..., :3]), qi], axis=-1)


def identity(shape: tuple = ()) -> np.ndarray:
    """Identity poses of the given leading shape."""
    p = np.zeros(tuple(shape) + (7,))
    p[..., 6] = 1.0
    return p
