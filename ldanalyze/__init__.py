"""ldanalyze: offline, trace-driven analysis of end-to-end loss differentiation algorithms."""
