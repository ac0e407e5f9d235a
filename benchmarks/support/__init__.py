"""What the benchmarks share (and the tests import from here too): local servers started the way the
product starts them. Not a benchmark itself: `tests/test_benchmarks.py` runs only `benchmarks/*.py`."""

SMOKE_HELP = "seconds, not minutes: that it runs and prints its figures (tests/test_benchmarks.py); not the figures"
# The exit status of a benchmark that cannot run here (a system tool or server missing; it says which on stderr):
# automake's "skipped", which tests/test_benchmarks.py reports as a skip, not a failure.
SKIP = 77
