"""Load distribution and internal-load analysis for a rigid object held by several effectors."""
import os

# The core multiplies small matrices; multi-threaded BLAS only adds overhead there (2-3x
# slower batches on two cores). Respect a value the user set; affects this process only
# when numpy has not been imported yet (always true for the console scripts).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
