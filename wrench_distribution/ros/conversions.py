"""The rclpy messages the nodes preallocate and fill, and the raw ``WrenchStamped`` and ``PoseArray`` paths.

The field conversions are ``core.messages``; the CDR layouts (``WrenchStamped``, ``PoseArray``,
the labelled arrays) are ``core.codec``.
"""
from typing import Sequence, Tuple

from geometry_msgs.msg import PoseArray, WrenchStamped
import numpy as np
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.core.codec import (decode_pose_array_payload, decode_wrench_payload, join_labels,
                                            stamp_to_ns)
from wrench_distribution.core.doubt import TRUSTED_LABEL
from wrench_distribution.core.messages import pose_array_to_arrays


class MalformedPayload(ValueError):
    """A raw subscription's payload that is not of its topic's type in any encoding."""


def read_wrench_payload(payload: bytes) -> Tuple[int, str, tuple]:
    """Decode the payload of a raw ``WrenchStamped`` subscription.

    Little-endian plain CDR (what every ROS 2 writer on these machines sends) is decoded
    directly (:func:`~wrench_distribution.core.codec.decode_wrench_payload`, 0.3 us); any
    other encoding goes through rclpy's ``deserialize_message`` (about 12 us).

    :param payload: the serialized message.
    :return: ``(stamp_ns, frame_id, (fx, fy, fz, tx, ty, tz))``.
    :raises MalformedPayload: when the payload is not a ``WrenchStamped`` (names its size and
        rclpy's reason).
    """
    reading = decode_wrench_payload(payload)
    if reading is not None:
        return reading
    try:
        msg = deserialize_message(payload, WrenchStamped)
    except RuntimeError as e:  # rclpy's RMWError: not a WrenchStamped in any encoding
        raise MalformedPayload(f'not a WrenchStamped ({len(payload)} bytes: {e})') from None
    f = msg.wrench.force
    t = msg.wrench.torque
    return stamp_to_ns(msg.header.stamp), msg.header.frame_id, (f.x, f.y, f.z, t.x, t.y, t.z)


def read_pose_array_payload(payload: bytes) -> Tuple[int, str, np.ndarray]:
    """Decode the payload of a raw ``PoseArray`` subscription (the contact poses).

    Little-endian plain CDR is decoded directly
    (:func:`~wrench_distribution.core.codec.decode_pose_array_payload`, about 1 us at four poses);
    any other encoding goes through rclpy's ``deserialize_message`` (about 34 us).

    :param payload: the serialized message.
    :return: ``(stamp_ns, frame_id, poses (m, 7) [x, y, z, qx, qy, qz, qw])``.
    :raises MalformedPayload: when the payload is not a ``PoseArray`` (names its size and
        rclpy's reason).
    """
    reading = decode_pose_array_payload(payload)
    if reading is not None:
        stamp_ns, frame_id, numbers = reading
        return stamp_ns, frame_id, np.array(numbers, dtype=float).reshape(-1, 7)
    try:
        msg = deserialize_message(payload, PoseArray)
    except RuntimeError as e:  # rclpy's RMWError: not a PoseArray in any encoding
        raise MalformedPayload(f'not a PoseArray ({len(payload)} bytes: {e})') from None
    return stamp_to_ns(msg.header.stamp), msg.header.frame_id, np.concatenate(pose_array_to_arrays(msg), axis=1)


def make_wrench_stamped(frame_id: str) -> WrenchStamped:
    """Preallocate a ``WrenchStamped`` with a frame id.

    :param frame_id: ``header.frame_id``.
    :return: the message.
    """
    m = WrenchStamped()
    m.header.frame_id = frame_id
    return m


def make_internal_load_msg(basis_names: Sequence[str]) -> Float64MultiArray:
    """Preallocate a ``Float64MultiArray`` whose single layout dimension names the basis.

    The label is the basis names joined by ``;`` (e.g.
    ``squeeze(left,right);twist(left,right)``); ``size`` and ``stride`` are their count.

    :param basis_names: names of the internal-load basis (or handles), in order.
    :return: the message with an empty ``data``.
    """
    m = Float64MultiArray()
    dim = MultiArrayDimension()
    dim.label = join_labels(basis_names)
    dim.size = len(basis_names)
    dim.stride = len(basis_names)
    m.layout.dim = [dim]
    m.layout.data_offset = 0
    return m


def health_dimension(label: str = TRUSTED_LABEL) -> MultiArrayDimension:
    """Return the read-out's health dimension (size 1, stride 1: the data's shape is unchanged).

    :param label: the health label (:func:`~wrench_distribution.core.doubt.doubt_label`).
    :return: the dimension.
    """
    return MultiArrayDimension(label=label, size=1, stride=1)
