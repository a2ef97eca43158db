"""Offline analysis of rosbag2 bags (sqlite3 and mcap) without ROS, and a small player.

``wrench-distribution analyze-bag`` (see :mod:`.command`) reads the F/T topics,
synchronises them by header stamp like the analyzer node, analyses the samples in
chunks with the core's ``LoadDistributor.analyze_batch`` and writes ``samples.parquet``
(``samples.csv`` with ``--csv``),
``summary.json``, plots and a PlotJuggler layout. Nothing here imports ROS except
:mod:`.player`.
"""
import os

from .errors import BagError

# Arrow's allocator: the system's, unless the user chose one (the variable is read when pyarrow
# first allocates; a local Dask cluster's workers inherit it). ``samples.parquet`` is written by
# a thread that ends before the run does, and the mimalloc bundled with pyarrow 24 and later has
# open crash reports on threads that start and end (apache/arrow#50908). The system allocator
# costs a run at most 4 % here (docs/benchmarks.md, "Arrow's allocator").
os.environ.setdefault('ARROW_DEFAULT_MEMORY_POOL', 'system')

__all__ = ['BagError']
