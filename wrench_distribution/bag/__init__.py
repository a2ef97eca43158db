"""Offline analysis of rosbag2 bags (sqlite3 and mcap) without ROS, and a small player.

``wrench-distribution analyze-bag`` (see :mod:`.command`) reads the F/T topics,
synchronises them by header stamp like the analyzer node, analyses the samples in
chunks with the core's ``LoadDistributor.analyze_batch`` and writes ``samples.parquet``
(``samples.csv`` with ``--csv``),
``summary.json``, plots and a PlotJuggler layout. Nothing here imports ROS except
:mod:`.player`.
"""
from .errors import BagError

__all__ = ['BagError']
