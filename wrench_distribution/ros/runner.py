"""Start a node, spin it on the package's one executor choice, report bad configuration."""
import gc
import os
import sys
from typing import Callable, Optional

import rclpy

#: Environment variable choosing the executor kind (one of :data:`EXECUTOR_KINDS`).
EXECUTOR_ENV = 'WRENCH_DISTRIBUTION_EXECUTOR'
#: Executor kinds: ``single`` (``SingleThreadedExecutor``), ``multi``
#: (``MultiThreadedExecutor``; a node's callbacks stay in its default mutually exclusive
#: group) and ``events`` (rclpy's experimental ``EventsExecutor``; single-threaded where
#: the installed rclpy has none, e.g. Humble).
EXECUTOR_KINDS = ('single', 'multi', 'events')
#: Kind used when neither the caller nor :data:`EXECUTOR_ENV` chooses one; chosen by the
#: figures of ``benchmarks/bench_relay.py`` (docs/benchmarks.md, "Executor").
DEFAULT_EXECUTOR = 'events'


def executor_kind(kind: Optional[str] = None) -> str:
    """Return the executor kind in force.

    :param kind: one of :data:`EXECUTOR_KINDS`; None reads :data:`EXECUTOR_ENV`, then
        falls back to :data:`DEFAULT_EXECUTOR`.
    :return: the kind.
    :raises ConfigError: for an unknown kind (the message names the variable).
    """
    from wrench_distribution.config.schema import ConfigError
    kind = kind or os.environ.get(EXECUTOR_ENV) or DEFAULT_EXECUTOR
    if kind not in EXECUTOR_KINDS:
        raise ConfigError(f'{EXECUTOR_ENV}={kind!r}: expected one of {", ".join(EXECUTOR_KINDS)}')
    return kind


def make_executor(kind: Optional[str] = None, context=None):
    """Return a new executor of the given kind.

    :param kind: one of :data:`EXECUTOR_KINDS`; None: :func:`executor_kind`.
    :param context: rclpy context (None: the default one).
    :return: the executor instance.
    :raises ConfigError: for an unknown kind (the message names the variable).
    """
    kind = executor_kind(kind)
    if kind == 'events':
        try:  # rclpy >= Jazzy; Humble has no EventsExecutor
            from rclpy.experimental import EventsExecutor
            return EventsExecutor(context=context)
        except ImportError:
            pass
    if kind == 'multi':
        from rclpy.executors import MultiThreadedExecutor
        return MultiThreadedExecutor(context=context)
    from rclpy.executors import SingleThreadedExecutor
    return SingleThreadedExecutor(context=context)


def spin_until_shutdown(executor, node=None) -> None:
    """Spin until SIGINT or SIGTERM (:data:`STOP`) or ``rclpy.shutdown``.

    A signal only sets :data:`STOP` (:func:`install_signal_handlers`); a 0.2 s timer of the
    node turns the request into the end of the spin, between two callbacks, so no callback
    is cut short and the context stays valid until the node is destroyed. The spin is one
    long timed call: ``EventsExecutor`` pays a stall of tens of milliseconds on each re-entry.

    :param executor: the executor, nodes already added.
    :param node: a node to own the stop-poll timer (None: no timer; the spin then ends on
        ``rclpy.shutdown`` only).
    """
    from rclpy.clock import Clock, ClockType
    from rclpy.task import Future
    done = Future()

    def poll() -> None:
        if STOP.requested and not done.done():
            done.set_result(True)
    if node is not None:  # on the steady clock: sim time may have stopped (no /clock)
        node.create_timer(SIGNAL_POLL_PERIOD, poll, clock=Clock(clock_type=ClockType.STEADY_TIME))
    while rclpy.ok() and not STOP.requested:
        executor.spin_until_future_complete(done, timeout_sec=SPIN_SLICE)


#: Period of the timer that turns a stop request into the end of the spin (s).
SIGNAL_POLL_PERIOD = 0.2
#: Length of one spin call (s); a re-entry costs a short stall with EventsExecutor.
SPIN_SLICE = 3600.0


class StopRequest:
    """SIGINT / SIGTERM as a request that the spin loops honour between two callbacks.

    rclpy's own handlers shut the context down at once: a callback that runs at that moment
    fails in ``publish`` ("context is invalid"), or takes the ``KeyboardInterrupt``, and
    ``EventsExecutor`` logs it as ``[FATAL] Exception in 'subscriptions' callback`` with a
    traceback. This handler only sets a flag (safe at any bytecode); the node's loop ends on
    it, then the node is destroyed and the context shut down in order.

    :ivar requested: a signal arrived.
    """

    def __init__(self) -> None:
        self.requested = False

    def reset(self) -> None:
        """Forget an earlier request (a new run of the process's spin loop)."""
        self.requested = False

    def __call__(self, signum, frame) -> None:  # noqa: D102 (a signal handler)
        self.requested = True


#: The process's one stop request (the node loops read it: :func:`stop_requested`).
STOP = StopRequest()


def stop_requested() -> bool:
    """Whether SIGINT or SIGTERM asked this process to stop.

    :return: True once a signal arrived (a custom spin loop ends on it).
    """
    return STOP.requested


def init_without_signal_handlers(args=None) -> None:
    """``rclpy.init`` without rclpy's signal handlers, then this module's (:class:`StopRequest`).

    ``SignalHandlerOptions`` exists from Humble on; an rclpy without it keeps its own
    handlers until :func:`install_signal_handlers` replaces them.

    :param args: ROS command-line arguments.
    :raises RuntimeError: rclpy's ``RCLError`` (e.g. a parameter file rcl cannot parse).
    """
    try:
        from rclpy.signals import SignalHandlerOptions
    except ImportError:  # pragma: no cover - an rclpy without the option
        rclpy.init(args=args)
    else:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    install_signal_handlers()


