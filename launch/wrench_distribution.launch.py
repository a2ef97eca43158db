"""Launch the distributor and the analyzer together from one parameter file.

Usage: ``ros2 launch wrench_distribution wrench_distribution.launch.py
config:=/path/to.yaml`` (default: ``config/dual_arm.yaml``; also
``three_finger_hand.yaml`` and ``quadruped_stance.yaml``); ``namespace:=``,
``use_sim_time:=``, ``distributor:=false`` / ``analyzer:=false`` to leave one out;
``layout:=processes`` (default: each node in its own process) or ``layout:=one-process``
(both in one, the ``cell`` executable; docs/performance.md); ``autostart:=false`` leaves the
nodes unconfigured for a lifecycle manager (default ``true``: each configures and activates
itself; docs/wiring.md, "Bringing a cell up");
``calibration:=FILE`` (default ``~/.ros/wrench_distribution_calibration.yaml``): both nodes'
``calibration_file``, which each loads at start-up when it exists (its calibration values only,
over the config's) and the analyzer's ``~/save_calibration`` writes (docs/calibration.md). It is
not given to rcl as a parameter file: rcl would load whatever it holds.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
import launch_ros.actions
from launch_ros.parameter_descriptions import ParameterValue

from wrench_distribution.cell import (AUTOSTART_CHOICES, AUTOSTART_HELP, DEFAULT_LAYOUT,
                                      launch_actions, LAYOUTS)

DEFAULT_CONFIG = 'dual_arm.yaml'
DEFAULT_CALIBRATION = '~/.ros/wrench_distribution_calibration.yaml'  # a user file, not shipped


def _nodes(context) -> list:
    """Build the nodes started, in the chosen layout, each given the calibration file.

    :raises ValueError: on a ``distributor``/``analyzer`` value that is no boolean, or an
        unknown ``layout`` (the message names the accepted values).
    """
    calibration = os.path.expanduser(LaunchConfiguration('calibration').perform(context))
    sim = {'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool),
           'autostart': ParameterValue(LaunchConfiguration('autostart'), value_type=bool)}
    own = {exe: {'calibration_file': calibration} for exe in ('distributor', 'analyzer')}
    for exe in list(own):
        value = LaunchConfiguration(exe).perform(context)
        if value.lower() not in ('true', 'false', '1', '0'):
            raise ValueError(f"{exe}:='{value}': accepted: true, false")
        if value.lower() in ('false', '0'):
            del own[exe]
    return launch_actions(launch_ros.actions, LaunchConfiguration('layout').perform(context),
                          LaunchConfiguration('namespace'),
                          [LaunchConfiguration('config'), sim], own, {},
                          output='screen', emulate_tty=True)


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and both nodes.

    :return: the launch description.
    """
    share = get_package_share_directory('wrench_distribution')
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value=os.path.join(share, 'config',
                                                                   DEFAULT_CONFIG),
                              description='parameter file with wrench_distributor and '
                                          'wrench_analyzer sections'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of both nodes'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (bag replay, simulation)'),
        DeclareLaunchArgument('distributor', default_value='true',
                              description='start the distributor'),
        DeclareLaunchArgument('analyzer', default_value='true',
                              description='start the analyzer'),
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
