"""Scenarios: a parameter file's sections, and the objects of a run built from them (no ROS).

- :mod:`.sections`: the scenario files, their sections and their validation; the physics
  built from the ``object_sim`` section (:func:`build_sim`);
- :mod:`.models`: the effector models' registry (``force``, ``admittance``, ``joints``):
  each model's builder, checks, node options and report hooks;
- :mod:`.parts`: what every model is built from (the true object and contacts, the
  sensors, the grasps) and the ideal force-controlled bodies;
- :mod:`.arms`, :mod:`.joints`: the admittance arm tips and the arms with joints;
- :mod:`.runs`: what the demo changes in a run's sections (feedback, a calibration file);
- :mod:`.truth`: the truth's read-out of the wrenches the simulator applies.
"""
from .models import effector_model, EFFECTOR_MODELS  # noqa: F401
from .parts import build_sensors, true_object  # noqa: F401
from .sections import (build_sim, check_consistency, config_dir, load_sections, NODES,  # noqa: F401
                       scenario_file, SCENARIOS, sim_params, validate_sections)
