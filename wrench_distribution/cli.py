"""``wrench-distribution``: synthesis and analysis from problem files, and bag analysis.

Exit status: 0 on success, 2 on bad input or an unrealisable wrench (with a JSON
``{"error": "..."}`` on standard output for the problem-file subcommands); ``check-config``
exits 2 when a node would refuse the file, 1 when the two sections of the file disagree.
Every subcommand ends as a shell tool (:mod:`.bag.shell`): Ctrl-C prints one line and exits
130, a closed pipe ends quietly with 141.

Only the standard library is imported at module level (the rest when a subcommand runs), so
that a Ctrl-C during the start-up is handled as well.
"""
import argparse
import sys
from typing import List, Optional

from .bag import shell

#: the subcommands on bags (errors as one line on standard error)
BAG_COMMANDS = ('analyze-bag', 'identify', 'check-signs')


def _synthesize(args: argparse.Namespace) -> int:
    import numpy as np

    from .core.errors import WrenchDistributionError
    from .core.friction import add_friction
    from .core.problem import (build_distributor, friction_options, problem_weights, read_problem,
                               synthesis_document, to_json)
    from .core.validation import finite_vector
    from .engine.problem import engine_for_problem, synthesize_with_engine
    document = read_problem(args.problem)
    distributor, internal_load = build_distributor(document)
    if 'wrench' not in document:
        raise WrenchDistributionError('synthesize needs "wrench": [fx, fy, fz, tx, ty, tz]')
    wrench = finite_vector(document['wrench'], 6, 'wrench')
    options = friction_options(document)
    weights = problem_weights(document, distributor.names)
    engine = engine_for_problem(distributor, options, internal_load, document.get('limits'), weights)
    commands, limit = synthesize_with_engine(engine, wrench)
    distributor = engine.cache.distributor
    if limit is None:
        synthesis = distributor.synthesize(wrench, engine.commanded())
    else:  # changed by on_limit: the document of what is sent, read back (eq. 80)
        sent = distributor.analyze(commands)
        synthesis = distributor.synthesize(sent.resultant, sent.internal_load)
    output = synthesis_document(distributor, synthesis)
    for name, command in zip(distributor.names, commands):
        output['contacts'][name]['wrench'] = command.tolist()  # what the node publishes
    if limit is not None:
        output['limit'] = limit
    _add_weights(output, distributor, weights)
    if options.mode != 'off':
        stage = engine.friction
        model = stage.model(distributor.friction_view)
        added = stage.added
        if added is None and options.mode == 'auto':
            added = np.zeros(len(distributor.basis_names))
        add_friction(output, model, model.check(commands), added)
    print(to_json(output))
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from .core.errors import WrenchDistributionError
    from .core.friction import add_friction, FrictionModel, FrictionOptions
    from .core.contacts import ContactArrays
    from .core.problem import (analysis_document, build_distributor, friction_options, measured_matrix,
                               problem_weights, read_problem, to_json)
    from .engine.solver import WeightedSolver
    document = read_problem(args.problem)
    distributor, _ = build_distributor(document)
    if 'measured' not in document:
        raise WrenchDistributionError('analyze needs "measured": {contact: [fx, fy, fz, tx, ty, tz]}')
    measured = measured_matrix(distributor, document['measured'])
    weights = problem_weights(document, distributor.names)
    if weights is not None:  # read out on the contacts of positive weight (released rows: 0)
        distributor = WeightedSolver(ContactArrays.of(distributor.contacts), distributor.object_model,
                                     distributor.options, weights)
    analysis = distributor.analyze(measured)
    output = analysis_document(distributor, analysis)
    _add_weights(output, distributor, weights)
    options = friction_options(document)
    if options.mode != 'off':
        model = FrictionModel(distributor, FrictionOptions(mode='check', margin=options.margin))
        add_friction(output, model, model.check(measured), None)
    print(to_json(output))
    return 0


def _add_weights(output: dict, distributor, weights) -> None:
    """Add the contact weights to a result document (when the problem gives them)."""
    if weights is not None:
        output['contact_weights'] = dict(zip(distributor.names, weights.tolist()))
        output['released'] = distributor.released_names


def _basis(args: argparse.Namespace) -> int:
    from .core.problem import basis_document, build_distributor, read_problem, to_json
    distributor, _ = build_distributor(read_problem(args.problem))
    print(to_json({
        **basis_document(distributor),
        'virtual_masses': dict(zip(distributor.names, distributor.virtual_masses.tolist())),
        'regime': {'name': distributor.regime.name, 'reasons': list(distributor.regime.reasons),
                   'message': distributor.regime.message},
    }))
    return 0


def _check_config(args: argparse.Namespace) -> int:
    from .config import ConfigError
    from .config.check import judge_file
    from .core.problem import to_json
    from .engine.startup import startup_problems
    try:
        judgement, findings = judge_file(args.file, args.node or None, args.calibration)
    except ConfigError as error:
        document = {'file': args.file, 'ok': False, 'error': ' '.join(str(error).split())[:2000]}
        print(to_json(document) if args.format == 'json' else f"{args.file}: error: {document['error']}")
        return 2
    judgement.problems.extend(startup_problems(judgement.configs))
    errors = judgement.errors
    if errors:
        findings = []  # compared only between sections free of errors
    document = {'file': args.file, 'ok': not errors and not findings,
                'sections': judgement.sections, 'ignored': judgement.ignored,
                'errors': [p.as_dict() for p in errors],
                'warnings': [p.as_dict() for p in judgement.warnings],
                'findings': [f.as_dict() for f in findings]}
    if errors:
        document['error'] = ' '.join('; '.join(p.text() for p in errors).split())[:2000]
    print(to_json(document) if args.format == 'json' else _config_text(document, judgement, findings))
    return 2 if errors else (1 if findings else 0)


