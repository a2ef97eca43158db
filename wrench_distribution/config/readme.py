"""The parameter tables of the README and docs/simulator.md, generated from the schema (tests check both)."""
from __future__ import annotations

from typing import Sequence

from .schema import ANALYZER_PARAMS, COMMON_PARAMS, DISTRIBUTOR_PARAMS, ParamSpec, SENSING_PARAMS
from .sim import SIM_SPECS


def _default_text(spec: ParamSpec) -> str:
    if isinstance(spec.default, bool):
        return 'true' if spec.default else 'false'
    return str(spec.default)


def parameter_table(specs: Sequence[ParamSpec]) -> str:
    """Return the README's Markdown table of some parameters (the README is checked against it).

    :param specs: the parameters, in table order.
    :return: the table, one line per parameter, with a trailing newline.
    """
    lines = ['| parameter | type | default | runtime | meaning (accepted values) |',
             '|---|---|---|---|---|']
    for s in specs:
        lines.append(f'| `{s.name}` | {s.type.replace("_", " ")} | `{_default_text(s)}` | '
                     f'{"no" if s.read_only else "yes"} | {s.description} '
                     f'({s.constraint_text()}) |')
    return '\n'.join(lines) + '\n'


def readme_tables() -> dict:
    """Return the three parameter tables of the README: both nodes, distributor, analyzer.

    :return: ``{'common': str, 'distributor': str, 'analyzer': str}``.
    """
    common = {s.name for s in COMMON_PARAMS} | set(SENSING_PARAMS)
    return {'common': parameter_table(COMMON_PARAMS),
            'distributor': parameter_table([s for s in DISTRIBUTOR_PARAMS
                                            if s.name not in common]),
            'analyzer': parameter_table([s for s in ANALYZER_PARAMS if s.name not in common])}


def sensing_table() -> str:
    """Return the table of the analyzer's gravity and tare parameters (docs/sensing.md).

    :return: the table.
    """
    by_name = {s.name: s for s in ANALYZER_PARAMS}
    return parameter_table([by_name[name] for name in SENSING_PARAMS])


def simulator_tables() -> dict:
    """Return the parameter tables of the simulator's nodes, as docs/simulator.md shows them.

    :return: ``{'object_sim': str, 'object_controller': str, 'baseline_distributor': str}``.
    """
    return {kind: parameter_table(specs) for kind, specs in SIM_SPECS.items()}
