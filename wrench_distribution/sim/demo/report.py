"""What a demo run reports: its summary, plot and files, the user's steps, a comparison's table."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys

from ..scenarios.runs import read_calibration
from ..scenarios.sections import validate_sections


def report(args, run: dict, summary_extra: dict, title: str, ok: bool) -> int:
    """Summarise the recorded bag, write the summary files and plot.

    :param args: parsed arguments.
    :param run: as for :func:`~.nodes.run_nodes`.
    :param summary_extra: fields added to the summary (wall time, scenario...).
    :param title: the run's title line.
    :param ok: whether the run itself went well.
    :return: exit code.
    """
    out, params_file = run['out'], run['params_file']
    if not (out / 'bag').exists():
        print('demo: no bag was written', file=sys.stderr)
        return 1
    from ..reports.summary import format_summary, plot, read_bag, summarize, write_json
    series = read_bag(out / 'bag')
    summary = summarize(series, run['sections'], run['duration'])
    summary.update(summary_extra)
    from ..reports.faults import fault_summary, format_faults
    faults = fault_summary(out / 'bag', run['sections'], validate_sections(run['sections']),
                           summary.get('_internal'))
    if faults is not None:
        summary['sensor_faults'] = faults
    text = format_summary(summary, title + f' (wall {summary["wall_time_s"]:.1f} s)')
    if faults is not None:
        text += '\n' + '\n'.join(format_faults(faults, summary['basis']))
    from ..reports.transitions import format_transitions, transitions_summary
    transitions = transitions_summary(out / 'bag', validate_sections(run['sections']))
    if transitions is not None:
        summary['contact_transitions'] = transitions
        text += '\n' + '\n'.join(format_transitions(transitions))
    print()
    print(text)
    write_json(summary, out / 'summary.json')
    if not args.no_plot:
        plot(summary, out / 'plot.png', title)
    from ..reports.elements import format_elements, write_element_summary
    elements = write_element_summary(out, run['sections'], run['duration'], args.summary_json,
                                     not args.no_plot, summary_extra)
    if elements is not None:
        text += '\n\n' + format_elements(elements)
    (out / 'summary.txt').write_text(text + '\n')
    print()
    print(f'Files: {out / "summary.txt"}, {out / "summary.json"}'
          + ('' if args.no_plot else f', {out / "plot.png"}') + f', bag {out / "bag"} (mcap)')
    print(f'Replay offline: wrench-distribution analyze-bag {out / "bag"} '
          f'--config {params_file} --out {out / "analysis"}')
    needed = ('object_pose', 'desired_wrench', 'measured/internal_load')
    missing = [t for t in needed if summary['message_counts'].get(t, 0) == 0]
    if missing:
        print(f'demo: nothing recorded on {", ".join(missing)}', file=sys.stderr)
        ok = False
    return 0 if ok else 1


def _calls_record(script, label: str, what: str) -> dict:
    """Print a user's service calls, each with its answer, and return their record.

    :param script: the calls made (``ServiceScript``).
    :param label: the lines' label.
    :param what: the procedure's name, in the message when it did not complete.
    :return: the record (``calls``, ``success``).
    """
    record = script.summary()
    for call in record['calls']:
        print(f'  {label}: {call["service"]} at {call["called_at_s"]:.2f} s: '
              f'{"ok" if call["success"] else "REFUSED"}: {call["message"]}')
    if not record['success']:
        print(f'demo: {what} did not complete', file=sys.stderr)
    return record


def grasps_record(run: dict, out: Path) -> dict:
    """Return the grasp identification's record; the run's summary then judges the identified belief.

    The analyzer's contacts in ``run['sections']`` become the identified ones (what it used after
    ``~/calibration/identify_grasps``: the attribution of the estimate's error starts from them).
    """
    from ..reports.real_cell import format_grasps, grasps_vs_truth
    record = _calls_record(run['grasps'], 'grasps', 'the grasp identification')
    saved = read_calibration(out / 'calibration.yaml') if (out / 'calibration.yaml').exists() else {}
    if 'contact_positions' in saved:
        checked = validate_sections(run['sections'])
        record['identified'] = grasps_vs_truth(saved, checked['object_sim'])
        print(format_grasps(record['identified']))
        run['sections']['wrench_analyzer'].update(
            {k: list(saved[k]) for k in ('contact_positions', 'contact_orientations')})
    return record


def calibration_record(run: dict, out: Path) -> dict:
    """Return the calibration's record: the calls, and the saved parameters against the truth."""
    from ..reports.real_cell import format_identified, identified_vs_truth
    record = _calls_record(run['calibration'], 'calibration', 'the calibration')
    if (out / 'calibration.yaml').exists():
        checked = validate_sections(run['sections'])
        record['identified'] = identified_vs_truth(
            read_calibration(out / 'calibration.yaml'), checked['object_sim'], checked['wrench_analyzer'])
        print(format_identified(record['identified']))
    return record


def report_comparison(args: argparse.Namespace, stem: str, text: str, summary: dict) -> int:
    """Print a comparison's table and write it (``<out>/<stem>.txt``, ``.json``, ``--summary-json``).

    :param args: the parsed options (``out``, ``summary_json``).
    :param stem: the files' name without suffix.
    :param text: the table.
    :param summary: the comparison as JSON.
    :return: 0.
    """
    print()
    print(text)
    (Path(args.out) / f'{stem}.txt').write_text(text + '\n')
    for path in filter(None, (Path(args.out) / f'{stem}.json', args.summary_json)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(summary, indent=2) + '\n')
    return 0
