"""What the demo changes in a run's sections before it starts (no ROS).

A run is a scenario's sections (node name -> parameters) with the command line's changes:
the distributor's internal-load feedback (:func:`apply_feedback`), a calibration file given
to the nodes with the simulator's truth kept (:func:`load_calibration`), the calibration's
motions taken out of the timeline (:func:`without_calibration_motions`). The effector
model's own changes are its entry's ``prepare`` (:mod:`.models`).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .parts import true_object
from .sections import sim_params
from ...core.safe_load import load_document

#: The internal-load feedback the demo switches on with ``--internal-load-feedback on``
#: (the distributor's parameters; gains per element, one value for all). Docs: theory.md.
FEEDBACK_PARAMETERS = {
    'internal_load_feedback': True,
    'feedback_topic': 'measured/internal_load',
    'feedback_kp': [0.2],
    'feedback_ki': [4.0],
    'feedback_integral_limit': 10.0,
    'feedback_correction_limit': 10.0,
    'feedback_timeout': 0.1,
}


def apply_feedback(sections: dict) -> None:
    """Switch the distributor's internal-load feedback on in a run's sections.

    :param sections: node name -> parameters (changed in place).
    """
    sections['wrench_distributor'].update(
        {k: list(v) if isinstance(v, list) else v for k, v in FEEDBACK_PARAMETERS.items()})


def read_calibration(path) -> dict:
    """Return the analyzer's parameters of a calibration file (``~/save_calibration``, ``identify``).

    :param path: the file.
    :return: ``{parameter: value}``
    :raises ValueError: for a file without an analyzer section
    """
    document = load_document(str(path), 'calibration file') or {}
    for key, section in document.items():
        if str(key).split('/')[-1] == 'wrench_analyzer':
            return dict((section or {}).get('ros__parameters') or {})
    raise ValueError(f'{path}: no wrench_analyzer section')


def load_calibration(sections: dict, path) -> None:
    """Give a run the calibration file, as a later ``--params-file`` would, the truth kept.

    The analyzer takes every parameter of the file; the identified object goes into every
    node that models it (the distributor, the controller and the simulator's belief share it),
    and the simulator's ``object_mass_ratio`` and ``object_com_error`` are set so that its true
    object stays the scenario's.

    :param sections: node name -> parameters (changed in place).
    :param path: the calibration file.
    """
    calibration = read_calibration(path)
    mass, com = true_object(sim_params(sections['object_sim']))
    sections['wrench_analyzer'].update(calibration)
    shared = {k: calibration[k] for k in ('object_mass', 'object_com') if k in calibration}
    for section in sections.values():
        section.update({k: list(v) if isinstance(v, list) else v for k, v in shared.items()
                        if k in section})
    sim = sections['object_sim']
    sim['object_mass_ratio'] = float(mass / float(sim['object_mass']))
    sim['object_com_error'] = [float(x) for x in com - np.asarray(sim['object_com'], float)]


def _tilt_rows(tilts) -> np.ndarray:
    return np.asarray(tilts or [], dtype=float).reshape(-1, 5)


def calibration_motions(sim: Mapping, controller: Mapping) -> tuple:
    """Return a scenario's calibration motions: the free tilts and the held tilts before the hold.

    The free tilts (``object_sim free_tilts``) turn the open grippers before the grasp; the
    held ones (``object_controller tilts``) turn the held object before the last
    internal-load change (the tilts after it are the hold being judged).

    :param sim: the simulator's validated parameters.
    :param controller: the controller's validated parameters.
    :return: ``(free, held)``, rows ``(start s, duration s, rotation vector)``, in time order
    """
    from ...config.handles import parse_schedule
    last_change = max((when for when, _ in parse_schedule(controller['internal_load_schedule'])),
                      default=np.inf)
    held = _tilt_rows(controller['tilts'])
    return _tilt_rows(sim['free_tilts']), held[held[:, 0] < last_change]


def calibration_spans(sim: Mapping, controller: Mapping) -> list:
    """Return the spans of :func:`calibration_motions`, ``[(start s, end s), ...]``.

    :param sim: the simulator's validated parameters.
    :param controller: the controller's validated parameters.
    :return: each group from its first turn's start to its last turn's end, in time order
        (none for a scenario without such motions)
    """
    return [(float(rows[0, 0]), float(rows[-1, 0] + rows[-1, 1]))
            for rows in calibration_motions(sim, controller) if len(rows)]


def without_calibration_motions(sections: dict, checked: dict) -> None:
    """Cut the calibration's motions out of a run's timeline: the hold comes sooner.

    For the runs that only hold (``--calibrate compare`` after the calibration): each span of
    :func:`calibration_spans` is removed, its tilts dropped and every later time (the grasp,
    the fixture's release, the move, the schedule, the tilts being judged, the duration)
    moved earlier by its length, so the hold is the same motion under the same loads. The tare
    (before the grasp) then finds the grippers level, as after the free tilts.

    :param sections: node name -> parameters (changed in place).
    :param checked: the same sections validated (their values and defaults).
    """
    from ...config.handles import format_schedule, parse_schedule
    sim, controller = checked['object_sim'], checked['object_controller']
    spans = calibration_spans(sim, controller)
    if not spans:
        return

    def moved(t: float) -> float:  # a time inside a span goes to the span's start
        return round(t - sum(min(t, end) - start for start, end in spans if t > start), 9)

    def kept(tilts) -> list:
        rows = [row for row in _tilt_rows(tilts)
                if not any(start <= row[0] < end for start, end in spans)]
        return [float(moved(row[0])) if i == 0 else float(value)
                for row in rows for i, value in enumerate(row)]
    out_sim, out_controller = sections['object_sim'], sections['object_controller']
    for key in ('grasp_time', 'release_time', 'arm_move_start', 'duration'):
        out_sim[key] = float(moved(sim[key]))
    out_sim['free_tilts'], out_sim['arm_tilts'] = [], kept(sim['arm_tilts'])
    out_controller['move_start'] = float(moved(controller['move_start']))
    out_controller['tilts'] = kept(controller['tilts'])
    out_controller['internal_load_schedule'] = format_schedule(
        (moved(when), handles) for when, handles in parse_schedule(controller['internal_load_schedule']))
