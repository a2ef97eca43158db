"""The parameter tables of docs/parameters.md and docs/simulator.md, generated from the schema.

``python -m wrench_distribution.config.readme`` prints them; ``--write`` puts them into the two
pages (tests check both pages).
"""
from __future__ import annotations

from typing import Collection, Sequence

from .safety import RUNTIME_RULES
from .schema import ANALYZER_PARAMS, COMMON_PARAMS, DISTRIBUTOR_PARAMS, ParamSpec, SENSING_PARAMS
from .sim import SIM_SPECS


def _default_text(spec: ParamSpec) -> str:
    if isinstance(spec.default, bool):
        return 'true' if spec.default else 'false'
    return str(spec.default)


def parameter_table(specs: Sequence[ParamSpec], safer_only: Collection[str] = (),
                    safer_text: str = 'safer only') -> str:
    """Return the Markdown table of some parameters, as docs/parameters.md shows it.

    :param specs: the parameters, in table order.
    :param safer_only: names that change at runtime only toward safety (docs/security.md).
    :param safer_text: what the runtime column says for them.
    :return: the table, one line per parameter, with a trailing newline.
    """
    lines = ['| parameter | type | default | runtime | meaning (accepted values) |',
             '|---|---|---|---|---|']
    for s in specs:
        runtime = 'no' if s.read_only else safer_text if s.name in safer_only else 'yes'
        lines.append(f'| `{s.name}` | {s.type.replace("_", " ")} | `{_default_text(s)}` | '
                     f'{runtime} | {s.description} ({s.constraint_text()}) |')
    return '\n'.join(lines) + '\n'


def readme_tables() -> dict:
    """Return the three parameter tables of docs/parameters.md: both nodes, distributor, analyzer.

    :return: ``{'common': str, 'distributor': str, 'analyzer': str}``.
    """
    common = {s.name for s in COMMON_PARAMS}
    return {'common': parameter_table(COMMON_PARAMS, RUNTIME_RULES, 'yes (distributor: safer only)'),
            'distributor': parameter_table([s for s in DISTRIBUTOR_PARAMS
                                            if s.name not in common], RUNTIME_RULES),
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


#: The page of each group of tables, relative to the repository root.
TABLE_PAGES = {'docs/parameters.md': readme_tables, 'docs/simulator.md': simulator_tables}


def _row_names(lines: Sequence[str]) -> set:
    return {line.split('`')[1] for line in lines if line.startswith('| `')}


def replace_tables(text: str, tables: dict) -> str:
    """Replace the parameter tables of a page by generated ones.

    Each generated table replaces the table of the page (a run of lines starting with ``|``)
    that shares the most parameter names with it; a table with no parameter in common is
    left alone.

    :param text: the page.
    :param tables: generated tables, as :func:`readme_tables` returns them.
    :return: the page with the tables replaced.
    :raises ValueError: when a generated table matches no table of the page.
    """
    lines = text.split('\n')
    blocks, start = [], None
    for i, line in enumerate(lines + ['']):
        if line.startswith('|') and start is None:
            start = i
        elif not line.startswith('|') and start is not None:
            blocks.append((start, i))
            start = None
    replacements = {}
    for name, table in tables.items():
        wanted = _row_names(table.splitlines())
        overlap = [(len(wanted & _row_names(lines[a:b])), (a, b)) for a, b in blocks]
        best = max(overlap, default=(0, None))
        if best[0] == 0:
            raise ValueError(f'no table of the page matches the generated table {name!r}')
        replacements[best[1]] = table.rstrip('\n').split('\n')
    for (a, b), new in sorted(replacements.items(), reverse=True):
        lines[a:b] = new
    return '\n'.join(lines)


def main(argv: Sequence[str]) -> None:
    """Print the generated parameter tables, or with ``--write`` put them into their pages.

    :param argv: the command-line arguments (``--write`` or none).
    """
    import os
    if '--write' in argv:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


if __name__ == '__main__':  # python -m wrench_distribution.config.readme [--write]
    import sys
    main(sys.argv[1:])
