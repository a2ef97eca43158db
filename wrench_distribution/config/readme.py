"""The README's parameter tables, generated from the schema (a test checks the README)."""
from __future__ import annotations

from typing import Sequence

from .schema import ANALYZER_PARAMS, COMMON_PARAMS, DISTRIBUTOR_PARAMS, ParamSpec


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
    common = {s.name for s in COMMON_PARAMS}
    return {'common': parameter_table(COMMON_PARAMS),
            'distributor': parameter_table([s for s in DISTRIBUTOR_PARAMS
                                            if s.name not in common]),
            'analyzer': parameter_table([s for s in ANALYZER_PARAMS if s.name not in common])}
