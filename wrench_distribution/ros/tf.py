"""Optional tf2 support: imported only when a node is configured to use it."""
from typing import Optional, Sequence, Tuple

import numpy as np


def tf2_available() -> bool:
    """Whether ``tf2_ros`` can be imported here.

    :return: True when tf lookups are possible.
    """
    try:
        import tf2_ros  # noqa: F401
    except Exception:  # ImportError, or a broken install
        return False
    return True


class TfPoseLookup:
    """Look up the poses of several frames in a target frame with tf2.

    :param node: the rclpy node (owns the listener).
    :param target_frame: frame the poses are expressed in (the object frame).
    :param frames: child frames to look up, one per effector.
    :raises RuntimeError: when tf2_ros is not importable.
    """

    def __init__(self, node, target_frame: str, frames: Sequence[str]) -> None:
        try:
            import tf2_ros
        except Exception as e:
            raise RuntimeError(f'tf2_ros is not importable ({e}); use contact_source '
                               'topic or static') from None
        self._tf2 = tf2_ros
        self.buffer = tf2_ros.Buffer()
        self.listener = tf2_ros.TransformListener(self.buffer, node)
        self.target = target_frame
        self.frames = list(frames)

    def lookup(self, parent: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Latest poses of the frames in ``parent`` (default: the target frame).

        :param parent: frame to express the poses in; None for the target frame.
        :return: positions (n,3) and quaternions (n,4).
        :raises LookupError: when a transform is missing, with the frame names.
        """
        parent = parent or self.target
        return self.lookup_pairs([parent] * len(self.frames), self.frames)

    def lookup_pairs(self, parents: Sequence[str],
                     children: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """Poses of ``children[i]`` in ``parents[i]``.

        :param parents: parent frames.
        :param children: child frames.
        :return: positions (n,3) and quaternions (n,4).
        :raises LookupError: when a transform is missing.
        """
        from rclpy.time import Time
        pos = np.empty((len(children), 3))
        quat = np.empty((len(children), 4))
        for i, (parent, child) in enumerate(zip(parents, children)):
            try:
                t = self.buffer.lookup_transform(parent, child, Time())
            except Exception as e:  # tf2 lookup, connectivity, extrapolation
                raise LookupError(f'no transform {parent} <- {child}: {e}') from None
            tr = t.transform.translation
            r = t.transform.rotation
            pos[i] = (tr.x, tr.y, tr.z)
            quat[i] = (r.x, r.y, r.z, r.w)
        return pos, quat
