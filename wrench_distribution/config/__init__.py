"""Configuration of the nodes, the bag tools and the simulator, split by job.

- :mod:`.schema`: the :class:`ParamSpec` list of every node (the one source of names,
  types, defaults and accepted values);
- :mod:`.validation`: checks of single values and of a node's whole parameter set;
- :mod:`.loading`: ROS parameter YAML files into the typed ``DistributorConfig`` /
  ``AnalyzerConfig`` and the core objects;
- :mod:`.sim`: the :class:`ParamSpec` lists of the simulator's nodes, validated by the same
  :func:`validate_params`;
- :mod:`.readme`: the parameter tables of the README and docs/simulator.md.

No ROS import anywhere in this package.
"""
from .loading import (AnalyzerConfig, build_core_objects, contacts_from, DistributorConfig,
                      load_analyzer_config, load_distributor_config, read_ros_params_yaml,
                      sensor_models_from)
from .readme import parameter_table, readme_tables, simulator_tables
from .schema import (ANALYZER_PARAMS, BUILTIN_PARAMS, COMMON_PARAMS, ConfigError,
                     DISTRIBUTOR_PARAMS, LIMIT_CEILING, ParamSpec)
from .validation import (check_param_value, contact_friction_fields, parse_handles, parse_schedule,
                         per_effector_limits, ros_yaml_type_problems, validate_params)

__all__ = [
    'ANALYZER_PARAMS', 'AnalyzerConfig', 'BUILTIN_PARAMS', 'COMMON_PARAMS', 'ConfigError',
    'DISTRIBUTOR_PARAMS', 'DistributorConfig', 'LIMIT_CEILING', 'ParamSpec',
    'build_core_objects', 'check_param_value', 'contact_friction_fields', 'contacts_from',
    'load_analyzer_config', 'load_distributor_config', 'parameter_table', 'parse_handles',
    'parse_schedule', 'per_effector_limits', 'read_ros_params_yaml', 'readme_tables',
    'ros_yaml_type_problems', 'sensor_models_from', 'simulator_tables', 'validate_params',
]
