"""Launch the wrench analyzer with a parameter file and its calibration file.

Usage: ``ros2 launch wrench_distribution analyzer.launch.py config:=/path/to.yaml``
(default: the package's ``config/dual_arm.yaml``); ``namespace:=``, ``use_sim_time:=``
(``true`` under ``ros2 bag play --clock``); ``calibration:=FILE`` (default
``~/.ros/wrench_distribution_calibration.yaml``): the node's ``calibration_file``, which it loads
at start-up when it exists (its calibration values only, over the config's) and where
``~/save_calibration`` writes (docs/calibration.md); never a parameter file for rcl;
``autostart:=false`` leaves the node unconfigured for a lifecycle manager (default ``true``:
it configures and activates itself; docs/wiring.md, "Bringing a cell up").
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.parameter_descriptions import ParameterValue

from wrench_distribution.cell import AUTOSTART_CHOICES, AUTOSTART_HELP

DEFAULT_CONFIG = 'dual_arm.yaml'
DEFAULT_CALIBRATION = '~/.ros/wrench_distribution_calibration.yaml'  # a user file, not shipped


def _analyzer(context) -> list:
    """Build the analyzer (a managed node), given the calibration file."""
    calibration = os.path.expanduser(LaunchConfiguration('calibration').perform(context))
    use_sim_time = LaunchConfiguration('use_sim_time')
    return [LifecycleNode(package='wrench_distribution', executable='analyzer',
                          name='wrench_analyzer', namespace=LaunchConfiguration('namespace'),
                          output='screen', emulate_tty=True,
                          parameters=[LaunchConfiguration('config'), {
                              'calibration_file': calibration,
                              'use_sim_time': ParameterValue(use_sim_time, value_type=bool),
                              'autostart': ParameterValue(LaunchConfiguration('autostart'),
                                                          value_type=bool)}])]


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the analyzer node.

    :return: the launch description.
    """
    share = get_package_share_directory('wrench_distribution')
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value=os.path.join(share, 'config',
                                                                   DEFAULT_CONFIG),
                              description='parameter file with a wrench_analyzer section'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of the node and its relative topics'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (bag replay, simulation)'),
        DeclareLaunchArgument('calibration', default_value=DEFAULT_CALIBRATION,
                              description='calibration_file: its calibration values loaded when '
                                          'it exists, written by ~/save_calibration'),
        DeclareLaunchArgument('autostart', default_value='true', choices=AUTOSTART_CHOICES,
                              description=AUTOSTART_HELP),
        OpaqueFunction(function=_analyzer),
    ])
