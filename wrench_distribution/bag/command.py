"""The ``analyze-bag`` subcommand of ``wrench-distribution``.

``wrench-distribution analyze-bag BAG --config PARAMS.yaml --out DIR`` analyses a
rosbag2 bag (sqlite3 or mcap) offline, without ROS, with the analyzer node's
parameter file. BAG may also be a directory of bags, one Dask task per bag (on this
machine's cores, or on an existing cluster with ``--scheduler``).
User errors print one ``error: ...`` line on stderr and return 2; so does a directory
run in which any bag failed (after every other bag was analysed). Outputs are committed whole
or not at all (:mod:`.outputs`); an existing output directory is refused unless ``--replace``
or ``--resume``. Ctrl-C and a closed pipe end as :mod:`.shell` says (130, 141).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
import sys

from . import shell
from .errors import BagError
from ..core.errors import WrenchDistributionError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``analyze-bag``."""
    parser.add_argument('bag', type=Path,
                        help='rosbag2 bag directory (sqlite3 or mcap), or a directory of bags')
    parser.add_argument('--config', type=Path, required=True,
                        help='ROS parameter file of the analyzer node (PARAMS.yaml)')
    parser.add_argument('--out', type=Path, required=True, help='output directory')
    parser.add_argument('--node-name', default='wrench_analyzer',
                        help='node section of the parameter file (default: %(default)s)')
    parser.add_argument('--namespace', default='/',
                        help='namespace the analyzer ran in; resolves relative topic names '
                             '(default: %(default)s)')
    parser.add_argument('--contact-source', choices=('topic', 'static', 'tf'),
                        help='override the contact_source parameter')
    parser.add_argument('--chunk', type=int, default=None,
                        help='F/T messages read per chunk (bounds memory)')
    parser.add_argument('--jobs', type=int, default=None,
                        help='worker processes of the local Dask cluster for a directory of '
                             'bags (default: cores)')
    parser.add_argument('--scheduler', default=None, metavar='ADDRESS',
                        help='directory of bags: Dask scheduler to send one task per bag to '
                             '(e.g. tcp://10.0.0.5:8786), or "local" to start a local cluster '
                             '(default: a local cluster of --jobs processes)')
    parser.add_argument('--csv', action='store_true',
                        help='also write samples.csv (samples.parquet is always written)')
    parser.add_argument('--no-plots', action='store_true', help='skip the PNG plots')
    parser.add_argument('--allow-incomplete', action='store_true',
                        help='analyse what can be read of a bag with unreadable parts or fewer '
                             'messages than it announces (reported in summary.json and the '
                             'index) instead of failing')
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument('--progress', dest='progress', action='store_true', default=None,
                          help='draw a progress bar (default: when stderr is a terminal)')
    progress.add_argument('--no-progress', dest='progress', action='store_false')
    parser.add_argument('--tare', metavar='START:END', default=None,
                        help='tare the sensors on the samples stamped in this window first '
                             '(seconds from the first F/T header stamp of the bag; "@" before '
                             'both numbers: absolute header-stamp time), with tare_state of '
                             'the parameter file; the biases replace sensor_biases')
    parser.add_argument('--json', action='store_true',
                        help='print the summary as JSON instead of a table')
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument('--replace', dest='existing', action='store_const', const='replace',
                          default='refuse',
                          help='replace an existing output directory (every file of the old run '
                               'is removed; only a directory holding nothing but analyze-bag '
                               'outputs is replaced)')
    existing.add_argument('--resume', dest='existing', action='store_const', const='resume',
                          help='keep the outputs already committed in the output directory for '
                               'the same bag (by identity) and settings, analyse the rest')


def _error(message: str) -> int:
    if shell.interrupted():  # the error is what the Ctrl-C became: say that instead
        raise KeyboardInterrupt
    one_line = ' '.join(str(message).split())
    sys.stderr.write(f'error: {one_line}\n')
    return 2


def analyzer_config_and_bag(args: argparse.Namespace):
    """Load the analyzer's section of ``--config`` and check the bag exists.

    :param args: the parsed command line (``config``, ``node_name``, ``bag``).
    :return: the analyzer configuration.
    :raises BagError: naming the missing parameter file or bag.
    :raises ConfigError: from the configuration's checks.
    """
    from wrench_distribution.config.loading import load_analyzer_config
    if not args.config.is_file():
        raise BagError(f'parameter file not found: {args.config}')
    config = load_analyzer_config(args.config, args.node_name)
    if not args.bag.exists():
        raise BagError(f'bag not found: {args.bag}')
    return config


