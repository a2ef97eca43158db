"""Contacts that come and go, judged on the simulator's truth, one transition at a time.

The transitions are the controller's ``contact_weights_schedule``: an entry at ``t`` sets new
targets, which the distributor reaches within ``contact_transition_time``. For each one the
summary gives, over ``[t, t + contact_transition_time + SETTLE_AFTER]``: the largest change of a
force command per tick (:func:`_command_steps`), the error of the resultant the
contacts really apply to the object against the desired wrench, every contact's slip margin
(``mu f_n - |f_t|`` of its true force, while it carries load) and, just after the ramp, the
true internal load against the prescription scaled by the weights (docs/simulator.md,
"Contacts that come and go"). An entry the distributor refused (its actual weights, on
``contact_weights/actual``, never left their values) is marked ``refused`` and changes nothing
in the following transitions.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from .series import read_bag as read_series
from ...config.handles import parse_schedule, parse_weights_schedule
from ...core.codec import split_labels

#: Seconds after a ramp's end still counted as its transition (the springs settle).
SETTLE_AFTER = 0.1
#: Seconds after a ramp's end over which the true internal load is averaged.
LOAD_WINDOW = (0.05, 0.25)
#: A contact whose true normal force is below this (N) carries no load: no slip margin.
LOADED = 1.0
TRUTH_LOAD = 'object_sim/truth/internal_load_true_contacts'
ACTUAL_WEIGHTS = 'contact_weights/actual'


def _topics(effectors) -> list:
    return (['desired_wrench', 'object_sim/truth/object_wrench', TRUTH_LOAD,
             'object_sim/truth/internal_load', ACTUAL_WEIGHTS]
            + [f'{e}/wrench_command' for e in effectors]
            + [f'object_sim/truth/{e}/wrench' for e in effectors])


def transitions_summary(bag, sections: Mapping) -> Optional[dict]:
    """Summarise every scheduled weight change of a run on the truth.

    :param bag: the run's bag directory.
    :param sections: the run's validated sections (node name -> parameters).
    :return: JSON-ready ``{'transitions': [...], 'released_command_max_N': ...}``, or None
        for a run without a weights schedule
    """
    controller, sim = sections['object_controller'], sections['object_sim']
    schedule = parse_weights_schedule(controller['contact_weights_schedule'])
    if not schedule:
        return None
    effectors = list(sim['effectors'])
    series = read_series(bag, _topics(effectors))
    ramp = float(sections['wrench_distributor']['contact_transition_time'])
    mu = np.asarray(sim['friction_coefficients'] or [np.nan] * len(effectors), float)
    handles = {}
    for _, entry in parse_schedule(controller['internal_load_schedule']):
        handles = entry  # the last prescription (the scenarios keep one while stepping)
    weights = dict.fromkeys(effectors, 1.0)
    out, released = [], 0.0
    for k, (when, entry) in enumerate(schedule):
        before = dict(weights)
        weights.update(entry)
        end = when + ramp
        changed = {e: [before[e], w] for e, w in entry.items() if before[e] != w}
        refused = _refused(series.get(ACTUAL_WEIGHTS), changed, when, end + SETTLE_AFTER)
        if refused:
            weights = before
        one = {'start_s': when, 'end_s': end, 'weights': dict(weights), 'changed': changed,
               'refused': refused}
        one.update(_command_steps(series, effectors, when, end + SETTLE_AFTER))
        one.update(_resultant_error(series, when, end + SETTLE_AFTER))
        one['slip_margin_N'] = _slip_margins(series, effectors, mu, when, end + SETTLE_AFTER)
        one['internal_load'] = _true_load(series, handles, weights, end)
        one['normal_force_after_N'] = _normal_forces(series, effectors, end)
        out.append(one)
        following = schedule[k + 1][0] if k + 1 < len(schedule) else np.inf
        for i, e in enumerate(effectors):  # released between this ramp's end and the next change
            if weights[e] == 0.0:
                released = max(released, _command_max(series, e, end + 0.05, following - 1e-3))
    return {'transitions': out, 'released_command_max_N': released}


def _refused(actual, changed: Mapping, start: float, end: float) -> bool:
    """Tell whether no changed weight left its value in a window (the distributor refused the entry).

    :param actual: the series of the distributor's actual weights (labelled), or None: not recorded
        (every entry counts as accepted).
    :param changed: effector -> ``[before, after]``.
    """
    if actual is None or not changed or not len(actual.labels):
        return False
    names = split_labels(actual.labels[-1])
    inside = _window(actual, start, end)
    if not inside.any():
        return False
    values = actual.v[inside]
    return all(np.all(values[:, names.index(e)] == before) for e, (before, _) in changed.items()
               if e in names)


def _window(s, start: float, end: float) -> np.ndarray:
    return (s.t >= start) & (s.t <= end)


def _command_steps(series: Mapping, effectors, start: float, end: float) -> dict:
    """Largest change of a force command per tick, and whose.

    The tick is the commands' median stamp interval; two consecutive commands ``k`` ticks apart
    (a stream that paused: the ramp is paced by the stamps) count as ``k`` steps of the change.
    """
    steps = {}
    for e in effectors:
        s = series.get(f'{e}/wrench_command')
        if s is None:
            continue
        inside = _window(s, start, end)
        forces, stamps = s.v[inside, :3], np.asarray(s.t[inside], float)
        if len(forces) < 2:
            steps[e] = 0.0
            continue
        gaps = np.diff(stamps)
        tick = np.median(gaps)
        ticks = np.maximum(gaps / tick, 1.0) if tick > 0 else np.ones(len(gaps))
        steps[e] = float(np.max(np.linalg.norm(np.diff(forces, axis=0), axis=1) / ticks))
    worst = max(steps, key=steps.get) if steps else None
    return {'command_step_max_N': steps.get(worst), 'command_step_effector': worst,
            'command_step_N': steps}


def _resultant_error(series: Mapping, start: float, end: float) -> dict:
    """Largest error of the true resultant against the desired wrench at the same stamps."""
    desired, true = series.get('desired_wrench'), series.get('object_sim/truth/object_wrench')
    if desired is None or true is None:
        return {'resultant_force_error_max_N': None, 'resultant_torque_error_max_Nm': None}
    stamps, i, j = np.intersect1d(desired.t, true.t, return_indices=True)
    inside = (stamps >= start) & (stamps <= end)
    error = true.v[j[inside]] - desired.v[i[inside]]
    if not len(error):
        return {'resultant_force_error_max_N': None, 'resultant_torque_error_max_Nm': None}
    return {'resultant_force_error_max_N': float(np.max(np.linalg.norm(error[:, :3], axis=1))),
            'resultant_torque_error_max_Nm': float(np.max(np.linalg.norm(error[:, 3:], axis=1)))}


def _slip_margins(series: Mapping, effectors, mu: np.ndarray, start: float, end: float) -> dict:
    """Each contact's smallest ``mu f_n - |f_t|`` (N) while loaded; None: never loaded, or no friction."""
    margins = {}
    for e, coefficient in zip(effectors, mu):
        s = series.get(f'object_sim/truth/{e}/wrench')
        if s is None or not np.isfinite(coefficient):
            margins[e] = None
            continue
        force = s.v[_window(s, start, end), :3]
        loaded = force[force[:, 2] >= LOADED]
        margins[e] = float(np.min(coefficient * loaded[:, 2] - np.linalg.norm(loaded[:, :2], axis=1))) \
            if len(loaded) else None
    return margins


