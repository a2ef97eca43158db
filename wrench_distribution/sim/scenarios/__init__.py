"""Scenarios: a parameter file's sections, and the objects of a run built from them (no ROS).

- :mod:`.sections`: the scenario files, their sections, validation, and the physics built
  from the ``object_sim`` section;
- :mod:`.joints`: the arms with joints built from it;
- :mod:`.truth`: the truth's read-out of the wrenches the simulator applies.
"""
from .sections import (BASELINE_DEFAULTS, build_sensors, build_sim, check_consistency,  # noqa: F401
                       config_dir, load_sections, NODES, scenario_file, SCENARIOS, sim_params,
                       true_object, validate_sections)
