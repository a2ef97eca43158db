"""Pure core of wrench_distribution: numpy and scipy only, no ROS import.

See docs/core_api.md for the contract and docs/theory.md for the mathematics.
"""
from .contacts import Contact, CONTACT_TYPES, ObjectModel
from .errors import InvalidInputError, UnrealisableWrenchError, WrenchDistributionError
from .load_distributor import LoadDistributor
from .options import DistributionOptions
from .results import Analysis, BatchAnalysis, BatchSynthesis, Regime, Synthesis
from .sensor_model import SensorModel
from .spatial import inverse_pose, matrix_to_quaternion, quaternion_to_matrix, skew, transform_wrench

__all__ = [
    'CONTACT_TYPES', 'Contact', 'ObjectModel', 'DistributionOptions', 'LoadDistributor',
    'Analysis', 'BatchAnalysis', 'BatchSynthesis', 'Regime', 'Synthesis', 'SensorModel',
    'InvalidInputError', 'UnrealisableWrenchError', 'WrenchDistributionError',
    'inverse_pose', 'matrix_to_quaternion', 'quaternion_to_matrix', 'skew', 'transform_wrench',
]
