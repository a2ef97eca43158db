"""The analyzer's per-effector friction topic (the friction logic is ROS-free: engine/friction.py)."""
import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.core.codec import join_labels
from wrench_distribution.core.doubt import TRUSTED_LABEL
from wrench_distribution.core.friction import FRICTION_FIELDS, FrictionCheck
from wrench_distribution.ros.conversions import health_dimension


def friction_message(check: FrictionCheck, names, health: str = TRUSTED_LABEL) -> Float64MultiArray:
    """Return the analyzer's per-effector friction topic: rows ``[utilisation, normal force, code]``.

    Utilisation is -1 where undefined (pulling, no coefficient); the code indexes
    :data:`~wrench_distribution.core.friction.STATUSES`. Never NaN. A third dimension (size 1)
    carries the read-out's health (:mod:`wrench_distribution.core.doubt`).

    :param check: the friction state.
    :param names: effector names (first dimension's label).
    :param health: the sample's health label (its ``elements``: the rows of doubted sensors).
    :return: the message.
    """
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label=join_labels(names), size=len(names), stride=3 * len(names)),
        MultiArrayDimension(label=FRICTION_FIELDS, size=3, stride=3), health_dimension(health)]
    rows = np.column_stack([np.nan_to_num(check.utilisation, nan=-1.0),
                            check.normal_force, check.codes])
    msg.data = [float(x) for x in rows.reshape(-1)]
    return msg


def parse_friction_message(msg: Float64MultiArray) -> tuple:
    """Split a friction message (:func:`friction_message`'s layout) into labels and values.

    :param msg: the message.
    :return: ``(dimension labels, values)``; the law checks the labels.
    """
    return [d.label for d in msg.layout.dim], np.asarray(msg.data, dtype=float)
