"""QoS profiles by name, so that every topic's QoS is a parameter."""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)

QOS_NAMES = ('sensor_data', 'reliable', 'best_effort')


def qos_from_name(name: str, depth: int = 10) -> QoSProfile:
    """Return a keep-last QoS profile for a name.

    :param name: ``sensor_data`` (best effort, volatile, the F/T default), ``reliable``
        (the default of commands) or ``best_effort``.
    :param depth: history depth.
    :return: the profile.
    :raises ValueError: on an unknown name.
    """
    if name == 'sensor_data':
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(depth, 1),
                          reliability=qos_profile_sensor_data.reliability,
                          durability=qos_profile_sensor_data.durability)
    if name == 'reliable':
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(depth, 1),
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
    if name == 'best_effort':
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(depth, 1),
                          reliability=ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.VOLATILE)
    raise ValueError(f'unknown QoS name {name!r}; accepted: {", ".join(QOS_NAMES)}')


def reliable_qos(depth: int = 10) -> QoSProfile:
    """Reliable, volatile, keep-last profile (slow inputs: poses, internal load).

    :param depth: history depth.
    :return: the profile.
    """
    return qos_from_name('reliable', depth)
