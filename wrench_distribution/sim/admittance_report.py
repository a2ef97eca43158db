"""Per-element summary and plot of an internal-load run, open or closed loop (no ROS needed).

The ``dual_arm_admittance`` demo asks: over a steady window (the commands constant, the
move over), how far is each element of the internal load the analyzer measures from the
one commanded? ``elements.json`` (and ``--summary-json PATH``) holds, per basis element,
``unit``, ``commanded``, ``measured_mean``, ``error_rms`` (RMS of measured minus
commanded over the window), ``tolerance`` (the closed-loop target max(2 %, 0.2 N or
0.02 N*m)) and ``within_tolerance``; plus ``limit_violations`` (published commands beyond
the distributor's force or torque limits), the window, and the convergence time after the
last change of the commands. The plot overlays the open-loop and the closed-loop runs
when both are in the output directory. See docs/simulator.md, section 8.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from wrench_distribution.config.sim import ARM_EFFECTOR_MODELS
from wrench_distribution.core.codec import zero_below_resolution

#: Closed-loop target per element: the larger of this fraction of the command and an
#: absolute floor by unit.
RELATIVE_TOLERANCE = 0.02
ABSOLUTE_TOLERANCE = {'N': 0.2, 'N*m': 0.02}

#: Seconds skipped after the move ends and after the last change of the commands.
STEADY_SETTLE = 0.5

#: Moving-average length (s) of the convergence test (the sensor noise is white).
CONVERGENCE_AVERAGE = 0.05

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


def follow_controller_move(sections: dict) -> None:
    """Give admittance arms the object controller's planned move as their reference.

    The demo stretches the controller's times with ``--duration``; the arms' copy follows.

    :param sections: node name -> parameters (changed in place).
    """
    sim, ctl = sections['object_sim'], sections['object_controller']
    if sim.get('effector_model') not in ARM_EFFECTOR_MODELS:
        return
    for name in ('move_start', 'move_duration', 'move_offset', 'move_rotation'):
        if name in ctl:
            value = ctl[name]  # a copy: a shared list would be written as a YAML alias
            sim['arm_' + name] = list(value) if isinstance(value, (list, tuple)) else value


def tolerance(commanded: float, unit: str) -> float:
    """Return the closed-loop target: max(2 % of the command, 0.2 N or 0.02 N*m).

    :param commanded: the element's command.
    :param unit: ``'N'`` or ``'N*m'``.
    :return: the largest accepted |measured - commanded|
    """
    return max(RELATIVE_TOLERANCE * abs(commanded), ABSOLUTE_TOLERANCE[unit])


def steady_window(checked: Mapping, duration: float) -> tuple:
    """Return the steady window: after the move and the last command change, to the end.

    :param checked: validated sections.
    :param duration: sim time of the run, s.
    :return: ``(start, end, last_change)`` in s
    """
    from .object_controller import parse_schedule
    ctl = checked['object_controller']
    schedule = parse_schedule(ctl['internal_load_schedule'])
    last_change = max([when for when, _ in schedule] + [checked['object_sim']['release_time']])
    move_end = ctl['move_start'] + ctl['move_duration']
    return max(last_change, move_end) + STEADY_SETTLE, duration, last_change


def _commanded(series_t: np.ndarray, checked: Mapping, dist) -> np.ndarray:
    """Commanded coordinates at each time, from the schedule (the core resolves the handles)."""
    from .object_controller import parse_schedule, scheduled
    schedule = parse_schedule(checked['object_controller']['internal_load_schedule'])
    return np.array([dist.internal_load_from_handles(scheduled(schedule, t)) for t in series_t])


def limit_violations(bag: Path, distributor: Mapping) -> int:
    """Count the published commands beyond the distributor's force or torque limits.

    :param bag: the run's bag directory.
    :param distributor: validated distributor parameters.
    :return: number of command messages whose force or torque norm exceeds its limit
    """
    from ..config.validation import per_effector_limits
    from .series import read_bag
    effectors = list(distributor['effectors'])
    topics = [f'{e}/wrench_command' for e in effectors]
    series = read_bag(bag, topics)
    n = len(effectors)
    forces = per_effector_limits(distributor['force_limits'], n)
    torques = per_effector_limits(distributor['torque_limits'], n)
    count = 0
    for topic, f_lim, t_lim in zip(topics, forces, torques):
        s = series.get(topic)
        if s is None or not len(s.t):
            continue
        beyond = (np.linalg.norm(s.v[:, :3], axis=1) > f_lim) | (
            np.linalg.norm(s.v[:, 3:], axis=1) > t_lim)
        count += int(beyond.sum())
    return count


def convergence_time(t: np.ndarray, error: np.ndarray, limits: np.ndarray, after: float,
                     period: float) -> Optional[float]:
    """Time after ``after`` from which every element stays within its limit.

    :param t: (k,) sample times, s.
    :param error: (k, m) measured minus commanded.
    :param limits: (m,) tolerances.
    :param after: the last change of the commands, s.
    :param period: sample period, s (for the moving average).
    :return: seconds, or None when it never settles
    """
    mask = t >= after
    if not mask.any():
        return None
    width = max(1, int(round(CONVERGENCE_AVERAGE / max(period, 1e-9))))
    kernel = np.ones(width) / width
    smooth = np.column_stack([np.convolve(e, kernel, mode='same') for e in error[mask].T])
    outside = np.any(np.abs(smooth) > limits, axis=1)
    if outside[-1]:
        return None
    last_out = np.flatnonzero(outside)
    index = 0 if not len(last_out) else last_out[-1] + 1
    return float(t[mask][index] - after)


def joint_arms_summary(bag: Path, effectors: list) -> Optional[dict]:
    """Summarise what the arms with joints went through, from ``joint_arms/status``.

    :param bag: the run's bag directory.
    :param effectors: the effector names, in the simulator's order.
    :return: per arm ``sigma_min`` (smallest singular value of the flange Jacobian over the
        run) and the final counts ``torque_saturations``, ``limit_clamps`` (joint reference
        clamped at a limit) and ``limit_violations`` (joints outside their limits), in
        controller periods; plus the totals. None when the topic was not recorded.
    """
    from .series import read_bag
    status = read_bag(bag, ['joint_arms/status']).get('joint_arms/status')
    if status is None or not len(status.t):
        return None
    values = status.v.reshape(len(status.t), len(effectors), 5)
    arms = {}
    for i, name in enumerate(effectors):
        arms[name] = {'sigma_min': float(np.nanmin(values[:, i, 1])),
                      'torque_saturations': int(values[-1, i, 2]),
                      'limit_clamps': int(values[-1, i, 3]),
                      'limit_violations': int(values[-1, i, 4])}
    return {'arms': arms,
            'sigma_min': min(a['sigma_min'] for a in arms.values()),
            'torque_saturations': sum(a['torque_saturations'] for a in arms.values()),
            'joint_limit_hits': sum(a['limit_clamps'] for a in arms.values()),
            'joint_limit_violations': sum(a['limit_violations'] for a in arms.values())}


def element_summary(out: Path, sections: Mapping, duration: float) -> dict:
    """Per-element summary of a run over its steady window.

    :param out: the run's output directory (``bag/`` inside).
    :param sections: the run's parameter sections.
    :param duration: sim time of the run, s.
    :return: JSON-ready summary; ``'_series'`` holds ``(t, measured, commanded)``.
    """
    from ..config.loading import contacts_from
    from ..core import LoadDistributor, ObjectModel
    from .report import _measured_internal_load, read_bag
    from .scenarios import validate_sections
    checked = validate_sections(sections)
    sim = checked['object_sim']
    dist = LoadDistributor(contacts_from(sim), ObjectModel(com=tuple(sim['object_com']),
                                                           mass=sim['object_mass']))
    names, units = list(dist.basis_names), list(dist.basis_units)
    lo, hi, last_change = steady_window(checked, duration)
    recorded = _measured_internal_load(read_bag(Path(out) / 'bag'), names)
    if recorded is None:
        raise ValueError(f'no measured/internal_load in {Path(out) / "bag"}')
    t, measured = recorded
    commanded = _commanded(t, checked, dist)
    window = (t >= lo) & (t <= hi)
    if not window.any():
        raise ValueError(f'no measured internal load in the steady window {lo:g}-{hi:g} s')
    error = measured - commanded
    limits = np.array([tolerance(c, u) for c, u in zip(commanded[window][-1], units)])
    elements = {}
    for k, (name, unit) in enumerate(zip(names, units)):
        mean = float(measured[window, k].mean())
        cmd = float(commanded[window][-1, k])
        elements[name] = {
            'unit': unit, 'commanded': cmd, 'measured_mean': mean,
            'error_rms': float(np.sqrt(np.mean(error[window, k] ** 2))),
            'error_mean': mean - cmd, 'tolerance': float(limits[k]),
            'within_tolerance': bool(abs(mean - cmd) <= limits[k])}
    period = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    feedback = bool(checked['wrench_distributor'].get('internal_load_feedback', False))
    summary = {
        'scenario_sections': sorted(sections), 'internal_load_feedback': feedback,
        'elements': elements,
        'limit_violations': limit_violations(Path(out) / 'bag', checked['wrench_distributor']),
        'steady_window_s': [lo, hi], 'samples_in_window': int(window.sum()),
        'all_within_tolerance': all(e['within_tolerance'] for e in elements.values()),
        'last_command_change_s': last_change,
        'convergence_time_s': convergence_time(t, error, limits, last_change, period),
        'tolerance_rule': 'max(2 % of the command, 0.2 N or 0.02 N*m) on the window mean',
        '_series': (t, measured, commanded, names, units)}
    joints = joint_arms_summary(Path(out) / 'bag', list(sim['effectors']))
    if joints is not None:
        summary['joint_arms'] = joints
    return summary


def write_element_summary(out: Path, sections: Mapping, duration: float,
                          summary_json: Optional[str], plot: bool) -> Optional[dict]:
    """Write ``elements.json`` (and ``summary_json``), the series and the plot of a run.

    Does nothing for a run of ideal force effectors unless ``summary_json`` is asked for.

    :param out: the run's output directory.
    :param sections: the run's parameter sections.
    :param duration: sim time, s.
    :param summary_json: an extra path for the summary, or None.
    :param plot: draw ``elements.png`` (with the other loop's run when it is there).
    :return: the summary, or None when not computed
    """
    if summary_json is None and (sections['object_sim'].get('effector_model')
                                 not in ARM_EFFECTOR_MODELS):
        return None
    try:
        summary = element_summary(out, sections, duration)
    except ValueError as e:
        print(f'demo: no element summary: {e}')
        return None
    t, measured, commanded, names, units = summary.pop('_series')
    np.savez(Path(out) / 'elements.npz', t=t, measured=measured, commanded=commanded,
             names=np.array(names), units=np.array(units))
    # per element: a residue of zero beside that element's own figures reads 0
    summary['elements'] = {name: zero_below_resolution(element)
                           for name, element in summary['elements'].items()}
    text = json.dumps(summary, indent=2)
    (Path(out) / 'elements.json').write_text(text + '\n')
    if summary_json:
        Path(summary_json).parent.mkdir(parents=True, exist_ok=True)
        Path(summary_json).write_text(text + '\n')
    print(format_elements(summary))
    if plot:
        plot_elements(Path(out), Path(out) / 'elements.png')
    return summary


def format_elements(summary: Mapping) -> str:
    """Return the per-element table as text.

    :param summary: from :func:`element_summary`.
    :return: lines
    """
    lo, hi = summary['steady_window_s']
    loop = 'closed loop' if summary['internal_load_feedback'] else 'open loop'
    lines = [f'Internal load per element, {loop}, steady window {lo:g}-{hi:g} s:',
             f'  {"element":22s} {"unit":4s} {"commanded":>10s} {"measured":>10s} '
             f'{"error rms":>10s} {"target":>8s}']
    for name, e in summary['elements'].items():
        lines.append(f'  {name:22s} {e["unit"]:4s} {e["commanded"]:10.3f} '
                     f'{e["measured_mean"]:10.3f} {e["error_rms"]:10.3f} '
                     f'{e["tolerance"]:8.3f}{"" if e["within_tolerance"] else "  outside"}')
    converged = summary['convergence_time_s']
    lines.append(f'  limit violations: {summary["limit_violations"]}; convergence after the '
                 'last change: ' + ('never' if converged is None else f'{converged:.2f} s'))
    joints = summary.get('joint_arms')
    if joints:
        lines.append('  arms with joints: ' + '; '.join(
            f'{name}: min singular value {a["sigma_min"]:.3f}, {a["torque_saturations"]} '
            f'torque saturations, {a["limit_clamps"]} joint-limit hits, '
            f'{a["limit_violations"]} joints outside their limits'
            for name, a in joints['arms'].items()))
    return '\n'.join(lines)


def _sibling(out: Path) -> Optional[Path]:
    """Return the other loop's run of the same options (``_feedback`` suffix added or removed)."""
    name = out.name
    other = name[:-len('_feedback')] if name.endswith('_feedback') else name + '_feedback'
    path = out.parent / other / 'elements.npz'
    return path if path.exists() else None


def plot_elements(out: Path, path: Path) -> None:
    """Plot commanded, measured open loop and closed loop per element.

    :param out: this run's directory (``elements.npz``; the other loop's from its sibling).
    :param path: PNG to write.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    runs = {}
    for run in filter(None, (out / 'elements.npz', _sibling(out))):
        with np.load(run) as data:
            key = 'closed loop' if run.parent.name.endswith('_feedback') else 'open loop'
            runs[key] = {k: data[k] for k in data.files}
    first = next(iter(runs.values()))
    names, units = list(first['names']), list(first['units'])
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.8 * len(names)), sharex=True)
    for k, ax in enumerate(np.atleast_1d(axes)):
        ax.plot(first['t'], first['commanded'][:, k], 'k--', lw=1.2, label='commanded')
        for label, style in (('open loop', 'tab:red'), ('closed loop', 'tab:blue')):
            if label in runs:
                ax.plot(runs[label]['t'], runs[label]['measured'][:, k], color=style, lw=0.8,
                        label=f'measured, {label}')
        ax.set_ylabel(f'{names[k]}\n[{units[k]}]', fontsize=7)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=7, loc='upper right')
    np.atleast_1d(axes)[-1].set_xlabel('sim time [s]')
    run = out.name[:-len('_feedback')] if out.name.endswith('_feedback') else out.name
    fig.suptitle(f'{run}: internal load per element')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