def _config_text(document: dict, judgement, findings: list) -> str:
    """Return the judgement of check-config as lines a person reads."""
    lines = [f"{document['file']}: judged {', '.join(judgement.sections) or 'no section'}"
             + (f"; ignored {', '.join(judgement.ignored)}" if judgement.ignored else '')]
    lines += [p.text() for p in judgement.problems]
    lines += ['finding: ' + f.text() for f in findings]
    errors, warnings = len(judgement.errors), len(judgement.warnings)
    lines.append(f'{errors} error(s), {warnings} warning(s), {len(findings)} finding(s)')
    return '\n'.join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every subcommand.

    :return: the parser.
    """
    parser = argparse.ArgumentParser(
        prog='wrench-distribution',
        description='Load distribution (Flight and Gosselin 2026) for a rigid object held by several effectors.')
    commands = parser.add_subparsers(dest='command', required=True)
    for name, handler, text in (
        ('synthesize', _synthesize, 'contact wrenches for a desired resultant ("wrench")'),
        ('analyze', _analyze, 'decompose measured contact wrenches ("measured")'),
        ('basis', _basis, 'list the named internal-load basis and the regime of a grasp'),
    ):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument('--problem', required=True, help='problem file, YAML or JSON')
        sub.set_defaults(handler=handler)
    text = ("judge a parameter file as the nodes and rcl's parser will: every section of this "
            "package's nodes (others are listed as ignored), errors and warnings with their fix, "
            'then the disagreements between the distributor and the analyzer; exit 2 on an '
            'error, 1 on a disagreement, 0 otherwise (warnings included)')
    sub = commands.add_parser('check-config', help=text, description=text)
    sub.add_argument('file', help='ROS parameter file (YAML), or a calibration file alone')
    sub.add_argument('--node', action='append', choices=('wrench_distributor', 'wrench_analyzer'),
                     help='a node the file must configure (repeat for both); default: the nodes '
                          'whose section the file has, both when it has neither')
    sub.add_argument('--calibration', default=None, metavar='FILE',
                     help="a calibration file (the nodes' calibration_file) judged against FILE's sections")
    sub.add_argument('--format', choices=('json', 'text'), default='json',
                     help='output: one JSON document (default) or lines of text')
    sub.set_defaults(handler=_check_config)
    try:
        from .bag import command as bag_command
    except ImportError:
        bag_command = None
    if bag_command is not None:
        sub = commands.add_parser('analyze-bag', help='analyse a rosbag2 bag (sqlite3 or mcap) offline')
        bag_command.add_arguments(sub)
        sub.set_defaults(handler=bag_command.run)
        from .bag import identify
        text = 'identify sensor biases, tools (and mounting rotations) and the held object from a bag'
        sub = commands.add_parser('identify', help=text, description=text)
        identify.add_identify_arguments(sub)
        sub.set_defaults(handler=identify.run_identify)
        text = "each sensor's sign from the weight it carries, the object held at rest in a bag"
        sub = commands.add_parser('check-signs', help=text, description=text)
        identify.add_signs_arguments(sub)
        sub.set_defaults(handler=identify.run_signs)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point: run one subcommand and end as a shell tool (:mod:`.bag.shell`).

    :param argv: arguments (default: ``sys.argv[1:]``, the process's own command line).
    :return: exit status.
    """
    words = sys.argv[1:] if argv is None else argv
    return shell.run(lambda: _run(argv), program=argv is None,
                     prepare=lambda: _import_libraries(words))


def _import_libraries(words: List[str]) -> None:
    """Import the libraries that start threads (numpy, pyarrow for the bag subcommands), load the kernels.

    The core's compiled kernels are loaded from numba's cache here, with Ctrl-C held as for the
    imports: a Ctrl-C that came while numba loads them (in a callback of its compiler) would print
    a traceback beside the one line (:mod:`.bag.shell`). Not for ``--help``.
    """
    import numpy  # noqa: F401
    if any(word in BAG_COMMANDS for word in words):
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:  # said by the subcommand
            pass
    if not {'-h', '--help'} & set(words):
        from .core.compiled import warm
        warm()


def _run(argv: Optional[List[str]]) -> int:
    from .core.errors import WrenchDistributionError
    from .core.problem import to_json
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except WrenchDistributionError as error:
        message = str(error)
    except (TypeError, ValueError, KeyError, OverflowError, RecursionError, MemoryError,
            FloatingPointError) as error:  # a value the checks above did not foresee
        message = f'invalid input: {type(error).__name__}: {error}'
    if shell.interrupted():  # the error is what the Ctrl-C became (module bag.shell)
        raise KeyboardInterrupt
    message = ' '.join(message.split())[:2000]
    if args.command in BAG_COMMANDS:
        print(f'error: {message}', file=sys.stderr)
    else:
        print(to_json({'error': message}))
    return 2


if __name__ == '__main__':
    sys.exit(main())
