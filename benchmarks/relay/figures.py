"""The relay benchmark's figures: loss and latency from the roles' records, phases, rounds, ratios."""
import os

import numpy as np

from wrench_distribution.core.codec import ns_to_seconds

from .fanout import DEFAULT_EFFECTORS, PHASE_BINS


def phase_parts(stamps, ft_clock: dict, bins: int = PHASE_BINS) -> np.ndarray:
    """Part of the F/T period in which each desired wrench was sent.

    The phase of a desired wrench stamped ``s`` is how far into its F/T period it was sent:
    ``((s - t0_ns) * rate) mod 1`` (the difference in seconds), the F/T process ticking at
    ``t0_ns + k / rate``.

    :param stamps: stamps (ns, system clock).
    :param ft_clock: the ``ft`` process's ``{'t0_ns', 'rate'}``.
    :param bins: equal parts of the F/T period.
    :return: per stamp, its part, 0 (just after the tick) to ``bins - 1``.
    """
    elapsed = np.asarray(stamps, dtype=np.int64) - int(ft_clock['t0_ns'])
    phase = np.mod(ns_to_seconds(elapsed) * ft_clock['rate'], 1.0)
    return np.minimum((phase * bins).astype(int), bins - 1)


def medians_by_part(part: np.ndarray, latencies, bins: int = PHASE_BINS) -> list:
    """Return the median of ``latencies`` in each part ``0 .. bins - 1``, NaN where none fell."""
    latencies = np.asarray(latencies, dtype=float)
    return [float(np.median(latencies[part == k])) if np.any(part == k) else float('nan')
            for k in range(bins)]


def relay_figures(windows: list, label: str, rate: float, effectors: int = DEFAULT_EFFECTORS) -> dict:
    """Loss and latency figures of one target from its windows, their cycles pooled.

    :param windows: per window, ``(source's JSON, sink's JSON, F/T clock or None)``: the
        stamps sent and the time they took; the outputs' counts and last arrival per stamp;
        the F/T streams' ``{'t0_ns', 'rate'}`` when they ran (adds ``p50_by_phase_ms``,
        :func:`medians_by_part` of :func:`phase_parts`, when every window has one).
    :param label: the ``target`` entry of the figures.
    :param rate: input rate (Hz).
    :param effectors: outputs of one cycle (a cycle is lost when any of them did not arrive).
    :return: dict of results (``lost_*_index``: counted over the windows in order).
    """
    lat, parts, lost_idx = [], [], []
    sent, elapsed = 0, 0.0
    for src_data, sink_data, ft_clock in windows:
        counts, last = sink_data['counts'], sink_data['last']
        done = []
        for i, s in enumerate(src_data['stamps']):
            if counts.get(str(s), 0) >= effectors:
                lat.append((last[str(s)] - s) * 1e-6)
                done.append(s)
            else:
                lost_idx.append(sent + i)
        if ft_clock:
            parts.append(phase_parts(done, ft_clock))
        sent += len(src_data['stamps'])
        elapsed += src_data['elapsed']
    by_phase = ({'p50_by_phase_ms': medians_by_part(np.concatenate(parts), lat)}
                if lat and len(parts) == len(windows) else {})
    lat = np.asarray(lat) if lat else np.asarray([np.nan])
    lost = len(lost_idx)
    return {**by_phase, 'target': label,
            'load1': round(os.getloadavg()[0], 2),
            'rate': rate, 'sent': sent, 'lost': lost,
            'lost_pct': 100.0 * lost / max(sent, 1),
            'held_hz': (sent - lost) / elapsed if elapsed > 0 else 0.0,
            'p50_ms': float(np.percentile(lat, 50)), 'p99_ms': float(np.percentile(lat, 99)),
            'lost_first_index': lost_idx[0] if lost_idx else None,
            'lost_last_index': lost_idx[-1] if lost_idx else None}


def merge_rounds(same: tuple) -> dict:
    """One row from the rows of one target and rate over the rounds.

    Counts add up; latencies and ratios are medians over the rounds. A ratio is taken within
    its round (relay and target run one after the other, under the same load), so the
    median of the ratios is what the machine's drift between rounds leaves alone.

    :param same: that target's row of each round.
    :return: the merged row (``*_range`` keys: the lowest and highest ratio of the rounds).
    """
    row = dict(same[0], rounds=len(same))
    for key in ('sent', 'lost'):
        row[key] = sum(r[key] for r in same)
    row['lost_pct'] = 100.0 * row['lost'] / max(row['sent'], 1)
    row['held_hz'] = float(np.mean([r['held_hz'] for r in same]))
    row['load1'] = round(float(np.mean([r['load1'] for r in same])), 2)
    row['loop_closed'] = all(r.get('loop_closed', True) for r in same)
    cpu = [r.get('cpu') or {} for r in same]
    row['cpu'] = {name: float(np.median([c[name] for c in cpu if name in c]))
                  for name in dict.fromkeys(k for c in cpu for k in c)}
    lossy = [r for r in same if r['lost_first_index'] is not None]
    for key in ('lost_first_index', 'lost_last_index'):
        row[key] = lossy[0][key] if lossy else None
    if all('p50_by_phase_ms' in r for r in same):  # per part of the F/T period
        row['p50_by_phase_ms'] = [float(np.nanmedian(part)) if np.isfinite(part).any()
                                  else float('nan') for part in
                                  zip(*(r['p50_by_phase_ms'] for r in same))]
    for key in ('p50_ms', 'p99_ms', 'p50_ratio', 'p99_ratio', 'p50_ratio_same',
                'p99_ratio_same', 'p50_ratio_traffic', 'p99_ratio_traffic'):
        if key in row:
            values = [r[key] for r in same]
            row[key] = float(np.median(values))
            if 'ratio' in key:
                row[key + '_range'] = (min(values), max(values))
    return row


def ratios(row: dict, ref: dict, suffix: str = '') -> None:
    """Add a row's p50 and p99 over the reference relay's (``p50_ratio<suffix>``, ``p99_ratio<suffix>``)."""
    row['p50_ratio' + suffix] = row['p50_ms'] / ref['p50_ms']
    row['p99_ratio' + suffix] = row['p99_ms'] / ref['p99_ms']
