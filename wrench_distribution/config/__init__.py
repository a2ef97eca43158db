"""Configuration of the nodes, the bag tools and the simulator, split by job (no ROS import).

- :mod:`.schema`: the :class:`ParamSpec` list of every node (the one source of names,
  types, defaults and accepted values); :mod:`.sim` the simulator's; :mod:`.index` all kinds;
- :mod:`.values`: the check of one value; :mod:`.cross_checks`: a node's values together;
  :mod:`.validation`: a whole parameter set (unknown names, values, cross-checks);
- :mod:`.handles`: the internal-load handle grammar; :mod:`.arrays`: per-effector arrays;
- :mod:`.settings` and :mod:`.nodes`: one typed, frozen configuration per node, built once
  (and again on a runtime change, through the same path); :mod:`.safety`: the runtime rules;
- :mod:`.loading`: parameter files; :mod:`.rcl`: what rcl's parser makes of them;
  :mod:`.judge` and :mod:`.check`: ``check-config``; :mod:`.readme`: the parameter tables.
"""
from .arrays import expand_limits
from .handles import format_schedule, parse_handles, parse_schedule
from .loading import load_analyzer_config, load_distributor_config, read_ros_params_yaml
from .nodes import AnalyzerConfig, build_config, Change, changed_config, DistributorConfig
from .rcl import ros_yaml_type_problems
from .readme import parameter_table, readme_tables, simulator_tables
from .schema import (ANALYZER_PARAMS, BUILTIN_PARAMS, COMMON_PARAMS, ConfigError,
                     DISTRIBUTOR_PARAMS, LIMIT_CEILING, ParamSpec)
from .validation import validate_params
from .values import check_param_value

__all__ = [
    'ANALYZER_PARAMS', 'AnalyzerConfig', 'BUILTIN_PARAMS', 'COMMON_PARAMS', 'Change',
    'ConfigError', 'DISTRIBUTOR_PARAMS', 'DistributorConfig', 'LIMIT_CEILING', 'ParamSpec',
    'build_config', 'changed_config', 'check_param_value', 'expand_limits', 'format_schedule',
    'load_analyzer_config', 'load_distributor_config', 'parameter_table', 'parse_handles',
    'parse_schedule', 'read_ros_params_yaml', 'readme_tables', 'ros_yaml_type_problems',
    'simulator_tables', 'validate_params',
]
