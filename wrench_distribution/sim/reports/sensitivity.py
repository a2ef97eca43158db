"""Which belief parameter limits which element of the internal load (no ROS needed).

The analyzer's read-out is a function of the raw readings and of what it is told: sensor
biases, tool masses and centres of mass, where each contact is on the object (the grasp:
``contact_positions``, ``contact_orientations``), how the sensor sits on its contact (the
pads' deflection), the object's mass and centre of mass. The simulator knows the truth of
each. Over a run's steady window, with the mean raw readings ``m`` (the read-out is linear in
them), each parameter's contribution to the estimate's error is a finite difference of the
package's own read-out at the run's geometry:

    ``c_k = 1/2 [readout(belief) - readout(belief, k true)] + 1/2 [readout(truth, k believed) - readout(truth)]``

With every parameter true the read-out is the truth's yardstick (the true contacts' basis:
true contacts, true object). Taken from both ends, the shares add up to the gap
(``estimate - truth``) to second order: a bias of newtons seen through a grasp turned by
degrees is shared between the two, where one end alone would leave the cross term out.
Closed loop, the integral feedback drives the estimate to the command, so the truth sits at
``-sum_k c_k`` from it. After a free tare the biases are not a belief of their own: they are what the tare
measured with the believed tools (``b = m_free + s T_tool(belief)``), and they change with
the tool parameters: a tool mass or centre-of-mass error then counts only where gravity in
the sensor frame has changed since the tare. See docs/simulator.md, "Real cell".
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from wrench_distribution.core.spatial import matrix_to_quaternion, quaternion_to_matrix

from ..scenarios.parts import true_contacts, true_object
from ...config.arrays import rows as _group

#: Belief parameters, per effector (``<name>(<effector>)``) then of the object.
EFFECTOR_PARAMETERS = ('sensor_bias', 'tool_mass', 'tool_com', 'grasp_position',
                       'grasp_orientation', 'pad_deflection')
OBJECT_PARAMETERS = ('object_mass', 'object_com')


def readout(params: Mapping, readings: np.ndarray, tare: Optional[np.ndarray] = None) -> np.ndarray:
    """Return the analyzer's internal load for mean raw readings, under a parameter set.

    :param params: validated analyzer parameters (static contacts, gravity in the object
        frame).
    :param readings: (n, 6) raw readings, sensor frames.
    :param tare: (n, 6) mean raw readings of a free tare (the biases then follow the tools),
        or None (``sensor_biases`` as given).
    :return: (m,) the internal load in the basis of ``params``
    """
    from wrench_distribution.config import load_analyzer_config
    from wrench_distribution.core import LoadDistributor
    config = load_analyzer_config(params)
    contacts, models = config.contacts, config.sensors
    n = len(models)
    gravity = np.asarray(config.gravity, float)
    wrenches = np.zeros((n, 6))
    for i, (contact, model) in enumerate(zip(contacts, models)):
        g_contact = quaternion_to_matrix(contact.orientation).T @ gravity
        if tare is None:
            bias = _group(config.settings.sensor_biases, n, 6, [0.0] * 6)[i]
        else:  # free: sign * (m_free - b) + tool = 0
            bias = tare[i] + model.sign * model.tool_wrench(g_contact)
        wrenches[i] = model.to_contact(readings[i] - bias, g_contact)
    return np.asarray(LoadDistributor(list(contacts), config.object_model, config.options)
                      .analyze(wrenches).internal_load)


def tare_readings(params: Mapping, biases) -> np.ndarray:
    """Return the free readings a tare saw, from the biases it wrote with the believed tools.

    :param params: validated analyzer parameters (the belief the tare used).
    :param biases: (n, 6) the biases the tare wrote.
    :return: (n, 6) ``m_free = b - s T_tool(belief)``
    """
    from wrench_distribution.config import load_analyzer_config
    config = load_analyzer_config(params)
    gravity = np.asarray(config.gravity, float)
    biases = np.asarray(biases, float).reshape(len(config.sensors), 6)
    return np.array([b - model.sign * model.tool_wrench(
        quaternion_to_matrix(contact.orientation).T @ gravity)
        for b, model, contact in zip(biases, config.sensors, config.contacts)])


def _sensor_on_contact(sim: Mapping, n: int, deflection: np.ndarray) -> tuple:
    """Return where each true sensor sits in its contact frame, its pad deflected.

    :param sim: validated ``object_sim`` parameters (the truth).
    :param n: number of effectors.
    :param deflection: (n, 6) the grasp pads' static deflection ``[f / k, t / k_r]``, contact
        axes: the effector frame is ``R_c exp(phi)`` at ``p_c + R_c d``.
    :return: ``(positions (3 n), quaternions (4 n))``, the analyzer's sensor parameters
    """
    from wrench_distribution.core.spatial import exp_so3
    sensor_pos = _group(sim['sensor_positions'], n, 3, [0.0] * 3)
    sensor_q = _group(sim['sensor_orientations'], n, 4, [0.0, 0.0, 0.0, 1.0])
    positions, quaternions = [], []
    for i in range(n):
        pad_rot = exp_so3(deflection[i, 3:])
        positions += list(deflection[i, :3] + pad_rot @ sensor_pos[i])
        quaternions += list(matrix_to_quaternion(pad_rot @ quaternion_to_matrix(sensor_q[i])))
    return positions, quaternions


def pad_deflection(sim: Mapping, true_wrenches: np.ndarray) -> np.ndarray:
    """Return the grasp pads' static deflection under the true contact wrenches.

    The grasp spring (sim/grasp.py): ``f = k (p_e - p_c)``, ``t = k_r log(R_e R_c^T)``.

    :param sim: validated ``object_sim`` parameters.
    :param true_wrenches: (n, 6) true contact frames about the true contacts.
    :return: (n, 6) ``[f / k, t / k_r]`` (rotation 0 without rotational stiffness)
    """
    w = np.asarray(true_wrenches, float)
    k, k_r = float(sim['grasp_stiffness']), float(sim['grasp_rot_stiffness'])
    return np.concatenate([w[:, :3] / k, w[:, 3:] / k_r if k_r > 0 else 0.0 * w[:, 3:]], axis=1)


def _true_grasp(sim: Mapping, belief: Mapping, i: int, effector: str) -> dict:
    """Return the analyzer's contacts with effector ``i``'s position, then orientation, true.

    :param sim: validated ``object_sim`` parameters (the truth: configured contacts and errors).
    :param belief: validated analyzer parameters (its contacts).
    :param i: the effector's index.
    :param effector: its name.
    :return: ``{'grasp_position(<effector>)': {'contact_positions': ...},
        'grasp_orientation(<effector>)': {'contact_orientations': ...}}``
    """
    n = len(belief['effectors'])
    positions, rotations = true_contacts(
        _group(sim['contact_positions'], n, 3, [0.0] * 3),
        _group(sim['contact_orientations'], n, 4, [0.0, 0.0, 0.0, 1.0]),
        _group(sim['contact_position_errors'], n, 3, [0.0] * 3),
        _group(sim['contact_orientation_errors'], n, 3, [0.0] * 3))
    pos = _group(belief['contact_positions'], n, 3, [0.0] * 3).copy()
    quat = _group(belief['contact_orientations'], n, 4, [0.0, 0.0, 0.0, 1.0]).copy()
    pos[i] = positions[i]
    quat[i] = matrix_to_quaternion(rotations[i])
    return {f'grasp_position({effector})': {'contact_positions': pos.ravel().tolist()},
            f'grasp_orientation({effector})': {'contact_orientations': quat.ravel().tolist()}}


def true_values(sections: Mapping, true_wrenches: Optional[np.ndarray] = None) -> dict:
    """Return, per belief parameter, the analyzer parameters that set it to the simulator's truth.

    :param sections: validated sections of a scenario (``object_sim``: the truth;
        ``wrench_analyzer``: the belief).
    :param true_wrenches: (n, 6) mean true contact wrenches (their pads' deflection is then a
        parameter, ``pad_deflection``), or None.
    :return: ``{'<parameter>(<effector>)' or '<parameter>': {analyzer parameter: value}}``
    """
    sim, belief = sections['object_sim'], sections['wrench_analyzer']
    effectors = list(belief['effectors'])
    n = len(effectors)
    truth = {'sensor_bias': _group(sim['sensor_biases'], n, 6, [0.0] * 6),
             'tool_mass': np.asarray(sim['tool_masses'] or [0.0] * n, float).reshape(n, 1),
             'tool_com': _group(sim['tool_coms'], n, 3, [0.0] * 3)}
    names = {'sensor_bias': 'sensor_biases', 'tool_mass': 'tool_masses', 'tool_com': 'tool_coms'}
    widths = {'sensor_bias': 6, 'tool_mass': 1, 'tool_com': 3}
    defaults = {'sensor_bias': [0.0] * 6, 'tool_mass': [0.0], 'tool_com': [0.0] * 3}
    out = {}
    pads = None if true_wrenches is None else _sensor_on_contact(sim, n, pad_deflection(sim, true_wrenches))
    for i, effector in enumerate(effectors):
        for key in ('sensor_bias', 'tool_mass', 'tool_com'):
            values = _group(belief[names[key]], n, widths[key], defaults[key]).copy()
            values[i] = truth[key][i]
            out[f'{key}({effector})'] = {names[key]: values.ravel().tolist()}
        out.update(_true_grasp(sim, belief, i, effector))
        if pads is not None:
            positions, quaternions = pads
            pos = _group(belief['sensor_positions'], n, 3, [0.0] * 3).copy()
            quat = _group(belief['sensor_orientations'], n, 4, [0.0, 0.0, 0.0, 1.0]).copy()
            pos[i] = positions[3 * i:3 * i + 3]
            quat[i] = quaternions[4 * i:4 * i + 4]
            out[f'pad_deflection({effector})'] = {'sensor_positions': pos.ravel().tolist(),
                                                  'sensor_orientations': quat.ravel().tolist()}
    mass, com = true_object(sim)
    out['object_mass'] = {'object_mass': mass}
    out['object_com'] = {'object_com': [float(c) for c in com]}
    return out


#: Per analyzer parameter: (values per effector, the default of an empty list).
_LAYOUT = {'sensor_biases': (6, [0.0] * 6), 'tool_masses': (1, [0.0]), 'tool_coms': (3, [0.0] * 3),
           'contact_positions': (3, [0.0] * 3), 'contact_orientations': (4, [0.0, 0.0, 0.0, 1.0]),
           'sensor_positions': (3, [0.0] * 3), 'sensor_orientations': (4, [0.0, 0.0, 0.0, 1.0])}


def _expanded(params: Mapping, key: str, n: int):
    """Return a parameter's value with an empty per-effector list filled with its default."""
    if key not in _LAYOUT:
        return np.asarray(params[key], float)
    width, default = _LAYOUT[key]
    return _group(params[key], n, width, default).ravel()


