"""ROS-free codecs for message fields and outputs.

Time stamps and the conversion between seconds and nanoseconds, ``;``-joined label lists,
frame ids, numbers below the solver's resolution, and the CDR layouts of a ``WrenchStamped``
and a ``PoseArray`` (the bag reader decodes them in batches, the nodes one raw payload at a
time).

They work on any object with ``sec`` and ``nanosec`` (rclpy and rosbags messages alike) and
on plain strings, so nodes, bag tools, the command line and the simulator share one
definition.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Iterable, List, Optional, Sequence

from .doubt import TRUSTED_LABEL

NS_PER_S = 1_000_000_000

#: Separator of the names in a ``Float64MultiArray`` layout label (basis names, handles,
#: effectors), e.g. ``squeeze(left,right);twist(left,right)``.
LABEL_SEPARATOR = ';'

#: Encapsulation header of little-endian plain CDR (the ROS 2 default).
CDR_LE = b'\x00\x01'
#: Smallest ``WrenchStamped`` payload: header 4 + stamp 8 + strlen 4 + NUL 1 + pad + 6 doubles.
WRENCH_STAMPED_MIN_SIZE = 4 + 8 + 4 + 1 + 3 + 48
_HEADER = struct.Struct('<iII')  # a Header: stamp sec, nanosec, frame_id length (NUL included)
_WRENCH_VALUES = struct.Struct('<6d')  # force, torque

#: Relative resolution of the solver's outputs: a number smaller than this times the largest
#: magnitude of its document is rounding residue (``1e-32`` beside ``49.05``) and prints as 0.
RESOLUTION = 1e-12


def seconds_to_ns(seconds: float) -> int:
    """Integer nanoseconds of a duration or time in seconds, rounded to the nearest.

    The one conversion of a time in seconds (a parameter, an option) into the nanoseconds
    every stamp and clock is compared in.

    :param seconds: the time, s (finite).
    :return: integer nanoseconds.
    """
    return int(round(float(seconds) * NS_PER_S))


def ns_to_seconds(ns):
    """Seconds of nanoseconds (a stamp, a duration; scalars or arrays).

    :param ns: nanoseconds.
    :return: seconds, float.
    """
    return ns * 1e-9


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


def frame_key(frame_id: str) -> str:
    """Return the form in which frame ids are compared: a leading ``/`` ignored, as tf2 does.

    :param frame_id: a ``header.frame_id``, a parameter value or a tf frame.
    :return: the frame id without leading slashes.
    """
    return frame_id.lstrip('/')


def same_frame(a: str, b: str) -> bool:
    """Whether two frame ids name the same frame (the one rule for every input).

    :param a: a frame id.
    :param b: another.
    :return: True when they are the same frame.
    """
    return frame_key(a) == frame_key(b)


def _largest(value: Any) -> float:
    if isinstance(value, float):
        return abs(value) if math.isfinite(value) else 0.0
    if isinstance(value, dict):
        return max((_largest(v) for v in value.values()), default=0.0)
    if isinstance(value, (list, tuple)):
        return max((_largest(v) for v in value), default=0.0)
    return 0.0


def _shown(value: float, floor: float, scale: float) -> float:
    """One float: 0 below ``floor``, else rounded to the resolution of ``scale``."""
    if not math.isfinite(value):
        return value
    if abs(value) < floor or value == 0.0:
        return 0.0
    step = RESOLUTION * max(scale, abs(value))
    if step == 0.0:  # a subnormal number: nothing finer to round away
        return value
    return round(value, -math.floor(math.log10(step)))


def _zeroed(value: Any, floor: float) -> Any:
    if isinstance(value, float):
        return _shown(value, floor, abs(value))
    if isinstance(value, dict):
        return {k: _zeroed(v, floor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        scale = max((abs(v) for v in value if isinstance(v, float) and math.isfinite(v)),
                    default=0.0)
        return [_shown(v, floor, scale) if isinstance(v, float) else _zeroed(v, floor)
                for v in value]
    return value


def zero_below_resolution(document: Any) -> Any:
    """Show floats to the solver's resolution (:data:`RESOLUTION`, relative): residue reads 0.

    A float smaller than :data:`RESOLUTION` times the largest finite float of the whole
    document is rounding residue and reads 0 (``-0.0`` too): a wrench of residue beside a
    49 N command, whatever the unit of length. The digits of the others stop at the same
    resolution of their own vector (a wrench, an axis; a lone number: itself), so
    ``19.999999999999996`` in ``[0.0, -19.999999999999996, 26.19]`` reads ``-20.0``.
    Integers, strings and booleans are left alone. For what is shown (CLI JSON, diagnostics
    text, printed tables), never for what is published.

    :param document: JSON-ready value (dicts, lists, floats, ...).
    :return: a copy with every float shown to the resolution.
    """
    return _zeroed(document, RESOLUTION * _largest(document))


def format_numbers(values: Iterable[float], spec: str = '.6g') -> str:
    """Join numbers into one text, shown by :func:`zero_below_resolution` (the group its scale).

    :param values: the numbers (one vector: an internal load, virtual masses, ...).
    :param spec: the format of each number.
    :return: e.g. ``15, 0, 0`` for ``[15.0, 2.8e-33, -1.2e-15]``.
    """
    return ', '.join(format(x, spec) for x in zero_below_resolution([float(v) for v in values]))


def wrench_values_offset(frame_id_length) -> Any:
    """Offset of the six doubles in a ``WrenchStamped`` CDR payload (scalar or integer array).

    The doubles align to 8 bytes counted from the end of the 4-byte encapsulation header; an
    empty ``frame_id`` is a length of 1 (its NUL) or, from some writers, of 0.

    :param frame_id_length: the string length field (NUL included).
    :return: byte offset from the start of the payload.
    """
    return 4 + ((12 + frame_id_length + 7) // 8) * 8


def encode_wrench_payload(stamp_ns: int, frame_id: str, values: Sequence[float]) -> bytes:
    """Encode one ``WrenchStamped`` as little-endian plain CDR (what rclpy publishes raw).

    The inverse of :func:`decode_wrench_payload`, in the layout rclpy's serializer writes (its
    alignment padding, which Fast CDR leaves unset, is zeros here); about 0.5 us, where filling
    a message and rclpy's conversion of it cost about 10 us.

    :param stamp_ns: ``header.stamp`` in nanoseconds (its ``sec`` must fit an int32).
    :param frame_id: ``header.frame_id``.
    :param values: ``[fx, fy, fz, tx, ty, tz]``.
    :return: the payload, encapsulation header included.
    """
    sec, nanosec = divmod(stamp_ns, NS_PER_S)
    name = frame_id.encode()
    length = len(name) + 1  # the NUL
    padding = wrench_values_offset(length) - 16 - len(name)  # the NUL and the alignment
    return b''.join((CDR_LE, b'\x00\x00', _HEADER.pack(sec, nanosec, length), name,
                     bytes(padding), _WRENCH_VALUES.pack(*values)))


def decode_wrench_payload(payload: bytes) -> Optional[tuple]:
    """Decode one little-endian plain CDR ``WrenchStamped`` payload (a raw subscription's).

    0.3 us, where rclpy's conversion into message objects costs about 12 us.

    :param payload: the serialized message.
    :return: ``(stamp_ns, frame_id, (fx, fy, fz, tx, ty, tz))``, or None when the payload is
        not little-endian plain CDR of a ``WrenchStamped`` (decode it the generic way).
    """
    if payload[:2] != CDR_LE or len(payload) < WRENCH_STAMPED_MIN_SIZE:
        return None
    sec, nanosec, length = _HEADER.unpack_from(payload, 4)
    offset = wrench_values_offset(length)
    if offset + 48 != len(payload) or (length and payload[15 + length] != 0):
        return None
    try:
        frame_id = payload[16:15 + length].decode()  # empty for a length of 0 or 1
    except UnicodeDecodeError:
        return None
    return ns_from_parts(sec, nanosec), frame_id, _WRENCH_VALUES.unpack_from(payload, offset)


_UINT32 = struct.Struct('<I')
_SIZE_STRIDE = struct.Struct('<II')
#: Bytes of one ``Pose`` in a CDR payload: position and orientation, seven doubles.
POSE_SIZE = 56


def pose_array_offsets(frame_id_length: int) -> tuple:
    """Offsets of the pose count and of the first pose in a ``PoseArray`` CDR payload.

    The count aligns to 4 bytes and the doubles to 8, counted from the end of the 4-byte
    encapsulation header.

    :param frame_id_length: the string length field (NUL included).
    :return: ``(count_offset, first_pose_offset)`` from the start of the payload.
    """
    count_offset = 4 + ((12 + frame_id_length + 3) // 4) * 4
    return count_offset, 4 + ((count_offset + 7) // 8) * 8


def decode_pose_array_payload(payload: bytes) -> Optional[tuple]:
    """Decode one little-endian plain CDR ``PoseArray`` payload (a raw subscription's).

    About 1 us at four poses, where rclpy's conversion into message objects costs about 34 us.

    :param payload: the serialized message.
    :return: ``(stamp_ns, frame_id, poses)`` with ``poses`` the 7 m numbers of the m poses, each
        ``x, y, z, qx, qy, qz, qw``; or None when the payload is not little-endian plain CDR of
        a ``PoseArray`` (decode it the generic way).
    """
    if payload[:2] != CDR_LE or len(payload) < 20:
        return None
    sec, nanosec, length = _HEADER.unpack_from(payload, 4)
    count_offset, first = pose_array_offsets(length)
    if count_offset + 4 > len(payload) or (length and payload[15 + length] != 0):
        return None
    count = _UINT32.unpack_from(payload, count_offset)[0]
    if len(payload) != (first + POSE_SIZE * count if count else count_offset + 4):
        return None
    try:
        frame_id = payload[16:15 + length].decode()  # empty for a length of 0 or 1
    except UnicodeDecodeError:
        return None
    poses = struct.unpack_from(f'<{7 * count}d', payload, first) if count else ()
    return ns_from_parts(sec, nanosec), frame_id, poses


def multi_array_layout(dims: Sequence[tuple], data_offset: int = 0) -> bytes:
    """Encode the start of a ``Float64MultiArray`` as little-endian plain CDR: header and layout.

    In the layout rclpy's serializer writes (its alignment padding, which Fast CDR leaves
    unset, is zeros here); :func:`float64_data` packs the data that follows.

    :param dims: ``(label, size, stride)`` of each layout dimension.
    :param data_offset: ``layout.data_offset``.
    :return: the payload's first bytes, encapsulation header included.
    """
    parts = [CDR_LE, b'\x00\x00', _UINT32.pack(len(dims))]
    size = 4  # bytes after the encapsulation header, from which the alignment counts
    for label, count, stride in dims:
        name = label.encode() + b'\x00'
        padding = -(size + 4 + len(name)) % 4
        parts += [_UINT32.pack(len(name)), name, bytes(padding), _SIZE_STRIDE.pack(count, stride)]
        size += 4 + len(name) + padding + _SIZE_STRIDE.size
    parts.append(_UINT32.pack(data_offset))
    return b''.join(parts)


def float64_data(layout: bytes, count: int) -> struct.Struct:
    """Return the format of ``data`` after a :func:`multi_array_layout`: its count, padding, doubles.

    :param layout: the header and layout (the doubles align to 8 after the count).
    :param count: the number of values.
    :return: a ``Struct`` packing ``(count, *values)``.
    """
    return struct.Struct(f'<I{-len(layout) % 8}x{count}d')


class LabelledPayloads:
    """A labelled array (``make_internal_load_msg``'s layout) as raw ``Float64MultiArray`` payloads.

    The first layout dimension names the values (an internal-load basis, the effectors); the
    analyzer's measured internal load has a second one (size 1, stride 1: the data's shape is
    unchanged) carrying the read-out's health label of each sample. About 0.5 us a payload,
    where filling the message and rclpy's conversion of it cost about 3 us more.

    :param names: the names of the values, in order.
    """

    def __init__(self, names: Sequence[str]) -> None:
        count = len(names)
        self._names = (join_labels(names), count, count)
        self._key: Optional[tuple] = None  # the second label and the count the formats were made for
        self._layout = b''
        self._data = float64_data(b'', 0)

    def encode(self, values: Sequence[float], health: Optional[str] = TRUSTED_LABEL) -> bytes:
        """Return one sample's payload (the formats made anew when the label or the count changes).

        :param values: the numbers.
        :param health: the second dimension's label, or None for none.
        """
        key = (health, len(values))
        if key != self._key:
            self._key = key
            self._layout = multi_array_layout([self._names] + ([] if health is None else [(health, 1, 1)]))
            self._data = float64_data(self._layout, len(values))
        return self._layout + self._data.pack(len(values), *values)
