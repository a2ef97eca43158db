"""Optional tf2 support: imported only when a node is configured to use it.

The nodes talk to tf2 through ``tf2_ros``'s ``Buffer`` / ``TransformListener`` interface
only (``Buffer(cache_time=None, node=None)``, ``lookup_transform(target, source, time)``,
``clear()``; ``TransformListener(buffer, node)``). :func:`use_tf2_implementation` swaps in
another implementation of that interface; the tests use the stand-in in
``test/helpers/tf2_standin.py``, because tf2_ros cannot be installed from the Python registry.
"""
from typing import NamedTuple, Optional, Sequence

import numpy as np

from wrench_distribution.engine.poses import PoseSource

_IMPLEMENTATION = None  # None: tf2_ros


def use_tf2_implementation(impl) -> None:
    """Use another implementation of tf2_ros's ``Buffer`` and ``TransformListener``.

    :param impl: a module or object with ``Buffer`` and ``TransformListener`` attributes;
        None goes back to ``tf2_ros``.
    """
    global _IMPLEMENTATION
    _IMPLEMENTATION = impl


def _tf2():
    if _IMPLEMENTATION is not None:
        return _IMPLEMENTATION
    import tf2_ros
    return tf2_ros


def tf2_available() -> bool:
    """Tell whether tf lookups are possible here (``tf2_ros`` or a configured stand-in).

    :return: True when tf lookups are possible.
    """
    try:
        _tf2()
    except Exception:  # ImportError, or a broken install
        return False
    return True


class Poses(NamedTuple):
    """Poses of several frames, with the stamps of the transforms they came from."""

    positions: np.ndarray  # (n, 3)
    quaternions: np.ndarray  # (n, 4), x y z w
    stamps_ns: np.ndarray  # (n,), int64; 0 for a transform from /tf_static


def _make_buffer(tf2, node):
    """Build a tf2 Buffer that follows the node's clock and clears on jumps back in time.

    ``Buffer(node=node)`` exists from Humble on; from Jazzy on it also registers a jump
    callback on the node's clock that clears the buffer when (sim) time goes back, as a
    looping bag does. Where the buffer has no such callback (Humble) one is added here.

    :param tf2: the tf2_ros module (or a stand-in).
    :param node: the rclpy node.
    :return: (buffer, jump handle we registered or None).
    """
    try:
        buffer = tf2.Buffer(node=node)
    except TypeError:  # an implementation without the node argument
        buffer = tf2.Buffer()
    if getattr(buffer, 'jump_handle', None) is not None:
        return buffer, None
    from rclpy.clock import JumpThreshold
    from rclpy.duration import Duration
    threshold = JumpThreshold(min_forward=None, min_backward=Duration(seconds=-1),
                              on_clock_change=True)
    handle = node.get_clock().create_jump_callback(threshold,
                                                   post_callback=lambda _jump: buffer.clear())
    return buffer, handle


