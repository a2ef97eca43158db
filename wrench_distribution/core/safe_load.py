"""Bounded, safe reading of YAML/JSON documents (problem files, parameter files).

``yaml.safe_load`` constructs no objects, but on its own it still lets a small file ask
for unbounded time and memory (alias bombs, deep nesting) and hands numbers such as
``1e200`` or 400-digit integers to code that multiplies them. :func:`load_document` bounds
the file size, the nesting depth, the number of aliases and of nodes (counted *expanded*,
so shared aliases cost what they would cost as copies) and the magnitude of every number.
"""
import math
import os
from typing import Any, Optional

import yaml

from .errors import InvalidInputError

#: Largest accepted file (bytes).
MAX_BYTES = 1_000_000
#: Deepest accepted nesting of lists and mappings.
MAX_DEPTH = 24
#: Most YAML aliases (``*name``) in one document.
MAX_ALIASES = 64
#: Most values in the document once aliases are expanded.
MAX_NODES = 200_000
#: Largest accepted absolute value of a number (the unit does not matter: nothing
#: physical here is 1e9 N, m or kg, and products of such numbers stay finite).
MAX_ABS = 1e9


class _LimitedLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses deep nesting and many aliases while composing."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent, index):  # noqa: D102 (PyYAML hook)
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise InvalidInputError(f'more than {MAX_ALIASES} YAML aliases')
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise InvalidInputError(f'nesting deeper than {MAX_DEPTH} levels')
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


#: libyaml's loader (the same resolver and constructors, its parser in C: several times faster),
#: or None where PyYAML was built without it.
_FAST = getattr(yaml, 'CSafeLoader', None)


def _fast_load(text: str) -> Any:
    """Load with libyaml once a pass over its events found the nesting and aliases within the limits.

    The limits are :class:`_LimitedLoader`'s: a node inside ``k`` collections is at depth
    ``k + 1``, a collection at its own nesting level.
    """
    depth = aliases = 0
    for event in yaml.parse(text, Loader=_FAST):
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
            continue
        opens = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise InvalidInputError(f'more than {MAX_ALIASES} YAML aliases')
        if isinstance(event, yaml.NodeEvent) and depth + 1 > MAX_DEPTH:
            raise InvalidInputError(f'nesting deeper than {MAX_DEPTH} levels')
        depth += opens
    return yaml.load(text, Loader=_FAST)  # noqa: S506 (CSafeLoader: the safe constructors)


def _where(path: str) -> str:
    return path or 'the document'


def check_tree(value: Any, path: str = '', budget: Optional[list] = None, depth: int = 0) -> None:
    """Check a loaded document: bounded size and depth, finite numbers of sane magnitude.

    :param value: the loaded value.
    :param path: where it sits (for messages), e.g. ``contacts[0].position``.
    :param budget: internal node counter.
    :param depth: internal nesting depth.
    :raises InvalidInputError: naming the path.
    """
    budget = budget if budget is not None else [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0:
        raise InvalidInputError(f'document too large: more than {MAX_NODES} values')
    if depth > MAX_DEPTH:
        raise InvalidInputError(f'{_where(path)}: nesting deeper than {MAX_DEPTH} levels')
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str):  # YAML 1.1 reads 1e200 as a string; numpy would not
        try:
            number = float(value) if len(value) < 64 else 0.0
        except ValueError:
            return
        value = number
    if isinstance(value, int):
        if abs(value) > MAX_ABS:
            digits = int(value.bit_length() * 0.30103) + 1
            raise InvalidInputError(f'{_where(path)}: the integer (about {digits} digits) is out '
                                    f'of range; accepted: magnitude <= {MAX_ABS:g}')
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f'{_where(path)}: NaN or Inf ({value!r}) is not accepted')
        if abs(value) > MAX_ABS:
            raise InvalidInputError(f'{_where(path)}: {value!r} is out of range; accepted: '
                                    f'magnitude <= {MAX_ABS:g}')
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise InvalidInputError(f'{_where(path)}: keys must be strings, got {k!r:.40}')
            check_tree(v, f'{path}.{k}' if path else str(k), budget, depth + 1)
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            check_tree(v, f'{path}[{i}]', budget, depth + 1)
        return
    raise InvalidInputError(f'{_where(path)}: unsupported value type {type(value).__name__}')


def load_text(text: str, what: str) -> Any:
    """Parse YAML (or JSON) text within the limits and check the result.

    :param text: the document.
    :param what: what it is, for messages (e.g. ``problem file 'p.yaml'``).
    :return: the loaded value.
    :raises InvalidInputError: one line naming the problem.
    """
    if len(text) > MAX_BYTES:
        raise InvalidInputError(f'{what} is larger than {MAX_BYTES} bytes')
    loader = _LimitedLoader(text) if _FAST is None else None
    try:
        value = loader.get_single_data() if loader is not None else _fast_load(text)
    except InvalidInputError as e:
        raise InvalidInputError(f'{what}: {e}') from None
    except yaml.YAMLError as e:
        first = ' '.join(str(e).split())
        raise InvalidInputError(f'{what} is not valid YAML or JSON: {first[:300]}') from None
    except RecursionError:
        raise InvalidInputError(f'{what}: nesting too deep') from None
    except (ValueError, OverflowError) as e:  # e.g. an integer beyond Python's digit limit
        raise InvalidInputError(f'{what}: a value cannot be read ({e})') from None
    finally:
        if loader is not None:
            loader.dispose()
    try:
        check_tree(value)
    except InvalidInputError as e:
        raise InvalidInputError(f'{what}: {e}') from None
    return value


def load_document(path: str, what: str = 'file') -> Any:
    """Read and parse a YAML or JSON file within the limits.

    :param path: file path.
    :param what: what it is, for messages (``problem file``, ``parameter file``).
    :return: the loaded value.
    :raises InvalidInputError: when the file is missing, too large, not UTF-8, not YAML,
        or breaks a limit; one line naming the problem.
    """
    label = f'{what} {os.fspath(path)!r}'
    try:
        size = os.stat(path).st_size
        if size > MAX_BYTES:
            raise InvalidInputError(f'{label} is larger than {MAX_BYTES} bytes ({size})')
        with open(path, 'rb') as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise InvalidInputError(f'cannot read {label}: {e.strerror}') from None
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        raise InvalidInputError(f'{label} is not UTF-8 text (byte {e.start})') from None
    return load_text(text, label)
