"""The demo's summary and plot, computed from the recorded bag (no ROS needed)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from wrench_distribution.core.codec import split_labels
from wrench_distribution.core.spatial import log_so3, quaternion_to_matrix as matrix_from_quaternion

from .friction import added_load, format_friction, friction_summary, lost_time
from .friction import TOPICS as FRICTION_TOPICS
from .series import read_bag as read_series, Series
from ..control.object_controller import controller_from
from ..scenarios.sections import validate_sections
from ...config.handles import parse_schedule

#: Seconds after the fixture release and after each internal-load change that the
#: comparison skips (transients of the grasp springs and of the controller).
SETTLE = 0.4


#: The truth's internal load (docs/simulator.md, "The truth"): in the true contacts' basis, the
#: yardstick every run is judged on (published where the true geometry differs from the belief),
#: in the believed basis (a secondary figure; the yardstick where the truth is the belief), and
#: the resultant published with each (for the stamps).
TRUE_CONTACTS_TOPIC = 'object_sim/truth/internal_load_true_contacts'
TRUTH_TOPIC = 'object_sim/truth/internal_load'
TRUTH_COMPANION = 'object_sim/truth/object_wrench'

#: Topics the summary and the plot use.
SUMMARY_TOPICS = ('object_pose', 'desired_wrench', 'measured/internal_load',
                  'measured/object_wrench', TRUTH_TOPIC, TRUE_CONTACTS_TOPIC,
                  TRUTH_COMPANION) + FRICTION_TOPICS


def read_bag(path: Path) -> dict:
    """Read the topics of :data:`SUMMARY_TOPICS` from a demo bag.

    :param path: bag directory.
    :return: topic name -> :class:`~.series.Series` (see :func:`.series.read_bag`).
    """
    return read_series(path, SUMMARY_TOPICS)


def _distributor(sim_params: Mapping):
    from ...config.nodes import static_contacts
    from ...core import LoadDistributor, ObjectModel
    return LoadDistributor(list(static_contacts(sim_params)),
                           ObjectModel(com=tuple(sim_params['object_com']), mass=sim_params['object_mass']))


def summarize(series: Mapping[str, Series], sections: Mapping, duration: float) -> dict:
    """Tracking error, commanded against recovered internal load, resultant residual.

    :param series: from :func:`read_bag`.
    :param sections: the run's parameter sections (node name -> parameters).
    :param duration: sim time of the run, s.
    :return: JSON-ready summary
    """
    checked = validate_sections(sections)  # the schema's values and defaults
    sim_p, ctl_p = checked['object_sim'], checked['object_controller']
    release = sim_p['release_time']
    start = release + SETTLE
    move = (ctl_p['move_start'], ctl_p['move_start'] + ctl_p['move_duration'])
    out: dict = {'duration': duration, 'release_time': release, 'settle': SETTLE, 'move': move,
                 'sensor_noise': {'force_N': sim_p['sensor_force_noise'],
                                  'torque_Nm': sim_p['sensor_torque_noise']}}
    out['message_counts'] = dict(sorted(series.get('_counts', {}).items()))
    # every figure covers the time the object was held: from the release to its loss
    out['lost_at_s'] = lost_time(series)
    end = np.inf if out['lost_at_s'] is None else out['lost_at_s']
    out.update(_tracking_summary(series.get('object_pose'), ctl_p, start, end))
    out.update(_internal_summary(series, sim_p, ctl_p, min(duration, end), start))
    out.update(_resultant_summary(series, start, end))
    friction = friction_summary(series, start, end)
    if friction is not None:
        out['friction'] = {k: v for k, v in friction.items() if not k.startswith('_')}
    return out


def _tracking_summary(pose: Optional[Series], ctl_p: Mapping, start: float,
                      end: float = np.inf) -> dict:
    """Pose tracking errors against the controller's reference, from ``start`` to ``end``.

    :param end: the object lost (no tracking of a falling object), s.
    :return: ``{'tracking': ..., '_pose_error': (t, error)}``, or ``{}`` without poses.
    """
    if pose is None or not len(pose.t):
        return {}
    law = controller_from(ctl_p)
    law.origin = (pose.v[0, :3], matrix_from_quaternion(pose.v[0, 3:]))
    pos_err, rot_err = [], []
    for t, row in zip(pose.t, pose.v):
        frame, rot_d = law.reference(t)[:2]
        pos_err.append(np.linalg.norm(frame - row[:3]))
        rot_err.append(np.linalg.norm(log_so3(rot_d @ matrix_from_quaternion(row[3:]).T)))
    pos_err, rot_err = np.array(pos_err), np.array(rot_err)
    mask = (pose.t >= start) & (pose.t < end)
    if not mask.any():  # lost before the release settled: nothing was tracked
        return {'tracking': {'position_rms_mm': None}, '_pose_error': (pose.t, pos_err)}
    last = np.flatnonzero(mask)[-1]
    moved = np.linalg.norm(pose.v[last, :3] - pose.v[0, :3])
    tracking = {
        'position_rms_mm': float(1e3 * np.sqrt(np.mean(pos_err[mask] ** 2))),
        'position_max_mm': float(1e3 * pos_err[mask].max()),
        'orientation_rms_deg': float(np.degrees(np.sqrt(np.mean(rot_err[mask] ** 2)))),
        'final_position_error_mm': float(1e3 * pos_err[last]),
        'distance_moved_mm': float(1e3 * moved),
        'reference_distance_mm': float(1e3 * np.linalg.norm(law.offset)),
    }
    return {'tracking': tracking, '_pose_error': (pose.t, pos_err)}


def _measured_internal_load(series: Mapping[str, Series], names: list,
                            topic: str = 'measured/internal_load',
                            companion_topic: str = 'measured/object_wrench') -> Optional[tuple]:
    """Return the recorded internal-load coordinates in the order of ``names``.

    :param series: from :func:`read_bag`.
    :param names: the basis.
    :param topic: the internal load's topic (the analyzer's, or the simulator's truth).
    :param companion_topic: the wrench published with each of its messages (for the stamps).
    :return: ``(t, lambda (m, k))``, or None when nothing was recorded.
    """
    measured = series.get(topic)
    if measured is None or not len(measured.t):
        return None
    # Float64MultiArray has no header: take the stamps of the wrench published with each
    # internal-load message (the analyzer's object wrench, the truth's resultant), when both
    # were recorded completely; otherwise the recorder's reception times (late when it lags).
    companion = series.get(companion_topic)
    if companion is not None and len(companion.t) == len(measured.t):
        measured = Series(companion.t, measured.v, measured.labels)
    label = measured.labels[-1]
    got = split_labels(label) if label else names
    order = [got.index(n) for n in names] if sorted(got) == sorted(names) else list(
        range(len(names)))
    return measured.t, measured.v[:, order]


def true_internal_load(series: Mapping[str, Series], names: list) -> tuple:
    """Return the truth's internal load: the yardstick, and the believed basis' figure.

    The yardstick is the true contacts' basis (the named elements on the actual geometry,
    docs/theory.md, "The truth's yardstick"); where the simulator did not publish it, the true
    geometry is the belief and the believed basis is the same figure.

    :param series: recorded topics (:data:`TRUE_CONTACTS_TOPIC`, :data:`TRUTH_TOPIC`,
        :data:`TRUTH_COMPANION` among them).
    :param names: the basis.
    :return: ``(yardstick, believed basis)``, each ``(t, values)`` or None when not recorded
    """
    believed = _measured_internal_load(series, names, TRUTH_TOPIC, TRUTH_COMPANION)
    true_contacts = _measured_internal_load(series, names, TRUE_CONTACTS_TOPIC, TRUTH_COMPANION)
    return (believed if true_contacts is None else true_contacts), believed


def _internal_summary(series: Mapping[str, Series], sim_p: Mapping, ctl_p: Mapping,
                      duration: float, start: float) -> dict:
    """Commanded against recovered internal load, one entry per schedule phase.

    :return: ``{'basis', 'internal_load'}`` and ``'_internal'`` when recorded.
    """
    schedule = parse_schedule(ctl_p['internal_load_schedule'])
    dist = _distributor(sim_p)
    names = list(dist.basis_names)
    units = list(dist.basis_units)
    out: dict = {'basis': [{'name': n, 'unit': u} for n, u in zip(names, units)]}
    phases = []
    recorded = _measured_internal_load(series, names)
    truth = true_internal_load(series, names)[0]
    if recorded is not None:
        t, lam = recorded
        added = _added_at(series, names, t)
        times = [w for w, _ in schedule] + [duration + 1.0]
        for k, (when, handles) in enumerate(schedule):
            lo = max(when + SETTLE, start)
            hi = min(times[k + 1], duration)
            mask = (t >= lo) & (t < hi)
            if mask.sum() < 5:
                continue
            added_mean = added[mask].mean(axis=0)
            commanded = np.asarray(dist.internal_load_from_handles(handles), float) + added_mean
            mean = lam[mask].mean(axis=0)
            std = lam[mask].std(axis=0)
            true_mean = None
            if truth is not None and ((truth[0] >= lo) & (truth[0] < hi)).any():
                true_mean = truth[1][(truth[0] >= lo) & (truth[0] < hi)].mean(axis=0).tolist()
            phases.append({
                'start': float(lo), 'end': float(hi), 'samples': int(mask.sum()),
                'handles': handles, 'commanded': commanded.tolist(), 'recovered': mean.tolist(),
                'true': true_mean,
                'added_by_auto': added_mean.tolist(),
                'noise_std': std.tolist(), 'error': (mean - commanded).tolist(),
                'max_abs_error': float(np.abs(mean - commanded).max()),
                'recovered_norm': float(np.linalg.norm(mean)),
                'rms_norm': float(np.sqrt(np.mean(np.sum(lam[mask] ** 2, axis=1)))),
                'max_abs_recovered_sample': float(np.abs(lam[mask]).max()),
            })
        out['_internal'] = (t, lam, schedule, dist, added, truth)
    out['internal_load'] = phases
    return out


def _added_at(series: Mapping[str, Series], names: list, t: np.ndarray) -> np.ndarray:
    """Return the internal load auto mode added, held from each message to the next, at times ``t``.

    :param names: basis names, in the order of the result's columns.
    :return: (len(t), len(names)); zeros without auto mode.
    """
    out = np.zeros((len(t), len(names)))
    recorded = added_load(series)
    if recorded is None:
        return out
    times, values, labels = recorded
    index = np.searchsorted(times, t, side='right') - 1  # the latest message at or before t
    for j, name in enumerate(names):
        if name in labels:
            column = values[:, labels.index(name)]
            out[:, j] = np.where(index >= 0, column[np.clip(index, 0, None)], 0.0)
    return out


def _resultant_summary(series: Mapping[str, Series], start: float, end: float = np.inf) -> dict:
    """Recovered object wrench against the desired one, matched by stamp (``start`` to ``end``).

    :return: ``{'resultant_residual', '_resultant'}`` as far as recorded.
    """
    out: dict = {}
    desired, resultant = series.get('desired_wrench'), series.get('measured/object_wrench')
    if desired is None or resultant is None or not len(desired.t) or not len(resultant.t):
        return out
    idx = np.searchsorted(desired.t, resultant.t)
    idx = np.clip(idx, 0, len(desired.t) - 1)
    close = np.abs(desired.t[idx] - resultant.t) < 1e-6
    mask = close & (resultant.t >= start) & (resultant.t < end)
    diff = resultant.v[mask] - desired.v[idx[mask]]
    if len(diff):
        out['resultant_residual'] = {
            'samples': int(len(diff)),
            'force_rms_N': float(np.sqrt(np.mean(np.sum(diff[:, :3] ** 2, axis=1)))),
            'torque_rms_Nm': float(np.sqrt(np.mean(np.sum(diff[:, 3:] ** 2, axis=1)))),
            'force_max_N': float(np.linalg.norm(diff[:, :3], axis=1).max()),
        }
    out['_resultant'] = (resultant.t, resultant.v, desired.t, desired.v)
    return out


def _window(s: Mapping) -> str:
    """Return the evaluation window of a summary, as text."""
    start = s['release_time'] + s['settle']
    return (f'from {start:.1f} s' if s.get('lost_at_s') is None
            else f"{start:.1f}-{s['lost_at_s']:.2f} s, until the object was lost")


def _opening(s: Mapping, title: str) -> list:
    """Return the summary's first lines: the title, what the demo shows, and the loss if any."""
    lines = [title, '=' * len(title),
             "The controller asks for the object's motion and for an internal load (e.g. a "
             'squeeze); the distributor',
             'turns both into one wrench command per effector; the simulated grasps transmit '
             'them; the analyzer, which',
             'sees only the simulated F/T sensors, recovers the internal load. "recovered" '
             'should match "commanded"',
             'to within the sensor noise (see docs/simulator.md).', '']
    lost, start = s.get('lost_at_s'), s['release_time'] + s['settle']
    if lost is not None and lost <= start:
        lines += [f'Object LOST at {lost:.2f} s (a fingertip slid off it), before the fixture let go '
                  f"of it ({s['release_time']:.2f} s) and the evaluation began ({start:.2f} s): the grasp "
                  'never held it, so there is no tracking, internal-load or residual figure.', '']
    elif lost is not None:
        lines += [f'Object LOST at {lost:.2f} s (a fingertip slid off it): every figure below covers '
                  f'the time it was held, {start:.2f}-{lost:.2f} s.', '']
    return lines


