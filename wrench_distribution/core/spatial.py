"""Rotations, the cross-product matrix and wrench transport between frames."""
import numpy as np

from .errors import InvalidInputError


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``S(v)`` with ``S(v) a = v x a`` (paper, after eq. 7).

    :param v: vector(s) of shape (..., 3).
    :return: matrices of shape (..., 3, 3).
    """
    v = np.asarray(v, dtype=float)
    s = np.zeros(v.shape[:-1] + (3, 3))
    s[..., 0, 1] = -v[..., 2]
    s[..., 0, 2] = v[..., 1]
    s[..., 1, 0] = v[..., 2]
    s[..., 1, 2] = -v[..., 0]
    s[..., 2, 0] = -v[..., 1]
    s[..., 2, 1] = v[..., 0]
    return s


def quaternion_to_matrix(q) -> np.ndarray:
    """Rotation matrix of a quaternion ``[qx, qy, qz, qw]`` (ROS order), normalised first.

    :param q: quaternion(s) of shape (..., 4).
    :return: rotation matrices of shape (..., 3, 3).
    :raises InvalidInputError: for a zero, NaN or Inf quaternion.
    """
    q = np.asarray(q, dtype=float)
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if not np.all(np.isfinite(q)) or np.any(norm < 1e-9):
        raise InvalidInputError('an orientation quaternion is zero, NaN or Inf')
    x, y, z, w = np.moveaxis(q / norm, -1, 0)
    r = np.empty(q.shape[:-1] + (3, 3))
    r[..., 0, 0] = 1 - 2 * (y * y + z * z)
    r[..., 0, 1] = 2 * (x * y - z * w)
    r[..., 0, 2] = 2 * (x * z + y * w)
    r[..., 1, 0] = 2 * (x * y + z * w)
    r[..., 1, 1] = 1 - 2 * (x * x + z * z)
    r[..., 1, 2] = 2 * (y * z - x * w)
    r[..., 2, 0] = 2 * (x * z - y * w)
    r[..., 2, 1] = 2 * (y * z + x * w)
    r[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def matrix_to_quaternion(r) -> np.ndarray:
    """Quaternion ``[qx, qy, qz, qw]`` with ``qw >= 0`` of a rotation matrix.

    :param r: rotation matrix (3, 3).
    :return: unit quaternion (4,).
    """
    r = np.asarray(r, dtype=float)
    trace = np.trace(r)
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + r[i, i] - r[j, j] - r[k, k], 1e-300))
        q = [0.0, 0.0, 0.0, (r[k, j] - r[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (r[j, i] + r[i, j]) / s
        q[k] = (r[k, i] + r[i, k]) / s
    q = np.array(q)
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


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
