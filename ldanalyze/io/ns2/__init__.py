"""ns-2 traces: the wired trace-all format (``wired``) and the CMU wireless formats (``wireless``)."""
