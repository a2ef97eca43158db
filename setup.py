"""ament_python setup for wrench_distribution."""
from glob import glob

from setuptools import find_packages, setup

package_name = 'wrench_distribution'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/config/ur5e_cell', glob('config/ur5e_cell/*.yaml')),
        ('share/' + package_name + '/config/security', glob('config/security/*.policy.xml')),
        ('share/' + package_name + '/examples', glob('examples/*.yaml')),
    ],
    install_requires=['setuptools', 'numpy', 'scipy', 'numba', 'pyyaml'],
    # the simulator's arms with joints (dual_arm_joints): requirements-sim.txt
    extras_require={'sim': ['pin==4.1.0', 'example-robot-data==6.0.0']},
    zip_safe=False,  # numba keeps its compiled kernels next to the modules
    maintainer='wrench_distribution developers',
    maintainer_email='wrench-distribution@users.noreply.github.com',
    description=(
        'Load distribution and internal-load analysis for a rigid object held by '
        'several effectors (Flight and Gosselin 2026).'
    ),
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'wrench-distribution = wrench_distribution.cli:main',
            'distributor = wrench_distribution.entry:distributor',
            'analyzer = wrench_distribution.entry:analyzer',
            'cell = wrench_distribution.entry:cell',
            'object-sim = wrench_distribution.entry:object_sim',
            'object-controller = wrench_distribution.entry:object_controller',
            'baseline-distributor = wrench_distribution.entry:baseline_distributor',
        ],
    },
)
