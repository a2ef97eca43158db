"""Rotation helpers for the simulator: exponential and logarithm maps of SO(3).

Quaternion conversions and the cross-product matrix are the core's (``core.spatial``).
"""
from __future__ import annotations

import numpy as np

from wrench_distribution.core.spatial import skew


def exp_so3(phi: np.ndarray) -> np.ndarray:
    """Rotation matrices of rotation vectors (Rodrigues' formula).

    :param phi: rotation vectors (..., 3), angle times unit axis, rad
    :return: rotation matrices (..., 3, 3)
    """
    phi = np.asarray(phi, dtype=float)
    theta2 = (phi * phi).sum(axis=-1)[..., None, None]
    theta = np.sqrt(theta2)
    k = skew(phi)
    # Series below 1e-4 rad (error below 1e-17), closed form above.
    safe = np.maximum(theta, 1e-4)
    a = np.where(theta < 1e-4, 1.0 - theta2 / 6.0, np.sin(safe) / safe)
    b = np.where(theta < 1e-4, 0.5 - theta2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    return np.eye(3) + a * k + b * (k @ k)


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


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (broadcasting); faster than ``numpy.cross`` here.

    :param a: (..., 3)
    :param b: (..., 3)
    :return: (..., 3)
    """
    a = np.asarray(a)
    b = np.asarray(b)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
