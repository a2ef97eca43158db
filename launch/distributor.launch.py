"""Launch the wrench distributor with a parameter file.

Usage: ``ros2 launch wrench_distribution distributor.launch.py config:=/path/to.yaml``
(default: the package's ``config/dual_arm.yaml``); ``namespace:=``, ``use_sim_time:=``.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

DEFAULT_CONFIG = 'dual_arm.yaml'


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the distributor node.

    :return: the launch description.
    """
    share = get_package_share_directory('wrench_distribution')
    config = LaunchConfiguration('config')
    use_sim_time = LaunchConfiguration('use_sim_time')
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value=os.path.join(share, 'config',
                                                                   DEFAULT_CONFIG),
                              description='parameter file with a wrench_distributor section'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of the node and its relative topics'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (bag replay, simulation)'),
        Node(package='wrench_distribution', executable='distributor',
             name='wrench_distributor', namespace=LaunchConfiguration('namespace'),
             output='screen', emulate_tty=True,
             parameters=[config,
                         {'use_sim_time': ParameterValue(use_sim_time, value_type=bool)}]),
    ])
