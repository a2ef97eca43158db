"""Message fields <-> numpy: wrenches, vectors, poses, transforms, labelled arrays (no ROS import).

The one conversion between ROS messages and arrays. It reads and writes fields by name
(``force.x``, ``pose.orientation.w``, ``layout.dim[0].label``), so rclpy's message classes
and the ones ``rosbags`` deserialises serve alike: the nodes, the simulator and the bag tools
share it (the stamps are :mod:`.codec`'s). Arrays are ``[fx, fy, fz, tx, ty, tz]``,
``[x, y, z]`` and poses ``[x, y, z, qx, qy, qz, qw]`` (:mod:`.spatial`'s form).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .codec import split_labels
from .doubt import is_health_label


def wrench_to_array(msg, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Copy a ``Wrench`` into ``[fx, fy, fz, tx, ty, tz]``.

    :param msg: the wrench (not stamped).
    :param out: optional preallocated (6,) float array to fill.
    :return: the (6,) array.
    """
    f = msg.force
    t = msg.torque
    if out is None:
        return np.array((f.x, f.y, f.z, t.x, t.y, t.z), dtype=float)
    out[0] = f.x
    out[1] = f.y
    out[2] = f.z
    out[3] = t.x
    out[4] = t.y
    out[5] = t.z
    return out


def fill_wrench(msg, values: Sequence[float]):
    """Write six numbers into a ``Wrench`` in place.

    :param msg: the message to fill.
    :param values: ``[fx, fy, fz, tx, ty, tz]`` (a list of floats is fastest).
    :return: ``msg``.
    """
    f = msg.force
    t = msg.torque
    f.x, f.y, f.z, t.x, t.y, t.z = values
    return msg


def vector_to_array(msg) -> np.ndarray:
    """Return a ``Vector3`` or ``Point`` as ``[x, y, z]``.

    :param msg: the vector.
    :return: the (3,) array.
    """
    return np.array((msg.x, msg.y, msg.z), dtype=float)


def fill_vector(msg, values: Sequence[float]):
    """Write three numbers into a ``Vector3`` or ``Point`` in place.

    :param msg: the message to fill.
    :param values: ``[x, y, z]``.
    :return: ``msg``.
    """
    msg.x, msg.y, msg.z = (float(v) for v in values)
    return msg


def pose_to_list(pose) -> list:
    """Return a ``Pose`` as ``[x, y, z, qx, qy, qz, qw]``.

    :param pose: the pose.
    :return: seven floats.
    """
    p, o = pose.position, pose.orientation
    return [p.x, p.y, p.z, o.x, o.y, o.z, o.w]


def transform_to_list(transform) -> list:
    """Return a ``Transform`` as a pose ``[x, y, z, qx, qy, qz, qw]``.

    :param transform: the transform (``translation``, ``rotation``).
    :return: seven floats.
    """
    p, o = transform.translation, transform.rotation
    return [p.x, p.y, p.z, o.x, o.y, o.z, o.w]


def fill_pose(pose, position: Sequence[float], quaternion: Sequence[float]):
    """Write a position and a quaternion ``[qx, qy, qz, qw]`` into a ``Pose`` in place.

    :param pose: the message to fill.
    :param position: ``[x, y, z]``.
    :param quaternion: ``[qx, qy, qz, qw]``.
    :return: ``pose``.
    """
    p, o = pose.position, pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    o.x, o.y, o.z, o.w = (float(v) for v in quaternion)
    return pose


def pose_array_to_arrays(msg) -> tuple:
    """Positions (n, 3) and quaternions (n, 4, ``[qx, qy, qz, qw]``) of a ``PoseArray``.

    :param msg: ``geometry_msgs/PoseArray``.
    :return: ``(positions, quaternions)``.
    """
    poses = np.array([pose_to_list(p) for p in msg.poses], dtype=float).reshape(-1, 7)
    return poses[:, :3].copy(), poses[:, 3:].copy()


def parse_internal_load_msg(msg) -> tuple:
    """Split an internal-load message into labels and values.

    :param msg: ``Float64MultiArray``; ``layout.dim[0].label`` may hold names joined
        by ``;`` (handles or the full basis), otherwise the data are basis coordinates.
    :return: ``(names or None, values ndarray)``.
    """
    values = np.asarray(msg.data, dtype=float)
    names = None
    if msg.layout.dim and msg.layout.dim[0].label:
        names = split_labels(msg.layout.dim[0].label)
    return names, values


def parse_measurement_msg(msg) -> tuple:
    """Split a measured internal load into labels, values and the read-out's health label.

    :param msg: ``Float64MultiArray``: ``layout.dim[0].label`` the basis names, and a further
        dimension labelled by :func:`~.doubt.doubt_label` when the analyzer checks its sensors.
    :return: ``(names or None, values ndarray, health label or None)``.
    """
    names, values = parse_internal_load_msg(msg)
    health = next((d.label for d in msg.layout.dim[1:] if is_health_label(d.label)), None)
    return names, values, health
