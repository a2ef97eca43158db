"""One run of the relay benchmark: its processes started and stopped, its window's record.

A run starts the target (the bare relay, or the distributor and what feeds its feedback), the
sink and the source, each in its own process on the loopback (:mod:`wrench_distribution.processes`,
their output in the run's directory), measures each process's CPU share over the measured
window, and stops them all. :func:`latency_rows` repeats the runs over rates, windows and rounds.
"""
import json
import os
import sys
import tempfile
import time

import numpy as np

from wrench_distribution.processes import ChildProcess, Children, console_command, loopback_environment

from .fanout import analyzer_params, distributor_params, FanOut, READY_WAIT_S, write_params
from .figures import merge_rounds, ratios, relay_figures

#: The targets that are the bare relay, and those fed new contact poses and weights every tick.
RELAYS = ('relay', 'moving-relay')
MOVING = ('moving', 'moving-relay')
#: The benchmark's entry point: each role runs as ``bench_relay.py --role <role>``.
ENTRY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'bench_relay.py')


def start_role(children: Children, tmp: str, env: dict, fan: FanOut, role: str, *args: str) -> ChildProcess:
    """Start a role process (:mod:`.roles`) under its name, its log in ``tmp``.

    :param children: where it is started.
    :param tmp: the run's directory.
    :param env: its environment.
    :param fan: the run's effectors (every role is told them).
    :param role: ``source``, ``relay``, ``sink``, ``measure``, ``ft``, ``probe`` or ``talker``.
    :param args: its further arguments.
    :return: the process.
    """
    return children.start(role, [sys.executable, ENTRY, '--role', role, '--effectors', str(fan.effectors), *args],
                          env, log=os.path.join(tmp, f'{role}.log'))


def start_nodes(children: Children, tmp: str, env: dict, fan: FanOut, target: str,
                analyzer_rate: float, layout: str, common: list) -> None:
    """Start the distributor and what feeds its feedback (parameter files in ``tmp``).

    ``feedback`` with ``analyzer_rate > 0``: the analyzer and the ``ft`` process feeding it,
    the two nodes in two processes (``layout`` ``processes``) or in one (``one-process``:
    the ``cell`` executable); ``feedback`` alone: a ``measure`` process.

    :param children: where they are started, by name.
    :param tmp: directory for the parameter files and logs.
    :param env: environment of the nodes (their executor chosen in it).
    :param fan: the run's effectors.
    :param target: ``distributor``, ``feedback`` or ``moving`` (contacts from the source, new
        every tick).
    :param analyzer_rate: F/T rate (Hz), 0 for none.
    :param layout: ``processes`` or ``one-process``.
    :param common: the role arguments (rate, duration, settle).
    """
    dist = distributor_params(fan, feedback=target == 'feedback', moving=target == 'moving')
    pf = os.path.join(tmp, 'p.yaml')

    def node(name: str, script: str, module: str) -> None:
        children.start(name, console_command(script, module) + ['--ros-args', '--params-file', pf,
                                                                '--log-level', 'warn'],
                       env, log=os.path.join(tmp, f'{name}.log'))
    if target == 'feedback' and analyzer_rate > 0:
        start_role(children, tmp, env, fan, 'ft', *common[2:], '--rate', str(analyzer_rate),
                   '--out', ft_clock_file(tmp))
        write_params(pf, {'wrench_distributor': dist, 'wrench_analyzer': analyzer_params()})
        if layout == 'one-process':
            node('cell', 'cell', 'wrench_distribution.cell')
        else:
            for exe in ('analyzer', 'distributor'):
                node(exe, exe, f'wrench_distribution.{exe}_node')
        return
    if target == 'feedback':
        start_role(children, tmp, env, fan, 'measure', *common)
    write_params(pf, {'/**': dist})
    node('distributor', 'distributor', 'wrench_distribution.distributor_node')


def ft_clock_file(tmp: str) -> str:
    """Return where the ``ft`` process writes its clock (first tick, rate) in a run's ``tmp``."""
    return os.path.join(tmp, 'ft.json')


def read_json(path: str) -> dict:
    """Return what a role process wrote to ``path``."""
    with open(path) as f:
        return json.load(f)


def read_role_json(procs: Children, path: str) -> dict:
    """Return what a role wrote to ``path``; when it wrote nothing readable, show every log first.

    :raises OSError: or ``ValueError``, as :func:`read_json`, after the logs are printed.
    """
    try:
        return read_json(path)
    except (OSError, ValueError):
        for name, child in procs.items():
            print(f'--- {name} ({child.returncode}):\n{child.output()[-2000:]}', file=sys.stderr)
        raise


