"""Launch the wrench distributor with a parameter file.

Usage: ``ros2 launch wrench_distribution distributor.launch.py config:=/path/to.yaml``
(default: the package's ``config/dual_arm.yaml``); ``namespace:=``, ``use_sim_time:=``;
``calibration:=FILE`` (default ``~/.ros/wrench_distribution_calibration.yaml``): the node's
``calibration_file``, whose object and contacts it loads at start-up when it exists (the
analyzer's ``~/save_calibration`` writes it; docs/calibration.md); ``autostart:=false`` leaves
the node unconfigured for a lifecycle manager (default ``true``: it configures and activates
itself; docs/wiring.md, "Bringing a cell up").
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.parameter_descriptions import ParameterValue

from wrench_distribution.cell import AUTOSTART_CHOICES, AUTOSTART_HELP

DEFAULT_CONFIG = 'dual_arm.yaml'
DEFAULT_CALIBRATION = '~/.ros/wrench_distribution_calibration.yaml'  # a user file, not shipped


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the distributor node (a managed node).

    :return: the launch description.
    """
    share = get_package_share_directory('wrench_distribution')
    config = LaunchConfiguration('config')
    use_sim_time = LaunchConfiguration('use_sim_time')
    autostart = LaunchConfiguration('autostart')
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value=os.path.join(share, 'config',
                                                                   DEFAULT_CONFIG),
                              description='parameter file with a wrench_distributor section'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of the node and its relative topics'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (bag replay, simulation)'),
        DeclareLaunchArgument('calibration', default_value=DEFAULT_CALIBRATION,
                              description='calibration_file: its object and contacts loaded when '
                                          'it exists'),
        DeclareLaunchArgument('autostart', default_value='true', choices=AUTOSTART_CHOICES,
                              description=AUTOSTART_HELP),
        LifecycleNode(package='wrench_distribution', executable='distributor',
                      name='wrench_distributor', namespace=LaunchConfiguration('namespace'),
                      output='screen', emulate_tty=True,
                      parameters=[config,
                                  {'calibration_file': LaunchConfiguration('calibration'),  # '~' expanded by the node
                                   'use_sim_time': ParameterValue(use_sim_time, value_type=bool),
                                   'autostart': ParameterValue(autostart, value_type=bool)}]),
    ])
