"""Closed-loop simulator of a rigid object held by several compliant effectors.

The pure physics (no ROS) lives in :mod:`.scenarios`,
:mod:`.grasp`, :mod:`.rigid_object`, :mod:`.ft_sensor` and :mod:`.simulator`;
the ROS nodes in ``*_node.py``; rotations are the core's (``core.spatial``). See
``docs/simulator.md``.
"""
