"""How every command of ``wrench-distribution`` ends, as a shell tool should.

- Ctrl-C (SIGINT): one line on standard error, ``error: interrupted`` (and what the command
  says was done, e.g. which bags of a directory were analysed), and exit status 130
  (128 + SIGINT, what a shell reports for a command stopped by Ctrl-C). A second Ctrl-C while
  the command cleans up (temporary outputs, a Dask cluster) is ignored, so that the clean-up
  finishes and the one line stays one line.
- A closed pipe (``| head``, ``| less`` quit early, a consumer that exits): nothing more is
  printed and the exit status is 141 (128 + SIGPIPE, what a shell reports for a command
  stopped by a closed pipe). As Python's documentation recommends (module ``signal``, "Note
  on SIGPIPE"), standard output is then pointed at ``/dev/null``, so that the interpreter's
  last flush is silent; SIGPIPE itself stays ignored (the default Python sets), so that a
  socket of a Dask cluster closed under a write never kills the process.

Nothing here imports more than the standard library: a Ctrl-C during the start-up imports
of a command is handled too.

Worker processes a command starts (a local Dask cluster) ignore Ctrl-C
(:func:`children_ignore_interrupts`): a terminal sends it to every process of the foreground
group, and the command itself stops them; a worker interrupted while it starts would print
its traceback. A Ctrl-C that comes while they start is held and acted on right after.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Callable, Iterator, Optional

#: exit status after Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = 128 + signal.SIGINT
#: exit status when standard output is a closed pipe (128 + SIGPIPE)
EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C the command has handled; its message says what was done and what was not."""


#: whether the running command has been interrupted (set by the first Ctrl-C)
_STATE = {'interrupted': False}


def interrupted() -> bool:
    """Tell whether Ctrl-C has come: an error from now on is its consequence, not the error.

    A Ctrl-C can reach the command inside a library that turns it into another exception
    (a C extension being imported: ``ImportError: initialization failed``).
    """
    return _STATE['interrupted']


def _interrupt_once(signum: int, frame: object) -> None:
    """Raise one KeyboardInterrupt, then ignore Ctrl-C while the command cleans up."""
    _STATE['interrupted'] = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _to_devnull(stream) -> None:
    """Point a standard stream at ``/dev/null`` (its pending output is dropped)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stream without a descriptor (a test's capture)
        pass


def say(line: str) -> None:
    """Write one line on standard error; a closed standard error swallows it."""
    try:
        sys.stderr.write(line + '\n')
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        _to_devnull(sys.stderr)


def _can_mask() -> bool:
    return (threading.current_thread() is threading.main_thread()
            and hasattr(signal, 'pthread_sigmask'))


def run(body: Callable[[], int], program: bool = False,
        prepare: Optional[Callable[[], None]] = None) -> int:
    """Run a command's body and end as a shell tool (module docstring).

    :param body: the command; returns its exit status.
    :param program: this call is the whole process (the console script): Ctrl-C stays ignored
        after the body, while the interpreter exits (joining threads).
    :param prepare: imports run with Ctrl-C blocked (the threads the libraries start inherit
        the mask that :func:`children_ignore_interrupts` needs); a Ctrl-C meanwhile is acted
        on right after.
    :return: the body's status, 130 after Ctrl-C, 141 on a closed pipe.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupt_once) if main_thread else None
    _STATE['interrupted'] = False
    try:
        with _threads_inherit_held(prepare is not None):
            if prepare is not None:
                prepare()
        status = body()
        sys.stdout.flush()  # a closed pipe shows at the latest here
        return status
    except Interrupted as done:
        _ignore_interrupts(main_thread)
        say(f'error: interrupted: {done}' if str(done) else 'error: interrupted')
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        _ignore_interrupts(main_thread)
        say('error: interrupted')
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _to_devnull(sys.stdout)
        return EXIT_CLOSED_PIPE
    except Exception:
        if not interrupted():
            raise
        _ignore_interrupts(main_thread)  # what the Ctrl-C became inside a library
        say('error: interrupted')
        return EXIT_INTERRUPTED
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, signal.SIG_IGN if program else previous)


@contextlib.contextmanager
def held_interrupts(hold: bool = True) -> Iterator[None]:
    """Hold Ctrl-C for the block (a rename, a removal that must finish): it acts at the end.

    The handler only notes the signal meanwhile, whichever thread the signal reached; at the
    block's end the handler the block found runs (the command's raises KeyboardInterrupt).
    Outside the main thread (a Dask worker's task), nothing is held: workers ignore Ctrl-C.
    """
    if not (hold and threading.current_thread() is threading.main_thread()):
        yield
        return
    came: list = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if came and callable(previous):
            previous(signal.SIGINT, None)


@contextlib.contextmanager
def _threads_inherit_held(hold: bool) -> Iterator[None]:
    """Block Ctrl-C in this thread for the block: threads started in it inherit the block.

    A Ctrl-C meanwhile stays pending and arrives at the block's end (no other thread exists
    yet to take it: the block is the command's first).
    """
    if not (hold and _can_mask()):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def children_ignore_interrupts() -> Iterator[None]:
    """Start processes in the block that ignore Ctrl-C for their whole life.

    An ignored SIGINT stays ignored through ``exec``, and Python then installs no handler of its
    own. Meanwhile Ctrl-C is held in this thread (the threads started by :func:`run`'s
    ``prepare`` and in the block hold it too), and acted on at the block's end.
    """
    if not _can_mask():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _ignore_interrupts(main_thread: bool) -> None:
    if main_thread:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
