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
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

#: exit status after Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = 128 + signal.SIGINT
#: exit status when standard output is a closed pipe (128 + SIGPIPE)
EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C the command has handled; its message says what was done and what was not."""


def _interrupt_once(signum: int, frame: object) -> None:
    """Raise one KeyboardInterrupt, then ignore Ctrl-C while the command cleans up."""
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


def run(body: Callable[[], int], program: bool = False) -> int:
    """Run a command's body and end as a shell tool (module docstring).

    :param body: the command; returns its exit status.
    :param program: this call is the whole process (the console script): Ctrl-C stays ignored
        after the body, while the interpreter exits (joining threads).
    :return: the body's status, 130 after Ctrl-C, 141 on a closed pipe.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupt_once) if main_thread else None
    try:
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
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, signal.SIG_IGN if program else previous)


def _ignore_interrupts(main_thread: bool) -> None:
    if main_thread:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
