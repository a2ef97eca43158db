"""A stand-in for tf2_ros's ``Buffer``, ``TransformListener`` and broadcasters (tests only).

tf2_ros cannot be installed from the Python registry, so the tests hand this module to
``wrench_distribution.ros.tf.use_tf2_implementation``. It implements the part of tf2_ros's
Python interface the nodes and the tests use, with tf2's semantics:

- ``Buffer(cache_time=None, node=None)``: one tree of frames, each frame with one parent
  (the last ``set_transform`` naming it as a child wins, as in tf2). Each dynamic edge keeps
  a time-ordered buffer of ``cache_time`` (10 s by default) behind its newest transform;
  static edges hold for every time. With a node, the buffer clears itself when the node's
  clock jumps back by more than a second (tf2_ros from Jazzy on; :class:`HumbleBuffer`
  does not, like Humble's).
- ``set_transform`` / ``set_transform_static``, ``clear()`` (the static edges stay).
- ``lookup_transform(target, source, time, timeout=None)``: both frames are walked up to
  their common ancestor and the edges composed. Time zero is the latest time every dynamic
  edge on the path covers (tf2's "latest common time"; zero when the path is static).
  Another time interpolates each dynamic edge between the two transforms around it (linear
  position, spherical rotation). Errors, as tf2's: an unknown frame ``LookupException``;
  two frames in different trees ``ConnectivityException``; a time outside an edge's buffer
  ``ExtrapolationException``; all are ``TransformException``. ``can_transform`` says
  whether a lookup would succeed.
- ``TransformListener(buffer, node, *, spin_thread=False, qos=None, static_qos=None)``
  subscribes on the node to ``/tf`` (volatile, depth 100) and ``/tf_static`` (transient
  local, depth 100) and feeds the buffer; ``TransformBroadcaster(node)`` and
  ``StaticTransformBroadcaster(node)`` publish with ``sendTransform`` (the static one
  keeps every transform it was given and latches them).

Wire type: ``tf2_msgs/TFMessage`` when the ``tf2_msgs`` package is importable. It is not
installable here, so otherwise each transform of a ``TFMessage`` travels as one
``geometry_msgs/TransformStamped`` message on the same topics (the fields tf2 reads, one
transform per message); listener and broadcasters of this module agree on it.

Left out: ``lookup_transform_full``, the async waits and lookup timeouts (a lookup never
waits), ``MessageFilter``, the authority bookkeeping.
"""
import bisect
from typing import Dict, List, Tuple

from geometry_msgs.msg import TransformStamped
import numpy as np
from scipy.spatial.transform import Rotation, Slerp

DEFAULT_CACHE_NS = 10_000_000_000  # tf2's default cache time, 10 s
_IDENTITY = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))


class TransformException(Exception):
    """Base of tf2's lookup errors."""


class LookupException(TransformException):
    """A frame is unknown."""


class ConnectivityException(TransformException):
    """The two frames are not in one tree."""


class ExtrapolationException(TransformException):
    """The requested time is outside the stored transforms of an edge."""


def _ns(t) -> int:
    """Nanoseconds of an ``rclpy.time.Time``, a ``Duration`` or a ``builtin_interfaces/Time``."""
    if hasattr(t, 'nanoseconds'):
        return int(t.nanoseconds)
    return t.sec * 1_000_000_000 + t.nanosec


def _arrays(t: TransformStamped) -> Tuple[np.ndarray, np.ndarray]:
    tr, r = t.transform.translation, t.transform.rotation
    return np.array([tr.x, tr.y, tr.z]), np.array([r.x, r.y, r.z, r.w])


def _strip(frame: str) -> str:
    return frame[1:] if frame.startswith('/') else frame