def format_summary(s: Mapping, title: str) -> str:
    """Human-readable summary table.

    :param s: from :func:`summarize`.
    :param title: first line.
    :return: text
    """
    lines = _opening(s, title)
    tr = s.get('tracking')
    if tr and tr['position_rms_mm'] is not None:
        lines.append(
            f'Object pose tracking ({_window(s)}): position '
            f"error RMS {tr['position_rms_mm']:.2f} mm, max {tr['position_max_mm']:.2f} mm, "
            f"orientation RMS {tr['orientation_rms_deg']:.3f} deg; moved "
            f"{tr['distance_moved_mm']:.0f} mm (reference {tr['reference_distance_mm']:.0f} mm)")
    else:
        lines.append('Object pose tracking: no pose sample while the object was held')
    lines.append('')
    lines.append('Internal load: commanded (controller -> distributor) against recovered '
                 "(analyzer, from the simulated F/T sensors) and true (the simulator's)")
    if not s['internal_load']:
        lines.append('  no phase with analyzer output while the object was held')
    header = f"  {'time window':<14}{'basis element':<28}{'commanded':>11}{'recovered':>11}" \
             f"{'noise std':>11}{'error':>9}{'true':>9}{'true err':>9}"
    for ph in s['internal_load']:
        lines.append(header)
        for j, b in enumerate(s['basis']):
            window = f"{ph['start']:.1f}-{ph['end']:.1f} s" if j == 0 else ''
            true = '' if ph.get('true') is None else (
                f"{ph['true'][j]:>9.3f}{ph['true'][j] - ph['commanded'][j]:>+9.3f}")
            lines.append(
                f"  {window:<14}{b['name'] + ' [' + b['unit'] + ']':<28}"
                f"{ph['commanded'][j]:>11.3f}{ph['recovered'][j]:>11.3f}"
                f"{ph['noise_std'][j]:>11.3f}{ph['error'][j]:>+9.3f}{true}")
    if s['internal_load']:
        errors = {'N': 0.0, 'N*m': 0.0}
        for ph in s['internal_load']:
            for j, b in enumerate(s['basis']):
                errors[b['unit']] = max(errors[b['unit']], abs(ph['error'][j]))
        noise = s['sensor_noise']
        lines.append(f"  largest error: {errors['N']:.3f} N and {errors['N*m']:.4f} N*m; sensor "
                     f"noise (one sigma per component): {noise['force_N']:g} N, "
                     f"{noise['torque_Nm']:g} N*m")
    rr = s.get('resultant_residual')
    lines.append('')
    if rr:
        lines.append(f"Resultant residual (analyzer's object wrench - desired wrench, "
                     f"{rr['samples']} samples): force RMS {rr['force_rms_N']:.3f} N "
                     f"(max {rr['force_max_N']:.3f} N), torque RMS {rr['torque_rms_Nm']:.4f} N*m")
    else:
        lines.append('Resultant residual: no desired/measured wrench pair while the object was held')
    if s.get('friction'):
        lines += format_friction(s['friction'])
    return '\n'.join(lines)


