"""A stand-in for the parts of ``launch`` / ``launch_ros`` the package's launch files use (tests only).

``launch`` and ``launch_ros`` cannot be installed from the Python registry. This module runs
a launch file's ``generate_launch_description()`` against small classes with the same names
and arguments (``LaunchDescription``, ``DeclareLaunchArgument``, ``OpaqueFunction``,
``LaunchConfiguration``, ``launch_ros.actions.Node`` and ``LifecycleNode``, ``ParameterValue``),
resolves the launch arguments as ``ros2 launch file.py name:=value`` does (given value, else
the declared default; a missing one, or one outside the declared ``choices``, is launch's
``RuntimeError``), executes the opaque functions with the resolved context, performs
the substitutions of each node action (namespace, parameters), and returns each node action
with the command line launch_ros would build for it: the executable, then ``--ros-args``, the
node name and namespace remaps, one ``--params-file`` per parameter file, a temporary
parameter file for each dict (``/**: ros__parameters:``, as launch_ros writes one), and one
``-r from:=to`` per remapping.

``ament_index_python.packages.get_package_share_directory('wrench_distribution')`` answers
the repository root, whose ``config/`` and ``launch/`` are laid out as the installed share.
"""
import importlib.util
import os
import sys
import types
from typing import Dict, List, Optional

import yaml

#: the repository (this file is in test/helpers/)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LaunchContext:
    """The resolved launch arguments."""

    def __init__(self, arguments: Dict[str, str]) -> None:
        self.launch_configurations = dict(arguments)


class LaunchDescription:
    """The list of actions."""

    def __init__(self, initial_entities=None) -> None:
        self.entities = list(initial_entities or [])


class DeclareLaunchArgument:
    """A launch argument with an optional default and optional choices.

    As launch's: empty ``choices``, or a plain default outside them, is a ``RuntimeError`` at
    construction; a value outside them is one when the argument is resolved (:meth:`check`).
    """

    def __init__(self, name: str, *, default_value: Optional[str] = None, description: str = '',
                 choices=None) -> None:
        self.name, self.default_value, self.description = name, default_value, description
        if choices is not None and not choices:
            raise RuntimeError('Provided choices arg is empty. Use None to ignore the choice list.')
        if choices is not None and isinstance(default_value, str) and default_value not in choices:
            raise RuntimeError(f'Provided default_value "{default_value}" is not in provided '
                               f'choices "{choices}".')
        self.choices = choices

    def check(self, value: str) -> None:
        """Refuse a value outside the choices, as launch does when it executes the action.

        :raises RuntimeError: with launch's message.
        """
        if self.choices is not None and value not in self.choices:
            raise RuntimeError(f'Argument "{self.name}" provided value "{value}" is not valid. '
                               f'Valid options are: {self.choices}')


class OpaqueFunction:
    """A function run with the launch context; returns more actions."""

    def __init__(self, *, function, args=None, kwargs=None) -> None:
        self.function, self.args, self.kwargs = function, args or [], kwargs or {}

    def execute(self, context: LaunchContext) -> list:
        """Run the function."""
        return self.function(context, *self.args, **self.kwargs) or []


class SubstitutionFailure(Exception):
    """A launch configuration that was never set."""


class LaunchConfiguration:
    """The value of a launch argument."""

    def __init__(self, variable_name: str, *, default=None) -> None:
        self.variable_name, self.default = variable_name, default

    def perform(self, context: LaunchContext) -> str:
        """Resolve the value."""
        if self.variable_name in context.launch_configurations:
            return context.launch_configurations[self.variable_name]
        if self.default is not None:
            return self.default
        raise SubstitutionFailure(f"launch configuration '{self.variable_name}' does not exist")


class Node:
    """launch_ros's node action: records what it was given."""

    def __init__(self, *, executable: str, package: Optional[str] = None,
                 name: Optional[str] = None, namespace: str = '', parameters=None,
                 remappings=None, arguments=None, **other) -> None:
        self.executable, self.package, self.name = executable, package, name
        self.namespace = namespace
        self.parameters = list(parameters or [])
        self.remappings = list(remappings or [])
        self.arguments = list(arguments or [])
        self.other = other

    def ros_arguments(self, tmp_dir: str) -> List[str]:
        """Command-line arguments after the executable, as launch_ros builds them.

        :param tmp_dir: where the parameter dicts are written as files.
        :return: the arguments.
        """
        out = list(self.arguments) + ['--ros-args']
        if self.name:
            out += ['-r', f'__node:={self.name}']
        if self.namespace:
            out += ['-r', f'__ns:=/{self.namespace.strip("/")}']
        for k, params in enumerate(self.parameters):
            if isinstance(params, dict):
                path = os.path.join(tmp_dir, f'{self.name}_params_{k}.yaml')
                with open(path, 'w') as f:
                    yaml.safe_dump({'/**': {'ros__parameters': params}}, f)
                params = path
            out += ['--params-file', str(params)]
        for source, target in self.remappings:
            out += ['-r', f'{source}:={target}']
        return out


