"""Message <-> numpy conversion for wrenches, poses and Float64MultiArray."""
from typing import Optional, Sequence

from geometry_msgs.msg import Wrench, WrenchStamped
import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.core.codec import join_labels, split_labels
from wrench_distribution.core.codec import stamp_to_ns  # noqa: F401 (re-exported for the nodes)


def wrench_to_array(msg: Wrench, out: Optional[np.ndarray] = None) -> np.ndarray:
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


def fill_wrench(msg: Wrench, values: Sequence[float]) -> Wrench:
    """Write six numbers into a ``Wrench`` in place.

    :param msg: the message to fill.
    :param values: ``[fx, fy, fz, tx, ty, tz]`` (a list is fastest).
    :return: ``msg``.
    """
    f = msg.force
    t = msg.torque
    f.x, f.y, f.z, t.x, t.y, t.z = values
    return msg


def make_wrench_stamped(frame_id: str) -> WrenchStamped:
    """Preallocate a ``WrenchStamped`` with a frame id.

    :param frame_id: ``header.frame_id``.
    :return: the message.
    """
    m = WrenchStamped()
    m.header.frame_id = frame_id
    return m


def pose_array_to_arrays(msg) -> tuple:
    """Positions (n,3) and quaternions (n,4, ``[qx,qy,qz,qw]``) of a ``PoseArray``.

    :param msg: ``geometry_msgs/PoseArray``.
    :return: ``(positions, quaternions)``.
    """
    n = len(msg.poses)
    pos = np.empty((n, 3))
    quat = np.empty((n, 4))
    for i, p in enumerate(msg.poses):
        pos[i] = (p.position.x, p.position.y, p.position.z)
        o = p.orientation
        quat[i] = (o.x, o.y, o.z, o.w)
    return pos, quat


def make_internal_load_msg(basis_names: Sequence[str]) -> Float64MultiArray:
    """Preallocate a ``Float64MultiArray`` whose single layout dimension names the basis.

    The label is the basis names joined by ``;`` (e.g.
    ``squeeze(left,right);twist(left,right)``); ``size`` and ``stride`` are their count.

    :param basis_names: names of the internal-load basis, in order.
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


def parse_internal_load_msg(msg: Float64MultiArray) -> tuple:
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
