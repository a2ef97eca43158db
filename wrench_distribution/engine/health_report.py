"""What the sensor health says, in words and figures: the report, the diagnostics (no ROS).

:func:`health_report` is a :class:`~.health.HealthMonitor`'s whole state, JSON-ready
(``analyze-bag``, :mod:`wrench_distribution.bag.health`); :func:`health_diagnostics` the
analyzer's ``sensor health`` status: one condition per sensor in doubt and one for the set
(ERROR while frozen, out of range, drifting or inconsistent, WARN within a spike's recovery),
the read-out's elements each doubt reaches, a counter per sensor and check (its episodes)
and the first and latest onsets. docs/health.md.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core.codec import ns_to_seconds
from .sensor_health import CHECKS
from .status import ERROR


def describe(names: Sequence[str], finding) -> str:
    """Say what an inconsistent block means, naming the sensor where one explains it.

    :param names: the sensors' names.
    :param finding: the block's :class:`~.set_health.Finding`.
    :return: one line.
    """
    figures = ', '.join(f'{x:.3g}' for x in finding.excess)
    if finding.named is not None:
        name = names[finding.named]
        if finding.cause == 'drift':
            axes = f" ({'/'.join(finding.axes)})" if finding.axes else ''
            return f'{name} drifts{axes}: it alone explains the resultant (excess {figures})'
        return f'{name} ({finding.cause}) explains the resultant (excess {figures})'
    who = ', '.join(names[i] for i in finding.candidates) or 'no single sensor'
    return f'inconsistent set, not isolated (could be: {who}; excess {figures})'


def _seconds(ns) -> Optional[float]:
    return None if ns < 0 else ns_to_seconds(int(ns))


def _sources(monitor) -> list:
    """``(check, episodes, latest index)`` of every per-sensor check and the set's drift."""
    latest = monitor.checks.count - 1
    return [(c, monitor.checks.episodes[c], latest) for c in CHECKS] + [
        ('drift', monitor.set.drift, monitor.set.blocks - 1)]


def health_report(monitor) -> dict:
    """Return the state of every check, JSON-ready (times in seconds of the stamps, None: never).

    :param monitor: the :class:`~.health.HealthMonitor`.
    :return: ``{'sensors': {name: {check: {...}, 'level', 'noise'}}, 'set': {...},
        'events': [...]}``.
    """
    sensors = {}
    levels = monitor.levels()
    for i, name in enumerate(monitor.names):
        entry = {check: {'in_doubt': bool(e.in_doubt(last)[i]), 'episodes': int(e.count[i]),
                         'flagged': int(e.flagged[i]),
                         'first_onset_s': _seconds(e.first_onset_ns[i]),
                         'onset_s': _seconds(e.onset_ns[i]), 'last_s': _seconds(e.last_ns[i])}
                 for check, e, last in _sources(monitor)}
        entry['level'] = int(levels[i])
        noise = monitor.checks.learner.noise[i]
        entry['noise'] = None if np.isnan(noise).any() else [float(x) for x in noise]
        sensors[name] = entry
    episodes = monitor.set.inconsistent
    latest = monitor.set.latest
    return {'sensors': sensors,
            'set': {'checked': monitor.set.model is not None, 'consistent': monitor.consistent,
                    'blocks': monitor.set.blocks, 'episodes': int(episodes.count[0]),
                    'inconsistent_blocks': int(episodes.flagged[0]),
                    'first_onset_s': _seconds(episodes.first_onset_ns[0]),
                    'latest': None if latest is None else describe(monitor.names, latest)},
            'events': [{'check': e.check, 'sensor': e.sensor, 'onset_s': _seconds(e.onset_ns),
                        'detected_s': _seconds(e.detected_ns), 'detail': e.detail}
                       for e in monitor.events]}


