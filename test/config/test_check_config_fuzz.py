"""check-config on any file: a named message, an exit code, never a traceback or a bare Python error.

Hypothesis writes parameter files of four kinds: random YAML trees; this package's sections
with a random value of a random type at every declared name (and misspelt names); deep
nesting; and files beyond the bounded loader's size. Each runs through the command line in
this process (``cli.main``), so an exception it does not name would surface as a failure
here, and as ``invalid input: TypeError ...`` (an unnamed Python error) in its output.
``WD_FUZZ_EXAMPLES`` sets the number of files per kind (default 150); the figures print at the
end (``pytest -s``).
"""
import contextlib
import copy
import glob
import io
import json
import os
import re
import tempfile

from hypothesis import given, HealthCheck, settings, strategies as st
import pytest
import yaml

from ros_harness import REPO
from wrench_distribution import cli
from wrench_distribution.config.index import INDEX, NODE_KINDS

EXAMPLES = int(os.environ.get('WD_FUZZ_EXAMPLES', '150'))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))
#: What an output must never hold: a traceback or the name of a Python error class.
UNNAMED = re.compile(r'Traceback|\b(TypeError|ValueError|KeyError|AttributeError|IndexError|'
                     r'ZeroDivisionError|OverflowError|RecursionError|MemoryError)\b')
FIGURES = {'files': 0, 'exit 0': 0, 'exit 1': 0, 'exit 2': 0}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=12), st.sampled_from(['rigid', 'point', 'static', 'tf', '~',
                                                           '.nan', '1e400', 'left', 'right']))
trees = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=10), inner, max_size=6)),
    max_leaves=40)
numbers = st.lists(st.one_of(st.integers(-5, 5), st.floats(-1e4, 1e4)), max_size=14)


def _section_values(kind: str):
    names = sorted(INDEX[kind]) + ['tool_mass', 'object_mas', 'gravity_compensation.CoG.force']
    return st.dictionaries(st.sampled_from(names), st.one_of(scalars, numbers, trees,
                                                             st.lists(st.sampled_from(['left', 'right', 'a']),
                                                                      max_size=4)), max_size=12)


@st.composite
def our_files(draw) -> dict:
    doc = {}
    for node in draw(st.lists(st.sampled_from(sorted(NODE_KINDS) + ['/**', 'controller_manager']),
                              min_size=1, max_size=4, unique=True)):
        kind = NODE_KINDS.get(node, 'analyzer')
        base = {'effectors': ['left', 'right']} if draw(st.booleans()) else {}
        base.update(draw(_section_values(kind)))
        doc[node] = {'ros__parameters': base} if draw(st.integers(0, 9)) else draw(trees)
    return doc


def _typed(spec):
    """Values of a spec's declared type: any length, any magnitude the loader accepts."""
    number = st.floats(-2e3, 2e3, allow_nan=False) | st.sampled_from([0.0, 1.0, -1.0, 380.0, 1e6])
    element = {'double': number, 'integer': st.integers(-3, 1000), 'bool': st.booleans(),
               'string': st.sampled_from(list(spec.accepted or ()) + ['left', 'object', ''])}
    base = spec.type.replace('_array', '')
    if spec.type.endswith('_array'):
        if base == 'string':
            return st.lists(st.sampled_from(list(spec.accepted or ()) + ['left', 'right', 'a']), max_size=5)
        return st.lists(element[base], min_size=1, max_size=14)
    return element[base]


def _run(text: str) -> tuple:
    with tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False) as f:
        f.write(text)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cli.main(['check-config', f.name])
    finally:
        os.unlink(f.name)
    text = out.getvalue()
    FIGURES['files'] += 1
    FIGURES[f'exit {code}'] = FIGURES.get(f'exit {code}', 0) + 1
    assert code in (0, 1, 2), text
    assert not UNNAMED.search(text), text
    document = json.loads(text)
    assert (code == 2) == ('error' in document), text
    return code, document


def _dump(doc) -> str:
    try:
        return yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        return '{}'


@SETTINGS
@given(doc=trees)
def test_random_trees(doc):
    _run(_dump(doc))


@SETTINGS
@given(doc=our_files())
def test_random_values_at_every_known_name(doc):
    _run(_dump(doc))


SHIPPED = [yaml.safe_load(open(p)) for p in sorted(glob.glob(os.path.join(
    REPO, 'config', '*.yaml')))]


@SETTINGS
@given(which=st.integers(0, len(SHIPPED) - 1), data=st.data())
def test_shipped_files_with_random_values_at_known_names(which, data):
    """A valid file with one to three values replaced: the cross-checks and findings run."""
    doc = copy.deepcopy(SHIPPED[which])
    for _ in range(data.draw(st.integers(1, 3))):
        node = data.draw(st.sampled_from(sorted(doc)))
        section = doc[node].get('ros__parameters') if isinstance(doc[node], dict) else None
        if not isinstance(section, dict):
            continue
        kind = NODE_KINDS.get(node.split('/')[-1], 'analyzer')
        name = data.draw(st.sampled_from(sorted(INDEX[kind]) + ['gravity_compensation', 'tool_mass']))
        spec = INDEX[kind].get(name)
        typed = [_typed(spec)] * 3 if spec is not None else []  # most draws of the declared type
        section[name] = data.draw(st.one_of(*typed, scalars, numbers, trees))
    _run(_dump(doc))


@SETTINGS
@given(depth=st.integers(1, 60), leaf=scalars, key=st.sampled_from(['ros__parameters', 'a', '/**']))
def test_deep_nesting(depth, leaf, key):
    doc = leaf
    for _ in range(depth):
        doc = {key: doc}
    _run(_dump({'wrench_analyzer': doc}))


@settings(max_examples=5, deadline=None)
@given(rows=st.integers(60_000, 120_000))
def test_huge_files_are_refused_by_name(rows):
    text = 'wrench_analyzer:\n  ros__parameters:\n' + ''.join(f'    p{i}: {i}.5\n' for i in range(rows))
    code, document = _run(text)
    assert code == 2 and ('bytes' in document['error'] or 'large' in document['error']), document


@pytest.fixture(scope='module', autouse=True)
def _figures():
    yield
    print(f'\ncheck-config fuzz: {FIGURES["files"]} files, exit codes '
          + ', '.join(f'{k}: {v}' for k, v in sorted(FIGURES.items()) if k != 'files')
          + ', 0 tracebacks, 0 unnamed Python errors')