def _plot_internal(ax, internal: tuple, plt) -> None:
    """Draw commanded and recovered internal-load elements on ``ax`` (and a twin axis).

    :param ax: the matplotlib axes.
    :param internal: ``summary['_internal']``.
    :param plt: ``matplotlib.pyplot``.
    """
    t, lam, schedule, dist, added, truth = internal
    levels = [np.zeros(len(dist.basis_names))] + [
        np.asarray(dist.internal_load_from_handles(h), float) for _, h in schedule]
    starts = np.array([w for w, _ in schedule])
    cmd = np.array([levels[int(np.searchsorted(starts, x + 1e-9, side='right'))]
                    for x in t]).reshape(len(t), -1) + added  # what auto mode added, included
    # N*m elements on their own axis (right), so a 1 N*m twist is visible beside 40 N
    torque_ax = ax.twinx() if 'N*m' in dist.basis_units else None
    colours = iter(plt.rcParams['axes.prop_cycle'].by_key()['color'] * 3)
    for j, name in enumerate(dist.basis_names):
        if np.abs(cmd[:, j]).max() > 1e-9 or np.abs(np.nanmean(lam[:, j])) > 0.5:
            target = torque_ax if dist.basis_units[j] == 'N*m' else ax
            colour = next(colours)
            target.plot(t, lam[:, j], lw=0.8, color=colour, label=f'{name} recovered')
            target.plot(t, cmd[:, j], ls='--', color=colour, lw=2, label=f'{name} commanded')
            if truth is not None:
                target.plot(truth[0], truth[1][:, j], ls=':', color=colour, lw=1.2,
                            label=f'{name} true')
    if torque_ax is not None:
        torque_ax.set_ylabel('internal torque [N*m] (right axis)')
        torque_ax.legend(loc='upper right', fontsize=7)
    others = [j for j in range(lam.shape[1]) if np.abs(cmd[:, j]).max() <= 1e-9]
    if others:
        ax.plot(t, np.linalg.norm(lam[:, others], axis=1), color='k', lw=0.6,
                label='norm of the other elements (commanded 0)')


