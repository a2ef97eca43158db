"""ROS-free codecs for message fields: time stamps and ``;``-joined label lists.

They work on any object with ``sec`` and ``nanosec`` (rclpy and rosbags messages alike) and
on plain strings, so nodes, bag tools and the simulator share one definition.
"""
from __future__ import annotations

from typing import Iterable, List

NS_PER_S = 1_000_000_000

#: Separator of the names in a ``Float64MultiArray`` layout label (basis names, handles,
#: effectors), e.g. ``squeeze(left,right);twist(left,right)``.
LABEL_SEPARATOR = ';'


def ns_from_parts(sec, nanosec):
    """Integer nanoseconds of seconds and nanoseconds (scalars or integer arrays).

    :param sec: whole seconds.
    :param nanosec: nanoseconds within the second.
    :return: ``sec * 10^9 + nanosec``.
    """
    return sec * NS_PER_S + nanosec


def stamp_to_ns(stamp) -> int:
    """Nanoseconds of a time stamp (``builtin_interfaces/Time`` of rclpy or rosbags).

    :param stamp: any object with integer ``sec`` and ``nanosec``.
    :return: integer nanoseconds.
    """
    return ns_from_parts(stamp.sec, stamp.nanosec)


def ns_to_stamp(ns: int, stamp_type):
    """Build a time stamp of ``stamp_type`` from nanoseconds (inverse of :func:`stamp_to_ns`).

    :param ns: integer nanoseconds, not negative.
    :param stamp_type: a class taking keyword arguments ``sec`` and ``nanosec``.
    :return: ``stamp_type(sec=..., nanosec=...)``.
    """
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return stamp_type(sec=sec, nanosec=nanosec)


def join_labels(names: Iterable[str]) -> str:
    """Join names into one layout label.

    :param names: the names, in order.
    :return: the label.
    """
    return LABEL_SEPARATOR.join(names)


def split_labels(label: str) -> List[str]:
    """Names of a layout label, white space around each name stripped.

    :param label: the label (not empty).
    :return: the names, in order.
    """
    return [s.strip() for s in label.split(LABEL_SEPARATOR)]
