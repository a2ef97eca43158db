"""Per-element summary and plot of an internal-load run, open or closed loop (no ROS needed).

The ``dual_arm_admittance`` demo asks: over a steady window (the commands constant, the
move over), how far is each element of the TRUE internal load from the one commanded, and how
far is the analyzer's estimate from the truth? The truth is the simulator's
``object_sim/truth/internal_load_true_contacts``: the wrenches its effectors really apply,
read out on the true contacts and the true object (the named elements on the actual
geometry; docs/theory.md, "The truth's yardstick"); where the truth's geometry is the belief,
``object_sim/truth/internal_load`` is the same figure. ``elements.json`` (and
``--summary-json PATH``) holds, per basis element, ``unit``, ``commanded``, ``true_mean``,
``estimated_mean``, ``true_error_rms`` (RMS of truth minus command over the window),
``true_error_mean``, ``estimated_error_mean``, ``gap_mean`` (estimate minus truth),
``tolerance`` (the closed-loop target max(2 %, 0.2 N or 0.02 N*m)), ``within_tolerance``
(judged on the truth), ``estimate_within_tolerance`` and ``true_believed_basis_mean`` (the
truth moved to the believed contacts and read in the believed basis: a secondary figure, which
adds the lever arms of the belief's position errors); plus ``limit_violations`` (published
commands beyond the distributor's force or torque limits), the window, and the convergence
time of the truth after the last change of the commands. The plot overlays the open-loop and
the closed-loop runs when both are in the output directory. See docs/simulator.md, section 8.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from wrench_distribution.core.codec import zero_below_resolution

from .summary import TRUE_CONTACTS_TOPIC, TRUTH_COMPANION, TRUTH_TOPIC
from ..scenarios.models import effector_model

#: Closed-loop target per element: the larger of this fraction of the command and an
#: absolute floor by unit.
RELATIVE_TOLERANCE = 0.02
ABSOLUTE_TOLERANCE = {'N': 0.2, 'N*m': 0.02}

#: Seconds skipped after the move ends and after the last change of the commands.
STEADY_SETTLE = 0.5

#: Moving-average length (s) of the convergence test (the sensor noise is white).
CONVERGENCE_AVERAGE = 0.05


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
    from ...config.handles import parse_schedule
    ctl = checked['object_controller']
    schedule = parse_schedule(ctl['internal_load_schedule'])
    last_change = max([when for when, _ in schedule] + [checked['object_sim']['release_time']])
    move_end = ctl['move_start'] + ctl['move_duration']
    return max(last_change, move_end) + STEADY_SETTLE, duration, last_change


def _commanded(series_t: np.ndarray, checked: Mapping, dist) -> np.ndarray:
    """Commanded coordinates at each time, from the schedule (the core resolves the handles)."""
    from ..control.object_controller import scheduled
    from ...config.handles import parse_schedule
    schedule = parse_schedule(checked['object_controller']['internal_load_schedule'])
    return np.array([dist.internal_load_from_handles(scheduled(schedule, t)) for t in series_t])


def limit_violations(bag: Path, distributor: Mapping) -> int:
    """Count the published commands beyond the distributor's force or torque limits.

    :param bag: the run's bag directory.
    :param distributor: validated distributor parameters.
    :return: number of command messages whose force or torque norm exceeds its limit
    """
    from ...config.arrays import expand_limits
    from .series import read_bag
    effectors = list(distributor['effectors'])
    topics = [f'{e}/wrench_command' for e in effectors]
    series = read_bag(bag, topics)
    n = len(effectors)
    forces = expand_limits(distributor['force_limits'], n)
    torques = expand_limits(distributor['torque_limits'], n)
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


def _element(unit: str, cmd: float, true: np.ndarray, estimated: np.ndarray, limit: float,
             believed_basis: np.ndarray) -> dict:
    """Return one element's figures over the window, judged on the truth.

    :param unit: ``'N'`` or ``'N*m'``.
    :param cmd: the command.
    :param true: the truth's samples in the window (the yardstick: the true contacts' basis).
    :param estimated: the analyzer's samples in the window.
    :param limit: the target.
    :param believed_basis: the truth's samples in the believed basis.
    :return: JSON-ready figures
    """
    true_mean, estimated_mean = float(true.mean()), float(estimated.mean())
    out = {'unit': unit, 'commanded': cmd, 'true_mean': true_mean,
           'estimated_mean': estimated_mean,
           'true_error_rms': float(np.sqrt(np.mean((true - cmd) ** 2))),
           'true_error_mean': true_mean - cmd,
           'estimated_error_mean': estimated_mean - cmd,
           'gap_mean': estimated_mean - true_mean, 'tolerance': limit,
           'within_tolerance': bool(abs(true_mean - cmd) <= limit),
           'estimate_within_tolerance': bool(abs(estimated_mean - cmd) <= limit),
           'true_believed_basis_mean': float(believed_basis.mean())}
    return out


def _recorded(bag: Path, names: list) -> tuple:
    """Return the estimate, the truth (the yardstick) and the truth in the believed basis of a run's bag.

    :param bag: the bag directory.
    :param names: the believed basis.
    :return: ``(estimate, truth, believed basis)``, each ``(t, values)``, and whether the
        truth is in the true contacts' basis (else the truth's geometry is the belief)
    :raises ValueError: when the estimate or the truth was not recorded
    """
    from .summary import _measured_internal_load, true_internal_load
    from .series import read_bag
    series = read_bag(bag, ['measured/internal_load', 'measured/object_wrench', TRUTH_TOPIC,
                            TRUTH_COMPANION, TRUE_CONTACTS_TOPIC])
    estimate = _measured_internal_load(series, names)
    truth, believed = true_internal_load(series, names)
    for got, topic in ((estimate, 'measured/internal_load'), (believed, TRUTH_TOPIC)):
        if got is None:
            raise ValueError(f'no {topic} in {bag}')
    return estimate, truth, believed, truth is not believed


def attribution(bag: Path, checked: Mapping, window: tuple, tare_biases=None) -> dict:
    """Each belief parameter's contribution to the estimate's error, per element (:mod:`.sensitivity`).

    :param bag: the run's bag.
    :param checked: validated sections.
    :param window: ``(start, end)`` of the steady window, s.
    :param tare_biases: the biases a free tare wrote (6 n numbers), or None.
    :return: parameter -> (m,) contributions (estimate minus the estimate with it true);
        empty when the analyzer has no static contacts or gravity outside the object frame
    """
    from . import sensitivity
    from .series import read_bag
    analyzer = checked['wrench_analyzer']
    if not analyzer['contact_positions'] or analyzer['gravity_frame']:
        return {}  # the read-out needs static contacts and gravity in the object frame
    effectors = list(checked['object_sim']['effectors'])
    topics = [f'{e}/ft_sensor' for e in effectors] + [
        f'object_sim/truth/{e}/wrench' for e in effectors]
    series = read_bag(bag, topics)
    means = []
    for topic in topics:
        s = series.get(topic)
        inside = np.zeros(0, bool) if s is None else (s.t >= window[0]) & (s.t <= window[1])
        if not inside.any():
            raise ValueError(f'no {topic} in the steady window')
        means.append(s.v[inside].mean(axis=0))
    n = len(effectors)
    readings, true_wrenches = np.array(means[:n]), np.array(means[n:])
    tare = None if tare_biases is None else sensitivity.tare_readings(
        checked['wrench_analyzer'], tare_biases)
    return sensitivity.contributions(checked, readings, tare, true_wrenches)


def _name_limits(elements: Mapping, contributions: Mapping, limits: np.ndarray) -> None:
    """Add ``limited_by`` to the elements outside their target, closed loop.

    Closed loop the estimate is driven to the command, so the truth misses it by the
    estimate's error, whose sources the contributions are (open loop the arms' own errors
    count as well, and nothing is named).

    :param elements: name -> figures (changed in place).
    :param contributions: from :func:`attribution`.
    :param limits: the targets, in the order of ``elements``.
    """
    from .sensitivity import limiting_parameters
    for k, element in enumerate(elements.values()):
        if not element['within_tolerance']:
            element['limited_by'] = [{'parameter': name, 'contribution': value} for name, value
                                     in limiting_parameters(contributions, k, limits[k])]


def element_summary(out: Path, sections: Mapping, duration: float, tare_biases=None) -> dict:
    """Per-element summary of a run over its steady window, judged on the simulator's truth.

    :param out: the run's output directory (``bag/`` inside).
    :param sections: the run's parameter sections.
    :param duration: sim time of the run, s.
    :param tare_biases: the biases the run's free tare wrote, or None (not tared).
    :return: JSON-ready summary; ``'_series'`` holds the arrays of the plot.
    """
    from ...config.nodes import static_contacts
    from ...core import LoadDistributor, ObjectModel
    from ..scenarios.sections import validate_sections
    checked = validate_sections(sections)
    sim = checked['object_sim']
    dist = LoadDistributor(list(static_contacts(sim)), ObjectModel(com=tuple(sim['object_com']),
                                                                   mass=sim['object_mass']))
    names, units = list(dist.basis_names), list(dist.basis_units)
    lo, hi, last_change = steady_window(checked, duration)
    (t, estimated), (t_true, truth), (t_b, believed), true_basis = _recorded(Path(out) / 'bag', names)
    commanded = _commanded(t_true, checked, dist)
    window, window_est = (t_true >= lo) & (t_true <= hi), (t >= lo) & (t <= hi)
    window_b = (t_b >= lo) & (t_b <= hi)
    if not window.any() or not window_est.any() or not window_b.any():
        raise ValueError(f'no true and estimated internal load in the steady window {lo:g}-{hi:g} s')
    limits = np.array([tolerance(c, u) for c, u in zip(commanded[window][-1], units)])
    elements = {name: _element(unit, float(commanded[window][-1, k]), truth[window, k],
                               estimated[window_est, k], float(limits[k]), believed[window_b, k])
                for k, (name, unit) in enumerate(zip(names, units))}
    contributions = attribution(Path(out) / 'bag', checked, (lo, hi), tare_biases)
    feedback = bool(checked['wrench_distributor'].get('internal_load_feedback', False))
    if feedback:
        _name_limits(elements, contributions, limits)
    period = float(np.median(np.diff(t_true))) if len(t_true) > 1 else 0.0
    summary = {
        'scenario_sections': sorted(sections), 'internal_load_feedback': feedback,
        'elements': elements,
        'limit_violations': limit_violations(Path(out) / 'bag', checked['wrench_distributor']),
        'steady_window_s': [lo, hi], 'samples_in_window': int(window.sum()),
        'all_within_tolerance': all(e['within_tolerance'] for e in elements.values()),
        'estimate_all_within_tolerance': all(e['estimate_within_tolerance']
                                             for e in elements.values()),
        'last_command_change_s': last_change,
        'convergence_time_s': convergence_time(t_true, truth - commanded, limits, last_change,
                                               period),
        'truth_basis': 'true contacts' if true_basis else 'believed',
        'tolerance_rule': 'max(2 % of the command, 0.2 N or 0.02 N*m) on the window mean of '
                          "the truth (object_sim/truth/internal_load_true_contacts, the true contacts' "
                          'basis; object_sim/truth/internal_load where the true geometry is the belief)',
        'contributions': {name: [float(x) for x in values]
                          for name, values in contributions.items()},
        '_series': {'t': t, 'measured': estimated, 'commanded': _commanded(t, checked, dist),
                    't_true': t_true, 'truth': truth, 'names': np.array(names),
                    'units': np.array(units)}}
    joints = joint_arms_summary(Path(out) / 'bag', list(sim['effectors']))
    if joints is not None:
        summary['joint_arms'] = joints
    return summary


def write_element_summary(out: Path, sections: Mapping, duration: float,
                          summary_json: Optional[str], plot: bool,
                          extra: Optional[Mapping] = None) -> Optional[dict]:
    """Write ``elements.json`` (and ``summary_json``), the series and the plot of a run.

    Does nothing for a run of ideal force effectors unless ``summary_json`` is asked for.

    :param out: the run's output directory.
    :param sections: the run's parameter sections.
    :param duration: sim time, s.
    :param summary_json: an extra path for the summary, or None.
    :param plot: draw ``elements.png`` (with the other loop's run when it is there).
    :param extra: fields added to the summary (the run's scenario, tare...).
    :return: the summary, or None when not computed
    """
    if summary_json is None and not effector_model(sections['object_sim']).element_summary:
        return None
    tare = (extra or {}).get('tare') or {}
    try:
        summary = element_summary(out, sections, duration, tare.get('biases') or None)
    except ValueError as e:
        print(f'demo: no element summary: {e}')
        return None
    np.savez(Path(out) / 'elements.npz', **summary.pop('_series'))
    summary.update(extra or {})
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
    basis = ("the true contacts' basis" if summary.get('truth_basis', 'true contacts') == 'true contacts'
             else 'the believed basis: the true geometry is the belief')
    lines = [f'Internal load per element, {loop}, steady window {lo:g}-{hi:g} s, judged on the '
             f"truth (the simulator's applied wrenches, {basis}):",
             f'  {"element":22s} {"unit":4s} {"commanded":>10s} {"true":>9s} {"true, bel.":>10s} '
             f'{"estimated":>10s} {"true err":>9s} {"gap":>8s} {"target":>7s}']
    for name, e in summary['elements'].items():
        lines.append(f'  {name:22s} {e["unit"]:4s} {e["commanded"]:10.3f} '
                     f'{e["true_mean"]:9.3f} {e["true_believed_basis_mean"]:10.3f} '
                     f'{e["estimated_mean"]:10.3f} {e["true_error_rms"]:9.3f} {e["gap_mean"]:+8.3f} '
                     f'{e["tolerance"]:7.3f}{"" if e["within_tolerance"] else "  outside"}')
    lines.append('  true: the truth on the true contacts (the yardstick); true, bel.: the truth moved to '
                 'the believed contacts, believed basis (secondary); true err: RMS of truth - command '
                 'over the window; gap: estimate - truth (means); outside: |true mean - command| above '
                 "the target; limited by: the belief parameters' shares of the estimate's error "
                 '(elements.json: contributions)')
    for name, e in summary['elements'].items():
        if e.get('limited_by'):
            named = e['limited_by'][:3]
            lines.append(f'  {name} is limited by: ' + ', '.join(
                f'{c["parameter"]} ({c["contribution"]:+.3f} {e["unit"]})' for c in named)
                + (f' and {len(e["limited_by"]) - 3} more' if len(e['limited_by']) > 3 else ''))
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
    """Plot commanded, true and estimated per element, open loop and closed loop.

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
                run = runs[label]
                if 'truth' in run:  # a sibling from before the truth was recorded has none
                    ax.plot(run['t_true'], run['truth'][:, k], color=style, lw=1.0,
                            label=f'true, {label}')
                ax.plot(run['t'], run['measured'][:, k], color=style, lw=0.6, ls=':',
                        label=f'estimated, {label}')
        ax.set_ylabel(f'{names[k]}\n[{units[k]}]', fontsize=7)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=6, loc='upper right', ncol=2)
    np.atleast_1d(axes)[-1].set_xlabel('sim time [s]')
    run = out.name[:-len('_feedback')] if out.name.endswith('_feedback') else out.name
    fig.suptitle(f'{run}: internal load per element, true (solid) and estimated (dotted)')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