def health_diagnostics(monitor, elements: Optional[Sequence[Sequence[str]]] = None) -> tuple:
    """Return the ``sensor health`` status of a monitor: its conditions, values and counters.

    :param monitor: the :class:`~.health.HealthMonitor`.
    :param elements: per sensor, the read-out's elements its doubt reaches (None: not known).
    :return: ``(conditions [(level, message)], values {key: text}, counters {key: episodes})``.
    """
    levels = monitor.levels()
    conditions, values, counters = [], {}, {}
    for i, name in enumerate(monitor.names):
        flagged = []
        for check, e, last in _sources(monitor):
            if e.count[i]:
                counters[f'sensor_health.{name}.{check}'] = int(e.count[i])
                values[f'{name}.{check}'] = (f'episodes {int(e.count[i])}, first onset '
                                             f'{_seconds(e.first_onset_ns[i]):.6f} s, latest onset '
                                             f'{_seconds(e.onset_ns[i]):.6f} s')
            if e.in_doubt(last)[i]:
                flagged.append(f'{check} since {_seconds(e.onset_ns[i]):.3f} s')
        if flagged:
            reach = '' if elements is None else (
                f'; read-out elements affected: {", ".join(elements[i]) or "none"}')
            conditions.append((int(levels[i]), f'{name}: {", ".join(flagged)}{reach}'))
        values[f'{name}.level'] = ('OK', 'WARN', 'ERROR')[int(levels[i])]
    episodes = monitor.set.inconsistent
    if episodes.count[0]:
        counters['sensor_health.set.inconsistent'] = int(episodes.count[0])
    if not monitor.consistent:
        latest = monitor.set.latest
        conditions.append((ERROR, f'set inconsistent since {_seconds(episodes.onset_ns[0]):.3f} s'
                           + ('' if latest is None else f': {describe(monitor.names, latest)}')))
    values['set'] = ('not checked' if monitor.set.model is None else
                     'consistent' if monitor.consistent else 'inconsistent')
    values['consistency_check'] = monitor.settings.consistency
    return conditions, values, counters


#: episodes listed in a summary (the counts cover them all)
SUMMARY_EVENTS = 100


def health_summary(monitor) -> dict:
    """Return what a bag's summary says of its sensors' health (``analyze-bag``'s ``health``).

    :param monitor: the :class:`~.health.HealthMonitor` after the bag.
    :return: ``{'consistency_check', 'in_doubt': [sensors with an episode], 'sensors': {name:
        {check: {'episodes', 'flagged', 'first_onset_s'}} for the checks with an episode},
        'set': {...}, 'events': the first SUMMARY_EVENTS episodes, 'events_listed'}``.
    """
    report = health_report(monitor)
    keys = ('episodes', 'flagged', 'first_onset_s')
    sensors = {name: {check: {key: entry[check][key] for key in keys}
                      for check in list(CHECKS) + ['drift'] if entry[check]['episodes']}
               for name, entry in report['sensors'].items()}
    return {'consistency_check': monitor.settings.consistency,
            'in_doubt': [name for name, checks in sensors.items() if checks],
            'sensors': sensors, 'set': report['set'],
            'events': report['events'][:SUMMARY_EVENTS],
            'events_listed': min(len(report['events']), SUMMARY_EVENTS)}


def health_lines(health: dict) -> list:
    """Return the summary table's lines of a bag's sensor health (:func:`health_summary`).

    :param health: the summary's ``health``.
    :return: lines such as ``health         left: frozen 1 episode(s) from 2.000 s``.
    """
    parts = [f'{name}: ' + ', '.join(f"{check} {e['episodes']} episode(s) from "
                                     f"{e['first_onset_s']:.3f} s" for check, e in checks.items())
             for name, checks in health['sensors'].items() if checks]
    s = health['set']
    if s['episodes']:
        parts.append(f"set inconsistent {s['episodes']} episode(s) from {s['first_onset_s']:.3f} s"
                     f" ({s['latest']})")
    lines = [f'health         {part}' for part in parts] or ['health         no sensor in doubt']
    if not s['checked']:
        lines.append(f"health         set not checked (consistency_check {health['consistency_check']})")
    return lines
