"""The one geometry module: rotations, poses, the cross-product matrix, wrench transport.

Quaternions are ``[qx, qy, qz, qw]`` (ROS and scipy order); poses are arrays (..., 7)
``[x, y, z, qx, qy, qz, qw]``. Quaternion algebra and slerp use
``scipy.spatial.transform.Rotation``. The simulator's 1 kHz loop uses the vectorised numpy
``exp_so3``, ``log_so3`` and ``cross`` below: they are several times faster than a scipy
``Rotation`` round trip on the few rotations it handles per step (docs/benchmarks.md).
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from .errors import InvalidInputError


#: ``S(v)`` entries as a linear map of ``v``: ``S(v).ravel() = v @ SKEW_MAP`` (one product).
SKEW_MAP = np.array([[0, 0, 0, 0, 0, -1, 0, 1, 0],
                     [0, 0, 1, 0, 0, 0, -1, 0, 0],
                     [0, -1, 0, 1, 0, 0, 0, 0, 0]], dtype=float)


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``S(v)`` with ``S(v) a = v x a`` (paper, after eq. 7).

    :param v: vector(s) of shape (..., 3).
    :return: matrices of shape (..., 3, 3).
    """
    v = np.asarray(v, dtype=float)
    return np.dot(v, SKEW_MAP).reshape(v.shape[:-1] + (3, 3))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (broadcasting); faster than ``numpy.cross`` on small arrays.

    :param a: (..., 3)
    :param b: (..., 3)
    :return: (..., 3)
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 1 and b.ndim == 1:  # one pair of 3-vectors: scalar arithmetic (basis builder)
        return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


#: A quaternion shorter than this names no rotation (a zero quaternion).
ZERO_QUATERNION_NORM = 1e-9


def unusable_quaternions(q) -> np.ndarray:
    """Tell which quaternions name no rotation: zero (norm below :data:`ZERO_QUATERNION_NORM`), NaN or Inf.

    The one check of every quaternion the package reads (messages, bags, parameters).

    :param q: quaternions (..., 4), any scale.
    :return: bool (...).
    """
    q = np.asarray(q, dtype=float)
    # hypot: no overflow for large finite entries; Inf gives Inf and NaN gives NaN
    norm = np.hypot(np.hypot(q[..., 0], q[..., 1]), np.hypot(q[..., 2], q[..., 3]))
    return ~(norm >= ZERO_QUATERNION_NORM) | ~np.isfinite(norm)


def far_from_zero(q: np.ndarray) -> bool:
    """Tell quickly whether finite quaternions (n, 4) are all well above :data:`ZERO_QUATERNION_NORM`.

    True only when :func:`unusable_quaternions` is false for every row (False may be either).

    :param q: finite quaternions (entries at most 1e100 in magnitude), float.
    :return: whether every one names a rotation.
    """
    squares = (q * q).dot(_ONES4)
    return min(squares.tolist(), default=0.0) > _SAFE_SQUARED_NORM


_ONES4 = np.ones(4)
#: The square of :data:`ZERO_QUATERNION_NORM` with a margin for the rounding of the squares.
_SAFE_SQUARED_NORM = ZERO_QUATERNION_NORM ** 2 * (1.0 + 1e-6)


def _rotation(q) -> Rotation:
    """``Rotation`` of quaternions (..., 4) of any leading shape (flattened).

    :raises InvalidInputError: for a zero, NaN or Inf quaternion.
    """
    q = np.asarray(q, dtype=float).reshape(-1, 4)
    if np.any(unusable_quaternions(q)):
        raise InvalidInputError('an orientation quaternion is zero, NaN or Inf')
    return Rotation.from_quat(q)


def normalize(q) -> np.ndarray:
    """Scale quaternions to unit length, keeping their sign.

    :param q: quaternions (..., 4).
    :return: unit quaternions (..., 4); NaN for a zero quaternion, without a warning (the
        callers refuse it by :func:`unusable_quaternions`, with a message that names it).
    """
    q = np.asarray(q, dtype=float)
    with np.errstate(invalid='ignore', divide='ignore'):
        return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quaternion_to_matrix(q, checked: bool = False) -> np.ndarray:
    """Rotation matrix of a quaternion ``[qx, qy, qz, qw]`` (ROS order), normalised first.

    :param q: quaternion(s) of shape (..., 4).
    :param checked: the caller has checked them already (:func:`unusable_quaternions`).
    :return: rotation matrices of shape (..., 3, 3).
    :raises InvalidInputError: for a zero, NaN or Inf quaternion.
    """
    q = np.asarray(q, dtype=float)
    rotation = Rotation.from_quat(q.reshape(-1, 4)) if checked else _rotation(q)
    return rotation.as_matrix().reshape(q.shape[:-1] + (3, 3))


