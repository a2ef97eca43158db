"""What each step of a real cell's procedure buys: tare off/on x open/closed loop (no ROS needed).

``python -m wrench_distribution.sim.demo --scenario dual_arm_real_cell --tare compare`` makes the
four runs; :func:`compare` reads their ``elements.json`` (judged on the simulator's truth,
:mod:`.elements`) and writes one table: per element the command, then per run the
true mean and the analyzer's estimate; the elements outside the target in the tared closed
loop, and the belief parameters that limit them (:mod:`.sensitivity`). See
docs/simulator.md, "Real cell".

The calibrated procedure (``--calibrate compare``, scenario ``dual_arm_real_cell_tilt``):
:func:`identified_vs_truth` compares a saved calibration with the simulator's truth,
:func:`..scenarios.runs.load_calibration` gives it to a run, :func:`compare_calibration` writes the table of
the hold through the tilt with the identified parameters and with the typed guesses.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from ..scenarios.parts import true_contacts, true_object
from ...config.arrays import rows as _per
from ...core.spatial import exp_so3, log_so3, quaternion_to_matrix

#: The four runs, in the order of the procedure: (label, tare, internal-load feedback).
PHASES = (('untared, open loop', 'off', 'off'), ('untared, closed loop', 'off', 'on'),
          ('tared, open loop', 'on', 'off'), ('tared, closed loop', 'on', 'on'))


def compare(runs: Mapping[str, Path]) -> tuple:
    """Return the table of the four runs, as text and as JSON.

    :param runs: label (:data:`PHASES`) -> the run's output directory.
    :return: ``(text, summary)``
    """
    loaded = {label: json.loads((Path(path) / 'elements.json').read_text())
              for label, path in runs.items()}
    labels = [label for label, _, _ in PHASES if label in loaded]
    first = loaded[labels[0]]['elements']
    lines = ['Real cell, judged on the truth: per element the command, then the true mean / '
             'the estimate of each run (* outside the target)',
             f'  {"element":22s} {"unit":4s} {"command":>8s} {"target":>7s} '
             + ' '.join(f'{label:>22s}' for label in labels)]
    table = {}
    for name, element in first.items():
        cells, row = [], {'unit': element['unit'], 'commanded': element['commanded'],
                          'tolerance': element['tolerance']}
        for label in labels:
            e = loaded[label]['elements'][name]
            mark = ' ' if e['within_tolerance'] else '*'
            cells.append(f'{e["true_mean"]:9.3f}{mark}/{e["estimated_mean"]:9.3f}  ')
            row[label] = {k: e[k] for k in ('true_mean', 'estimated_mean', 'true_error_rms',
                                            'gap_mean', 'within_tolerance')}
        table[name] = row
        lines.append(f'  {name:22s} {element["unit"]:4s} {element["commanded"]:8.3f} '
                     f'{element["tolerance"]:7.3f} ' + ' '.join(f'{c:>22s}' for c in cells))
    final = loaded.get('tared, closed loop')
    limited = {}
    if final is not None:
        for name, e in final['elements'].items():
            if not e['within_tolerance']:
                limited[name] = e.get('limited_by', [])
        lines.append('Tared closed loop: ' + (
            'every element within its target on the truth' if not limited else
            'outside the target on the truth, limited by parameters neither the tare nor the '
            'loop can know (calibration):'))
        for name, by in limited.items():
            lines.append(f'  {name}: ' + (', '.join(
                f'{c["parameter"]} {c["contribution"]:+.3f}' for c in by) or
                'no single parameter reaches a quarter of the target'))
    summary = {'runs': {label: str(runs[label]) for label in labels}, 'elements': table,
               'tared_closed_loop_limited_by': limited}
    return '\n'.join(lines), summary


#: The targets for the identified parameters: (unit, absolute target, relative target).
CALIBRATION_TARGETS = {'object mass': ('kg', 0.005, 0.005), 'object com': ('m', 0.002, 0.0),
                       'object com, contacts': ('m', 0.002, 0.0),
                       'tool mass': ('kg', 0.005, 0.0), 'tool com': ('m', None, 0.0),
                       'force bias': ('N', 0.02, 0.0), 'torque bias': ('N*m', 0.002, 0.0),
                       'mounting rotation': ('deg', 0.2, 0.0)}


def _true_mountings(sim: Mapping, analyzer: Mapping) -> np.ndarray:
    """Each sensor's true rotation on its believed mounting, rotation vectors (deg).

    The true sensor is ``exp(e) R_c S_true`` in the object frame (``e`` the grasp's orientation
    error), the believed one ``R_c S_believed``: what a mounting calibration can find is
    ``(R_c S_believed)^T exp(e) R_c S_true``, the grasp's turn seen from the sensor.
    """
    n = len(sim['effectors'])
    contacts = _per(sim['contact_orientations'], n, 4, [0, 0, 0, 1])
    errors = _per(sim['contact_orientation_errors'], n, 3, [0, 0, 0])
    true_s = _per(sim['sensor_orientations'], n, 4, [0, 0, 0, 1])
    believed_s = _per(analyzer['sensor_orientations'], n, 4, [0, 0, 0, 1])
    out = []
    for q_c, e, q_t, q_b in zip(contacts, errors, true_s, believed_s):
        believed = quaternion_to_matrix(q_c) @ quaternion_to_matrix(q_b)
        true = exp_so3(e) @ quaternion_to_matrix(q_c) @ quaternion_to_matrix(q_t)
        out.append(np.degrees(log_so3(believed.T @ true)))
    return np.array(out)


def _row(name: str, who: str, truth, identified, guess) -> dict:
    """One parameter: truth, identified, typed guess, the error and whether it meets its figure."""
    unit, absolute, relative = CALIBRATION_TARGETS[name]
    truth, identified = np.atleast_1d(truth).astype(float), np.atleast_1d(identified).astype(float)
    error = identified - truth
    size = float(np.linalg.norm(error)) if name.startswith('object com') else float(np.abs(error).max())
    target = None if absolute is None else max(absolute, relative * float(np.abs(truth).max()))
    return {'parameter': name, 'effector': who, 'unit': unit, 'truth': truth.tolist(),
            'identified': identified.tolist(),
            'guess': None if guess is None else np.atleast_1d(guess).astype(float).tolist(),
            'error': size, 'target': target, 'within': None if target is None else size <= target}


def identified_vs_truth(calibration: Mapping, sim: Mapping, analyzer: Mapping) -> list:
    """Compare a saved calibration with the simulator's truth (and the typed guesses).

    :param calibration: the analyzer's parameters of the calibration file.
    :param sim: validated ``object_sim`` parameters (the truth).
    :param analyzer: validated analyzer parameters of the scenario (the typed guesses).
    :return: one row per parameter (and effector): see :func:`_row`; errors are the largest
        component's, the object's centre of mass the distance, also against the truth in the
        frame of the configured contacts (the true one shifted by the contacts' mean position
        error)
    """
    names, n = list(sim['effectors']), len(sim['effectors'])
    mass, com = true_object(sim)
    rows = [] if 'object_mass' not in calibration else [
        _row('object mass', '', mass, calibration['object_mass'], analyzer['object_mass']),
        _row('object com', '', com, calibration['object_com'], analyzer['object_com']),
        # the object frame as the configured contacts define it (their mean offset kept at zero):
        # a held object's statics cannot tell a common shift of the contacts from one of the object
        _row('object com, contacts', '', com - _per(sim['contact_position_errors'], n, 3, [0, 0, 0]).mean(axis=0),
             calibration['object_com'], analyzer['object_com'])]
    if 'tool_masses' not in calibration:
        return rows
    biases = _per(sim['sensor_biases'], n, 6, [0] * 6)
    found = _per(calibration['sensor_biases'], n, 6, [0] * 6)
    coms, guessed = _per(calibration['tool_coms'], n, 3, [0] * 3), _per(analyzer['tool_coms'], n, 3, [0] * 3)
    true_coms = _per(sim['tool_coms'], n, 3, [0] * 3)
    for i, who in enumerate(names):
        rows += [_row('tool mass', who, sim['tool_masses'][i], calibration['tool_masses'][i],
                      analyzer['tool_masses'][i]),
                 _row('tool com', who, true_coms[i], coms[i], guessed[i]),
                 _row('force bias', who, biases[i, :3], found[i, :3], None),
                 _row('torque bias', who, biases[i, 3:], found[i, 3:], None)]
    if calibration.get('sensor_orientations'):
        written = _per(calibration['sensor_orientations'], n, 4, [0, 0, 0, 1])
        believed = _per(analyzer['sensor_orientations'], n, 4, [0, 0, 0, 1])
        for i, (who, truth) in enumerate(zip(names, _true_mountings(sim, analyzer))):
            turn = quaternion_to_matrix(believed[i]).T @ quaternion_to_matrix(written[i])
            rows.append(_row('mounting rotation', who, truth, np.degrees(log_so3(turn)), [0, 0, 0]))
    return rows


def format_identified(rows: list) -> str:
    """Return the identified-vs-truth table as text."""
    def vec(values) -> str:
        return '-' if values is None else ' '.join(f'{v:8.4f}' for v in values)
    lines = ['Identified against the truth (typed guess; error: largest component, the object '
             "centre of mass the distance; * beyond the issue's figure)",
             f'  {"parameter":20s} {"effector":8s} {"unit":4s} {"truth":>26s} {"identified":>26s} '
             f'{"typed guess":>26s} {"error":>8s} {"target":>7s}']
    for r in rows:
        mark = ' ' if r['within'] in (None, True) else '*'
        target = '-' if r['target'] is None else f'{r["target"]:.3g}'
        lines.append(f'  {r["parameter"]:20s} {r["effector"]:8s} {r["unit"]:4s} {vec(r["truth"]):>26s} '
                     f'{vec(r["identified"]):>26s} {vec(r["guess"]):>26s} {r["error"]:8.4f}{mark}'
                     f'{target:>7s}')
    return '\n'.join(lines)


def compare_calibration(runs: Mapping[str, Path], rows: list) -> tuple:
    """Return the table of the calibrated procedure: identified vs truth, then the truth through the tilt.

    :param runs: label -> the run's output directory (``elements.json``), the identified run first.
    :param rows: :func:`identified_vs_truth`.
    :return: ``(text, summary)``
    """
    loaded = {label: json.loads((Path(path) / 'elements.json').read_text()) for label, path in runs.items()}
    labels = list(loaded)
    first = loaded[labels[0]]
    lo, hi = first['steady_window_s']
    lines = [format_identified(rows), '',
             f'True internal load through the tilt ({lo:g}-{hi:g} s, closed loop), true mean / estimate '
             '(* outside max(2 %, 0.2 N or 0.02 N*m) on the truth)',
             f'  {"element":22s} {"unit":4s} {"command":>8s} {"target":>7s} '
             + ' '.join(f'{label:>22s}' for label in labels)]
    table = {}
    for name, element in first['elements'].items():
        cells, row = [], {'unit': element['unit'], 'commanded': element['commanded'],
                          'tolerance': element['tolerance']}
        for label in labels:
            e = loaded[label]['elements'][name]
            cells.append(f'{e["true_mean"]:9.3f}{" " if e["within_tolerance"] else "*"}/'
                         f'{e["estimated_mean"]:9.3f}  ')
            row[label] = {k: e[k] for k in ('true_mean', 'estimated_mean', 'true_error_rms',
                                            'within_tolerance')}
            row[label]['limited_by'] = e.get('limited_by', [])
        table[name] = row
        lines.append(f'  {name:22s} {element["unit"]:4s} {element["commanded"]:8.3f} '
                     f'{element["tolerance"]:7.3f} ' + ' '.join(f'{c:>22s}' for c in cells))
    for name, e in first['elements'].items():
        if not e['within_tolerance']:
            lines.append(f'  {labels[0]}: {name} limited by ' + (', '.join(
                f'{c["parameter"]} {c["contribution"]:+.3f}' for c in e.get('limited_by', [])[:4])
                or 'no attribution (gravity turning, or no parameter reaches a quarter of the target)'))
    effectors = sorted({r['effector'] for r in rows if r['effector']})
    missing = [f'grasp_position({e})' for e in effectors]
    turns = any(r['parameter'] == 'mounting rotation' for r in rows)
    lines.append('Not identified by this procedure: ' + ', '.join(missing) + ' (where each grasp '
                 'sits on the object' + ("; the mounting rotations take in the grasps' turns where "
                                         'the sensors sit on the contacts)' if turns else ')'))
    return '\n'.join(lines), {'runs': {label: str(runs[label]) for label in labels},
                              'identified': rows, 'elements': table, 'not_identified': missing}


def grasps_vs_truth(calibration: Mapping, sim: Mapping) -> dict:
    """Compare identified contacts (``contact_positions``, ``contact_orientations``) with the truth.

    What the rests determine is where the contacts are relative to each other (a common rigid
    motion of all of them is the object frame's business): each contact's pose in the first
    one's frame, for the belief and for the identified contacts, against the truth.

    :param calibration: the analyzer's parameters of a calibration file.
    :param sim: validated ``object_sim`` parameters (the belief and its errors: the truth).
    :return: ``{'effectors': [{effector, true_error_mm, true_error_deg, correction_mm,
        correction_deg}], 'relative': [{effector, believed_mm, believed_deg, identified_mm,
        identified_deg}]}`` (rotation vectors in deg; relative errors as norms)
    """
    names, n = list(sim['effectors']), len(sim['effectors'])
    believed_p, believed_q = _per(sim['contact_positions'], n, 3, [0, 0, 0]), _per(sim['contact_orientations'], n, 4,
                                                                                   [0, 0, 0, 1])
    true_p, true_r = true_contacts(believed_p, believed_q, _per(sim['contact_position_errors'], n, 3, [0, 0, 0]),
                                   _per(sim['contact_orientation_errors'], n, 3, [0, 0, 0]))
    found_p = _per(calibration['contact_positions'], n, 3, [0, 0, 0])
    found_r = np.stack([quaternion_to_matrix(q) for q in _per(calibration['contact_orientations'], n, 4, [0, 0, 0, 1])])
    believed_r = np.stack([quaternion_to_matrix(q) for q in believed_q])
    effectors = [{'effector': who, 'true_error_mm': (1e3 * (true_p[i] - believed_p[i])).tolist(),
                  'true_error_deg': np.degrees(log_so3(true_r[i] @ believed_r[i].T)).tolist(),
                  'correction_mm': (1e3 * (found_p[i] - believed_p[i])).tolist(),
                  'correction_deg': np.degrees(log_so3(found_r[i] @ believed_r[i].T)).tolist()}
                 for i, who in enumerate(names)]

    def relative(p, r, j):
        return r[0].T @ (p[j] - p[0]), r[0].T @ r[j]
    rows = []
    for j in range(1, n):
        (tp, tr), (bp, br), (fp, fr) = (relative(true_p, true_r, j), relative(believed_p, believed_r, j),
                                        relative(found_p, found_r, j))
        rows.append({'effector': f'{names[j]} from {names[0]}',
                     'believed_mm': float(1e3 * np.linalg.norm(bp - tp)),
                     'believed_deg': float(np.degrees(np.linalg.norm(log_so3(tr.T @ br)))),
                     'identified_mm': float(1e3 * np.linalg.norm(fp - tp)),
                     'identified_deg': float(np.degrees(np.linalg.norm(log_so3(tr.T @ fr))))})
    return {'effectors': effectors, 'relative': rows}


def format_grasps(rows: Mapping) -> str:
    """Return the grasps-vs-truth comparison (:func:`grasps_vs_truth`) as text."""
    def vec(values) -> str:
        return ' '.join(f'{v:7.3f}' for v in values)
    lines = ['Grasps identified against the truth (object frame; the correction is the identified pose '
             'minus the configured one; a common motion of all contacts is not determined)',
             f'  {"effector":10s} {"true error mm":>23s} {"correction mm":>23s} {"true error deg":>23s} '
             f'{"correction deg":>23s}']
    for e in rows['effectors']:
        lines.append(f'  {e["effector"]:10s} {vec(e["true_error_mm"]):>23s} {vec(e["correction_mm"]):>23s} '
                     f'{vec(e["true_error_deg"]):>23s} {vec(e["correction_deg"]):>23s}')
    for r in rows['relative']:
        lines.append(f'  relative pose of {r["effector"]}: believed {r["believed_mm"]:.2f} mm, '
                     f'{r["believed_deg"]:.2f} deg off; identified {r["identified_mm"]:.2f} mm, '
                     f'{r["identified_deg"]:.2f} deg off')
    return '\n'.join(lines)
