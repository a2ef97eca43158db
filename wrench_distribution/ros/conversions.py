"""The rclpy messages the nodes preallocate and fill, the raw ``WrenchStamped`` path, the raw measured internal load.

The field conversions are ``core.messages``; the ``WrenchStamped`` CDR layout is ``core.codec``.
"""
import struct
from typing import Optional, Sequence, Tuple

from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.core.codec import CDR_LE, decode_wrench_payload, join_labels, stamp_to_ns
from wrench_distribution.core.doubt import TRUSTED_LABEL

_UINT32 = struct.Struct('<I')
_SIZE_STRIDE = struct.Struct('<II')


class MalformedPayload(ValueError):
    """A raw subscription's payload that is not a ``WrenchStamped`` in any encoding."""


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


class InternalLoadPayloads:
    """The analyzer's measured internal load as raw payloads: the basis, then the read-out's health.

    The first layout dimension names the basis (:func:`make_internal_load_msg`), the second
    (size 1, stride 1: the data's shape is unchanged) carries the health label of each sample.
    About 0.5 us a payload, where filling the message and rclpy's conversion of it cost about
    3 us more.

    :param basis_names: names of the internal-load basis, in order.
    """

    def __init__(self, basis_names: Sequence[str]) -> None:
        count = len(basis_names)
        self._basis = (join_labels(basis_names), count, count)
        self._key: Optional[tuple] = None  # the label and the count the formats were made for
        self._layout = b''
        self._data = float64_data(b'', 0)

    def encode(self, values: Sequence[float], health: str = TRUSTED_LABEL) -> bytes:
        """Return one sample's payload (the formats made anew when the label or the count changes)."""
        key = (health, len(values))
        if key != self._key:
            self._key = key
            self._layout = multi_array_layout([self._basis, (health, 1, 1)])
            self._data = float64_data(self._layout, len(values))
        return self._layout + self._data.pack(len(values), *values)