def matrix_to_quaternion(r) -> np.ndarray:
    """Quaternion ``[qx, qy, qz, qw]`` with ``qw >= 0`` of rotation matrices.

    :param r: rotation matrix (..., 3, 3).
    :return: unit quaternion(s) (..., 4).
    """
    r = np.asarray(r, dtype=float)
    q = Rotation.from_matrix(r.reshape(-1, 3, 3)).as_quat()
    q = np.where(q[:, 3:] < 0, -q, q)
    return q.reshape(r.shape[:-2] + (4,))


def rotate(q, v) -> np.ndarray:
    """Rotate vectors by unit quaternions (broadcasting).

    :param q: quaternions (..., 4).
    :param v: vectors (..., 3).
    :return: rotated vectors (..., 3).
    """
    return _apply(q, v, inverse=False)


def _apply(q, v, inverse: bool) -> np.ndarray:
    q, v = np.asarray(q, float), np.asarray(v, float)
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    if not np.prod(shape, dtype=int):  # no vector (an empty batch): scipy refuses it
        return np.zeros(shape + (3,))
    q = np.broadcast_to(q, shape + (4,))
    v = np.array(np.broadcast_to(v, shape + (3,))).reshape(-1, 3)
    return _rotation(q).apply(v, inverse=inverse).reshape(shape + (3,))


def rotate_inverse(q, v) -> np.ndarray:
    """Express vectors given in a parent frame in the frame of orientation ``q``: ``R(q)^T v``.

    :param q: orientation quaternions (..., 4) of the frame in the parent.
    :param v: vectors (..., 3) in the parent frame.
    :return: the vectors (..., 3) in the frame.
    """
    return _apply(q, v, inverse=True)


def compose(p_ab, p_bc) -> np.ndarray:
    """Pose of c in a from poses (..., 7) of b in a and of c in b.

    :param p_ab: poses (..., 7).
    :param p_bc: poses (..., 7).
    :return: poses (..., 7).
    """
    p_ab, p_bc = np.asarray(p_ab, float), np.asarray(p_bc, float)
    r_ab = _rotation(p_ab[..., 3:])
    q = (r_ab * _rotation(p_bc[..., 3:])).as_quat().reshape(p_ab.shape[:-1] + (4,))
    t = p_ab[..., :3] + r_ab.apply(p_bc[..., :3].reshape(-1, 3)).reshape(p_ab.shape[:-1] + (3,))
    return np.concatenate([t, q], axis=-1)


def invert(p) -> np.ndarray:
    """Pose of a in b from poses (..., 7) of b in a.

    :param p: poses (..., 7).
    :return: poses (..., 7).
    """
    p = np.asarray(p, float)
    r_inv = _rotation(p[..., 3:]).inv()
    t = -r_inv.apply(p[..., :3].reshape(-1, 3)).reshape(p.shape[:-1] + (3,))
    return np.concatenate([t, r_inv.as_quat().reshape(p.shape[:-1] + (4,))], axis=-1)


def identity(shape: tuple = ()) -> np.ndarray:
    """Identity poses.

    :param shape: leading shape.
    :return: poses ``shape + (7,)``.
    """
    p = np.zeros(tuple(shape) + (7,))
    p[..., 6] = 1.0
    return p


def slerp(q0, q1, s) -> np.ndarray:
    """Spherical linear interpolation on the shortest arc, pairwise.

    ``q(s) = q0 * exp(s log(q0^-1 q1))``, the same as ``scipy`` ``Slerp`` between two key
    rotations at times 0 and 1.

    :param q0: quaternions (k, 4) at ``s = 0``.
    :param q1: quaternions (k, 4) at ``s = 1``.
    :param s: fractions (k,) in [0, 1].
    :return: unit quaternions (k, 4).
    """
    r0 = _rotation(q0)
    step = (r0.inv() * _rotation(q1)).as_rotvec()
    return (r0 * Rotation.from_rotvec(np.asarray(s, float).reshape(-1, 1) * step)).as_quat()


