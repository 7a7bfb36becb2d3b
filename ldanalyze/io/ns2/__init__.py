"""ns-2 traces: the wired trace-all format (``wired``) and the CMU wireless formats (``wireless``)."""

import dataclasses

import numpy as np
import pandas as pd

from ...errors import UsageError
from ...packets import Trace, label_positions, natural_sorted

# The latest time a trace can hold: past 2**52 microseconds (143 years) a float64 no longer
# resolves the microseconds ns-2 prints, so a later time is damage (a digit lost, a field
# shifted), not a run; left in, it gave delays of 1e23 ms, or overflowed to infinity.
LAST_TIME_S = 2.0**52 * 1e-6
TIME_RANGE = "a number of seconds from 0 to 4.5e9 (no ns-2 run gets further)"

# ns-2's on/off traffic generators (Traffic/Expoo, Traffic/Pareto): the traffic scripts add
# around the flows under study (paper000.tcl's warm-up and cross traffic), not a transport's data.
BACKGROUND_TYPES = frozenset({"exp", "pareto"})


def types_per_flow(flow, types: np.ndarray, names) -> dict[str, set[str]]:
    """Each flow's packet types: ``flow`` the packets' labels (a Categorical or strings),
    ``types`` their codes into ``names`` (distinct pairs found on integers, not per packet)."""
    codes, labels = pd.factorize(flow)
    pairs = np.unique(codes.astype(np.int64) * len(names) + np.asarray(types, np.int64))
    found: dict[str, set[str]] = {str(label): set() for label in labels}
    for pair in pairs.tolist():
        found[str(labels[pair // len(names)])].add(str(names[pair % len(names)]))
    return found


def background_flows(flow_types: dict[str, set[str]] | dict[str, list[str]]) -> list[str]:
    """The flows of background traffic (every packet of one of ``BACKGROUND_TYPES``), when some
    other flow is there to study; none otherwise."""
    background = [label for label, kinds in flow_types.items() if set(kinds) <= BACKGROUND_TYPES]
    return background if len(background) < len(flow_types) else []


def select_flows(trace: Trace, flow_types: dict[str, set[str]], flows=None) -> Trace:
    """``trace`` with the flows under study, the rest recorded in ``meta['unscored_flows']``
    (label → why). ``flows`` None leaves out the background flows (every packet of one of
    ``BACKGROUND_TYPES``) when some other flow remains: a "1flow" trace scores its one flow,
    not the cross traffic that shares its link. ``"all"`` keeps every flow; a list keeps the
    flows it names, a fid standing for every flow ``fid:src>dst`` of that fid."""
    labels = natural_sorted(flow_types)
    meta = {**trace.meta, "flow_types": {label: sorted(flow_types[label]) for label in labels}}
    wanted = [flows] if isinstance(flows, str) else flows
    if wanted == ["all"]:
        return dataclasses.replace(trace, meta={**meta, "unscored_flows": {}})
    if wanted is None:
        background = background_flows(flow_types)
        keep = [label for label in labels if label not in background]
        why = {
            label: f"background traffic: {', '.join(sorted(flow_types[label]))}"
            for label in labels
            if label not in keep
        }
    else:
        keep = []
        for name in wanted:
            matched = [label for label in labels if label == name or label.startswith(f"{name}:")]
            if not matched:
                shown = ", ".join(labels[:8]) + (" ..." if len(labels) > 8 else "")
                raise UsageError(f"{trace.path} has no flow {name!r} (flows: {shown}; 'all' for every one)")
            keep += [label for label in matched if label not in keep]
        why = {label: "not in --flows" for label in labels if label not in keep}
    meta["unscored_flows"] = why
    if not why:
        return dataclasses.replace(trace, meta=meta)
    kept = label_positions(trace.packets["flow"], keep) >= 0
    packets = trace.packets[kept].reset_index(drop=True)
    packets["flow"] = packets["flow"].cat.remove_unused_categories()
    rtt = trace.rtt[label_positions(trace.rtt["flow"], keep) >= 0].reset_index(drop=True)
    acks = trace.acks[label_positions(trace.acks["flow"], keep) >= 0].reset_index(drop=True)
    return dataclasses.replace(trace, packets=packets, rtt=rtt, acks=acks, meta=meta)