class _Edge:
    """Pose of one child in its parent: static, or time-ordered transforms."""

    def __init__(self, parent: str, static: bool) -> None:
        self.parent = parent
        self.static = static
        self.stamps: List[int] = []
        self.poses: List[Tuple[np.ndarray, np.ndarray]] = []

    def add(self, stamp: int, pose: Tuple[np.ndarray, np.ndarray], cache_ns: int) -> None:
        if self.static:
            self.stamps, self.poses = [0], [pose]
            return
        k = bisect.bisect_left(self.stamps, stamp)
        if k < len(self.stamps) and self.stamps[k] == stamp:
            self.poses[k] = pose
        else:
            self.stamps.insert(k, stamp)
            self.poses.insert(k, pose)
        cut = bisect.bisect_left(self.stamps, self.stamps[-1] - cache_ns)
        del self.stamps[:cut], self.poses[:cut]

    def at(self, stamp: int, child: str) -> Tuple[np.ndarray, np.ndarray]:
        """Pose at ``stamp``, interpolated (linear position, spherical rotation)."""
        if self.static:
            return self.poses[0]
        s = self.stamps
        if not s[0] <= stamp <= s[-1]:
            raise ExtrapolationException(
                f'Lookup would require extrapolation at time {stamp * 1e-9:.9f}, but only time '
                f'{s[0] * 1e-9:.9f} to {s[-1] * 1e-9:.9f} is available when looking up '
                f'"{child}" in "{self.parent}"')
        k = bisect.bisect_left(s, stamp)
        if s[k] == stamp:
            return self.poses[k]
        (p0, q0), (p1, q1) = self.poses[k - 1], self.poses[k]
        a = (stamp - s[k - 1]) / (s[k] - s[k - 1])
        rot = Slerp([0.0, 1.0], Rotation.from_quat([q0, q1]))([a])[0]
        return (1 - a) * p0 + a * p1, rot.as_quat()


def _compose(outer, inner) -> Tuple[np.ndarray, np.ndarray]:
    """Pose ``inner`` (in frame B) seen from A, with ``outer`` the pose of B in A."""
    r = Rotation.from_quat(outer[1])
    return outer[0] + r.apply(inner[0]), (r * Rotation.from_quat(inner[1])).as_quat()


class Buffer:
    """One tree of frames; lookups chain the edges through the common ancestor."""

    instances: List['Buffer'] = []
    clears_on_jump = True

    def __init__(self, cache_time=None, node=None) -> None:
        self.node = node
        self.cache_ns = DEFAULT_CACHE_NS if cache_time is None else _ns(cache_time)
        self._edges: Dict[str, _Edge] = {}  # child -> its edge to its parent
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

    def _set(self, t: TransformStamped, static: bool) -> bool:
        parent, child = _strip(t.header.frame_id), _strip(t.child_frame_id)
        if not parent or not child or parent == child:
            return False  # tf2 refuses these with an error log
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent or edge.static != static:
            edge = self._edges[child] = _Edge(parent, static)
        edge.add(_ns(t.header.stamp), _arrays(t), self.cache_ns)
        return True

    def set_transform(self, t: TransformStamped, authority: str) -> bool:
        """Store a dynamic transform (from ``/tf``).

        :return: whether it was stored.
        """
        return self._set(t, False)

    def set_transform_static(self, t: TransformStamped, authority: str) -> bool:
        """Store a static transform (from ``/tf_static``).

        :return: whether it was stored.
        """
        return self._set(t, True)

    def clear(self) -> None:
        """Forget the dynamic transforms (tf2 keeps the static ones)."""
        self._edges = {c: e for c, e in self._edges.items() if e.static}
        self.clear_count += 1

    def _known(self, frame: str) -> bool:
        return frame in self._edges or any(e.parent == frame for e in self._edges.values())

    def _path_to_root(self, frame: str) -> List[str]:
        path = [frame]
        while path[-1] in self._edges and len(path) <= len(self._edges):
            path.append(self._edges[path[-1]].parent)
        return path

    def _chains(self, target: str, source: str) -> Tuple[List[str], List[str]]:
        """Frames from ``source`` and from ``target`` up to (not incl.) their common ancestor."""
        for frame, arg in ((target, 'target_frame'), (source, 'source_frame')):
            if not self._known(frame):
                raise LookupException(f'"{frame}" passed to lookupTransform argument {arg} '
                                      'does not exist. ')
        up_source, up_target = self._path_to_root(source), self._path_to_root(target)
        common = next((f for f in up_source if f in set(up_target)), None)
        if common is None:
            raise ConnectivityException(
                f"Could not find a connection between '{target}' and '{source}' because "
                'they are not part of the same tree. Tf has two or more unconnected trees.')
        return (up_source[:up_source.index(common)], up_target[:up_target.index(common)])

    def _pose_up(self, chain: List[str], stamp: int) -> Tuple[np.ndarray, np.ndarray]:
        """Pose of ``chain[0]`` in the parent of ``chain[-1]`` (the common ancestor)."""
        pose = _IDENTITY
        for child in chain:
            pose = _compose(self._edges[child].at(stamp, child), pose)
        return pose

    def _latest_common(self, chains: List[str]) -> int:
        dynamic = [self._edges[c] for c in chains if not self._edges[c].static]
        return min((e.stamps[-1] for e in dynamic), default=0)

    def lookup_transform(self, target_frame: str, source_frame: str, time,
                         timeout=None) -> TransformStamped:
        """Pose of ``source_frame`` in ``target_frame`` at ``time`` (zero: latest common).

        :return: the transform, stamped with the time it holds for.
        :raises LookupException: an unknown frame.
        :raises ConnectivityException: frames in different trees.
        :raises ExtrapolationException: time outside an edge's stored range.
        """
        target, source = _strip(target_frame), _strip(source_frame)
        up_source, up_target = self._chains(target, source)
        at = _ns(time) or self._latest_common(up_source + up_target)
        in_common = self._pose_up(up_source, at)
        target_pose = self._pose_up(up_target, at)
        inverse = Rotation.from_quat(target_pose[1]).inv()
        p = inverse.apply(in_common[0] - target_pose[0])
        q = (inverse * Rotation.from_quat(in_common[1])).as_quat()
        return transform(target_frame, source_frame, at, p, q)

    def can_transform(self, target_frame: str, source_frame: str, time, timeout=None) -> bool:
        """Tell whether :meth:`lookup_transform` would succeed.

        :return: True when it would.
        """
        try:
            self.lookup_transform(target_frame, source_frame, time)
        except TransformException:
            return False
        return True


