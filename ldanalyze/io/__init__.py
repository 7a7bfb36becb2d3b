"""Readers: one module per trace format, all returning a :class:`~ldanalyze.packets.Trace`."""
