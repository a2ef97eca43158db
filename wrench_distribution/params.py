"""Parameter schema, validation and loading: a thin re-export of :mod:`wrench_distribution.config`.

Kept so that ``from wrench_distribution.params import ...`` and
``python -m wrench_distribution.params`` (prints the README tables) keep working.
"""
from wrench_distribution.config import (ANALYZER_PARAMS, AnalyzerConfig, build_core_objects,  # noqa: F401
                                        BUILTIN_PARAMS,
                                        check_param_value, COMMON_PARAMS,
                                        ConfigError, contact_friction_fields,
                                        DISTRIBUTOR_PARAMS, DistributorConfig,
                                        LIMIT_CEILING, load_analyzer_config,
                                        load_distributor_config,
                                        parameter_table, ParamSpec,
                                        parse_handles, per_effector_limits,
                                        read_ros_params_yaml, readme_tables,
                                        ros_yaml_type_problems, simulator_tables,
                                        validate_params)


if __name__ == '__main__':  # python -m wrench_distribution.params: print the README tables
    for _title, _table in readme_tables().items():
        print(f'<!-- {_title} -->\n{_table}')
    for _title, _table in simulator_tables().items():  # then those of docs/simulator.md
        print(f'<!-- docs/simulator.md: {_title} -->\n{_table}')