def _cpu_seconds(proc: ChildProcess) -> float:
    """CPU time (user + system, every thread) a running process has used, or NaN."""
    try:
        with open(f'/proc/{proc.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return float('nan')


def cpu_shares(procs: Children, src_out: str, timeout: float) -> dict:
    """Share of one core each process used while the source published its measured inputs.

    The window runs from the source's ``<out>.start`` file (written as its measured loop
    begins) to its ``<out>`` file (written when it ends); ``/proc/<pid>/stat`` (Linux).

    :param procs: the running processes, by name.
    :param src_out: the source's output file.
    :param timeout: seconds to wait for each file.
    :return: name -> percent of one core (empty when the window was not seen).
    """
    def wait_for(path: str) -> bool:
        end = time.monotonic() + timeout
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.005)
        return os.path.exists(path)
    if not wait_for(src_out + '.start'):
        return {}
    start = {name: _cpu_seconds(p) for name, p in procs.items()}
    t0 = time.monotonic()
    if not wait_for(src_out):
        return {}
    elapsed = time.monotonic() - t0
    return {name: round(100.0 * (_cpu_seconds(p) - start[name]) / elapsed, 1)
            for name, p in procs.items()}


def run_one(target: str, rate: float, duration: float, settle: float, domain: int,
            executor: str, sink_executor: str = 'events', analyzer_rate: float = 0.0,
            layout: str = 'processes', ft_sweeps: float = 0.0, fan: FanOut = FanOut()) -> dict:
    """Run source, target (relay or distributor) and sink once; return its window's record.

    :param target: ``relay``, ``distributor``, ``feedback`` (the distributor with
        internal-load feedback on and a ``measure`` process), ``moving`` (the distributor
        with its contacts from the source: new poses every tick and a weight ramp) or
        ``moving-relay`` (the relay taking and publishing the same messages as ``moving``).
    :param rate: input rate (Hz).
    :param duration: seconds of publishing.
    :param settle: seconds of discovery before publishing.
    :param domain: ROS domain id.
    :param executor: executor kind of the relay or distributor (``runner.EXECUTOR_KINDS``).
    :param sink_executor: executor kind of the sink.
    :param analyzer_rate: with ``feedback``: > 0 runs the analyzer on two F/T streams at this
        rate instead of the ``measure`` process.
    :param layout: with the analyzer: ``processes`` (each node in its own) or ``one-process``.
    :param ft_sweeps: with the analyzer: the F/T streams run ``ft_sweeps / duration`` Hz
        faster than ``analyzer_rate``, so that their phase against the desired wrench sweeps
        that many F/T periods in the window (a sensor's own clock); 0: a phase fixed by chance.
    :param fan: the run's effectors.
    :return: ``window`` (for :func:`relay_figures`), ``cpu`` (:func:`cpu_shares`) and
        ``loop_closed``.
    """
    env = loopback_environment(domain)
    common = ['--rate', str(rate), '--duration', str(duration), '--settle', str(settle)]
    with tempfile.TemporaryDirectory(prefix='wd_bench_') as tmp, Children() as procs:
        if target in RELAYS:
            start_role(procs, tmp, env, fan, 'relay', '--relay-executor', executor,
                       *['--moving-contacts'] * (target == 'moving-relay'))
        else:
            ft_rate = analyzer_rate + ft_sweeps / duration if analyzer_rate > 0 else 0.0
            start_nodes(procs, tmp, dict(env, WRENCH_DISTRIBUTION_EXECUTOR=executor), fan, target,
                        ft_rate, layout, common)
        sink_out = os.path.join(tmp, 'sink.json')
        src_out = os.path.join(tmp, 'src.json')
        common += ['--ready', os.path.join(tmp, 'sink.ready')]
        start_role(procs, tmp, env, fan, 'sink', '--out', sink_out, '--sink-executor', sink_executor,
                   *common, *['--closed-loop'] * (target == 'feedback'))
        time.sleep(0.5)
        start_role(procs, tmp, env, fan, 'source', '--out', src_out, *common,
                   *['--moving-contacts'] * (target in MOVING))
        longest = duration + settle + READY_WAIT_S + 30
        cpu = cpu_shares(procs, src_out, longest)
        procs['source'].wait(longest)
        procs['sink'].wait(longest)
        procs.stop()  # every process started here, the measuring ones too
        src_data, sink_data = (read_role_json(procs, path) for path in (src_out, sink_out))
        ft_clock = read_json(ft_clock_file(tmp)) if os.path.exists(ft_clock_file(tmp)) else None
    if not sink_data.get('loop_closed', True):  # measured all the same, and said so
        print(f'{_label(target, analyzer_rate, layout)}: the feedback loop did not close '
              f'within {READY_WAIT_S:g} s', file=sys.stderr)
    return {'window': (src_data, sink_data, ft_clock), 'cpu': cpu,
            'loop_closed': sink_data.get('loop_closed', True)}


