"""A node's whole parameter set validated: unknown names, each value, the cross-checks (no ROS).

The path every parameter set takes, from a file, from a node's declared parameters, or from
a runtime change: :func:`validate_params` refuses unknown names (with the nearest declared
ones), checks each value (:mod:`.values`), fills in the defaults and runs the node kind's
cross-checks (:mod:`.cross_checks`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from wrench_distribution.core.validation import did_you_mean as close_names

from .cross_checks import cross_check_errors
from .index import INDEX
from .schema import BUILTIN_PARAMS, ConfigError
from .values import check_param_value


def defaults(kind: str) -> dict:
    """Return every parameter of a node kind at its default (fresh lists).

    :param kind: a node kind of :data:`~.index.INDEX`.
    :return: name -> default.
    """
    return {name: list(spec.default) if isinstance(spec.default, list) else spec.default
            for name, spec in INDEX[kind].items()}


def validate_params(kind: str, values: Mapping[str, Any], *, strict_unknown: bool = True,
                    fill_defaults: bool = True) -> dict:
    """Validate a full parameter set of one node (types, ranges, cross-checks).

    :param kind: ``'distributor'``, ``'analyzer'``, or a simulator node (``'object_sim'``,
        ``'object_controller'``, ``'baseline_distributor'``).
    :param values: parameter name -> value (missing ones take defaults when
        ``fill_defaults``).
    :param strict_unknown: raise on names the node does not declare.
    :param fill_defaults: add defaults for missing parameters.
    :return: normalised dict of every parameter.
    :raises ConfigError: with a message naming the parameter and the accepted values.
    """
    index = INDEX[kind]
    unknown = unknown_names(kind, values)
    if unknown and strict_unknown:
        raise ConfigError(unknown_message(kind, unknown))
    out = defaults(kind) if fill_defaults else {}
    for name, spec in index.items():
        if name in values:
            out[name] = check_param_value(spec, values[name])
    errors = cross_check_errors(kind, out)
    if errors:
        raise errors[0]
    return out


def unknown_names(kind: str, names: Sequence[str]) -> list:
    """Names a node of this kind does not declare (rclpy's own and ``qos_overrides.*`` known).

    :param kind: ``'distributor'``, ``'analyzer'`` or a simulator node.
    :param names: the parameter names given to it.
    :return: the unknown ones, sorted.
    """
    index = INDEX[kind]
    return sorted(str(k) for k in names if k not in index and k not in BUILTIN_PARAMS
                  and not str(k).startswith('qos_overrides.'))


def did_you_mean(known: Sequence[str], name: str, where: str = 'docs/parameters.md') -> str:
    """Return the known names closest to a misspelt one, as text (the core's rule).

    :param known: the accepted names.
    :param name: the unknown name.
    :param where: where every accepted name is listed (for the message without a close one).
    :return: ``did you mean 'tool_masses'?`` or a pointer to the list of names.
    """
    return close_names(name, known) or f'no accepted name is close (every name: {where})'


def unknown_message(kind: str, unknown: Sequence[str]) -> str:
    """One message for the unknown names of a node, each with its nearest declared names.

    :param kind: the node kind.
    :param unknown: the unknown names.
    :return: the message.
    """
    return (f'unknown parameter(s) for the {kind}: '
            + '; '.join(f"'{u}' ({did_you_mean(INDEX[kind], u)})" for u in unknown))