class TfPoseLookup:
    """Look up the poses of several frames in a target frame with tf2.

    :param node: the rclpy node (owns the listener; its clock drives the buffer).
    :param target_frame: frame the poses are expressed in (the object frame).
    :param frames: child frames to look up, one per effector.
    :raises RuntimeError: when tf2_ros is not importable.
    """

    def __init__(self, node, target_frame: str, frames: Sequence[str]) -> None:
        try:
            tf2 = _tf2()
        except Exception as e:
            raise RuntimeError(f'tf2_ros is not importable ({e}); use contact_source '
                               'topic or static') from None
        self.buffer, self._jump_handle = _make_buffer(tf2, node)
        self.listener = tf2.TransformListener(self.buffer, node)
        self.target = target_frame
        self.frames = list(frames)

    def lookup(self, stamp_ns: int = 0) -> Poses:
        """Poses of the frames in the target frame.

        :param stamp_ns: time to look up at, nanoseconds; 0 for the latest available.
        :return: the poses and the stamps of their transforms.
        :raises LookupError: when a transform is missing, with the frame names.
        """
        return self.lookup_pairs([self.target] * len(self.frames), self.frames, stamp_ns)

    def lookup_pairs(self, parents: Sequence[str], children: Sequence[str],
                     stamp_ns: int = 0) -> Poses:
        """Poses of ``children[i]`` in ``parents[i]``.

        :param parents: parent frames.
        :param children: child frames.
        :param stamp_ns: time to look up at, nanoseconds; 0 for the latest available.
        :return: the poses and the stamps of their transforms.
        :raises LookupError: when a transform is missing or not available at the stamp.
        """
        from rclpy.time import Time

        from wrench_distribution.core.codec import frame_key, stamp_to_ns
        at = Time(nanoseconds=int(stamp_ns))
        n = len(children)
        pos, quat, stamps = np.empty((n, 3)), np.empty((n, 4)), np.zeros(n, np.int64)
        for i, (parent, child) in enumerate(zip(parents, children)):
            try:
                t = self.buffer.lookup_transform(frame_key(parent), frame_key(child), at)  # tf2 refuses '/'
            except Exception as e:  # tf2 lookup, connectivity, extrapolation
                when = f' at {stamp_ns * 1e-9:.3f} s' if stamp_ns else ''
                raise LookupError(f'no transform {parent} <- {child}{when}: {e}') from None
            tr = t.transform.translation
            r = t.transform.rotation
            pos[i] = (tr.x, tr.y, tr.z)
            quat[i] = (r.x, r.y, r.z, r.w)
            stamps[i] = stamp_to_ns(t.header.stamp)
        return Poses(pos, quat, stamps)


def freshness_ns(stamps_ns: np.ndarray) -> Optional[int]:
    """Stamp the looked-up poses are as fresh as: the oldest non-static transform.

    :param stamps_ns: stamps of the transforms (0 for static ones).
    :return: nanoseconds, or None when every transform is static (never stale).
    """
    live = stamps_ns[stamps_ns > 0]
    return int(live.min()) if live.size else None


class TfBufferPoses(PoseSource):
    """The engine's pose source on a live tf2 buffer: ``frames[i]`` in ``targets[i]``.

    tf2 interpolates at the stamp (linear position, spherical rotation) and does not
    extrapolate, as the bag's :class:`~wrench_distribution.engine.poses.TfTree` does, so
    live and offline analyses agree. A stamp newer than the latest transforms is
    :meth:`waiting`: the engine holds the sample until tf catches up.

    :param lookup: the node's :class:`TfPoseLookup`.
    :param targets: frame each pose is expressed in.
    :param frames: the frames looked up, one per effector.
    """

    def __init__(self, lookup: TfPoseLookup, targets: Sequence[str],
                 frames: Sequence[str]) -> None:
        self.lookup = lookup
        self.targets = list(targets)
        self.frames = list(frames)
        self.description = 'tf2'
        self.problem: Optional[str] = None

    def _at(self, stamp_ns: int) -> Optional[Poses]:
        try:
            poses = self.lookup.lookup_pairs(self.targets, self.frames, stamp_ns)
        except LookupError as e:
            self.problem = str(e)
            return None
        self.problem = None
        return poses

    def at(self, stamps_ns: np.ndarray) -> tuple:
        """Poses (k, n, 7) and validity (k,) at the sample stamps (one lookup per stamp)."""
        out = np.zeros((len(stamps_ns), len(self.frames), 7))
        valid = np.zeros(len(stamps_ns), bool)
        for j, stamp in enumerate(np.asarray(stamps_ns, np.int64).tolist()):
            poses = self._at(stamp)
            if poses is not None:
                out[j, :, :3], out[j, :, 3:], valid[j] = poses.positions, poses.quaternions, True
        return out, valid

    def waiting(self, stamp_ns: int) -> bool:
        """Whether the latest transforms are older than ``stamp_ns`` (more may come)."""
        try:
            latest = self.lookup.lookup_pairs(self.targets, self.frames, 0)
        except LookupError:
            return False
        newest = latest.stamps_ns[latest.stamps_ns > 0]
        return bool(newest.size) and int(newest.min()) < stamp_ns

    def why(self, stamp_ns: int) -> str:
        """Why there is no pose at ``stamp_ns``."""
        pairs = ', '.join(f'{f} in {t}' for f, t in zip(self.frames, self.targets))
        return f'no transform {pairs} at {stamp_ns * 1e-9:.6f} s ({self.problem})'