def install_signal_handlers() -> None:
    """Route SIGINT and SIGTERM to :data:`STOP` (main thread only)."""
    import signal
    STOP.reset()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, STOP)


def init_failure(error: Exception) -> str:
    """Return the message of an ``rclpy.init`` failure, with the fix of rcl's parameter-file errors.

    rcl parses every ``--params-file`` before any node exists; a list that mixes integers and
    doubles (``[0, 0.38]``) or types ends the process there ("Sequence should be of same
    type").

    :param error: the ``RCLError`` (a ``RuntimeError``) ``rclpy.init`` raised.
    :return: one line.
    """
    text = ' '.join(str(error).split())
    if 'params file' not in text:
        return f'cannot start: {text}'
    hint = (' A list must hold one type: write 0.0, not 0, beside doubles.'
            if 'same type' in text else '')
    return (f'invalid parameter file: {text}.{hint} wrench-distribution check-config FILE '
            'names every such problem with its fix.')


def refuse_param_files(name: str, argv) -> bool:
    """Refuse, before ``rclpy.init``, the parameter files rcl must not read (one line each).

    :param name: node (or process) name for messages.
    :param argv: the ROS command-line arguments ``rclpy.init`` is given.
    :return: True when a file was refused (the process exits 2 without starting rcl).
    """
    from wrench_distribution.config.check import param_file_refusals
    refused = param_file_refusals(list(argv))
    for line in refused:
        print(f'[{name}] invalid configuration: {line}', file=sys.stderr, flush=True)
    return bool(refused)


def _stop_executor(executor) -> None:
    """Let an executor's worker threads finish their callbacks before the node goes."""
    try:
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
    except Exception:  # noqa: BLE001 - an executor without shutdown, or already shut down
        pass


def _shut_down(nodes: tuple, name: str) -> None:
    """Take the managed nodes to ``finalized``: from ``active``, each publishes its stop first."""
    from wrench_distribution.ros.managed import ManagedNode
    for each in nodes:
        if isinstance(each, ManagedNode):
            try:
                each.shut_down()
            except Exception as e:  # noqa: BLE001 - its context gone: the process ends anyway
                print(f'[{name}] shutdown of {each.get_name()}: {e}', file=sys.stderr, flush=True)


def _destroy(nodes: tuple) -> None:
    """Destroy the nodes a run made (one failing does not keep the others alive)."""
    for each in nodes:
        try:
            each.destroy_node()
        except Exception:  # noqa: BLE001 - already destroyed, or its context gone
            pass


def _end(executor, nodes: tuple, name: str) -> None:
    """End a run: stop the executor, shut the managed nodes down, destroy them, shut rclpy down."""
    # frozen objects are never finalized, not even at exit: the middleware's participant among
    # them would leave its shared-memory files in /dev/shm at every stop
    gc.unfreeze()
    _stop_executor(executor)
    _shut_down(nodes, name)
    _destroy(nodes)
    rclpy.try_shutdown()


def run_node(factory: Callable, name: str, args=None, spin: Optional[Callable] = None,
             config_errors: tuple = ()) -> int:
    """Create the executor and the node, spin until shutdown; configuration errors exit 2.

    Every node entry point of the package starts here, so they all run on
    :func:`make_executor`'s choice. At the end (Ctrl-C, SIGTERM) the managed nodes are shut
    down (:mod:`.managed`: the distributor publishes its stop when active), then destroyed.

    :param factory: node class or factory taking no arguments; a factory may return a tuple
        of nodes, spun by one executor in this process (:mod:`wrench_distribution.cell`).
    :param name: node name for messages.
    :param args: ROS command-line arguments.
    :param spin: ``spin(executor, node)`` for a node with its own loop (default
        :func:`spin_until_shutdown`).
    :param config_errors: further exception types the factory raises for bad parameters.
    :return: exit code: 0 after a normal shutdown, 2 on invalid configuration (a parameter
        file is refused before ``rclpy.init``: :func:`refuse_param_files`).
    """
    from wrench_distribution.ros.parameters import CONFIG_ERRORS
    try:
        from rclpy.executors import ExternalShutdownException
    except ImportError:  # pragma: no cover
        ExternalShutdownException = KeyboardInterrupt
    if refuse_param_files(name, sys.argv if args is None else args):
        return 2
    try:
        init_without_signal_handlers(args)
    except RuntimeError as e:  # rclpy's RCLError: rcl could not parse the arguments
        print(f'[{name}] {init_failure(e)}', file=sys.stderr, flush=True)
        return 2
    nodes: tuple = ()
    try:
        try:
            executor = make_executor()
            made = factory()
            nodes = made if isinstance(made, tuple) else (made,)
            node = nodes[0]
        except CONFIG_ERRORS + tuple(config_errors) as e:
            print(f'[{name}] invalid configuration: {e}', file=sys.stderr, flush=True)
            return 2
        for each in nodes:
            executor.add_node(each)
        # what start-up made (modules, the solver) lives as long as the node: out of the
        # cyclic collector's full passes, which otherwise stall a callback for tens of ms
        gc.freeze()
        try:
            (spin or spin_until_shutdown)(executor, node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        except Exception:
            if rclpy.ok():
                raise
            # a callback that raced the shutdown (SIGINT shuts the context down while a
            # timer publishes: "publisher's context is invalid"): the node is stopping anyway
        return 0
    finally:
        _end(locals().get('executor'), nodes, name)
