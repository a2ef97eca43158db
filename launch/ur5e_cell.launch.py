"""Launch the distributor and the analyzer for the two-UR5e cell of ``config/ur5e_cell/``.

Usage: ``ros2 launch wrench_distribution ur5e_cell.launch.py controllers:=admittance``
(Jazzy and later: ros2_controllers ``admittance_controller``) or ``controllers:=fzi`` (Humble:
FZI ``cartesian_force_controller``); ``config:=`` another nodes' file, ``namespace:=``,
``use_sim_time:=``, ``layout:=one-process`` (both nodes in one process, the ``cell``
executable; default ``processes``, docs/performance.md); ``calibration:=FILE`` (default
``~/.ros/wrench_distribution_calibration.yaml``): both nodes' ``calibration_file``, which each
loads at start-up when it exists (its calibration values only) and the analyzer's
``~/save_calibration`` writes (docs/calibration.md); never a parameter file for rcl;
``autostart:=false`` leaves the nodes unconfigured for a lifecycle manager (default ``true``:
each configures and activates itself; docs/wiring.md, "Bringing a cell up"). The
controllers themselves run in the controller manager, with
``config/ur5e_cell/controllers_jazzy.yaml`` or ``controllers_humble.yaml``
(docs/real_cell.md).

The nodes' topics are remapped onto the controllers' own: ``<side>/wrench_command`` onto the
controller's input (``wrench_reference`` or ``target_wrench``), ``<side>/ft_sensor`` onto
``<side>_ft_sensor_broadcaster/wrench``.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
import launch_ros.actions

from wrench_distribution.cell import (AUTOSTART_CHOICES, AUTOSTART_HELP, DEFAULT_LAYOUT,
                                      launch_actions, LAYOUTS)

NODES_FILE = 'ur5e_cell/wrench_distribution.yaml'
SIDES = ('left', 'right')
#: controllers argument -> command topic of each arm's controller ({side}: left, right)
COMMAND_TOPICS = {'admittance': '/{side}_admittance_controller/wrench_reference',
                  'fzi': '/{side}_cartesian_force_controller/target_wrench'}
SENSOR_TOPIC = '/{side}_ft_sensor_broadcaster/wrench'
DEFAULT_CALIBRATION = '~/.ros/wrench_distribution_calibration.yaml'  # a user file, not shipped


def _nodes(context) -> list:
    """Both nodes, in the chosen layout, with the remappings of the chosen controllers.

    :param context: the launch context (arguments resolved).
    :return: the node actions.
    :raises ValueError: on an unknown ``controllers`` or ``layout`` value (names the accepted
        ones).
    """
    controllers = LaunchConfiguration('controllers').perform(context)
    if controllers not in COMMAND_TOPICS:
        raise ValueError(f"controllers:='{controllers}': accepted: "
                         f"{', '.join(sorted(COMMAND_TOPICS))}")
    config = LaunchConfiguration('config').perform(context)
    namespace = LaunchConfiguration('namespace').perform(context)
    sim = {name: LaunchConfiguration(name).perform(context) == 'true'
           for name in ('use_sim_time', 'autostart')}
    calibration = os.path.expanduser(LaunchConfiguration('calibration').perform(context))
    commands = [(f'{side}/wrench_command', COMMAND_TOPICS[controllers].format(side=side))
                for side in SIDES]
    sensors = [(f'{side}/ft_sensor', SENSOR_TOPIC.format(side=side)) for side in SIDES]
    return launch_actions(launch_ros.actions, LaunchConfiguration('layout').perform(context), namespace,
                          [config, sim],
                          {exe: {'calibration_file': calibration} for exe in ('distributor', 'analyzer')},
                          {'distributor': commands, 'analyzer': sensors},
                          output='screen', emulate_tty=True)


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and both nodes.

    :return: the launch description.
    """
    share = get_package_share_directory('wrench_distribution')
    return LaunchDescription([
        DeclareLaunchArgument('controllers', default_value='admittance',
                              description='admittance (ros2_controllers, Jazzy and later) or '
                                          'fzi (cartesian_force_controller, Humble)'),
        DeclareLaunchArgument('config', default_value=os.path.join(share, 'config', NODES_FILE),
                              description='parameter file with wrench_distributor and '
                                          'wrench_analyzer sections'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of both nodes'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (bag replay, simulation)'),
        DeclareLaunchArgument('layout', default_value=DEFAULT_LAYOUT, choices=list(LAYOUTS),
                              description='processes: each node in its own process; '
                                          'one-process: both in one (the cell executable)'),
        DeclareLaunchArgument('calibration', default_value=DEFAULT_CALIBRATION,
                              description="both nodes' calibration_file: its calibration values "
                                          "loaded when it exists, written by the analyzer's "
                                          '~/save_calibration'),
        DeclareLaunchArgument('autostart', default_value='true', choices=AUTOSTART_CHOICES,
                              description=AUTOSTART_HELP),
        OpaqueFunction(function=_nodes),
    ])
