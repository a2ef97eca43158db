"""The simulator's ``sensor_faults`` parameter: faults of the F/T streams, as broken sensors write them.

Each fault acts on one sensor's published readings over a window of sim time
``[start, start + duration)``:

- ``freeze``: the driver repeats the last reading it published before ``start``, bit for bit
  (a stalled stream repeated);
- ``clip``: one axis saturates at ``size`` (|reading| at most ``size``, its sign kept);
- ``drift``: one axis gains ``size`` per second from ``start`` (a bias that creeps; it stays
  at its last value after the window);
- ``spike``: one axis jumps by ``size`` (a glitch; a window of a publish period or two).

Faults act on what the sensor publishes (the analyzer's input), not on the wrench the arms
apply nor on the readings an arm's own controller uses (``sim/physics/sensor_faults.py``).
``object_sim`` parameter ``sensor_faults``: entries ``"<effector> <kind> <start s> <duration s> [<axis> <size>]"``,
axis one of ``fx fy fz tx ty tz``. docs/simulator.md, "Sensor faults".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from .schema import ConfigError

#: The faults a sensor can have.
FAULT_KINDS = ('freeze', 'clip', 'drift', 'spike')
#: The axes of a reading, in order.
AXES = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
_FORM = '"<effector> <kind> <start s> <duration s> [<axis> <size>]"'


@dataclass(frozen=True)
class SensorFault:
    """One fault of one sensor's stream.

    :param sensor: the effector's index.
    :param kind: one of :data:`FAULT_KINDS`.
    :param start: sim time it begins (s).
    :param duration: how long it lasts (s).
    :param axis: the axis it acts on (index in :data:`AXES`; ``freeze``: all).
    :param size: ``clip``: the value the axis saturates at; ``drift``: its rate (per s);
        ``spike``: the jump (N or N m).
    """

    sensor: int
    kind: str
    start: float
    duration: float
    axis: int = 0
    size: float = 0.0

    def active(self, t: float) -> bool:
        """Tell whether the fault acts at sim time ``t``."""
        return self.start <= t < self.start + self.duration


def parse_fault(entry: str, effectors: Sequence[str]) -> SensorFault:
    """Read one ``sensor_faults`` entry.

    :param entry: e.g. ``"left freeze 3.0 2.0"`` or ``"right drift 5.0 4.0 fx 0.5"``.
    :param effectors: the effectors' names.
    :return: the fault.
    :raises ConfigError: naming the parameter, the entry and the accepted form.
    """
    words = entry.split()
    problem = None
    if len(words) not in (4, 6) or words[0] not in effectors or words[1] not in FAULT_KINDS:
        problem = f'effector one of {list(effectors)}, kind one of {list(FAULT_KINDS)}'
    elif (words[1] == 'freeze') != (len(words) == 4) or (len(words) == 6 and words[4] not in AXES):
        problem = f'freeze takes no axis; clip, drift and spike take an axis ({", ".join(AXES)}) and a size'
    else:
        try:
            numbers = [float(w) for w in words[2:4] + words[5:]]
        except ValueError:
            numbers = [float('nan')]
        if not np.isfinite(numbers).all() or numbers[0] < 0.0 or numbers[1] <= 0.0 or (
                words[1] == 'clip' and numbers[2] <= 0.0):
            problem = 'start >= 0, duration > 0 and size finite (a clip > 0), in seconds and N or N m'
    if problem is not None:
        raise ConfigError(f"parameter 'sensor_faults': {entry!r}: {problem}; accepted: entries {_FORM}")
    axis = AXES.index(words[4]) if len(words) == 6 else 0
    return SensorFault(list(effectors).index(words[0]), words[1], numbers[0], numbers[1], axis,
                       numbers[2] if len(numbers) > 2 else 0.0)


def parse_faults(entries: Sequence[str], effectors: Sequence[str]) -> List[SensorFault]:
    """Read every ``sensor_faults`` entry (:func:`parse_fault`)."""
    return [parse_fault(entry, effectors) for entry in entries]