class HumbleBuffer(Buffer):
    """Humble's Buffer: takes the node but registers no jump callback."""

    clears_on_jump = False


def _wire():
    """Message type on /tf and /tf_static, and how many transforms one message carries.

    :return: ``(type, batched)``: TFMessage (batched) when importable, else TransformStamped.
    """
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return TransformStamped, False
    return TFMessage, True


def _qos(static: bool):
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=(DurabilityPolicy.TRANSIENT_LOCAL if static
                                  else DurabilityPolicy.VOLATILE))


class TransformListener:
    """Subscribes to ``/tf`` and ``/tf_static`` on the node and feeds the buffer."""

    def __init__(self, buffer: Buffer, node, *, spin_thread: bool = False, qos=None,
                 static_qos=None) -> None:
        self.buffer = buffer
        self.node = node
        wire, batched = _wire()

        def feed(static: bool):
            store = buffer.set_transform_static if static else buffer.set_transform

            def callback(msg) -> None:
                for t in (msg.transforms if batched else [msg]):
                    store(t, 'default_authority')
            return callback
        self.subscriptions = [
            node.create_subscription(wire, '/tf', feed(False), qos or _qos(False)),
            node.create_subscription(wire, '/tf_static', feed(True), static_qos or _qos(True))]


class TransformBroadcaster:
    """Publishes transforms on ``/tf``."""

    static = False

    def __init__(self, node, qos=None) -> None:
        self.wire, self.batched = _wire()
        self.pub = node.create_publisher(self.wire, '/tf_static' if self.static else '/tf',
                                         qos or _qos(self.static))

    def sendTransform(self, transforms) -> None:  # noqa: N802 (tf2_ros's name)
        """Publish one transform or a list of them."""
        items = [transforms] if isinstance(transforms, TransformStamped) else list(transforms)
        if self.batched:
            self.pub.publish(self.wire(transforms=items))
        else:
            for t in items:
                self.pub.publish(t)


class StaticTransformBroadcaster(TransformBroadcaster):
    """Latches transforms on ``/tf_static``; every transform sent so far is kept."""

    static = True

    def __init__(self, node, qos=None) -> None:
        super().__init__(node, qos)
        self.sent: Dict[str, TransformStamped] = {}

    def sendTransform(self, transforms) -> None:  # noqa: N802 (tf2_ros's name)
        """Add transforms to the latched set and publish the set."""
        items = [transforms] if isinstance(transforms, TransformStamped) else list(transforms)
        self.sent.update({t.child_frame_id: t for t in items})
        super().sendTransform(list(self.sent.values()))


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
