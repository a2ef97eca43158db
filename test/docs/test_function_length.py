"""House rule: no function outside test/ is longer than about 60 lines (docstring included)."""
import ast
import os

from lint_config import PACKAGE_ROOT

#: Longest function allowed, in lines from ``def`` to its last line.
LIMIT = 60
#: Linted trees outside test/.
TREES = ('wrench_distribution', 'benchmarks', 'launch')


def long_functions(source: str, limit: int) -> list:
    """Return ``(name, first line, length)`` of every function longer than ``limit`` lines.

    :param source: Python source.
    :param limit: longest length allowed.
    :return: the offending functions, nested ones included.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                out.append((node.name, node.lineno, length))
    return out


def test_the_check_sees_a_long_function_and_a_nested_one():
    def body(indent: int) -> str:
        return ''.join(f'{" " * indent}x{i} = {i}\n' for i in range(LIMIT))
    source = (f'def long():\n{body(4)}\n\nclass C:\n    def method(self):\n'
              f'        def inner():\n{body(12)}')
    assert [(n, length) for n, _, length in long_functions(source, LIMIT)] == [
        ('long', LIMIT + 1), ('method', LIMIT + 2), ('inner', LIMIT + 1)]
    assert long_functions('def short():\n    return 1\n', LIMIT) == []


def test_no_function_is_longer_than_the_limit():
    found = []
    for tree in TREES:
        for folder, _, files in os.walk(os.path.join(PACKAGE_ROOT, tree)):
            for name in sorted(f for f in files if f.endswith('.py')):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as f:
                    for func, line, length in long_functions(f.read(), LIMIT):
                        found.append(f'{os.path.relpath(path, PACKAGE_ROOT)}:{line} {func} '
                                     f'({length} lines)')
    assert not found, 'functions over the limit: ' + '; '.join(found)