def _label(target: str, analyzer_rate: float, layout: str) -> str:
    """Name the ``target`` entry of a run's figures (without the executor kind)."""
    if target == 'moving':
        return 'distributor, new poses and weights every tick'
    if target == 'moving-relay':
        return 'relay, the same messages in and out'
    if target != 'feedback':
        return target
    if analyzer_rate <= 0:
        return 'distributor + feedback'
    label = f'distributor + feedback + analyzer ({len(FanOut().ft_names)} F/T at {analyzer_rate:g} Hz)'
    return label + ', one process' if layout == 'one-process' else label


def latency_rows(args, domain: int) -> list:
    """Run ``--rounds`` rounds of every latency run; one round: its rows as measured."""
    rounds = [_latency_round(args, domain) for _ in range(args.rounds)]
    return rounds[0] if args.rounds == 1 else [merge_rounds(same) for same in zip(*rounds)]


def _latency_round(args, domain: int) -> list:
    """Run one round: at each rate, every run's ``--windows`` windows, the runs alternating.

    :return: the round's rows, each run's windows pooled (:func:`relay_figures`).
    """
    rows = []
    for rate in args.rates:
        relays = [('relay', kind, None) for kind in dict.fromkeys([args.reference] + args.executors)] + (
            [('moving-relay', args.reference, None)] if args.moving_contacts else [])
        targets = [('distributor', 'processes')] + (
            [('feedback', layout) for layout in (args.layouts if args.analyzer_rate > 0
                                                 else ['processes'])] if args.feedback else []) + (
            [('moving', 'processes')] if args.moving_contacts else [])
        runs = relays + [(target, kind, layout) for kind in args.executors
                         for target, layout in targets]
        records = {run: [] for run in runs}
        for _ in range(args.windows):  # the runs alternate: the machine's drift falls on each
            for run in runs:
                target, kind, layout = run
                records[run].append(run_one(
                    target, rate, args.duration / args.windows, args.settle, domain, kind,
                    args.sink_executor, args.analyzer_rate, layout or 'processes',
                    args.ft_sweeps, FanOut(args.effectors)))
        for target, kind, layout in runs:
            rows.append(_pooled_row(records[target, kind, layout], target, kind, layout, rate,
                                    args.analyzer_rate, args.effectors))
        relay_rows = {r['kind']: r for r in rows[-len(runs):]
                      if not r['is_distributor'] and not r['moving']}
        moving_relay = [r for r in rows[-len(runs):] if not r['is_distributor'] and r['moving']]
        for r in rows[-len(runs):]:
            ratios(r, relay_rows[args.reference])
            if r['is_distributor'] and r['kind'] in relay_rows:
                ratios(r, relay_rows[r['kind']], '_same')
            if r['is_distributor'] and r['moving'] and moving_relay:
                ratios(r, moving_relay[0], '_traffic')
            print(json.dumps(r), flush=True)
    return rows


def _pooled_row(records: list, target: str, kind: str, layout, rate: float,
                analyzer_rate: float, effectors: int) -> dict:
    """One run's row from its windows' records (:func:`run_one`), the cycles pooled.

    :return: the row: figures, CPU shares (medians over the windows), ``kind``,
        ``is_distributor``, ``layout`` (the loop's only) and ``windows``.
    """
    label = _label(target, analyzer_rate, layout or 'processes')
    row = relay_figures([rec['window'] for rec in records], f'{label} ({kind})', rate, effectors)
    cpu = [rec['cpu'] or {} for rec in records]
    row.update(cpu={name: float(np.median([c[name] for c in cpu if name in c]))
                    for name in dict.fromkeys(k for c in cpu for k in c)},
               loop_closed=all(rec['loop_closed'] for rec in records), kind=kind,
               is_distributor=target not in RELAYS, moving=target in MOVING, windows=len(records),
               layout=layout if target == 'feedback' else None)
    return row
