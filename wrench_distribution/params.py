"""Parameter schema, validation and loading: a thin re-export of :mod:`wrench_distribution.config`.

Kept so that ``from wrench_distribution.params import ...`` and
``python -m wrench_distribution.params`` (prints the tables of docs/parameters.md and
docs/simulator.md; ``--write`` writes them there) keep working.
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


def _main(argv) -> None:
    """Print the generated parameter tables, or with ``--write`` put them into their pages."""
    import os
    from wrench_distribution.config.readme import replace_tables, TABLE_PAGES
    if '--write' in argv:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for page, tables in TABLE_PAGES.items():
            path = os.path.join(root, page)
            with open(path, encoding='utf-8') as f:
                text = f.read()
            with open(path, 'w', encoding='utf-8') as f:
                f.write(replace_tables(text, tables()))
            print(f'wrote the parameter tables of {page}')
        return
    for page, tables in TABLE_PAGES.items():
        for title, table in tables().items():
            print(f'<!-- {page}: {title} -->\n{table}')


if __name__ == '__main__':  # python -m wrench_distribution.params [--write]
    import sys
    _main(sys.argv[1:])
