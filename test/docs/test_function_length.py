"""House rules: functions of about 60 lines at most outside test/, engine and core classes of 300."""
import ast
import os

from lint_config import PACKAGE_ROOT

#: Longest function allowed, in lines from ``def`` to its last line.
LIMIT = 60
#: Linted trees outside test/.
TREES = ('wrench_distribution', 'benchmarks', 'launch')
#: Longest engine or core class allowed, in lines from ``class`` to its last line.
CLASS_LIMIT = 300
#: The layers whose classes are held to it.
CLASS_TREES = ('wrench_distribution/core', 'wrench_distribution/engine')


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


def long_classes(source: str, limit: int) -> list:
    """Return ``(name, first line, length)`` of every class longer than ``limit`` lines."""
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > limit]


def test_the_check_sees_a_long_function_and_a_nested_one():
    def body(indent: int) -> str:
        return ''.join(f'{" " * indent}x{i} = {i}\n' for i in range(LIMIT))
    source = (f'def long():\n{body(4)}\n\nclass C:\n    def method(self):\n'
              f'        def inner():\n{body(12)}')
    assert [(n, length) for n, _, length in long_functions(source, LIMIT)] == [
        ('long', LIMIT + 1), ('method', LIMIT + 2), ('inner', LIMIT + 1)]
    assert long_functions('def short():\n    return 1\n', LIMIT) == []


def sources(trees) -> list:
    """Return ``(path relative to the package root, source)`` of every Python file under ``trees``."""
    out = []
    for tree in trees:
        for folder, _, files in os.walk(os.path.join(PACKAGE_ROOT, tree)):
            for name in sorted(f for f in files if f.endswith('.py')):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as f:
                    out.append((os.path.relpath(path, PACKAGE_ROOT), f.read()))
    return out


def test_no_function_is_longer_than_the_limit():
    found = [f'{path}:{line} {func} ({length} lines)' for path, source in sources(TREES)
             for func, line, length in long_functions(source, LIMIT)]
    assert not found, 'functions over the limit: ' + '; '.join(found)


def test_the_class_check_sees_a_long_class():
    body = ''.join(f'    x{i} = {i}\n' for i in range(CLASS_LIMIT))
    assert [(n, length) for n, _, length in long_classes(f'class Long:\n{body}', CLASS_LIMIT)] == [
        ('Long', CLASS_LIMIT + 1)]
    assert long_classes('class Short:\n    x = 1\n', CLASS_LIMIT) == []


def test_no_engine_or_core_class_is_longer_than_its_limit():
    found = [f'{path}:{line} {cls} ({length} lines)' for path, source in sources(CLASS_TREES)
             for cls, line, length in long_classes(source, CLASS_LIMIT)]
    assert not found, 'engine/core classes over the limit: ' + '; '.join(found)
