"""Reading ROS parameter YAML files into a node's configuration (no ROS import).

Scripts without ROS (the bag tools, the command line, the simulator) and the nodes build their
configuration from here; :mod:`.nodes` defines it.
"""
from __future__ import annotations

from collections import OrderedDict
import copy
import os
from typing import Any, Mapping

from .nodes import AnalyzerConfig, config_from_parameters, DistributorConfig
from .schema import ConfigError


#: Parameter files parsed in this process, by the identity of the file's content (path, inode,
#: size, modification time): a node reads its files several times while it starts (the entry
#: point's bounds, rcl's misreads, unknown names, check-config's findings), and a parse of a
#: file near the loader's size bound takes seconds.
_PARSED: 'OrderedDict[tuple, Mapping]' = OrderedDict()
_PARSED_KEPT = 4
#: Most values (a scalar, or each element of a list) in one parameter file. rcl's parser, which
#: reads every ``--params-file`` before a node can check it, takes time that grows with the
#: square of a list's length and of the number of parameters in a section: a file within the
#: bounded loader's size can hold it for minutes (docs/benchmarks.md, "Parameter files refused
#: before rcl"). A cell's configuration has hundreds.
MAX_PARAM_VALUES = 10_000


def read_param_document(path_or_dict: Any) -> Mapping:
    """Return a ROS parameter file as a mapping of node sections (bounded safe loading).

    A file is parsed once per process while it is unchanged (each call gets its own copy).

    :param path_or_dict: a file path, or the already-parsed YAML dict.
    :return: the mapping of node names to sections.
    :raises ConfigError: when the file cannot be read or parsed, or is not a mapping.
    """
    if isinstance(path_or_dict, Mapping):
        return path_or_dict
    from wrench_distribution.core.errors import InvalidInputError
    from wrench_distribution.core.safe_load import load_document
    path = os.fspath(path_or_dict)
    try:
        info = os.stat(path)
        key = (os.path.realpath(path), info.st_ino, info.st_size, info.st_mtime_ns)
    except OSError:
        key = None  # load_document says why it cannot be read
    if key in _PARSED:
        return copy.deepcopy(_PARSED[key])
    try:  # size, depth, aliases, number magnitudes
        data = load_document(path, 'parameter file')
    except InvalidInputError as e:
        raise ConfigError(str(e)) from None
    if not isinstance(data, Mapping):
        raise ConfigError('parameter file: expected a mapping of node names to '
                          '{ros__parameters: ...}')
    if _more_values_than(data, MAX_PARAM_VALUES):
        raise ConfigError(f"parameter file '{path}': more than {MAX_PARAM_VALUES} values (a number, a string or "
                          'an element of a list each); accepted: at most that many (rcl parses a file in a time '
                          "that grows with the square of a list's length or a section's size)")
    if key is not None:
        _PARSED[key] = copy.deepcopy(data)
        while len(_PARSED) > _PARSED_KEPT:
            _PARSED.popitem(last=False)
    return data


def _more_values_than(data: Any, bound: int) -> bool:
    """Return whether a parsed document holds more than ``bound`` values (leaves), stopping at ``bound + 1``."""
    count, pending = 0, [data]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        else:
            count += 1
            if count > bound:
                return True
    return False


def node_of(key: Any) -> str:
    """Return the node name of a parameter file's section key (``/ns/name`` -> ``name``).

    :param key: the section key.
    :return: the node name.
    """
    return str(key).lstrip('/').split('/')[-1]


#: What rcl reads for an empty value (``name:`` or ``name: ~``): the string ``~``.
RCL_EMPTY = '~'


def flatten_parameters(params: Mapping) -> dict:
    """Return ``ros__parameters`` flattened with dots, read as rcl reads them.

    Lists are values; an empty value (YAML null) is the string ``~``, and an empty list is no
    value at all (the parameter keeps its default), as rcl's parser gives them.

    :param params: the nested mapping.
    :return: ``{dotted name: value}``.
    """
    out: dict = {}
    stack = [('', params)]
    while stack:
        prefix, mapping = stack.pop()
        for k, v in mapping.items():
            name = f'{prefix}{k}'
            if isinstance(v, Mapping):
                stack.append((name + '.', v))
            elif not (isinstance(v, list) and not v):
                out[name] = RCL_EMPTY if v is None else v
    return out


def read_ros_params_yaml(path_or_dict: Any, node_name: str) -> dict:
    """Return the flattened ``ros__parameters`` of one node from a ROS parameter file.

    Sections keyed ``<node_name>``, ``/<node_name>``, ``<ns>/<node_name>`` and the
    wildcard ``/**`` are merged (the node's own section wins), as rcl merges them.

    :param path_or_dict: a file path, or the already-parsed YAML dict.
    :param node_name: node name, e.g. ``wrench_analyzer``.
    :return: ``{param_name: value}``.
    :raises ConfigError: when the file cannot be read or parsed, or has no section.
    """
    data = read_param_document(path_or_dict)
    merged: dict = {}
    found = False
    own = []
    for key, section in data.items():
        k = str(key)
        if k in ('/**', '**'):
            merged.update(_section(section, k))
            found = True
        elif node_of(k) == node_name:
            own.append((k, section))
    for k, section in own:
        merged.update(_section(section, k))
        found = True
    if not found:
        raise ConfigError(f"parameter file: no section for node '{node_name}' (keys: "
                          f'{", ".join(map(str, data))}); expected "{node_name}:" or "/**:" '
                          'with "ros__parameters:"')
    return merged


def _section(section: Any, key: str) -> dict:
    if not isinstance(section, Mapping) or 'ros__parameters' not in section:
        raise ConfigError(f"parameter file: section '{key}' has no 'ros__parameters'")
    params = section['ros__parameters'] or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"parameter file: '{key}.ros__parameters' must be a mapping")
    return flatten_parameters(params)


def load_distributor_config(path_or_dict: Any, node_name: str = 'wrench_distributor',
                            strict_unknown: bool = True) -> DistributorConfig:
    """Read and validate the distributor section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the distributor does not declare.
    :return: :class:`~.nodes.DistributorConfig`.
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    return config_from_parameters('distributor', _params_of(path_or_dict, node_name),
                                  strict_unknown)


def load_analyzer_config(path_or_dict: Any, node_name: str = 'wrench_analyzer',
                         strict_unknown: bool = True) -> AnalyzerConfig:
    """Read and validate the analyzer section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the analyzer does not declare.
    :return: :class:`~.nodes.AnalyzerConfig` (``contacts`` is None unless static contact
        positions are configured; ``sensors`` has one ``SensorModel`` per effector).
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    return config_from_parameters('analyzer', _params_of(path_or_dict, node_name), strict_unknown)


def _params_of(path_or_dict: Any, node_name: str) -> dict:
    if isinstance(path_or_dict, Mapping) and not any(
            isinstance(s, Mapping) and 'ros__parameters' in s for s in path_or_dict.values()):
        return dict(path_or_dict)  # already flat parameters
    return read_ros_params_yaml(path_or_dict, node_name)
