"""What the demo changes in a run's sections before it starts (no ROS).

A run is a scenario's sections (node name -> parameters) with the command line's changes:
the distributor's internal-load feedback (:func:`apply_feedback`), a calibration file given
to the nodes with the simulator's truth kept (:func:`load_calibration`). The effector
model's own changes are its entry's ``prepare`` (:mod:`.models`).
"""
from __future__ import annotations

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
