"""What a read-out says of the sensors it was made from: trusted, or in doubt (no ROS, no state).

The analyzer publishes its measured internal load and friction state with one more layout
dimension (size 1, stride 1) whose label is :func:`doubt_label`: ``health=ok`` while every
sensor is trusted and the set is consistent, else for instance::

    health=doubt;sensors=left:frozen;set=consistent;onset_age_s=0.038;elements=0,1,2

``sensors`` the sensors in doubt with the checks that flag each (``+``-joined: ``frozen``,
``out_of_range``, ``spike``, ``drift``), ``set`` whether the set agrees with the object's
wrench, ``onset_age_s`` how long before this sample the doubt began (the earliest onset of
the checks in doubt, in the samples' time) and ``elements`` the indices, in the first
dimension, of the entries the doubted sensors reach (docs/health.md). A feedback loop in the
distributor reads it with :func:`parse_doubt_label` and holds its correction at its value of
the onset (docs/force_control.md). Effector names hold none of ``;,:=+``: they are ROS names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

#: The label's key and its two values.
HEALTH_KEY = 'health'
TRUSTED_LABEL = f'{HEALTH_KEY}=ok'
_DOUBT = f'{HEALTH_KEY}=doubt'
#: Decimals of ``onset_age_s`` in the label, and the resolution they give (ns): an onset dated
#: from a label is that much early or late at most.
ONSET_AGE_DECIMALS = 6
ONSET_AGE_RESOLUTION_NS = 10 ** (9 - ONSET_AGE_DECIMALS)
_FIELDS = ('sensors', 'set', 'onset_age_s', 'elements')


@dataclass(frozen=True)
class Doubt:
    """The sensors in doubt at one sample, and what of the read-out they reach.

    :param sensors: ``(name, checks)`` of each sensor in doubt, checks ``+``-joined.
    :param consistent: whether the set agrees with the object's wrench (True: not checked).
    :param onset_age_s: seconds from the doubt's earliest onset to this sample (>= 0).
    :param elements: indices of the read-out's entries the doubt reaches.
    """

    sensors: Tuple[Tuple[str, str], ...] = ()
    consistent: bool = True
    onset_age_s: float = 0.0
    elements: Tuple[int, ...] = ()

    @property
    def trusted(self) -> bool:
        """Tell whether nothing is in doubt."""
        return not self.sensors and self.consistent

    def describe(self) -> str:
        """Say what is in doubt, e.g. ``left (frozen), set inconsistent``."""
        parts = [f'{name} ({checks.replace("+", ", ")})' for name, checks in self.sensors]
        if not self.consistent:
            parts.append('set inconsistent')
        return ', '.join(parts) or 'nothing'


#: Every sensor trusted, the set consistent.
TRUSTED = Doubt()


def doubt_label(doubt: Optional[Doubt]) -> str:
    """Return the health dimension's label of a sample (:data:`TRUSTED_LABEL` when trusted).

    :param doubt: the sample's doubt (None: trusted).
    :return: the label.
    """
    if doubt is None or doubt.trusted:
        return TRUSTED_LABEL
    sensors = ','.join(f'{name}:{checks}' for name, checks in doubt.sensors)
    elements = ','.join(str(j) for j in doubt.elements)
    return (f'{_DOUBT};sensors={sensors};set={"consistent" if doubt.consistent else "inconsistent"}'
            f';onset_age_s={max(doubt.onset_age_s, 0.0):.{ONSET_AGE_DECIMALS}f};elements={elements}')


def is_health_label(label: str) -> bool:
    """Tell whether a layout label is a health dimension's (:func:`doubt_label`)."""
    return label.startswith(f'{HEALTH_KEY}=')


def parse_doubt_label(label: str) -> Doubt:
    """Read a health dimension's label.

    :param label: the label (:func:`doubt_label`'s form).
    :return: the doubt (:data:`TRUSTED` for ``health=ok``).
    :raises ValueError: naming what is malformed.
    """
    if label == TRUSTED_LABEL:
        return TRUSTED
    head, _, rest = label.partition(';')
    fields = dict(part.partition('=')[::2] for part in rest.split(';')) if rest else {}
    if head != _DOUBT or sorted(fields) != sorted(_FIELDS):
        raise ValueError(f'health label {label!r} is neither {TRUSTED_LABEL!r} nor '
                         f"'{_DOUBT};{';'.join(f + '=...' for f in _FIELDS)}'")
    try:
        sensors = tuple(tuple(item.split(':')) for item in fields['sensors'].split(',') if item)
        elements = tuple(int(j) for j in fields['elements'].split(',') if j)
        age = float(fields['onset_age_s'])
    except ValueError:
        raise ValueError(f'health label {label!r} has a malformed number') from None
    if any(len(s) != 2 or not all(s) for s in sensors) or fields['set'] not in (
            'consistent', 'inconsistent') or not 0.0 <= age < float('inf') or min(elements, default=0) < 0:
        raise ValueError(f'health label {label!r}: sensors are name:checks, set consistent or '
                         'inconsistent, onset_age_s finite >= 0, elements indices >= 0')
    doubt = Doubt(sensors, fields['set'] == 'consistent', age, elements)
    if doubt.trusted:
        raise ValueError(f'health label {label!r} says doubt but names nothing in doubt')
    return doubt
