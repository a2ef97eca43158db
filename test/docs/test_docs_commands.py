"""Every shell command in README.md and docs/*.md runs, or names the test that covers it.

The ```bash blocks are extracted and run from the repository root with ``.venv/bin`` (the
environment ``make test`` set up) first on ``PATH``, DDS on loopback and the test's
``ROS_DOMAIN_ID``. A block's ``.venv/bin/python`` and ``.venv/bin/<script>`` are the ones of
the environment running the tests (the same under ``make test``; the colcon-installed ones
under ``colcon test`` on a robot, whose source tree has no ``.venv``); a block that creates
``.venv`` itself (the install pages) runs as written, alone (marked ``serial``). A block preceded by
``<!-- docs-test: skip (<why>; equivalent: test/<file>.py::<test>) -->`` is not run; the
named test must exist, so that a skip cannot outlive what it points at.
"""
import ast
import glob
import os
import re
import shlex
import sys
from typing import List, NamedTuple, Optional

import pytest

from ros_harness import domain_id_for, REPO, ros_env, script
from wrench_distribution.processes import run_to_end

SKIP = re.compile(r'<!-- docs-test: skip \((?P<why>[^)]*?);? ?equivalent: '
                  r'(?P<file>test/[\w/]+\.py)::(?P<test>\w+)(?:\[[^\]]*\])?\) -->')
FENCE = re.compile(r'^(?P<indent>\s*)```(?P<lang>\S*)\s*$')
BLOCK_TIMEOUT = 120  # seconds, for one block on a loaded 2-core machine


class Block(NamedTuple):
    """One fenced ```bash block of a page."""

    page: str
    line: int
    text: str
    skip: Optional[re.Match]

    @property
    def ident(self) -> str:
        return f'{self.page}:{self.line}'


def _pages() -> List[str]:
    return ['README.md'] + sorted(os.path.relpath(p, REPO)
                                  for p in glob.glob(os.path.join(REPO, 'docs', '*.md')))


def _blocks(page: str) -> List[Block]:
    """Return the ```bash blocks of a page, each with the skip marker just before it (or None).

    :param page: path relative to the repository root.
    :return: blocks in page order.
    """
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
        lines = f.read().split('\n')
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == '```')
        if fence.group('lang') == 'bash':
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), '')
            indent = len(fence.group('indent'))
            text = '\n'.join(line[indent:] for line in lines[i + 1:end])
            blocks.append(Block(page, i + 1, text, SKIP.search(before)))
        i = end + 1
    return blocks


ALL_BLOCKS = [b for page in _pages() for b in _blocks(page)]


#: ``.venv/bin/<name>`` in a block: the environment ``make test`` (or the reader) set up
VENV_COMMAND = re.compile(r'(?<![\w./-])\.venv/bin/(?P<name>[\w.-]+)')
#: a block that creates the ``.venv`` it then uses (the install pages)
MAKES_VENV = re.compile(r'-m venv \.venv\b')


def _environment() -> dict:
    # offset 0: a pytest run by a block takes its offsets from here, inside this test's block
    env = ros_env(domain_id_for(offset=0))
    venv_bin = os.path.join(REPO, '.venv', 'bin')
    scripts = os.path.dirname(script('wrench-distribution'))
    env['PATH'] = os.pathsep.join([venv_bin, scripts, os.path.dirname(sys.executable),
                                   env.get('PATH', '')])
    env['MPLBACKEND'] = 'Agg'
    return env


def _in_this_environment(text: str) -> str:
    """Run a block's ``.venv/bin/`` commands with the environment running the tests.

    ``.venv/bin/python`` is this interpreter and ``.venv/bin/<script>`` the package's console
    script where the harness finds it (:func:`ros_harness.script`): the same programs under
    ``make test``, the colcon-installed ones under ``colcon test`` on a robot, where the
    source tree has no ``.venv``.

    :param text: the block.
    :return: the block with those paths made absolute.
    """
    def where(match: re.Match) -> str:
        name = match.group('name')
        if name in ('python', 'python3'):
            return shlex.quote(sys.executable)
        return shlex.quote(script(name))
    return VENV_COMMAND.sub(where, text)


