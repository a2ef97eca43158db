"""The ROS-free engines: analysis (analyzer node, bag tools) and distribution (distributor node).

:mod:`.sync` (synchronisation of the F/T streams), :mod:`.poses` (contact and sensor poses
at a stamp), :mod:`.cache` (one solver per contact configuration), :mod:`.results` (the
per-sample quantities) and :mod:`.analysis` (:class:`AnalysisEngine`, which puts them
together with the sensor models and gravity); :mod:`.distribution`
(:class:`DistributionEngine`: prescription and feedback (:mod:`.internal_load`), friction
(:mod:`.friction`), limits, watchdog and the internal-load feedback (:mod:`.feedback`)).
"""
from .analysis import AnalysisEngine
from .cache import check_poses, DistributorCache
from .distribution import DistributionEngine, Outcome
from .drops import Drop
from .live import Sample, Step
from .poses import Edge, HeldPoses, PoseSource, same_frame, StaticPoses, TfTree
from .results import ChunkResult, QUANTITIES
from .sync import StampSynchronizer

__all__ = ['AnalysisEngine', 'check_poses', 'ChunkResult', 'DistributionEngine', 'DistributorCache',
           'Drop', 'Edge', 'Outcome',
           'HeldPoses', 'PoseSource', 'QUANTITIES', 'Sample', 'same_frame', 'StampSynchronizer',
           'StaticPoses', 'Step', 'TfTree']
