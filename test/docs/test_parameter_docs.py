"""The parameter tables of docs/parameters.md and docs/simulator.md are generated from the schema."""
import os

from ros_harness import REPO
from wrench_distribution import config as P
from wrench_distribution.config.readme import replace_tables, TABLE_PAGES


def _read(page: str) -> str:
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
        return f.read()


def test_parameter_page_holds_the_generated_tables():
    page = _read('docs/parameters.md')
    for name, table in P.readme_tables().items():
        assert table in page, (f'docs/parameters.md table "{name}" is out of date: run '
                               'python -m wrench_distribution.config.readme --write')


def test_write_is_a_fixed_point_on_current_pages():
    for page, tables in TABLE_PAGES.items():
        text = _read(page)
        assert replace_tables(text, tables()) == text, page


def test_write_repairs_a_stale_table_and_leaves_the_prose():
    """A table missing a parameter and holding a removed one is replaced; the text around stays."""
    tables = P.readme_tables()
    common = tables['common'].splitlines()
    stale = common[:2] + common[3:] + ['| `removed_parameter` | double | `1.0` | no | gone (>= 0.0) |']
    page = ('Intro.\n\nBoth nodes:\n\n' + '\n'.join(stale) + '\n\nDistributor only:\n\n'
            + tables['distributor'] + '\nAnalyzer only:\n\n' + tables['analyzer'] + '\nEnd.\n')
    repaired = replace_tables(page, tables)
    assert tables['common'] in repaired
    assert 'removed_parameter' not in repaired
    assert repaired.startswith('Intro.\n\nBoth nodes:\n\n') and repaired.endswith('End.\n')
    assert repaired.count('| parameter | type |') == 3
