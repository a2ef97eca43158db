"""RViz markers: one arrow per effector force, plus the desired resultant at the CoM."""
from typing import Sequence

from geometry_msgs.msg import Point
from visualization_msgs.msg import Marker, MarkerArray


def _arrow(frame: str, stamp, ns: str, mid: int, start, force, scale: float,
           rgb: Sequence[float]) -> Marker:
    m = Marker()
    m.header.frame_id = frame
    m.header.stamp = stamp
    m.ns = ns
    m.id = mid
    m.type = Marker.ARROW
    m.action = Marker.ADD
    m.pose.orientation.w = 1.0
    s = Point(x=float(start[0]), y=float(start[1]), z=float(start[2]))
    e = Point(x=s.x + scale * float(force[0]), y=s.y + scale * float(force[1]),
              z=s.z + scale * float(force[2]))
    m.points = [s, e]
    m.scale.x = 0.01
    m.scale.y = 0.02
    m.scale.z = 0.03
    m.color.r, m.color.g, m.color.b = (float(c) for c in rgb)
    m.color.a = 1.0
    return m


def wrench_markers(frame: str, stamp, positions, wrenches_object, resultant: Sequence[float],
                   com: Sequence[float], scale: float, names: Sequence[str],
                   colors=None) -> MarkerArray:
    """Arrows for the effector forces (at the contacts) and the resultant (at the CoM).

    :param frame: object frame id.
    :param stamp: header stamp.
    :param positions: (n,3) contact positions in the object frame.
    :param wrenches_object: (n,6) wrenches in object axes.
    :param resultant: desired object wrench (6,).
    :param com: centre of mass (3,).
    :param scale: metres per newton.
    :param names: effector names (marker namespaces).
    :param colors: ``(r, g, b)`` per effector arrow (e.g. by friction utilisation), or None
        for the default blue.
    :return: the marker array.
    """
    arr = MarkerArray()
    colors = colors or [(0.1, 0.4, 1.0)] * len(names)
    ms = [_arrow(frame, stamp, 'effector_force', i, p, w[:3], scale, rgb)
          for i, (p, w, rgb) in enumerate(zip(positions, wrenches_object, colors))]
    ms.append(_arrow(frame, stamp, 'resultant_force', 0, com, resultant[:3], scale,
                     (1.0, 0.3, 0.1)))
    for i, (name, p) in enumerate(zip(names, positions)):
        t = Marker()
        t.header.frame_id = frame
        t.header.stamp = stamp
        t.ns = 'effector_name'
        t.id = i
        t.type = Marker.TEXT_VIEW_FACING
        t.action = Marker.ADD
        t.pose.position = Point(x=float(p[0]), y=float(p[1]), z=float(p[2]) + 0.05)
        t.pose.orientation.w = 1.0
        t.scale.z = 0.04
        t.color.r = t.color.g = t.color.b = t.color.a = 1.0
        t.text = name
        ms.append(t)
    arr.markers = ms
    return arr
