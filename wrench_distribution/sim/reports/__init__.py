"""The demo's reports, read from a run's bag and files (no ROS).

- :mod:`.series`: a bag read into time series;
- :mod:`.summary`: tracking, internal load and resultant of a run;
- :mod:`.friction`: slip and friction use, and two runs side by side;
- :mod:`.elements`: the internal load per basis element, judged on the simulator's truth;
- :mod:`.sensitivity`: which belief parameter limits which element;
- :mod:`.real_cell`: the real cell's procedure, tare and calibration, in one table.
"""
