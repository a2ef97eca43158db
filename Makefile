# The two commands a newcomer needs:  make demo   and   make test
# Both create .venv and install everything from the package registry first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Keep DDS discovery on the loopback interface for every ROS process started from here.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_LOCALHOST_ONLY := 1
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export MPLBACKEND := Agg

.PHONY: venv test test-core demo bench clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-ros.txt requirements-test.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-ros.txt -r requirements-test.txt
	$(PY) -m pip install --quiet setuptools wheel
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

test: $(STAMP)
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-57} $(PY) -m pytest -q test

test-core: $(STAMP)
	$(PY) -m pytest -q test -m "not ros"

demo: $(STAMP)
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario three_finger_hand --friction compare --duration 3
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_admittance --internal-load-feedback off --summary-json demo_output/dual_arm_admittance_open_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_admittance --internal-load-feedback on --summary-json demo_output/dual_arm_admittance_closed_loop.json

bench: $(STAMP)
	$(PY) benchmarks/bench_core.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