def _swapped(params: Mapping, belief: Mapping, change: Mapping, n: int, to_change: bool) -> dict:
    """Return ``params`` with the elements ``change`` alters in ``belief`` set to it (or back).

    :param to_change: set them to ``change``'s values; else back to ``belief``'s.
    """
    out = dict(params)
    for key, value in change.items():
        base, new = _expanded(belief, key, n), np.asarray(value, float)
        current = _expanded(params, key, n).copy()
        altered = ~np.isclose(new, base, rtol=0.0, atol=0.0)
        current[altered] = (new if to_change else base)[altered]
        out[key] = float(current) if current.ndim == 0 else current.tolist()
    return out


def contributions(sections: Mapping, readings: np.ndarray, tare: Optional[np.ndarray] = None,
                  true_wrenches: Optional[np.ndarray] = None) -> dict:
    """Return each belief parameter's contribution to the estimate's error, per element.

    :param sections: validated sections of the run.
    :param readings: (n, 6) mean raw readings over the window.
    :param tare: (n, 6) mean raw readings of the free tare, or None when not tared.
    :param true_wrenches: (n, 6) mean true contact wrenches (for the pads' deflection).
    :return: ``{'<parameter>': (m,)}``, the mean of ``readout(belief) - readout(belief, it
        true)`` and ``readout(truth, it believed) - readout(truth)``; the bias parameters
        are absent after a tare (the tare sets them).
    """
    belief = dict(sections['wrench_analyzer'])
    n = len(belief['effectors'])
    changes = {name: change for name, change in true_values(sections, true_wrenches).items()
               if tare is None or not name.startswith('sensor_bias')}
    truth = belief
    for change in changes.values():
        truth = _swapped(truth, belief, change, n, True)
    from_belief, from_truth = readout(belief, readings, tare), readout(truth, readings, tare)
    return {name: 0.5 * (from_belief - readout(_swapped(belief, belief, change, n, True), readings, tare))
            + 0.5 * (readout(_swapped(truth, belief, change, n, False), readings, tare) - from_truth)
            for name, change in changes.items()}


#: A parameter is named for an element when its contribution reaches this share of the target.
NAMED_SHARE = 0.25


def limiting_parameters(contribution: Mapping[str, np.ndarray], index: int, limit: float) -> list:
    """Name the parameters whose contribution to one element reaches a quarter of its target.

    :param contribution: from :func:`contributions`.
    :param index: the element's index in the basis.
    :param limit: the element's target.
    :return: ``[(parameter, contribution)]``, largest first
    """
    items = [(name, float(values[index])) for name, values in contribution.items()
             if abs(values[index]) >= NAMED_SHARE * limit]
    return sorted(items, key=lambda item: -abs(item[1]))
