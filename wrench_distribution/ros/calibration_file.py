"""A node's ``calibration_file`` at start-up: its calibration values over the configuration, then fixed.

Part of declaring a node's parameters (:func:`~.parameters.declare_and_validate`): the calibration
parameters (:data:`~wrench_distribution.config.calibration.CALIBRATION_KEYS`) are declared writable
(:func:`declaration_specs`) so that the file's values can replace the configured ones once, before
any callback exists; then each takes the descriptor the schema gives it (read-only but
``sensor_biases``). The file is read by :func:`~wrench_distribution.config.calibration.read_calibration`
(not through a link, bounded, calibration values only, each within its bounds), the corrections
within theirs against the configuration (:func:`~wrench_distribution.config.calibration.merged`):
a refusal is a :class:`ConfigError` and the node does not start. The parameters then show what the
node runs with (``ros2 param get``). A managed node configured again (after ``cleanup``) runs with
the values it took: its fixed calibration parameters cannot change, so the file is not read again.
"""
from __future__ import annotations

from dataclasses import replace
import os
from typing import Sequence

from wrench_distribution.config.calibration import CALIBRATION_KEYS, merged, range_errors, read_calibration
from wrench_distribution.config.schema import ConfigError, ParamSpec
from wrench_distribution.ros_args import param_files


def _keys(specs: Sequence[ParamSpec], kind: str) -> tuple:
    names = {s.name for s in specs}
    return CALIBRATION_KEYS.get(kind, ()) if 'calibration_file' in names else ()


def declaration_specs(specs: Sequence[ParamSpec], kind: str) -> list:
    """Return the specs to declare with: the calibration parameters writable until the file is taken."""
    keys = _keys(specs, kind)
    return [replace(s, read_only=False) if s.name in keys else s for s in specs]


def take_calibration(node, specs: Sequence[ParamSpec], kind: str, values: dict, argv: Sequence[str]) -> dict:
    """Replace the configured calibration values by the file's; fix the parameters' descriptors.

    :param node: the node (its calibration parameters declared writable).
    :param specs: its schema.
    :param kind: ``'analyzer'`` or ``'distributor'`` (others have no calibration).
    :param values: the declared values.
    :param argv: the process arguments (a calibration file given as ``--params-file`` is refused).
    :return: the values the node runs with.
    :raises ConfigError: the file or a value in it is refused (named).
    """
    from .parameters import descriptor_for, typed_parameter
    keys = _keys(specs, kind)
    if _taken(node, specs, keys):
        return dict(values)
    path = values.get('calibration_file') or '' if keys else ''
    calibration = read_calibration(path, kind, node.get_name()) if path else None
    if calibration:
        _refuse_as_params_file(path, argv)
    out = _merged(path, values, calibration, kind) if calibration else dict(values)
    index = {s.name: s for s in specs}
    if calibration:
        results = node.set_parameters([typed_parameter(index[k], v) for k, v in calibration.items()])
        refused = [r.reason for r in results if not r.successful]
        if refused:
            raise ConfigError(f"calibration_file '{path}': {'; '.join(refused)}")
    for name in keys:
        node.set_descriptor(name, descriptor_for(index[name]))
    if path:
        node.get_logger().info(f"calibration_file '{path}': " + (
            f"took {', '.join(calibration)}" if calibration else
            'not there yet (the configured values stand; ~/save_calibration of the analyzer writes it)'))
    return out


def _taken(node, specs: Sequence[ParamSpec], keys: tuple) -> bool:
    """Tell whether an earlier configure took the file: a key the schema fixes is read-only already."""
    index = {s.name: s for s in specs}
    return any(index[k].read_only and node.describe_parameter(k).read_only for k in keys)


def _merged(path: str, values: dict, calibration: dict, kind: str) -> dict:
    """Return the configuration with the file's values over it; refuse what the file brings beyond a bound.

    The corrections are judged against the configured values, and the analyzer's values against
    its sensors' ranges: an error the configured values alone do not have comes from the file, and
    its message names the file (those of the configuration are named by its validation).

    :raises ConfigError: naming the file and the value.
    """
    try:
        out = merged(values, calibration, kind)
    except ConfigError as error:
        raise ConfigError(f"calibration_file '{path}': {error}") from None
    if kind == 'analyzer':
        configured = {str(error) for error in range_errors(values)}
        brought = [str(error) for error in range_errors(out) if str(error) not in configured]
        if brought:
            raise ConfigError(f"calibration_file '{path}': " + '; '.join(brought))
    return out


def _refuse_as_params_file(path: str, argv: Sequence[str]) -> None:
    """Refuse a calibration file that rcl has already loaded whole, as a ``--params-file``."""
    target = os.path.realpath(os.path.expanduser(path))
    for given in param_files(argv):
        if os.path.realpath(os.path.expanduser(given)) == target:
            raise ConfigError(f"calibration_file '{path}' is also given as --params-file: rcl has loaded every "
                              'key in it before this node could check them; give it only as calibration_file '
                              '(the launch files do)')
