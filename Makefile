# The two commands a newcomer needs:  make demo   and   make test
# Both create their virtual environments and install from the package registry first:
#   make demo: .venv with the runtime, the ROS 2 Kilted wheels and the simulator's extra
#              (requirements-sim.txt: Pinocchio and the robot models; no bag tools, no test tools);
#   make test: adds the bag tools and the test tools to .venv, then runs the whole suite on Kilted (.venv)
#              and the ROS tests (-m ros) on ROS 2 Jazzy wheels (.venv-jazzy).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JAZZY  := .venv-jazzy
JPY    := $(JAZZY)/bin/python
DEMO_STAMP  := $(VENV)/.demo-installed
TEST_STAMP  := $(VENV)/.test-installed
JAZZY_STAMP := $(JAZZY)/.test-installed
PIP_QUIET   := --quiet --disable-pip-version-check
# Keep DDS discovery on the loopback interface for every ROS process started from here.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_LOCALHOST_ONLY := 1
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export MPLBACKEND := Agg

.PHONY: venv venv-test venv-jazzy test test-kilted test-jazzy test-core demo bench clean

venv: $(DEMO_STAMP)
venv-test: $(TEST_STAMP)
venv-jazzy: $(JAZZY_STAMP)

$(DEMO_STAMP): requirements.txt requirements-ros.txt requirements-sim.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install $(PIP_QUIET) --upgrade pip
	$(PY) -m pip install $(PIP_QUIET) -r requirements.txt -r requirements-ros.txt \
	    -r requirements-sim.txt setuptools wheel
	$(PY) -m pip install $(PIP_QUIET) --no-deps --no-build-isolation -e .
	touch $@

$(TEST_STAMP): $(DEMO_STAMP) requirements-bags.txt requirements-test.txt requirements-sim.txt
	$(PY) -m pip install $(PIP_QUIET) -r requirements-bags.txt -r requirements-test.txt \
	    -r requirements-sim.txt
	touch $@

$(JAZZY_STAMP): requirements.txt requirements-bags.txt requirements-ros-jazzy.txt requirements-test.txt requirements-sim.txt setup.py
	$(PYTHON) -m venv $(JAZZY)
	$(JPY) -m pip install $(PIP_QUIET) --upgrade pip
	$(JPY) -m pip install $(PIP_QUIET) -r requirements.txt -r requirements-bags.txt \
	    -r requirements-ros-jazzy.txt -r requirements-test.txt -r requirements-sim.txt setuptools wheel
	$(JPY) -m pip install $(PIP_QUIET) --no-deps --no-build-isolation -e .
	touch $@

# Both distributions run even when the first fails; the time of each is printed.
test: $(TEST_STAMP) $(JAZZY_STAMP)
	@status=0; \
	$(MAKE) --no-print-directory test-kilted || status=1; \
	$(MAKE) --no-print-directory test-jazzy || status=1; \
	exit $$status

test-kilted: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-57} $(PY) -m pytest -q test; status=$$?; \
	echo "ROS 2 Kilted (.venv), whole suite: $$(( $$(date +%s) - start )) s, exit $$status, load $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	exit $$status

test-jazzy: $(JAZZY_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-57} $(JPY) -m pytest -q -m ros test; status=$$?; \
	echo "ROS 2 Jazzy (.venv-jazzy), ROS tests: $$(( $$(date +%s) - start )) s, exit $$status, load $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	exit $$status

test-core: $(TEST_STAMP)
	$(PY) -m pytest -q test -m "not ros"

# The demo scenarios; add a scenario as one more line.
demo: $(DEMO_STAMP)
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario three_finger_hand --friction compare --duration 3
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_admittance --internal-load-feedback off --summary-json demo_output/dual_arm_admittance_open_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_admittance --internal-load-feedback on --summary-json demo_output/dual_arm_admittance_closed_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_joints --internal-load-feedback off --summary-json demo_output/dual_arm_joints_open_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_joints --internal-load-feedback on --summary-json demo_output/dual_arm_joints_closed_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.demo --scenario dual_arm_real_cell --tare compare --summary-json demo_output/dual_arm_real_cell_tare_compare.json

bench: $(DEMO_STAMP)
	$(PY) benchmarks/bench_core.py

clean:
	rm -rf $(VENV) $(JAZZY) build *.egg-info .pytest_cache
