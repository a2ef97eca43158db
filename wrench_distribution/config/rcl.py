"""What rcl's YAML parser makes of a parameter file, before any node's code runs (no ROS import).

rcl types a value by its YAML form: ``0`` is an integer, ``0.0`` a double, a list mixing
integers and doubles is refused for the whole file ("Sequence should be of same type"), a
list of lists too, and an empty list has no type. The nodes read an integer written for a
double as that double (and ``ros2 param set`` too, from Iron on); other ROS tools type it by
its form. ``check-config`` (:mod:`.judge`) reports each case with its fix.
"""
from __future__ import annotations

from typing import Any, Mapping

from .index import INDEX
from .schema import DOUBLE, DOUBLE_ARRAY, INTEGER_ARRAY

#: Deepest nesting of a parameter file that is walked (the bounded loader refuses deeper).
MAX_DEPTH = 64


def yaml_form(value: Any) -> str:
    """Return rcl's type of a YAML scalar (bool, integer, double, string).

    :param value: a parsed YAML scalar.
    :return: its rcl type.
    """
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'double'
    return 'string'


def number_text(value: Any) -> str:
    """Return a number as a double is written (``4`` -> ``4.0``).

    :param value: a parsed YAML scalar.
    :return: its text.
    """
    return repr(float(value)) if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def refused_lists(data: Mapping) -> list:
    """Every list rcl's parser refuses or misreads, anywhere in the file (it parses every section).

    A list that mixes types, or holds two lists, ends every node started with the file; a
    list holding one list or a mapping is misread (rcl keeps part of it, and takes what
    follows for new parameters), so the nodes refuse the file too.

    :param data: the parsed file.
    :return: ``(dotted path, message, fix)`` per such list.
    """
    out = []
    for path, value in _lists(data):
        found = _list_problem(value) if value else None
        if found is not None:
            out.append((path,) + found)
    return sorted(out)


def empty_lists(data: Mapping) -> list:
    """Return the empty lists of a file: rcl gives them no value (the parameter keeps its default).

    :param data: the parsed file.
    :return: their dotted paths, sorted.
    """
    return sorted(path for path, value in _lists(data) if not value)


def _lists(data: Mapping) -> list:
    """``(dotted path, list)`` of every list in the file's mappings (bounded depth)."""
    out: list = []
    stack = [('', data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            continue
        if isinstance(value, Mapping):
            stack.extend((f'{path}.{k}' if path else str(k), v, depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            out.append((path, value))
    return out


def _list_problem(value: list):
    if any(isinstance(v, (list, Mapping)) for v in value):
        return ("a list holding lists or mappings: rcl refuses the file ('Sequences cannot be "
                "key') or misreads it, so every node started with this file refuses it",
                'write one flat list of numbers or strings')
    forms = {yaml_form(v) for v in value if not isinstance(v, Mapping)}
    if len(forms) < 2:
        return None
    if forms == {'integer', 'double'}:
        fixed = ', '.join(number_text(v) for v in value)
        return ("rcl refuses a list that mixes integers and doubles ('Sequence should be of same "
                "type'): every node started with this file exits before its code runs",
                f'write every entry with a decimal point: [{shortened(fixed)}]')
    return (f"rcl refuses a list of mixed types ({', '.join(sorted(forms))}: 'Sequence should be "
            "of same type'): every node started with this file exits before its code runs",
            'write every entry of one type (quote strings)')


def shortened(text: str, limit: int = 120) -> str:
    """Return ``text`` cut at ``limit`` characters (`` ...`` marks the cut).

    :param text: any text.
    :param limit: longest length kept.
    :return: the text.
    """
    return text if len(text) <= limit else text[:limit] + ' ...'


def integer_for_double(spec, value: Any) -> str:
    """Say what the node and other tools make of an integer written where a double is declared.

    :param spec: the parameter's spec.
    :param value: the value as parsed.
    :return: the note, or '' when the form is the declared one.
    """
    if spec.type == DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        return (f'the integer {value} where a double is declared: the node reads it as '
                f'{float(value)!r}; other ROS tools (ros2 param load) type it by its form')
    if (spec.type == DOUBLE_ARRAY and isinstance(value, list) and value
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return ('integers where doubles are declared: the node reads them as doubles; '
                'other ROS tools (ros2 param load) type them by their form')
    return ''


def ros_yaml_type_problems(kind: str, values: Mapping[str, Any]) -> list:
    """Values not written in the form rcl types them as declared (the shipped files' style).

    :param kind: ``'distributor'``, ``'analyzer'`` or a simulator node.
    :param values: flat parameters as read from YAML.
    :return: list of messages (empty when the file is fine for every ROS tool).
    """
    index = INDEX[kind]
    out = []
    for name, value in values.items():
        spec = index.get(name)
        if spec is None:
            continue
        if spec.type == DOUBLE and not isinstance(value, float):
            out.append(f"'{name}': write {value!r} as a float (e.g. {value}.0): rcl types it "
                       'as another type')
        if spec.type.endswith('_array'):
            if isinstance(value, (list, tuple)) and not value:
                out.append(f"'{name}': empty arrays cannot be parsed by rcl; omit the "
                           'parameter for its default')
            elif spec.type == DOUBLE_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, float) for v in value):
                out.append(f"'{name}': write every entry as a float (1.0, not 1; rcl refuses a "
                           'list that mixes integers and doubles)')
            elif spec.type == INTEGER_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value):
                out.append(f"'{name}': write every entry as an integer")
    return out
