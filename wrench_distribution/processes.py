"""Child processes on the loopback: the one recipe of the demo, the benchmarks and the tests.

A child that uses ROS gets DDS discovery kept on the loopback interface
(``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, and ``ROS_LOCALHOST_ONLY=1`` for the
distributions before Jazzy) and the caller's ``ROS_DOMAIN_ID`` (:func:`loopback_environment`).
It leads its own process group, reads nothing from the terminal and writes its output, stderr
included, to a log file (:class:`ChildProcess`). Stopping it sends SIGINT to its group (the
nodes' runner turns that into a clean shutdown, exit status 0), waits a bounded time, then
sends SIGKILL to what is left of its group, and reaps it (:func:`stop_all`, which stops several
at once so that their waits overlap). :class:`Children` keeps the children of one run by name, and
:func:`run_to_end` runs one command to its end within a time limit.

No ROS import: the module serves the command line's tests and the benchmarks' orchestrators
as well as the demo.
"""
from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, Iterable, Iterator, List, Mapping, MutableMapping, NamedTuple, Optional, Sequence

#: What keeps DDS discovery on the loopback interface: Jazzy and later read the first,
#: Humble the second.
LOOPBACK = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'ROS_LOCALHOST_ONLY': '1'}
#: The middleware a child uses unless the caller's environment names one.
DEFAULT_RMW = 'rmw_fastrtps_cpp'
#: Seconds a child has to end after SIGINT before it is killed.
STOP_GRACE_S = 5.0
#: Seconds to wait for a killed child to be reaped.
KILL_WAIT_S = 5.0


def use_loopback(environ: MutableMapping[str, str], domain_id: int) -> MutableMapping[str, str]:
    """Set the loopback discovery, the domain id and the default middleware in ``environ``.

    :param environ: an environment, changed in place (``os.environ`` for this process).
    :param domain_id: ROS domain id.
    :return: ``environ``.
    """
    environ.update(LOOPBACK)
    environ['ROS_DOMAIN_ID'] = str(int(domain_id))
    environ.setdefault('RMW_IMPLEMENTATION', DEFAULT_RMW)
    return environ


def loopback_environment(domain_id: int, base: Optional[Mapping[str, str]] = None,
                         **extra: str) -> Dict[str, str]:
    """Return the environment of a child: DDS on the loopback on ``domain_id``, output unbuffered.

    Unbuffered and uncoloured output keeps a child's log in the order it was written and
    readable as text.

    :param domain_id: ROS domain id.
    :param base: the environment to start from (default: this process's).
    :param extra: more variables, set last (e.g. ``MPLBACKEND='Agg'``).
    :return: a new dict.
    """
    env = use_loopback(dict(os.environ if base is None else base), domain_id)
    env['PYTHONUNBUFFERED'] = '1'
    env['RCUTILS_COLORIZED_OUTPUT'] = '0'
    env.update(extra)
    return env


def console_command(script: str, module: str) -> List[str]:
    """Return a console script of the package next to this Python, else ``python -m module``.

    A venv or ``pip install`` puts the scripts next to the interpreter; a source tree without
    them runs the module.

    :param script: e.g. ``distributor``.
    :param module: its module, e.g. ``wrench_distribution.distributor_node``.
    :return: the command's first words.
    """
    candidate = Path(sys.executable).parent / script
    return [str(candidate)] if candidate.exists() else [sys.executable, '-m', module]


