"""Plausibility: values that pass every rule but are most likely not what was meant (no ROS).

Lengths that look like millimetres, a centre of mass far from any contact, quaternions that
are not unit (the nodes normalise them), tool and object masses no wrist or arm carries,
gravity that is not about 9.81: warnings of ``check-config`` (:mod:`.judge`), each with a fix.
"""
from __future__ import annotations

import math
from typing import Any

from .arrays import per_effector
from .findings import Problem

#: A length beyond this (m) is no grasp on one object: most likely millimetres.
LONGEST_LENGTH = 5.0
#: A tool between a wrist sensor and the object heavier than this (kg) is implausible.
HEAVIEST_TOOL = 25.0
#: An object heavier than this (kg) is beyond any arm this package drives.
HEAVIEST_OBJECT = 1000.0
#: A quaternion whose norm differs from 1 by more than this is not a typed unit quaternion.
QUATERNION_TOLERANCE = 1e-3
STANDARD_GRAVITY = 9.81
#: (parameter, width) of the lengths checked for millimetres.
_LENGTHS = (('contact_positions', 3), ('sensor_positions', 3), ('tool_coms', 3),
            ('object_com', 3), ('arm_base_positions', 3), ('initial_position', 3))
_QUATERNIONS = ('contact_orientations', 'sensor_orientations', 'initial_orientation',
                'arm_base_orientations')


def plausibility(name: str, v: dict) -> list:
    """Warnings about values that pass every rule but are most likely not what was meant.

    :param name: the node (for the messages).
    :param v: the node's values (each valid on its own, defaults filled in).
    :return: the warnings.
    """
    out = []
    for check in (_millimetre_problems, _com_problems, _quaternion_problems, _mass_problems,
                  _gravity_problems):
        out += check(name, v)
    return out


def _groups(values: Any, width: int) -> list:
    return [list(group) for group in per_effector(values, 0, width, ())]


def _norm(x) -> float:
    return math.sqrt(sum(float(c) ** 2 for c in x))


def _millimetre_problems(name: str, v: dict) -> list:
    out = []
    for pname, width in _LENGTHS:
        far = [g for g in _groups(v.get(pname), width) if _norm(g) > LONGEST_LENGTH]
        if far:
            example = far[0]
            given = ', '.join(repr(float(c)) for c in example)
            metres = ', '.join(repr(round(c / 1000.0, 9)) for c in example)
            out.append(Problem(
                'warning', name, pname,
                f'{_norm(example):.6g} m from the object frame origin: no grasp on one object '
                f'spans more than {LONGEST_LENGTH:g} m; lengths are in metres',
                f'did you mean metres? [{given}] -> [{metres}]'))
    return out


def _com_problems(name: str, v: dict) -> list:
    contacts = _groups(v.get('contact_positions'), 3)
    com = list(v.get('object_com') or [])
    if len(contacts) < 2 or len(com) != 3 or _norm(com) > LONGEST_LENGTH:
        return []  # no static contacts to compare with, or already reported as millimetres
    centre = [sum(c[i] for c in contacts) / len(contacts) for i in range(3)]
    reach = max(_norm([c[i] - centre[i] for i in range(3)]) for c in contacts)
    off = _norm([com[i] - centre[i] for i in range(3)])
    if off <= max(3.0 * reach, 0.5):
        return []
    return [Problem('warning', name, 'object_com',
                    f"the centre of mass is {off:.3g} m from the contacts' centre, {off / max(reach, 1e-9):.3g} "
                    'times their spread: the object model and the grasp do not fit together',
                    'object_com in the object frame, in metres (the frame of contact_positions)')]


def _quaternion_problems(name: str, v: dict) -> list:
    out = []
    for pname in _QUATERNIONS:
        for i, q in enumerate(_groups(v.get(pname), 4)):
            size = _norm(q)
            if size == 0.0 or abs(size - 1.0) <= QUATERNION_TOLERANCE:
                continue
            unit = [c / size for c in q]
            angle = math.degrees(2.0 * math.atan2(_norm(unit[:3]), abs(unit[3])))
            axis = [c / _norm(unit[:3]) for c in unit[:3]] if _norm(unit[:3]) > 0.0 else [0.0] * 3
            out.append(Problem(
                'warning', name, pname,
                f'quaternion {i + 1} {_rounded(q)} has norm {size:.6g}: the node normalises it '
                f'to {_rounded(unit)} ({angle:.4g} deg about {_rounded(axis)}), '
                'which may not be the rotation meant',
                f'write the unit quaternion [qx, qy, qz, qw] of the rotation meant, '
                f'e.g. {_rounded(unit)}'))
            break
    return out


def _rounded(values) -> str:
    return '[' + ', '.join(f'{c:.4g}' for c in values) + ']'


def _mass_problems(name: str, v: dict) -> list:
    out = []
    heavy = [m for m in v.get('tool_masses') or [] if m > HEAVIEST_TOOL]
    if heavy:
        out.append(Problem('warning', name, 'tool_masses',
                           f'{heavy[0]:g} kg between a wrist sensor and the object: heavier than '
                           f'any tool a wrist carries (> {HEAVIEST_TOOL:g} kg); masses are in kg',
                           f'a weight in newtons? {heavy[0]:g} N / {STANDARD_GRAVITY} = '
                           f'{heavy[0] / STANDARD_GRAVITY:.3g} kg'))
    mass = v.get('object_mass')
    if isinstance(mass, float) and mass > HEAVIEST_OBJECT:
        out.append(Problem('warning', name, 'object_mass',
                           f'{mass:g} kg: beyond any arm this package drives (> {HEAVIEST_OBJECT:g} kg)',
                           f'masses are in kg: {mass:g} g would be {mass / 1000.0:g} kg'))
    return out


def _gravity_problems(name: str, v: dict) -> list:
    g = list(v.get('gravity') or [])
    if len(g) != 3:
        return []
    size = _norm(g)
    if size == 0.0 or abs(size - STANDARD_GRAVITY) <= 0.5:
        return []
    hint = (f'in mm/s^2? {_rounded(g)} -> {_rounded([c / 1000.0 for c in g])}' if size > 1000.0
            else f'a vector of norm about {STANDARD_GRAVITY}, e.g. [0.0, 0.0, -{STANDARD_GRAVITY}]')
    return [Problem('warning', name, 'gravity', f'norm {size:.6g} m/s^2, not about '
                    f"{STANDARD_GRAVITY} (the tools' weights scale with it)", hint)]
