"""Friction part of the demo's summary, and the side-by-side of two runs (no ROS needed).

Reads what the demo records: the simulator's ``contact_slip`` (distance each fingertip slid,
time it was lifted off), the analyzer's ``measured/friction`` (utilisation, normal force and
status per effector, from the simulated F/T sensors) and the distributor's
``friction/internal_load_added`` (auto mode).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from .series import read_bag
from ...core.codec import split_labels
from ...core.friction import STATUSES

TOPICS = ('contact_slip', 'measured/friction', 'friction/internal_load_added')
#: Slip (m) above which a fingertip counts as having slipped.
SLIP_THRESHOLD = 1e-3
#: Measured force (N) below which a fingertip counts as not touching (a few sensor sigmas).
FORCE_FLOOR = 0.1


def lost_time(series: Mapping) -> Optional[float]:
    """Sim time at which the object was lost: the first fingertip that slid off it.

    Summaries stop there: an RMS over a dropped object, or a share of samples without
    contact after it fell, would describe the fall, not the grasp.

    :param series: from :func:`.series.read_bag`.
    :return: the time, s, or None while every contact held.
    """
    slip = series.get('contact_slip')
    if slip is None or not len(slip.t):
        return None
    lost = (slip.v[:, 2::3] > 0.5).any(axis=1)
    return float(slip.t[np.argmax(lost)]) if lost.any() else None


def added_load(series: Mapping) -> Optional[tuple]:
    """Return the internal load auto mode added, per basis element, with the time of each message.

    The topic has no header: each message answers one desired wrench, so when both were
    recorded completely the desired wrench's stamps time it; otherwise the reception times.

    :param series: from :func:`.series.read_bag`.
    :return: ``(t (k,), values (k, m), basis names)``, or None when not recorded.
    """
    added = series.get('friction/internal_load_added')
    if added is None or not len(added.t):
        return None
    desired = series.get('desired_wrench')
    paired = desired is not None and len(desired.t) == len(added.t)
    return (desired.t if paired else added.t), np.nan_to_num(added.v), split_labels(added.labels[-1])


def friction_summary(series: Mapping, start: float, end: float = np.inf) -> Optional[dict]:
    """Per effector: slip, time lifted, measured utilisation; the added squeeze.

    :param series: from :func:`.series.read_bag`.
    :param start: evaluation start (after the fixture release and settling), s.
    :param end: evaluation end (the object lost, :func:`lost_time`), s.
    :return: JSON-ready mapping, or None when nothing friction-related was recorded.
    """
    slip, state, added = (series.get(t) for t in TOPICS)
    if slip is None and state is None:
        return None
    out: dict = {}
    if slip is not None and len(slip.t):
        names = split_labels(slip.labels[-1])
        last = slip.v[-1].reshape(len(names), 3)
        out['slip_m'] = dict(zip(names, last[:, 0].tolist()))
        out['lifted_s'] = dict(zip(names, last[:, 1].tolist()))
        out['lost'] = [n for n, lost in zip(names, last[:, 2]) if lost > 0.5]
        out['slipped'] = bool((last[:, 0] > SLIP_THRESHOLD).any() or (last[:, 1] > 0.05).any())
        out['lost_at_s'] = lost_time(series)
        out['_slip'] = (slip.t, slip.v[:, 0::3], names)
    if state is not None and len(state.t):
        names = split_labels(state.labels[-1])
        rows = state.v.reshape(len(state.t), len(names), 3)
        mask = (state.t >= start) & (state.t < end)
        rows = rows[mask]  # nothing when the object was lost before the evaluation began
        touching = np.abs(rows[:, :, 1]) >= FORCE_FLOOR
        utilisation = np.where((rows[:, :, 0] >= 0) & touching, rows[:, :, 0], np.nan)
        codes = np.where(touching, rows[:, :, 2], STATUSES.index('unloaded')).astype(int)
        out['measured'] = {
            n: {'max_utilisation': _finite_or_none(
                np.nanmax(utilisation[:, i]) if np.isfinite(utilisation[:, i]).any() else np.nan),
                'fraction_slipping': float(np.mean(codes[:, i] == STATUSES.index('slipping'))),
                'fraction_pulling': float(np.mean(codes[:, i] == STATUSES.index('pulling'))),
                'fraction_not_touching': float(np.mean(~touching[:, i]))}
            for i, n in enumerate(names)} if len(rows) else {}
        out['worst_utilisation'] = worst_utilisation(utilisation)
        out['_state'] = (state.t[mask], utilisation, names)
    if added is not None and len(added.t):
        total = np.nansum(added.v, axis=1)
        out['added_squeeze'] = {'basis': split_labels(added.labels[-1]),
                                'mean_sum': float(np.mean(total)),
                                'min_sum': float(np.min(total)), 'max_sum': float(np.max(total))}
        desired = series.get('desired_wrench')
        if desired is not None and len(desired.t) > 2:
            magnitude = np.linalg.norm(desired.v[:, :3], axis=1)
            # one added load per desired wrench, in order (it has no header to match stamps);
            # else by reception, both on the recorder's clock (not the desired wrench's stamps:
            # under load the recorder receives late, and a stamp is then no time of reception)
            paired = len(desired.t) == len(added.t)
            force = magnitude if paired else _at_reception(added.t, desired, magnitude)
            out['added_squeeze']['paired_with_desired'] = paired
            keep = (added.t >= start) & (added.t < end)
            if keep.sum() > 2 and np.std(total[keep]) > 0 and np.std(force[keep]) > 0:
                out['added_squeeze']['correlation_with_desired_force'] = float(
                    np.corrcoef(total[keep], force[keep])[0, 1])
        out['_added'] = (desired.t if desired is not None and len(desired.t) == len(added.t)
                         else added.t, total)
    return out


def _at_reception(times: np.ndarray, series, values: np.ndarray) -> np.ndarray:
    """Interpolate ``values`` of a stamped ``series`` at reception ``times`` (the recorder's clock).

    :return: the values at ``times`` (by the series' stamps when it has no reception times).
    """
    received = series.t if series.received is None else series.received
    order = np.argsort(received, kind='stable')
    return np.interp(times, received[order], values[order])


def worst_utilisation(utilisation: np.ndarray) -> Optional[dict]:
    """Statistics of the worst touching contact's measured utilisation, sample by sample.

    What the distributor's friction feedback regulates (its mean, to ``1 - friction_margin``);
    the peaks stay above by the sensor noise.

    :param utilisation: (k, n) measured utilisation, NaN where undefined or not touching.
    :return: ``{'mean', 'p95', 'max', 'samples'}``, or None without a defined sample.
    """
    defined = np.isfinite(utilisation).any(axis=1)
    if not defined.any():
        return None
    worst = np.nanmax(utilisation[defined], axis=1)
    return {'mean': float(worst.mean()), 'p95': float(np.percentile(worst, 95)),
            'max': float(worst.max()), 'samples': int(worst.size)}


def _finite_or_none(x: float):
    return float(x) if np.isfinite(x) else None


def format_friction(f: Mapping) -> list:
    """Lines of the friction block of the summary.

    :param f: from :func:`friction_summary`.
    :return: text lines.
    """
    lines = ['', 'Friction (point contacts with Coulomb friction in the simulator):']
    if 'slip_m' in f:
        lines.append('  slid along the object: ' + ', '.join(
            f'{n} {1e3 * v:.1f} mm' for n, v in f['slip_m'].items())
            + '; lifted off: ' + ', '.join(f'{n} {v:.2f} s' for n, v in f['lifted_s'].items()))
        lost = f' ({", ".join(f["lost"])} slid off the object)' if f['lost'] else ''
        held = f'held (no fingertip slid more than {1e3 * SLIP_THRESHOLD:g} mm)'
        lines.append('  grasp ' + ('SLIPPED' + lost if f['slipped'] else held)
                     + ('' if f.get('lost_at_s') is None else f'; object lost at {f["lost_at_s"]:.2f} s'))
    if f.get('measured') and f.get('lost_at_s') is not None:
        lines.append(f'  measured while held (until {f["lost_at_s"]:.2f} s):')
    for n, m in f.get('measured', {}).items():
        u = m['max_utilisation']
        lines.append(f'  {n}: measured utilisation max {"-" if u is None else f"{u:.2f}"}, '
                     f'slipping {100 * m["fraction_slipping"]:.0f} % of samples, pulling '
                     f'{100 * m["fraction_pulling"]:.0f} %, not touching '
                     f'{100 * m["fraction_not_touching"]:.0f} % (force < {FORCE_FLOOR:g} N)')
    w = f.get('worst_utilisation')
    if w:
        lines.append(f'  worst contact, sample by sample: measured utilisation mean {w["mean"]:.3f}, '
                     f'95th percentile {w["p95"]:.3f}, max {w["max"]:.3f} ({w["samples"]} samples)')
    a = f.get('added_squeeze')
    if a:
        corr = a.get('correlation_with_desired_force')
        lines.append(f'  squeeze added by auto mode (sum over {len(a["basis"])} elements): '
                     f'{a["min_sum"]:.2f} to {a["max_sum"]:.2f} N'
                     + ('' if corr is None else f', correlation with the desired force '
                        f'(m (a - g)) {corr:+.2f}'))
        lines.append('  (the analyzer reads back the prescribed plus the added load; the commanded '
                     'figures above include it)')
    return lines


def compare(first: Path, second: Path, out: Path) -> str:
    """Side-by-side of two demo runs (prescription alone, then auto) and their plot.

    :param first: output directory of the run with the prescription alone.
    :param second: output directory of the run with ``friction_mode: auto``.
    :param out: PNG to write.
    :return: the text.
    """
    runs = []
    for path in (first, second):
        summary = json.loads((path / 'summary.json').read_text())
        series = read_bag(path / 'bag', topics=None)
        start = summary['release_time'] + summary['settle']
        end = np.inf if summary.get('lost_at_s') is None else summary['lost_at_s']
        runs.append((path, summary, friction_summary(series, start, end), series))
    lines = ['Friction: the same grasp with the prescription alone, then with friction_mode auto',
             '=' * 80]
    for label, (path, summary, f, _) in zip(('prescription alone', 'friction_mode auto'), runs):
        tr = summary.get('tracking', {})
        if summary.get('lost_at_s') is not None:
            lines.append(f'{label} ({path.name}): object lost at {summary["lost_at_s"]:.2f} s')
        else:
            lines.append(f'{label} ({path.name}): held; final position error '
                         f'{tr.get("final_position_error_mm", float("nan")):.1f} mm, max '
                         f'{tr.get("position_max_mm", float("nan")):.1f} mm')
        lines += ['  ' + line for line in format_friction(f or {})[1:]]
    _plot_compare(runs, out)
    lines.append(f'Plot: {out}')
    return '\n'.join(lines)


def _plot_compare(runs, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    for (run_path, summary, f, series), style, label in zip(
            runs, ('-', '--'), ('prescription alone', 'auto')):
        pose = series.get('object_pose')
        if pose is not None and len(pose.t):
            axes[0].plot(pose.t, 1e3 * (pose.v[:, 2] - pose.v[0, 2]), style,
                         label=f'{label}: height')
        if f and '_slip' in f:
            t, slip, names = f['_slip']
            for i, n in enumerate(names):
                axes[1].plot(t, 1e3 * slip[:, i], style, label=f'{label}: {n}')
        if f and '_added' in f:
            t, total = f['_added']
            axes[2].plot(t, total, 'k-', label='squeeze added by auto (sum) [N]')
            desired = series.get('desired_wrench')
            if desired is not None and len(desired.t):
                axes[2].plot(desired.t, np.linalg.norm(desired.v[:, :3], axis=1), 'tab:orange',
                             label='desired force |m (a - g)| [N]')
    axes[0].set_ylim(-100.0, 100.0)  # the dropped object leaves the picture
    axes[0].set_ylabel('object height change [mm]')
    axes[0].set_title('The object: it slips out of the lightly squeezing fingers, '
                      'and is carried with auto')
    axes[1].set_ylabel('slid along the object [mm]')
    axes[1].set_title('Fingertip slip (simulator, Coulomb mu = 0.5)')
    axes[2].set_ylabel('[N]')
    axes[2].set_xlabel('sim time [s]')
    axes[2].set_title('Auto mode: the added squeeze follows the force the motion needs')
    for ax in axes:
        ax.legend(loc='upper right', fontsize=7, ncol=2)
    fig.subplots_adjust(left=0.1, right=0.97, top=0.95, bottom=0.06, hspace=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