class ChildProcess:
    """One child process: its own process group, stdin closed, stdout and stderr to a log file.

    :param command: the program and its arguments.
    :param env: its environment (:func:`loopback_environment` for a ROS child).
    :param log: the log file (created or truncated); None: a temporary file, removed by
        :meth:`close` once its text is kept.
    :param cwd: its working directory (default: this process's).
    """

    def __init__(self, command: Sequence[str], env: Mapping[str, str],
                 log: Optional[os.PathLike | str] = None, cwd: Optional[os.PathLike | str] = None) -> None:
        self.command = [str(word) for word in command]
        self._temporary = log is None
        if log is None:
            handle, log = tempfile.mkstemp(prefix='wd_child_', suffix='.log')
            os.close(handle)
        self.log_path = Path(log)
        self._final: Optional[str] = None
        with open(self.log_path, 'wb') as sink:  # the child keeps its own descriptor
            self.popen = subprocess.Popen(self.command, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                          stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        """Return the child's process id (and its process group's)."""
        return self.popen.pid

    @property
    def returncode(self) -> Optional[int]:
        """Its exit status once reaped (negative: the signal that ended it), else None."""
        return self.popen.returncode

    def poll(self) -> Optional[int]:
        """Return the exit status if the child has ended, else None."""
        return self.popen.poll()

    def wait(self, timeout: float) -> Optional[int]:
        """Wait for the child to end.

        :param timeout: seconds.
        :return: its exit status, or None when it still runs.
        """
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def send(self, signum: int) -> None:
        """Send a signal to the child's process group, unless the child has been reaped.

        Until it is reaped, even when it has ended, its process id holds the group's id, so the
        signal reaches only what this child and its own children left in the group.
        """
        if self.popen.returncode is None:
            try:
                os.killpg(self.popen.pid, signum)
            except ProcessLookupError:  # the group is empty
                pass

    def running(self) -> bool:
        """Return whether the child still runs, without reaping it when it has ended."""
        if self.popen.returncode is not None:
            return False
        try:
            ended = os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by someone else
            return False
        return ended is None

    def stop(self, grace: float = STOP_GRACE_S) -> Optional[int]:
        """SIGINT, SIGKILL after ``grace`` seconds; reap (:func:`stop_all`).

        :param grace: seconds between the two signals.
        :return: its exit status (None only when even SIGKILL left it running).
        """
        stop_all([self], grace)
        return self.returncode

    def wait_for_output(self, text: str, timeout: float, period: float = 0.05) -> bool:
        """Wait until the child has written ``text``.

        :param text: what to look for in its output.
        :param timeout: seconds.
        :param period: seconds between two looks.
        :return: whether it was written; False as soon as the child has ended without it.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.poll() is not None:
                return text in self.output()
            time.sleep(period)
        return text in self.output()

    def output(self) -> str:
        """Everything the child wrote so far (the whole of it once :meth:`close` ran)."""
        if self._final is not None:
            return self._final
        return self.log_path.read_text(encoding='utf-8', errors='replace')

    def close(self) -> Optional[int]:
        """Stop the child and keep its output; a temporary log file is removed.

        :return: its exit status.
        """
        code = self.stop()
        if self._final is None:
            self._final = self.output()
            if self._temporary:
                self.log_path.unlink(missing_ok=True)
        return code

    def __enter__(self) -> 'ChildProcess':
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def stop_all(children: Iterable[ChildProcess], grace: float = STOP_GRACE_S,
             kill_wait: float = KILL_WAIT_S) -> None:
    """Stop children at once: SIGINT to each group, one shared wait of ``grace``, SIGKILL, reap.

    SIGKILL goes to the group of every child not yet reaped, those that ended on SIGINT
    included: what a child started and left behind in its group goes too. The children are
    reaped only after it, so that a group id cannot have passed to another process meanwhile;
    the group of a child reaped earlier (by :meth:`ChildProcess.poll`) is left alone for the
    same reason.

    :param children: the children.
    :param grace: seconds the children have, together, to end after SIGINT.
    :param kill_wait: seconds to wait for the killed ones to be reaped.
    """
    unreaped = [child for child in children if child.returncode is None]
    running = [child for child in unreaped if child.running()]
    for child in running:
        child.send(signal.SIGINT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(child.running() for child in running):
        time.sleep(0.02)
    for child in unreaped:
        child.send(signal.SIGKILL)
    deadline = time.monotonic() + kill_wait
    for child in unreaped:
        child.wait(max(0.05, deadline - time.monotonic()))


class Children:
    """The children of one run, by name; :meth:`stop` (or leaving a ``with``) stops them all."""

    def __init__(self) -> None:
        self._by_name: Dict[str, ChildProcess] = {}

    def start(self, name: str, command: Sequence[str], env: Mapping[str, str],
              log: Optional[os.PathLike | str] = None, cwd: Optional[os.PathLike | str] = None) -> ChildProcess:
        """Start a child (:class:`ChildProcess`) under a name not yet used in this run.

        :return: the child.
        :raises ValueError: for a name already used.
        """
        if name in self._by_name:
            raise ValueError(f'a child named {name!r} was already started')
        child = self._by_name[name] = ChildProcess(command, env, log, cwd)
        return child

    def __getitem__(self, name: str) -> ChildProcess:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def items(self) -> List[tuple]:
        """Return ``(name, child)`` pairs in the order started."""
        return list(self._by_name.items())

    def ended(self) -> List[str]:
        """Return the names of the children that have ended."""
        return [name for name, child in self._by_name.items() if child.poll() is not None]

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop every child (:func:`stop_all`) and keep the output of those with a temporary log."""
        stop_all(self._by_name.values(), grace)
        for child in self._by_name.values():
            child.close()

    def __enter__(self) -> 'Children':
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Finished(NamedTuple):
    """What a command run to its end left: exit status, output, whether time ran out."""

    returncode: Optional[int]
    output: str
    timed_out: bool


def run_to_end(command: Sequence[str], env: Mapping[str, str], timeout: float,
               cwd: Optional[os.PathLike | str] = None, log: Optional[os.PathLike | str] = None) -> Finished:
    """Run a command to its end; past ``timeout`` it is stopped as any child is.

    :param command: the program and its arguments.
    :param env: its environment.
    :param timeout: seconds it may run.
    :param cwd: its working directory.
    :param log: where its output goes (default: a temporary file).
    :return: its exit status (after SIGINT or SIGKILL when it timed out), output, ``timed_out``.
    """
    with ChildProcess(command, env, log, cwd) as child:
        timed_out = child.wait(timeout) is None
    return Finished(child.returncode, child.output(), timed_out)