def run(args: argparse.Namespace) -> int:
    """Run ``analyze-bag``; 0 on success, 2 on a user error (message on stderr)."""
    from wrench_distribution.config.schema import ConfigError
    try:
        import pyarrow  # noqa: F401 -- samples.parquet
    except ImportError as err:
        return _error(f'analyze-bag writes Parquet with pyarrow, which is not installed '
                      f'({err}); pip install pyarrow')

    from . import parallel
    from .pipeline import DEFAULT_CHUNK, Options, analyze_bag
    from .summary import format_table

    show = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    chunk = args.chunk if args.chunk else DEFAULT_CHUNK
    if chunk < 1:
        return _error('--chunk must be a positive number of messages')
    if args.jobs is not None and args.jobs < 1:
        return _error('--jobs must be at least 1')
    if args.jobs is not None and args.scheduler not in (None, 'local'):
        return _error('--jobs sizes a local cluster; a remote cluster has the workers '
                      'it was started with')
    try:
        tare = parse_tare(args.tare) if args.tare else None
    except ValueError as err:
        return _error(str(err))
    options = Options(namespace=args.namespace, contact_source=args.contact_source,
                      chunk=chunk, plots=not args.no_plots, progress=show,
                      node_name=args.node_name, csv=args.csv, tare=tare,
                      allow_incomplete=args.allow_incomplete,
                      existing=getattr(args, 'existing', 'refuse'))
    try:
        config = analyzer_config_and_bag(args)
        if args.bag.is_dir() and not parallel.is_bag(args.bag) and parallel.find_bags(args.bag):
            return _directory(args, config, options, show)
        summary = analyze_bag(args.bag, config, args.out, options, config_name=str(args.config))
    except (BagError, ConfigError) as err:
        return _error(str(err))
    except WrenchDistributionError as err:  # a pose or wrench in the bag the core refuses
        return _error(f'the bag holds data the analysis refuses: {err}')
    except MemoryError:
        return _error('out of memory; use a smaller --chunk')
    return _print(json.dumps(summary, indent=2) if args.json else format_table(summary))


def parse_tare(text: str) -> tuple:
    """Parse ``--tare START:END`` (relative seconds) or ``@START:@END`` (absolute).

    :param text: the option's value.
    :return: ``(start_s, end_s, absolute)``.
    :raises ValueError: with a message naming the option.
    """
    import math
    parts = text.split(':')
    marks = [p.strip().startswith('@') for p in parts]
    try:
        if len(parts) != 2 or marks[0] != marks[1]:
            raise ValueError
        start, stop = (float(p.strip().lstrip('@')) for p in parts)
    except ValueError:
        raise ValueError(f'--tare {text!r}: expected START:END in seconds (e.g. 0.5:2.5), or '
                         '@START:@END in absolute header-stamp seconds') from None
    if not (math.isfinite(start) and math.isfinite(stop)) or stop <= start:
        raise ValueError(f'--tare {text!r}: END must be a finite number after START')
    return start, stop, marks[0]


def _directory(args: argparse.Namespace, config, options, show: bool) -> int:
    """Every bag under ``args.bag``: one folder each, ``index.parquet``, the table.

    Every bag's error is printed (the table, or the JSON) even when the index cannot be
    written.

    :raises BagError: when the output directory is refused or the scheduler not reached.
    """
    from . import index, parallel
    run = parallel.analyze_directory(
        args.bag, config, args.out, options, scheduler=args.scheduler, jobs=args.jobs,
        show_progress=show, config_name=str(args.config))
    path = args.out / 'index.parquet'
    _print(json.dumps([dataclasses.asdict(r) for r in run.results], indent=2)
           if args.json else index.format_index(run.results))
    failed = [r for r in run.results if r.error]
    errors = ([f'{len(failed)} of {len(run.results)} bags failed (first: {failed[0].bag}: '
               f'{failed[0].error})'] if failed else [])
    if run.index_error:
        return _error('; '.join(errors + [run.index_error]))
    if errors:
        return _error(f'{errors[0]}; see {path}')
    return 0


def _print(text: str) -> int:
    """Print the result (a closed pipe raises BrokenPipeError: :mod:`.shell` ends quietly)."""
    print(text, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m wrench_distribution.bag.command``)."""
    parser = argparse.ArgumentParser(prog='wrench-distribution analyze-bag',
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return shell.run(lambda: run(parser.parse_args(argv)), program=argv is None, prepare=_load_kernels)


def _load_kernels() -> None:
    """Load the core's compiled kernels with Ctrl-C held (as ``wrench-distribution`` does: :mod:`..cli`)."""
    from ..core.compiled import warm
    warm()


if __name__ == '__main__':
    sys.exit(main())
