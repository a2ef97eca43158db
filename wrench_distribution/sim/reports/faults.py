"""The sensor faults of a demo run, judged on the truth (``object_sim``'s ``sensor_faults``).

For each fault written into the simulated streams: when the health checks found it, run over
the recorded F/T readings with the run's analyzer parameters (:func:`~wrench_distribution.bag.health.bag_health`:
the analyzer's own checks, with the same results as live), and the truth's internal load
against the command while it lasted (the feedback held or released, the prescription open
loop). docs/simulator.md, "Sensor faults".
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from wrench_distribution.bag.health import bag_health
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.config.sensor_faults import parse_faults

#: The health checks that find each fault kind (a drift: the set, naming the sensor's axis, or
#: inconsistent with the sensor among those that could explain it: docs/health.md).
FOUND_BY = {'freeze': ('frozen',), 'clip': ('out_of_range',), 'spike': ('spike',),
            'drift': ('drift', 'inconsistent')}
#: Seconds after a schedule change the truth is not judged (the arms' transient).
SETTLE = 0.4


def fault_summary(bag: Path, sections: Mapping, checked: Mapping, internal: Optional[tuple]) -> Optional[dict]:
    """Return each fault, when it was found, and the truth while it lasted; None without faults.

    :param bag: the run's bag.
    :param sections: the run's parameter sections (node name -> parameters).
    :param checked: the same, validated (``object_sim`` with its defaults).
    :param internal: the summary's ``_internal`` (times, read-out, schedule, solver, added,
        truth), or None when nothing was recorded.
    :return: ``{'faults': [...], 'events': [...]}``.
    """
    sim_p = checked['object_sim']
    faults = parse_faults(sim_p['sensor_faults'], sim_p['effectors'])
    if not faults:
        return None
    config = load_analyzer_config({'wrench_analyzer': {'ros__parameters': dict(
        sections['wrench_analyzer'])}})
    report = bag_health(bag, config).report
    names = list(sim_p['effectors'])
    out = []
    for fault in faults:
        name = names[fault.sensor]
        found = [e for e in report['events'] if e['check'] in FOUND_BY[fault.kind]
                 and e['detected_s'] >= fault.start and _names(e, name)]
        first = found[0] if found else None
        entry = {'sensor': name, 'kind': fault.kind, 'start_s': fault.start,
                 'end_s': fault.start + fault.duration,
                 'found': None if first is None else first['check'],
                 'detail': None if first is None else first['detail'],
                 'onset_s': None if first is None else first['onset_s'],
                 'detected_s': None if first is None else first['detected_s'],
                 'delay_s': None if first is None else first['detected_s'] - fault.start}
        entry.update(_truth(internal, fault.start, fault.start + fault.duration))
        out.append(entry)
    return {'faults': out, 'events': report['events'][:50]}


def _names(event: Mapping, name: str) -> bool:
    """Tell whether an event is about sensor ``name``: its own, or the set's naming it."""
    if event['sensor']:
        return event['sensor'] == name
    detail = event['detail']
    return detail.startswith(f'{name} ') or (
        'could be:' in detail and name in detail.split('could be:')[1].split(';')[0].split(', '))


def _truth(internal: Optional[tuple], start: float, end: float) -> dict:
    """Return the truth's largest departure from the command over a window, per element."""
    if internal is None or internal[5] is None:
        return {'true_max_abs_error': None}
    _, _, schedule, dist, _, truth = internal
    t, values = truth
    times = np.array([when for when, _ in schedule])
    phase = np.searchsorted(times, t, side='right') - 1
    since = t - times[np.clip(phase, 0, None)]
    mask = (t >= start) & (t < end) & (phase >= 0) & (since >= SETTLE)
    if not mask.any():
        return {'true_max_abs_error': None}
    commanded = np.array([dist.internal_load_from_handles(schedule[k][1]) for k in phase[mask]])
    error = np.abs(values[mask] - commanded).max(axis=0)
    return {'true_max_abs_error': error.tolist(), 'true_samples': int(mask.sum())}


def format_faults(s: Mapping, basis: list) -> list:
    """Return the lines of the faults' table.

    :param s: :func:`fault_summary`.
    :param basis: the summary's basis (names and units).
    :return: lines.
    """
    lines = ['', 'Sensor faults (written into the simulated streams; found by the health checks '
             'on the recorded readings; the truth against the command while each lasted)']
    for f in s['faults']:
        found = ('not found' if f['found'] is None else
                 f"{f['found']} found at {f['detected_s']:.3f} s ({f['delay_s'] * 1e3:.0f} ms after)"
                 + (f": {f['detail']}" if f['detail'] else ''))
        lines.append(f"  {f['sensor']} {f['kind']} {f['start_s']:.2f}-{f['end_s']:.2f} s: {found}")
        if f['true_max_abs_error'] is not None:
            worst = ', '.join(f"{b['name']} {e:.3f} {b['unit']}"
                              for b, e in zip(basis, f['true_max_abs_error']))
            lines.append(f'    truth - command, largest: {worst}')
    return lines
