"""Every numba kernel of the package has a plain twin in tests/naive (registered there with
``@twin_of``) or a reason in ``NO_TWIN`` below; and every name either one gives exists."""

from __future__ import annotations

import importlib
import pkgutil

from numba.core.dispatcher import Dispatcher

import ldanalyze

from . import naive


def _inside(callers: str, twin: str, *kernels: str) -> dict[str, str]:
    """Helpers that only other kernels call: their callers' twin covers them."""
    return dict.fromkeys(kernels, f"called only inside {callers}; covered by naive.{twin}")


_CONTROL = "ldanalyze.control."
_CAPTURE = "ldanalyze.io.capture."
_CMU = "ldanalyze.io.ns2.cmu_scan."
NO_TWIN: dict[str, str] = {
    **_inside("ldaplus_kernel", "control.controller_ldaplus", _CONTROL + "ldaplus.pftk"),
    **_inside(
        "tfrc_kernel",
        "control.controller_tfrc",
        *(_CONTROL + "tfrc." + k for k in ("throughput_equation", "loss_rate_for", "mean_loss_interval")),
    ),
    **_inside(
        "westwood_kernel",
        "control.controller_westwood",
        *(_CONTROL + "westwood." + k for k in ("abse_interval", "ere_alpha", "first_after")),
    ),
    **_inside(
        "newreno_kernel and westwood_kernel",
        "control.controller_newreno and controller_westwood",
        *(_CONTROL + "window." + k for k in ("reno_growth", "starts_reduction", "timed_out")),
    ),
    **_inside(
        "xrtp_kernel",
        "control.controller_xrtp",
        *(_CONTROL + "xrtp." + k for k in ("kde_estimate", "kde_push", "triangle")),
    ),
    _CONTROL + "ldaplus.held_state": "LDA+'s state columns, computed on demand: checked by hand in "
    "tests/control/test_control_ldaplus.py (the rates: naive.control.controller_ldaplus)",
    **_inside(
        "decode_frame and the walks",
        "capture.capture_records",
        *(
            _CAPTURE + "linklayer." + k
            for k in ("network_start", "ethertype_kind", "_radiotap_flags", "_skip_vlan_tags")
        ),
        *(_CAPTURE + "linklayer." + k for k in ("ethernet", "wifi_sequence", "mac_sequence_space", "u48le")),
        *(_CAPTURE + "record." + k for k in ("intern_flow", "flow_slot_hash", "mix64", "u16", "u16be", "u16le", "u32")),
        *(_CAPTURE + "record." + k for k in ("u32be", "u32le", "u64be", "u64le")),
        *(_CAPTURE + "tunnels." + k for k in ("may_tunnel", "tunnel_inner", "_erspan")),
        _CAPTURE + "frame._ip_header",
        *(_CAPTURE + "walk." + k for k in ("_no_room", "_start_record", "ticks_to_ns")),
    ),
    _CAPTURE + "record.rehash_flows": "rebuilds the flow table's slots once a capture passes 512 flows (the tunnel "
    "table's past 12 tunnels; walk.Output.grow_flows); the flows read after it are held to "
    "naive.capture.capture_records",
    "ldanalyze.lda.learned.trees.gbt_decision": "checked against scikit-learn's own decision_function and predict "
    "(tests/lda/test_learned.py)",
    **_inside(
        "pace_state and policed_gaps",
        "lda.learned_features and lda.policed_gaps (statistics.median)",
        "ldanalyze.lda.kernels.small_median",
        "ldanalyze.lda.kernels.network_size",
    ),
    **_inside("sender_kernel", "tcp_sender.sender_kernel_naive", _CAPTURE + "tcp_sender_kernel._first_open"),
    "ldanalyze.io.capture.flows.flow_extents": "checked against pandas' groupby (tests/io/capture/test_pcap_read.py)",
    "ldanalyze.io.capture.flows._rows_by_flow": "checked against a stable argsort (tests/io/capture/test_pcap_payload.py)",
    **_inside(
        "extension_counts and extension_values", "rtp.rtp_extension_values_naive", "ldanalyze.io.capture.rtp._elements"
    ),
    **_inside(
        "scan",
        "ns2.read_ns2_wireless_naive",
        *(_CMU + k for k in ("_tokens", "_is_space", "_type_code", "_int", "_float", "_address", "_seq_token")),
        *(_CMU + k for k in ("_equals", "_pack")),
    ),
}


def _kernels() -> set[str]:
    """The qualified names of the numba kernels defined in the package's modules."""
    found = set()
    for info in pkgutil.walk_packages(ldanalyze.__path__, "ldanalyze."):
        if info.name.rpartition(".")[2] == "__main__":
            continue  # runs the command line
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__:
                found.add(f"{module.__name__}.{obj.py_func.__name__}")
    return found


def _twins() -> dict[str, list[str]]:
    """The registry, with every module of tests/naive imported."""
    for info in pkgutil.iter_modules(naive.__path__):
        importlib.import_module(f"{naive.__name__}.{info.name}")
    return naive.TWINS


def _exists(name: str) -> bool:
    """Whether ``name`` (a module's attribute, possibly nested: ``module.Class.method``) exists."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj is not None
    return False


def test_every_kernel_has_a_twin_or_a_reason():
    missing = _kernels() - set(_twins()) - set(NO_TWIN)
    assert not missing, "kernels with no @twin_of in tests/naive and no NO_TWIN reason: " + ", ".join(sorted(missing))


def test_the_registry_names_only_what_exists():
    twins, kernels = _twins(), _kernels()
    stale = sorted(name for name in twins if not _exists(name))
    assert not stale, f"@twin_of names what ldanalyze does not have: {stale} (twins: {[twins[s] for s in stale]})"
    stale = sorted(set(NO_TWIN) - kernels)
    assert not stale, f"NO_TWIN names what is not a kernel of ldanalyze: {stale}"
    both = sorted(set(NO_TWIN) & set(twins))
    assert not both, f"kernels with a twin that NO_TWIN says have none: {both}"
