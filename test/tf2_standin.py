"""A small stand-in for tf2_ros's ``Buffer`` and ``TransformListener`` (tests only).

tf2_ros cannot be installed from the Python registry, so the tests hand this module to
``wrench_distribution.ros.tf.use_tf2_implementation``. It implements the part of the
interface the nodes use, with tf2's semantics for it:

- ``Buffer(cache_time=None, node=None)``; with a node, the buffer follows the node's clock
  and clears itself when that clock jumps back by more than a second (as tf2_ros does from
  Jazzy on; :class:`HumbleBuffer` does not, like Humble's);
- ``set_transform`` / ``set_transform_static`` (what a ``TransformListener`` feeds it from
  ``/tf`` and ``/tf_static``), ``clear()``;
- ``lookup_transform(target, source, time)``: time zero gives the latest transform, with its
  stamp (zero for a static one); another time interpolates between the two transforms around
  it (linear position, spherical rotation) and raises ``ExtrapolationException`` outside the
  stored range; an unknown frame raises ``LookupException``. Only direct parent/child pairs
  (either way round) are supported: no chains.

The test feeds the buffer directly (``Buffer.instances`` lists every buffer built), since
the ``tf2_msgs`` message package is not installable here either.
"""
import bisect
from typing import Dict, List, Tuple

from geometry_msgs.msg import TransformStamped
import numpy as np
from scipy.spatial.transform import Rotation, Slerp


class LookupException(Exception):
    """A frame is unknown."""


class ExtrapolationException(Exception):
    """The requested time is outside the stored transforms."""


def _ns(t) -> int:
    """Nanoseconds of an ``rclpy.time.Time`` or a ``builtin_interfaces/Time``."""
    if hasattr(t, 'nanoseconds'):
        return int(t.nanoseconds)
    return t.sec * 1_000_000_000 + t.nanosec


class Buffer:
    """Transforms per (parent, child) pair, ordered by stamp."""

    instances: List['Buffer'] = []
    clears_on_jump = True

    def __init__(self, cache_time=None, node=None) -> None:
        self.node = node
        self._edges: Dict[Tuple[str, str], List[Tuple[int, np.ndarray, np.ndarray]]] = {}
        self._static: Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]] = {}
        self.clear_count = 0
        self.jump_handle = None
        if node is not None and self.clears_on_jump:
            from rclpy.clock import JumpThreshold
            from rclpy.duration import Duration
            threshold = JumpThreshold(min_forward=None, min_backward=Duration(seconds=-1),
                                      on_clock_change=True)
            self.jump_handle = node.get_clock().create_jump_callback(
                threshold, post_callback=lambda _jump: self.clear())
        Buffer.instances.append(self)

    def set_transform(self, t: TransformStamped, authority: str) -> bool:
        """Store a dynamic transform (from ``/tf``).

        :return: True.
        """
        key = (t.header.frame_id, t.child_frame_id)
        items = self._edges.setdefault(key, [])
        stamp = _ns(t.header.stamp)
        keys = [s for s, _, _ in items]
        items.insert(bisect.bisect_left(keys, stamp), (stamp, *self._arrays(t)))
        return True

    def set_transform_static(self, t: TransformStamped, authority: str) -> bool:
        """Store a static transform (from ``/tf_static``).

        :return: True.
        """
        self._static[(t.header.frame_id, t.child_frame_id)] = self._arrays(t)
        return True

    def clear(self) -> None:
        """Forget the dynamic transforms (tf2 keeps the static ones)."""
        self._edges.clear()
        self.clear_count += 1

    @staticmethod
    def _arrays(t: TransformStamped) -> Tuple[np.ndarray, np.ndarray]:
        tr, r = t.transform.translation, t.transform.rotation
        return np.array([tr.x, tr.y, tr.z]), np.array([r.x, r.y, r.z, r.w])

    def _direct(self, parent: str, child: str, at: int) -> Tuple[int, np.ndarray, np.ndarray]:
        if (parent, child) in self._static:
            return (0, *self._static[(parent, child)])
        items = self._edges.get((parent, child))
        if not items:
            raise LookupException(f'"{child}" passed to lookupTransform argument source_frame '
                                  f'does not exist in a tree with "{parent}"')
        if at == 0:
            return items[-1]
        if not items[0][0] <= at <= items[-1][0]:
            raise ExtrapolationException(
                f'Lookup would require extrapolation at time {at * 1e-9:.6f}, but only time '
                f'{items[0][0] * 1e-9:.6f} to {items[-1][0] * 1e-9:.6f} is available')
        k = bisect.bisect_left([s for s, _, _ in items], at)
        if items[k][0] == at:
            return items[k]
        (s0, p0, q0), (s1, p1, q1) = items[k - 1], items[k]
        a = (at - s0) / (s1 - s0)
        rot = Slerp([0.0, 1.0], Rotation.from_quat([q0, q1]))([a])[0]
        return at, (1 - a) * p0 + a * p1, rot.as_quat()

    def lookup_transform(self, target_frame: str, source_frame: str, time,
                         timeout=None) -> TransformStamped:
        """Pose of ``source_frame`` in ``target_frame`` at ``time`` (zero: latest).

        :return: the transform, stamped with the time it holds for.
        :raises LookupException: unknown frames.
        :raises ExtrapolationException: time outside the stored range.
        """
        at = _ns(time)
        try:
            stamp, p, q = self._direct(target_frame, source_frame, at)
        except LookupException:
            stamp, p, q = self._direct(source_frame, target_frame, at)
            rot = Rotation.from_quat(q).inv()
            p, q = -rot.apply(p), rot.as_quat()
        out = TransformStamped()
        out.header.frame_id, out.child_frame_id = target_frame, source_frame
        out.header.stamp.sec, out.header.stamp.nanosec = divmod(int(stamp), 1_000_000_000)
        tr, r = out.transform.translation, out.transform.rotation
        tr.x, tr.y, tr.z = (float(v) for v in p)
        r.x, r.y, r.z, r.w = (float(v) for v in q)
        return out


class HumbleBuffer(Buffer):
    """Humble's Buffer: takes the node but registers no jump callback."""

    clears_on_jump = False


class TransformListener:
    """Holds the buffer; the test feeds it (no ``/tf`` subscription: no tf2_msgs here)."""

    def __init__(self, buffer: Buffer, node, *, spin_thread: bool = False, qos=None,
                 static_qos=None) -> None:
        self.buffer = buffer
        self.node = node


def transform(parent: str, child: str, stamp_ns: int, position, quaternion) -> TransformStamped:
    """Build a ``TransformStamped`` (pose of ``child`` in ``parent``).

    :param quaternion: x, y, z, w.
    :return: the message.
    """
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = parent, child
    t.header.stamp.sec, t.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    tr, r = t.transform.translation, t.transform.rotation
    tr.x, tr.y, tr.z = (float(v) for v in position)
    r.x, r.y, r.z, r.w = (float(v) for v in quaternion)
    return t
