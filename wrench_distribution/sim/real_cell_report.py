"""What each step of a real cell's procedure buys: tare off/on x open/closed loop (no ROS needed).

``python -m wrench_distribution.demo --scenario dual_arm_real_cell --tare compare`` makes the
four runs; :func:`compare` reads their ``elements.json`` (judged on the simulator's truth,
:mod:`.admittance_report`) and writes one table: per element the command, then per run the
true mean and the analyzer's estimate; the elements outside the target in the tared closed
loop, and the belief parameters that limit them (:mod:`.sensitivity`). See
docs/simulator.md, "Real cell".
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

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
