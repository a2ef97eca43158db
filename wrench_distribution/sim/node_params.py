"""ROS parameter declaration of the simulator nodes, from the sim section of the schema.

The specs live in :mod:`wrench_distribution.config.sim`; this module only declares them.
"""
from __future__ import annotations

from typing import Sequence

from ..config.schema import ParamSpec
from ..config.sim import specs_from_defaults  # noqa: F401 (part of this module's interface)


def declare_and_read(node, specs: Sequence[ParamSpec]) -> dict:
    """Declare every parameter of ``specs`` on ``node`` and return the values.

    :param node: an rclpy node.
    :param specs: the node's specs (``config.sim.SIM_PARAMS``...).
    :return: name -> value (arrays as lists)
    """
    from ..ros.parameters import declare_from_specs
    return declare_from_specs(node, specs)
