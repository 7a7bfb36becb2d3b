"""ns-2 traces: the wired trace-all format (``wired``) and the CMU wireless formats (``wireless``)."""

# The latest time a trace can hold: past 2**52 microseconds (143 years) a float64 no longer
# resolves the microseconds ns-2 prints, so a later time is damage (a digit lost, a field
# shifted), not a run; left in, it gave delays of 1e23 ms, or overflowed to infinity.
LAST_TIME_S = 2.0**52 * 1e-6
TIME_RANGE = "a number of seconds from 0 to 4.5e9 (no ns-2 run gets further)"