def same_poses(positions_a, quaternions_a, positions_b, quaternions_b, tolerance: float) -> bool:
    """Whether two sets of contact poses are equal within ``tolerance``.

    Every position coordinate within ``tolerance`` (m) and ``1 - |q_a . q_b| <= tolerance``
    for every contact (quaternions of any scale and sign).

    :param positions_a: (n, 3).
    :param quaternions_a: (n, 4).
    :param positions_b: (n, 3).
    :param quaternions_b: (n, 4).
    :param tolerance: the tolerance.
    :return: True when equal within the tolerance.
    """
    if np.max(np.abs(np.asarray(positions_a) - positions_b), initial=0.0) > tolerance:
        return False
    return bool(np.all(same_rotation(quaternions_a, quaternions_b, tolerance)))


def same_rotation(quaternions_a, quaternions_b, tolerance: float):
    """Tell whether quaternions name the same rotations: ``1 - |q_a . q_b| <= tolerance`` once unit.

    Any scale and sign (``q`` and ``-q`` are one rotation); a zero quaternion is no rotation,
    the same as none.

    :param quaternions_a: (..., 4).
    :param quaternions_b: (..., 4).
    :param tolerance: the tolerance.
    :return: bool (...), pairwise.
    """
    a, b = np.asarray(quaternions_a, dtype=float), np.asarray(quaternions_b, dtype=float)
    with np.errstate(invalid='ignore', divide='ignore'):
        dots = np.abs(np.sum(normalize(a) * normalize(b), axis=-1))
        return (1.0 - dots <= tolerance) & ~unusable_quaternions(a) & ~unusable_quaternions(b)


def exp_so3(phi: np.ndarray) -> np.ndarray:
    """Rotation matrices of rotation vectors (Rodrigues' formula).

    :param phi: rotation vectors (..., 3), angle times unit axis, rad
    :return: rotation matrices (..., 3, 3)
    """
    phi = np.asarray(phi, dtype=float)
    return Rotation.from_rotvec(phi.reshape(-1, 3)).as_matrix().reshape(phi.shape + (3,))


def log_so3(rot: np.ndarray) -> np.ndarray:
    """Rotation vectors of rotation matrices (angle below pi).

    :param rot: rotation matrices (..., 3, 3)
    :return: rotation vectors (..., 3)
    """
    rot = np.asarray(rot, dtype=float)
    cos_t = np.clip((np.trace(rot, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    theta = np.arccos(cos_t)
    w = np.stack([rot[..., 2, 1] - rot[..., 1, 2],
                  rot[..., 0, 2] - rot[..., 2, 0],
                  rot[..., 1, 0] - rot[..., 0, 1]], axis=-1)
    sin_t = np.sin(theta)
    small = sin_t < 1e-8
    scale = np.where(small, 0.5 + theta ** 2 / 12.0, theta / (2.0 * np.where(small, 1.0, sin_t)))
    return w * scale[..., None]


def transform_wrench(wrench, rotation, translation) -> np.ndarray:
    """Move a wrench from frame A (about A's origin) to frame B (about B's origin).

    With ``(R, p)`` the pose of A in B: ``f' = R f`` and ``t' = R t + p x (R f)``.

    :param wrench: wrench(es) ``[f, t]`` of shape (..., 6) in frame A.
    :param rotation: ``R`` of shape (3, 3) or (..., 3, 3).
    :param translation: ``p``, origin of A in B, shape (3,) or (..., 3).
    :return: the wrench(es) in frame B, shape (..., 6).
    """
    wrench = np.asarray(wrench, dtype=float)
    rotation = np.asarray(rotation, dtype=float)
    translation = np.asarray(translation, dtype=float)
    force = np.einsum('...ij,...j->...i', rotation, wrench[..., :3])
    torque = np.einsum('...ij,...j->...i', rotation, wrench[..., 3:])
    torque = torque + np.cross(translation, force)
    return np.concatenate([force, torque], axis=-1)


def inverse_pose(rotation, translation):
    """Inverse of the pose ``(R, p)``: ``(R^T, -R^T p)``.

    :param rotation: (3, 3) rotation.
    :param translation: (3,) translation.
    :return: tuple ``(R^T, -R^T p)``.
    """
    rotation = np.asarray(rotation, dtype=float)
    return rotation.T, -rotation.T @ np.asarray(translation, dtype=float)