class LifecycleNode(Node):
    """launch_ros's lifecycle node action: a node action whose ``name`` and ``namespace`` are required.

    Its signature from Humble to Kilted. Newer launch_ros also takes ``autostart``; Humble's and
    Jazzy's hand any further keyword to the process action, which refuses it: so does this one.
    """

    def __init__(self, *, name, namespace, **kwargs) -> None:
        if 'autostart' in kwargs:
            raise TypeError("LifecycleNode() got an unexpected keyword argument 'autostart' "
                            "(launch_ros of Humble and Jazzy): set the node's own parameter")
        super().__init__(name=name, namespace=namespace, **kwargs)


class ParameterValue:
    """launch_ros's typed parameter value: a substitution performed, then converted."""

    def __init__(self, value, *, value_type=None) -> None:
        self.value, self.value_type = value, value_type

    def perform(self, context: LaunchContext):
        """Perform the substitution and convert (``bool``: ``true``/``false`` as YAML reads them)."""
        text = _resolve(self.value, context)
        if self.value_type is bool:
            return {'true': True, 'false': False}[str(text).lower()]
        return self.value_type(text) if self.value_type else text


def _resolve(value, context: LaunchContext):
    """Perform the substitutions in a node action's argument (strings, lists, dicts)."""
    if isinstance(value, (LaunchConfiguration, ParameterValue)):
        return value.perform(context)
    if isinstance(value, dict):
        return {k: _resolve(v, context) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve(v, context) for v in value)
    return value


def _modules() -> Dict[str, types.ModuleType]:
    def module(name: str, **attrs) -> types.ModuleType:
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        return m
    launch = module('launch', LaunchDescription=LaunchDescription, LaunchContext=LaunchContext)
    launch.actions = module('launch.actions', DeclareLaunchArgument=DeclareLaunchArgument,
                            OpaqueFunction=OpaqueFunction)
    launch.substitutions = module('launch.substitutions', LaunchConfiguration=LaunchConfiguration)
    launch_ros = module('launch_ros')
    launch_ros.actions = module('launch_ros.actions', Node=Node, LifecycleNode=LifecycleNode)
    launch_ros.parameter_descriptions = module('launch_ros.parameter_descriptions',
                                               ParameterValue=ParameterValue)

    def share(package: str) -> str:
        if package != 'wrench_distribution':
            raise LookupError(f'package {package!r} not found (launch stand-in)')
        return REPO
    ament = module('ament_index_python')
    ament.packages = module('ament_index_python.packages', get_package_share_directory=share)
    return {'launch': launch, 'launch.actions': launch.actions,
            'launch.substitutions': launch.substitutions, 'launch_ros': launch_ros,
            'launch_ros.actions': launch_ros.actions,
            'launch_ros.parameter_descriptions': launch_ros.parameter_descriptions,
            'ament_index_python': ament,
            'ament_index_python.packages': ament.packages}


def nodes_of(path: str, arguments: Optional[Dict[str, str]] = None) -> List[Node]:
    """Run a launch file's description with the arguments; return its node actions.

    :param path: the ``*.launch.py`` file.
    :param arguments: ``name -> value``, as ``name:=value`` on the command line.
    :return: the node actions, in launch order.
    :raises SubstitutionFailure: an argument without a value or default.
    """
    saved = {name: sys.modules.get(name) for name in _modules()}
    sys.modules.update(_modules())
    try:
        spec = importlib.util.spec_from_file_location('launch_file_under_test', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        description = module.generate_launch_description()
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    context = LaunchContext(arguments or {})
    nodes, pending = [], list(description.entities)
    while pending:
        action = pending.pop(0)
        if isinstance(action, DeclareLaunchArgument):
            if action.name not in context.launch_configurations:
                if action.default_value is None:
                    raise SubstitutionFailure(f"launch argument '{action.name}' has no value")
                context.launch_configurations[action.name] = action.default_value
            action.check(context.launch_configurations[action.name])
        elif isinstance(action, OpaqueFunction):
            pending[:0] = action.execute(context)
        elif isinstance(action, Node):  # substitutions performed, as launch_ros does
            action.namespace = _resolve(action.namespace, context)
            action.parameters = _resolve(action.parameters, context)
            nodes.append(action)
    return nodes