def plot(s: Mapping, path: Path, title: str) -> None:
    """Write the PNG: pose tracking error, internal load, resultant force.

    :param s: from :func:`summarize`.
    :param path: PNG file.
    :param title: figure title.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    ax = axes[0]
    if '_pose_error' in s:
        t, err = s['_pose_error']
        ax.plot(t, 1e3 * err, color='tab:blue')
    ax.axvline(s['release_time'], color='grey', ls=':', label='fixture released')
    ax.axvspan(*s['move'], color='tab:orange', alpha=0.15, label='reference moving')
    ax.set_ylabel('position error [mm]')
    ax.set_title('Object pose tracking: distance between the object and its reference')
    ax.legend(loc='upper right')
    ax = axes[1]
    if '_internal' in s:
        _plot_internal(ax, s['_internal'], plt)
    ax.set_ylabel('internal force [N] (left axis)')
    ax.set_title('Internal load: commanded (dashed), recovered by the analyzer (solid), '
                 'true (dotted)')
    ax.legend(loc='upper left', fontsize=7, ncol=2)
    ax = axes[2]
    if '_resultant' in s:
        tm, vm, td, vd = s['_resultant']
        for k, axis in enumerate('xyz'):
            line, = ax.plot(tm, vm[:, k], lw=0.8, label=f'f{axis} measured')
            ax.plot(td, vd[:, k], ls='--', color=line.get_color(), label=f'f{axis} desired')
    ax.set_ylabel('resultant force [N]\n(object frame)')
    ax.set_xlabel('sim time [s]')
    ax.set_title('Resultant on the object: desired by the controller (dashed), '
                 'measured by the analyzer (solid)')
    ax.legend(loc='upper right', fontsize=7, ncol=3)
    fig.suptitle(title)
    fig.subplots_adjust(left=0.1, right=0.9, top=0.92, bottom=0.06, hspace=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_json(s: Mapping, path: Path) -> None:
    """Write the summary without its private plotting arrays.

    :param s: from :func:`summarize`.
    :param path: JSON file.
    """
    clean = {k: v for k, v in s.items() if not k.startswith('_')}
    Path(path).write_text(json.dumps(clean, indent=2))
