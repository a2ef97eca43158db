"""The parameter files of a ROS command line, judged by what ``stat`` says (the standard library only).

rcl parses every ``--params-file`` inside ``rclpy.init``, before a node's code can check it, and
without a bound of its own. A node executable (:mod:`.entry`) judges the files' sizes here before
it imports anything heavy, so a file of any size is refused at the cost of a ``stat``; what is in
a file within the bound is judged next, by the bounded loader
(:func:`~wrench_distribution.config.check.param_file_refusals`), still before ``rclpy.init``.
"""
from __future__ import annotations

import os
import stat
from typing import List, Sequence

#: Largest parameter file read (bytes). At most the bounded YAML loader's
#: (``core.safe_load.MAX_BYTES``), which must read whatever passes here.
MAX_PARAM_FILE_BYTES = 1_000_000


def param_files(argv: Sequence[str]) -> List[str]:
    """Return the ``--params-file`` paths of a ROS command line (after ``--ros-args``).

    :param argv: the process arguments.
    :return: the paths, in order.
    """
    out, ros = [], False
    for i, arg in enumerate(argv):
        if arg == '--ros-args':
            ros = True
        elif arg == '--' and ros:
            ros = False
        elif ros and arg == '--params-file' and i + 1 < len(argv):
            out.append(argv[i + 1])
    return out


def unreadable_param_file(path: str) -> str:
    """Say why a parameter file is refused without reading it ('' when it may be read).

    :param path: the file.
    :return: one line naming the file and the bound it breaks, or ''.
    """
    try:
        info = os.stat(path)
    except OSError as error:
        return f"parameter file '{path}' cannot be read: {error.strerror}"
    if not stat.S_ISREG(info.st_mode):  # a pipe would be consumed before rcl reads it
        return f"parameter file '{path}' is not a regular file: give the path of a file"
    if info.st_size > MAX_PARAM_FILE_BYTES:
        return (f"parameter file '{path}' refused unread: {info.st_size} bytes, over the bound of "
                f'{MAX_PARAM_FILE_BYTES} bytes of a parameter file (rcl would parse it whole before any check)')
    return ''


def unreadable_param_files(argv: Sequence[str]) -> List[str]:
    """Return one line per parameter file of a command line refused unread (empty: all may be read).

    :param argv: the process arguments.
    :return: the refusals, in the order of the files.
    """
    return [line for line in map(unreadable_param_file, param_files(argv)) if line]