def _normal_forces(series: Mapping, effectors, end: float) -> dict:
    """Each contact's mean true normal force (N) just after a ramp (:data:`LOAD_WINDOW`)."""
    forces = {}
    for e in effectors:
        s = series.get(f'object_sim/truth/{e}/wrench')
        inside = None if s is None else _window(s, end + LOAD_WINDOW[0], end + LOAD_WINDOW[1])
        forces[e] = float(np.mean(s.v[inside, 2])) if inside is not None and inside.any() else None
    return forces


def _true_load(series: Mapping, handles: Mapping, weights: Mapping, end: float) -> list:
    """Return the true internal load just after a ramp against the prescription scaled by the weights.

    The truth's basis is that of every contact: an element that involves a released contact
    is no yardstick for the distribution without it (commanded None, not judged).
    """
    s = series.get(TRUTH_LOAD) or series.get('object_sim/truth/internal_load')
    if s is None or not len(s.labels):
        return []
    names = split_labels(s.labels[-1])
    inside = _window(s, end + LOAD_WINDOW[0], end + LOAD_WINDOW[1])
    if not inside.any():
        return []
    true = np.nanmean(s.v[inside, :len(names)], axis=0)
    rows = []
    for name, value in zip(names, true):
        touched = [e for e in weights if e in name[name.find('(') + 1:].rstrip(')').split(',')]
        scale = float(np.prod([weights[e] for e in touched])) if touched else 1.0
        commanded = float(handles.get(name, 0.0)) * scale if scale > 0.0 else None
        rows.append({'name': name, 'commanded': commanded, 'true': float(value)})
    return rows


def _command_max(series: Mapping, effector: str, start: float, end: float) -> float:
    """Largest force-and-torque command component of one effector in a window."""
    s = series.get(f'{effector}/wrench_command')
    if s is None:
        return 0.0
    inside = _window(s, start, end)
    return float(np.max(np.abs(s.v[inside]))) if inside.any() else 0.0


def format_transitions(summary: Mapping) -> list:
    """Text lines of :func:`transitions_summary`, one block per transition.

    :param summary: from :func:`transitions_summary`.
    :return: lines
    """
    lines = ['', "Contacts that come and go (the simulator's truth, per transition: "
                 'ramp plus %.1f s)' % SETTLE_AFTER]
    for one in summary['transitions']:
        changed = ', '.join(f'{e} {a:g} -> {b:g}' for e, (a, b) in one['changed'].items()) or 'no change'
        if one.get('refused'):
            changed += ' REFUSED by the distributor (the weights stayed)'
        lines.append(f"  {one['start_s']:.2f}-{one['end_s']:.2f} s  {changed}: largest command step "
                     f"{_number(one['command_step_max_N'], '.3f')} N/tick ({one['command_step_effector']}), "
                     f"resultant error max {_number(one['resultant_force_error_max_N'], '.3f')} N, "
                     f"{_number(one['resultant_torque_error_max_Nm'], '.4f')} N*m")
        lines.append('      slip margin mu f_n - |f_t| (min while loaded): ' + ', '.join(
            f"{e} {_number(m, '.2f')} N" if m is not None else f'{e} unloaded'
            for e, m in one['slip_margin_N'].items()))
        lines.append('      true normal force after the ramp: ' + ', '.join(
            f"{e} {_number(f, '.2f')} N" for e, f in one['normal_force_after_N'].items()))
        if one['internal_load']:
            lines.append('      internal load, true (commanded): ' + ', '.join(
                f"{row['name']} {row['true']:.2f} ({_number(row['commanded'], '.2f')})"
                for row in one['internal_load']))
    lines.append(f"  released contacts' largest command component while released: "
                 f"{summary['released_command_max_N']:g}; internal-load elements of a released "
                 "contact: n/a (the truth's basis is every contact's)")
    return lines


def _number(value, form: str) -> str:
    return 'n/a' if value is None else format(value, form)