def test_every_page_has_its_commands_found():
    """The extraction sees the README's and the docs' blocks (a parser that finds nothing fails)."""
    pages = {b.page for b in ALL_BLOCKS}
    assert {'README.md', 'docs/install.md', 'docs/command_line.md', 'docs/bags.md'} <= pages
    assert any(b.skip is None for b in ALL_BLOCKS if b.page == 'README.md')


def _run_alone_if_it_makes_the_venv(block: Block):
    """Mark a block that (re)creates ``.venv`` ``serial``: it changes the environment under test.

    Under ``make test`` it reinstalls the package into ``.venv``, which no other test may be
    using meanwhile; it runs as written, in the serial pass (under ``colcon test`` on a robot
    it creates a ``.venv`` of its own in the workspace's source copy).
    """
    return pytest.param(block, marks=pytest.mark.serial) if MAKES_VENV.search(block.text) else block


@pytest.mark.parametrize('block', [_run_alone_if_it_makes_the_venv(b) for b in ALL_BLOCKS
                                   if b.skip is None], ids=lambda b: b.ident)
def test_docs_command(block):
    """Run one block with ``bash -e -o pipefail`` from the repository root."""
    text = block.text if MAKES_VENV.search(block.text) else _in_this_environment(block.text)
    res = run_to_end(['bash', '-e', '-o', 'pipefail', '-c', text], _environment(), BLOCK_TIMEOUT, cwd=REPO)
    assert res.returncode == 0 and not res.timed_out, (
        f'{block.ident} failed ({res.returncode}{", timed out" if res.timed_out else ""}):\n{block.text}\n'
        f'--- output\n{res.output[-6000:]}')
    assert 'Traceback' not in res.output, res.output[-3000:]


def _test_names(path: str) -> set:
    with open(os.path.join(REPO, path), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith('test')}


@pytest.mark.parametrize('block', [b for b in ALL_BLOCKS if b.skip is not None],
                         ids=lambda b: b.ident)
def test_skipped_block_names_an_existing_test(block):
    """A skipped block's equivalent is a test function that exists."""
    path, name = block.skip.group('file'), block.skip.group('test')
    assert os.path.isfile(os.path.join(REPO, path)), f'{block.ident}: {path} does not exist'
    assert name in _test_names(path), f'{block.ident}: no test {name} in {path}'
    assert block.skip.group('why').strip(), f'{block.ident}: say why the block is not run'


def test_every_skip_marker_precedes_a_bash_block():
    """A marker not followed by a ```bash block would skip nothing (or the wrong block)."""
    markers = 0
    for page in _pages():
        with open(os.path.join(REPO, page), encoding='utf-8') as f:
            text = f.read()
        for match in re.finditer(r'<!-- docs-test:[^>]*-->', text):
            markers += 1
            assert SKIP.fullmatch(match.group(0)), f'{page}: malformed marker {match.group(0)}'
            rest = text[match.end():].lstrip()
            assert rest.startswith('```bash'), f'{page}: {match.group(0)} is not before a bash block'
    assert markers == sum(1 for b in ALL_BLOCKS if b.skip is not None)


def test_humble_guards_are_listed():
    """Every rclpy API the package guards (newer than Humble) is in docs/wiring.md's table."""
    guarded = set()
    patterns = (r"hasattr\(node, '(\w+)'\)", r"getattr\(buffer, '(\w+)'",
                r'from rclpy\.(?:experimental|signals) import (\w+)')
    for path in glob.glob(os.path.join(REPO, 'wrench_distribution', '**', '*.py'), recursive=True):
        with open(path, encoding='utf-8') as f:
            source = f.read()
        for pattern in patterns:
            guarded.update(re.findall(pattern, source))
    assert {'add_post_set_parameters_callback', 'EventsExecutor'} <= guarded, guarded
    with open(os.path.join(REPO, 'docs', 'wiring.md'), encoding='utf-8') as f:
        wiring = f.read()
    table = wiring[wiring.index('### rclpy APIs that Humble lacks'):wiring.index('## Launch')]
    missing = sorted(name for name in guarded if f'{name}' not in table)
    assert not missing, f'guarded rclpy APIs not listed in docs/wiring.md: {missing}'
