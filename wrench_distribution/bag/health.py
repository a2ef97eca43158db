"""Sensor health of a bag: the checks of :mod:`wrench_distribution.engine.health` on its samples.

The bag is read and synchronised exactly as ``analyze-bag`` does (the same engine, the same
pose sources and drops); every analysed sample goes through the health monitor, and the
result is the monitor's report plus each sample's health. ``analyze-bag`` can run the same
monitor on its own engine (``engine.health = HealthMonitor.for_config(config)``) and read
:meth:`~wrench_distribution.engine.health.HealthMonitor.take` after each chunk.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from wrench_distribution.engine import AnalysisEngine
from wrench_distribution.engine.health import HealthMonitor
from .pipeline import Options, orientation_source, pose_sources, resolve_topic
from .reader import BagReader, WRENCH_STAMPED


@dataclass
class BagHealth:
    """The health of a bag's samples.

    :param report: :meth:`~wrench_distribution.engine.health.HealthMonitor.report`.
    :param stamps_ns: (k,) the analysed samples' stamps.
    :param doubt: (k, n) each sensor in doubt at each sample.
    :param consistent: (k,) the set consistent at each sample (True when not checked).
    """

    report: dict
    stamps_ns: np.ndarray
    doubt: np.ndarray
    consistent: np.ndarray


def bag_health(bag_path: Path, config: Any, consistency: Optional[str] = None,
               options: Options = Options()) -> BagHealth:
    """Run the sensor health checks over the synchronised samples of one bag.

    :param bag_path: the bag (directory or storage file).
    :param config: the ``AnalyzerConfig`` (its ``settings.health``).
    :param consistency: what the set is checked against (``off``, or ``rest``: the object
        held at rest throughout); None: as configured.
    :param options: namespace, node name, contact source and chunk size as for ``analyze-bag``.
    :return: the report and each sample's health.
    :raises BagError: on anything the user has to fix (as ``analyze-bag``).
    """
    with BagReader(Path(bag_path)) as bag:
        topics = [resolve_topic(t, options.namespace, options.node_name)
                  for t in config.topics.ft]
        for effector, topic in zip(config.effectors, topics):
            bag.require(topic, WRENCH_STAMPED, f'F/T sensor of {effector}')
        source = options.contact_source or config.contact_source
        poses, sensor_poses = pose_sources(bag, config, source, options.namespace,
                                           options.node_name)
        orientation = orientation_source(bag, config, options.namespace, options.node_name)
        engine = AnalysisEngine(config, poses, sensor_poses, orientation=orientation)
        monitor = engine.health = HealthMonitor.for_config(config, consistency)
        monitor.keep_samples = True
        frames = config.settings.ft_frames if any(config.settings.ft_frames) else None
        parts = []
        for chunk in bag.wrench_chunks(topics, options.chunk, frames):
            engine.push_chunk(*chunk)
            parts.append(monitor.take())
        engine.finish()
    stamps, doubt, consistent = (np.concatenate(p) for p in zip(*parts)) if parts else (
        np.zeros(0, np.int64), np.zeros((0, len(config.effectors)), bool), np.zeros(0, bool))
    return BagHealth(monitor.report(), stamps, doubt, consistent)
