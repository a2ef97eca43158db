"""Offline analysis of one bag: read, synchronise, analyse, write outputs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import time
from typing import Any, Optional


from wrench_distribution.config import changed_config
from wrench_distribution.core.codec import ns_to_seconds, seconds_to_ns
from wrench_distribution.engine import AnalysisEngine, StaticPoses
from wrench_distribution.engine.analysis import needs_orientation
from wrench_distribution.engine.health import HealthMonitor
from wrench_distribution.engine.health_report import health_summary
from . import ledger, outputs, plotjuggler, plots, summary as summary_mod
from .errors import BagError, IncompleteBag
from .friction import friction_active, FrictionRecorder
from .poses import read_pose_array, read_pose_stamped, read_tf, tf_poses
from .progress import Progress
from .reader import BagReader, WRENCH_STAMPED
from .samples import package_version, SamplesWriter
from .weights import BasisPerContactSet, follow_weights, weights_summary

#: F/T messages per chunk: bounds memory (about 200 bytes per message in flight)
DEFAULT_CHUNK = 200_000


@dataclass
class Options:
    """How to analyse a bag.

    :param namespace: namespace the analyzer node runs in (resolves relative topics).
    :param contact_source: override of the ``contact_source`` parameter, or None.
    :param chunk: F/T messages per chunk.
    :param plots: write the PNG plots.
    :param progress: draw a progress bar on stderr.
    :param node_name: node whose section of the parameter file is used.
    :param csv: also write ``samples.csv`` (``samples.parquet`` is always written).
    :param timings: if a dict, receives the seconds spent per stage (benchmarks).
    :param tare: ``(start, stop, absolute)``: tare the sensors on the samples stamped in
        this window (s; relative to the first F/T stamp unless absolute), or None.
    :param allow_incomplete: analyse a bag of which part cannot be read (reported in the
        summary) instead of failing.
    :param existing: what an existing output directory meets (:mod:`.outputs`): ``refuse``,
        ``replace``, or ``resume`` (kept when it holds this bag's output with these settings).
    """

    namespace: str = '/'
    contact_source: Optional[str] = None
    chunk: int = DEFAULT_CHUNK
    plots: bool = True
    progress: bool = False
    node_name: str = 'wrench_analyzer'
    csv: bool = False
    timings: Optional[dict] = None
    tare: Optional[tuple] = None
    allow_incomplete: bool = False
    existing: str = 'refuse'


def resolve_topic(name: str, namespace: str = '/', node: str = 'wrench_analyzer') -> str:
    """Fully qualified topic name, as ROS resolves it for a node in ``namespace``."""
    ns = '/' + namespace.strip('/') if namespace.strip('/') else ''
    if name.startswith('/'):
        return name
    if name.startswith('~'):
        return f'{ns}/{node}/{name[1:].lstrip("/")}'
    return f'{ns}/{name}'


def storage_of(path: Path) -> str:
    """``mcap`` or ``sqlite3`` (from the bag's files)."""
    if any(p.suffix == '.mcap' for p in Path(path).glob('*')):
        return 'mcap'
    return 'sqlite3'


def pose_sources(bag: BagReader, config: Any, source: str, namespace: str, node: str) -> tuple:
    """Contact-pose source for the bag, as configured, and the sensor-pose source or None.

    :raises BagError: when the configuration or the bag cannot give the poses.
    """
    names = list(config.effectors)
    if source == 'static':
        if config.contacts is None:
            raise BagError('contact_source is static but contact_positions is not set '
                           'in the configuration')
        return StaticPoses([list(c.position) + list(c.orientation) for c in config.contacts]), None
    if source == 'topic':
        topic = resolve_topic(config.topics.contact_poses, namespace, node)
        return read_pose_array(bag, topic, names, config.object_frame,
                               ns_to_seconds(config.contact_timeout_ns)), None
    if source == 'tf':
        edges = read_tf(bag)
        contacts = tf_poses(edges, [config.object_frame] * len(names), config.contact_frames)
        sensor_frames = config.settings.sensor_frames
        sensors = tf_poses(edges, config.contact_frames, sensor_frames) if sensor_frames else None
        return contacts, sensors
    raise BagError(f'unknown contact source {source!r}; use topic, static or tf')


def orientation_source(bag: BagReader, config: Any, namespace: str, node: str):
    """Return the object's orientation in ``gravity_frame`` from the bag, or None (not needed).

    :raises BagError: when the bag cannot give it.
    """
    if not needs_orientation(config):
        return None
    settings = config.settings
    frame = settings.gravity_frame
    if settings.orientation_source == 'topic':
        topic = resolve_topic(config.topics.object_pose, namespace, node)
        return read_pose_stamped(bag, topic, frame, ns_to_seconds(settings.orientation_timeout_ns))
    return tf_poses(read_tf(bag), [frame], [config.object_frame])


def analyze_bag(bag_path: Path, config: Any, out_dir: Path, options: Options = Options(),
                config_name: str = '') -> dict:
    """Analyse one bag into ``out_dir``, committed whole or not at all; return the summary.

    The files are written in a hidden directory renamed into place when all are finished,
    ``manifest.json`` last (:mod:`.outputs`). With ``options.existing`` ``resume``, an output
    of the same bag and settings already in place is kept and its summary returned.

    :raises BagError: on anything the user has to fix; ``out_dir`` is then as it was.
    """
    out_dir = Path(out_dir).absolute()
    bag = BagReader(bag_path)  # a bag, or a clear error, before anything is written
    clock = _StageClock(options.timings)
    clock.start()
    identity = (outputs.bag_identity(bag.path),
                outputs.settings_identity(run_settings(bag.path, config, options, config_name)))
    clock.stop('identity_commit')
    if options.existing == 'resume':
        outputs.sweep(out_dir.parent)  # what killed runs into it left
        kept = kept_summary(out_dir, identity, options)
        if kept is not None:
            return kept
    with outputs.Commit(out_dir, options.existing) as commit, \
            outputs.hidden_paths_named(commit.path, out_dir):
        try:
            summary = _analyse(bag, config, commit.path, options, config_name)
        except OSError as err:  # a write the steps above did not name (a full disk...)
            raise BagError(f'cannot analyse {bag.path} into {out_dir}: {err}') from None
        rows = {'samples.parquet': summary['samples'], 'samples.csv': summary['samples'],
                'friction.parquet': summary.get('friction', {}).get('samples')}
        clock.start()
        commit.commit(lambda done: outputs.manifest(bag.path, *identity, done, summary, rows))
        clock.stop('identity_commit')
    return summary


def run_settings(bag_path: Path, config: Any, options: Options, config_name: str) -> dict:
    """Return what, besides the bag, shapes the output files (their settings' identity)."""
    return {'info': run_info(bag_path, config, options, config_name),
            'options': {name: getattr(options, name) for name in (
                'namespace', 'contact_source', 'chunk', 'plots', 'node_name', 'csv', 'tare')}}


def kept_summary(out_dir: Path, identity: tuple, options: Options) -> Optional[dict]:
    """Return the summary of the output in ``out_dir`` if it is this bag's, with these settings.

    An output accepted with ``--allow-incomplete`` is kept only with that option again.
    """
    if outputs.matching_result(out_dir, *identity) is None:
        return None
    try:
        summary = summary_mod.read_json(out_dir / 'summary.json')
    except (OSError, ValueError):
        return None
    read_whole = (summary.get('completeness') or {}).get('complete', False)
    return summary if read_whole or options.allow_incomplete else None


def _analyse(bag: BagReader, config: Any, out_dir: Path, options: Options,
             config_name: str) -> dict:
    """Analyse an opened bag into ``out_dir`` (a run's hidden directory); return the summary.

    :raises BagError: on anything the user has to fix.
    """
    names = list(config.effectors)
    if options.plots:
        plots.preload()
    with bag:
        bag_path = bag.path
        topics, total = _ft_topics(bag, bag_path, config, options)
        analyzer, config, poses, tare, weights = _engine_for(bag, topics, config, out_dir, options)
        builder = summary_mod.SummaryBuilder(names)
        buffer = plots.PlotBuffer()
        friction = FrictionRecorder(config, analyzer, out_dir) if friction_active(config) else None
        samples = _samples_writer(out_dir, bag_path, config, options, config_name,
                                  analyzer.chunks.schedule is not None)
        progress = Progress(total, bag_path.name, enabled=options.progress)
        clock = _StageClock(options.timings)
        order = ledger.StampOrder(len(names))
        try:
            frames = config.settings.ft_frames if any(config.settings.ft_frames) else None
            _analyse_chunks(order.watch(bag.wrench_chunks(topics, options.chunk, frames)),
                            analyzer, samples,
                            (builder, buffer) + ((friction,) if friction else ()),
                            progress, clock)
        finally:  # every writer closed, whichever fails (a full disk fails them all)
            progress.close()
            try:
                if friction is not None:
                    friction.close()
            finally:
                clock.start()
                _close(samples)
                clock.stop('write_samples')
        completeness = bag.completeness()
        if builder.count == 0:
            raise BagError(_no_sample_reason(bag_path, config, analyzer, total, completeness))
        summary = builder.build(
            bag=str(bag_path), storage=storage_of(bag_path), pose_source=poses.description,
            counters=analyzer.counters(), basis_names=basis_of(analyzer)[0],
            basis_units=basis_of(analyzer)[1], regimes=analyzer.regimes,
            distributors_built=analyzer.distributors_built, config=config_name, topics=topics)
        if tare is not None:
            summary['tare'] = tare
        summary['health'] = health_summary(analyzer.health)
        summary['contact_weights'] = weights_summary(analyzer, weights)
    summary['completeness'] = completeness
    ledger.account(summary, completeness, order, names)
    if friction is not None:
        summary['friction'] = friction.summary()
    if not completeness['complete'] and not options.allow_incomplete:
        raise IncompleteBag(incomplete_message(bag_path, completeness), summary)
    summary['outputs'] = samples.names + ['summary.json', 'plotjuggler_layout.xml'] + (
        ['friction.parquet'] if friction is not None else [])
    clock.start()
    _write_outputs(out_dir, summary, analyzer, buffer, config, options)
    clock.stop('plots_layout_json')
    return summary


def _engine_for(bag: BagReader, topics: list, config: Any, out_dir: Path,
                options: Options) -> tuple:
    """Build the analysis engine of a bag: its pose sources, the tare, the output directory.

    :return: ``(engine, config (with the tare's biases), contact poses, tare report or None,
        the recorded weights it follows (:func:`.weights.follow_weights`))``.
    :raises BagError: on a source the bag lacks or an output directory that cannot be made.
    """
    source = options.contact_source or config.contact_source
    poses, sensor_poses = pose_sources(bag, config, source, options.namespace, options.node_name)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BagError(f'cannot create output directory {out_dir}: {err}') from None
    orientation = orientation_source(bag, config, options.namespace, options.node_name)
    tare = None
    if options.tare is not None:
        config, tare = _tare(bag, topics, config, (poses, sensor_poses, orientation), options)
    basis_check = BasisPerContactSet()
    engine = AnalysisEngine(config, poses, sensor_poses, basis_check, orientation=orientation)
    basis_check.engine = engine
    engine.health = HealthMonitor.for_config(config)  # the analyzer's checks (docs/health.md)
    weights = follow_weights(bag, engine, _weights_topic(config, options))
    return engine, config, poses, tare, weights


def _weights_topic(config: Any, options: Options) -> str:
    """Return the resolved ``actual_weights_topic``, or ``''`` (not followed)."""
    topic = config.topics.weights
    return resolve_topic(topic, options.namespace, options.node_name) if topic else ''


def _tare(bag: BagReader, topics: list, config: Any, sources: tuple, options: Options) -> tuple:
    """Tare the sensors on a window of the bag (``--tare``): a first pass over the bag.

    The pass follows the recorded contact weights as the analysis does (:func:`.weights.follow_weights`):
    a ``held`` tare distributes the object's weight over the contacts that carried in the
    window, and is refused when a contact left or returned within it.

    :param sources: contact poses, sensor poses, orientation (the analysis' own sources).
    :return: ``(config with sensor_biases set, the tare's report for summary.json)``.
    :raises BagError: when the window holds no sample, or the tare fails.
    """
    from wrench_distribution.engine.sensing import TareWindow
    start, stop, absolute = options.tare
    engine = AnalysisEngine(config, sources[0], sources[1], orientation=sources[2])
    frames = config.settings.ft_frames if any(config.settings.ft_frames) else None
    window = None
    counted = bag.read_state()  # the analysis pass counts the bag's messages afresh
    follow_weights(bag, engine, _weights_topic(config, options))
    for chunk in bag.wrench_chunks(topics, options.chunk, frames):
        if window is None:
            origin = 0 if absolute else int(chunk[2].min())
            window = TareWindow(0, origin + seconds_to_ns(start), origin + seconds_to_ns(stop))
            engine.record_tare(window)
        engine.push_chunk(*chunk)
        if int(chunk[2].min()) > window.stop_ns:
            break
    bag.restore_read_state(counted)
    if window is None:
        raise BagError(f'--tare {start:g}:{stop:g}: the bag holds no F/T message')
    state = config.settings.tare_state
    try:
        biases, spread, count = engine.tare(state)
    except ValueError as err:
        raise BagError(f'--tare {start:g}:{stop:g}: {err} (window {window.start_ns * 1e-9:.6f} s '
                       f'to {window.stop_ns * 1e-9:.6f} s)') from None
    values = [round(float(x), 12) for x in biases.ravel()]
    report = {'window_s': [ns_to_seconds(window.start_ns), ns_to_seconds(window.stop_ns)], 'samples': count,
              'state': state, 'sensor_biases': values,
              'spread': [float(x) for x in spread.ravel()]}
    if state == 'held':  # the contacts the object's weight was distributed over
        weights = engine.tare_window.contact_weights(len(engine.names))
        report['contact_weights'] = dict(zip(engine.names, weights.tolist()))
    return changed_config(config, {'sensor_biases': values}).config, report


def incomplete_message(bag_path: Path, completeness: dict) -> str:
    """One line saying what is missing from a bag and where (for the error and the index)."""
    short = [f"{t}: read {v['read']} of {v['announced']}"
             for t, v in completeness['topics'].items() if v['missing']]
    problems = completeness['problems']
    missing = completeness['missing_messages']
    cause = 'corrupt or truncated bag, ' if missing or completeness['corrupt_messages'] else ''
    return (f'bag {bag_path} is incomplete ({cause}{missing} messages missing'
            + (f'; {"; ".join(short)}' if short else '')
            + (f'; {"; ".join(problems[:3])}' if problems else '')
            + (f' (+{len(problems) - 3} more problems)' if len(problems) > 3 else '')
            + '); nothing was written; rerun with --allow-incomplete to analyse what can be '
            'read')


def _no_sample_reason(bag_path: Path, config: Any, analyzer: AnalysisEngine, total: int,
                      completeness: dict) -> str:
    """Why no sample came out: unreadable topics first, synchronisation last."""
    empty = [(t, v) for t, v in completeness['topics'].items()
             if v['type'] == WRENCH_STAMPED and v['read'] == 0]
    if empty:
        problems = completeness['problems']
        why = ('corrupt or truncated bag: ' + '; '.join(problems[:3]) if problems
               else 'the storage files hold none of them')
        return ('no F/T message could be read from '
                + ', '.join(f"{t} ({v['announced'] or 0} announced)" for t, v in empty)
                + f' in {bag_path}: {why}')
    return (f'no synchronised sample in {bag_path}: {total} F/T messages, none matched '
            f'within sync_tolerance={ns_to_seconds(config.settings.sync_tolerance_ns):g} s'
            + (f' with a contact pose ({analyzer.no_pose} samples had none: '
               f'{analyzer.contact_problem})' if analyzer.no_pose else '')
            + '; check sync_tolerance, max_age and the header stamps')


def _ft_topics(bag: BagReader, bag_path: Path, config: Any, options: Options) -> tuple:
    """Resolve the F/T topics, check their type and count their messages.

    :return: ``(topics, message count)``.
    :raises BagError: when a topic is missing or carries no WrenchStamped.
    """
    topics = [resolve_topic(t, options.namespace, options.node_name)
              for t in config.topics.ft]
    for eff, topic in zip(config.effectors, topics):
        bag.require(topic, WRENCH_STAMPED, f'F/T sensor of {eff}')
    return topics, bag.count(topics)


def _write_outputs(out_dir: Path, summary: dict, analyzer: AnalysisEngine,
                   buffer: plots.PlotBuffer, config: Any, options: Options) -> None:
    """Write the PlotJuggler layout, the plots (if asked) and ``summary.json``.

    :raises BagError: when a file cannot be written.
    """
    names = list(config.effectors)
    basis_names, basis_units = basis_of(analyzer)
    try:
        plotjuggler.write_layout(out_dir / 'plotjuggler_layout.xml', 'samples.csv', names,
                                 basis_names, analyzer.chunks.schedule is not None)
        if options.plots:
            for p in plots.write_plots(out_dir, buffer, names, basis_names,
                                       basis_units, config.settings.output_frame,
                                       plots.health_marks(summary.get('health'))):
                summary['outputs'].append(p.name)
        summary_mod.write_json(out_dir / 'summary.json', summary)
    except OSError as err:
        raise BagError(f'cannot write the outputs in {out_dir}: {err}') from None


def _samples_writer(out_dir: Path, bag_path: Path, config: Any, options: Options,
                    config_name: str, weights: bool) -> SamplesWriter:
    """Return the writer of ``samples.parquet`` (and ``samples.csv``), with its metadata.

    :param weights: recorded contact weights are followed (their columns are written).
    """
    return SamplesWriter(out_dir, list(config.effectors), csv=options.csv,
                         info=run_info(bag_path, config, options, config_name), weights=weights)


def basis_of(analyzer: AnalysisEngine) -> tuple:
    """Return the internal-load columns' names and units: the union of the bases met when weights are followed."""
    schedule = analyzer.chunks.schedule
    if schedule is None:
        return analyzer.basis_names, analyzer.basis_units
    return schedule.columns, schedule.units


def run_info(bag_path: Path, config: Any, options: Options, config_name: str) -> dict:
    """Return the metadata of ``samples.parquet``: version, bag, frame, configuration."""
    return {'package_version': package_version(), 'bag': str(bag_path),
            'storage': storage_of(bag_path), 'output_frame': config.settings.output_frame,
            'config_file': config_name, 'parameters': config.as_parameters()}


def _analyse_chunks(chunks, engine: AnalysisEngine, samples, sinks, progress, clock) -> None:
    """Synchronise, analyse and write every chunk.

    ``sinks`` (summary, plot buffer) receive each analysed chunk.
    """
    while True:
        clock.start()
        chunk = next(chunks, None)
        clock.stop('read_decode')
        if chunk is None:
            break
        progress.update(len(chunk[0]))
        result = engine.push_chunk(*chunk)
        clock.stop('analyse')
        if not len(result):
            continue
        _write(samples, result, engine)
        clock.stop('write_samples')
        for sink in sinks:
            sink.add(result)
        clock.stop('summary')
    engine.finish()


def _write(samples: SamplesWriter, result, analyzer: AnalysisEngine) -> None:
    try:
        samples.write(result, *basis_of(analyzer))
    except OSError as err:
        raise BagError(f'cannot write the samples in {samples.out_dir}: {err}') from None


def _close(samples: SamplesWriter) -> None:
    try:
        samples.close()
    except OSError as err:
        raise BagError(f'cannot write the samples in {samples.out_dir}: {err}') from None


class _StageClock:
    """Adds the time since the last mark to ``timings[stage]`` (no-op without a dict)."""

    def __init__(self, timings: Optional[dict]) -> None:
        self.timings = timings
        self._t = 0.0

    def start(self) -> None:
        if self.timings is not None:
            self._t = time.perf_counter()

    def stop(self, stage: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            self.timings[stage] = self.timings.get(stage, 0.0) + now - self._t
            self._t = now
