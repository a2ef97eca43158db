"""The rclpy messages the nodes preallocate and fill (the field conversions: ``core.messages``)."""
from typing import Sequence

from geometry_msgs.msg import WrenchStamped
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.core.codec import join_labels


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
