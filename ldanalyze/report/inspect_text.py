"""What ``inspect`` prints: a trace's or capture's flows, the streams a capture's payloads were
read as (and where their send times came from), the vantages along a path, the clock fits, and
the timeline summary; or all of it as JSON. The command reads; how it reads lives here."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pandas as pd

from .. import formatting
from ..formatting import MAIN_SUMMARY_COLUMNS, summary_shown
from ..io.capture.sequences import reasons_in_brief
from ..io.detect import PCAP, PCAPNG
from ..io.ns2 import background_flows
from ..output import json_default, table_records

CAPTURE_FLOWS_SHOWN = 20

# Past this, a fitted offset is the distance between the origins of two unrelated clocks (an
# RTP timestamp's random start against the capture's epoch), not a delay worth showing.
OFFSET_SHOWN_BELOW_S = 3600.0


@dataclasses.dataclass
class Inspected:
    """What ``inspect`` reports of a trace, read whole or gathered flow by flow."""

    path: str
    format: str
    meta: dict
    packets: int  # data packets (PacketTable rows)
    routes: int  # losses to routing and mobility
    rtt: pd.DataFrame
    summary: pd.DataFrame  # Timeline.summary
    # per flow read in the sender's view, its own evidence (sender_evidence.sender_evidence)
    evidence: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)


def inspect_json(seen: Inspected) -> str:
    """``inspect --json``: the trace's meta, its RTT sample count and the flows' summary."""
    payload = {
        "trace": seen.path,
        "format": seen.format,
        "meta": seen.meta,
        "rtt_samples": int(len(seen.rtt)),
        "flows": table_records(seen.summary),
        **({"sender_evidence": table_records(seen.evidence.reset_index())} if len(seen.evidence) else {}),
    }
    return json.dumps(payload, indent=2, default=json_default) + "\n"


def is_capture(seen: Inspected) -> bool:
    """Whether ``seen`` is a capture (its text lists the capture's flows, ``capture_flows``)."""
    return seen.format in (PCAP, PCAPNG)


def inspect_text(seen: Inspected, capture_flows: list | None, verbose: bool) -> str:
    """``inspect``'s text: a capture's flows (``capture_flows``: ``io.list_flows``'s records)
    and streams or a trace's background traffic, then the vantages, clock fits, labels, skipped
    lines and RTT samples the trace holds, then the summary per flow (its main columns, or all
    with ``verbose``)."""
    summary = seen.summary
    out = []
    if is_capture(seen):
        flows = pd.DataFrame(capture_flows)
        out.append(
            f"{seen.path}: {seen.format}, {len(flows)} flow(s) in the capture, {len(summary)} read as sequenced "
            f"flows or streams ({seen.packets} data packets)"
        )
        shown = flows if verbose else flows.head(CAPTURE_FLOWS_SHOWN)
        out.append("\nflows in the capture (5-tuple and direction; first and last: UTC):")
        out.append(formatting.text(shown, utc=("first", "last")))
        if len(shown) < len(flows):
            out.append(f"... and {len(flows) - len(shown)} more (inspect -v lists them all)")
        out += streams_lines(seen.meta)
    else:
        out.append(f"{seen.path}: {seen.format}, {len(summary)} flow(s), {seen.packets} data packets")
        out += _background_lines(seen.meta, set(summary["flow"].astype(str)))
    out += _vantage_lines(seen.meta)
    if "clock_fit" in seen.meta:
        removed = "skew and offset" if seen.meta.get("offset_removed") else "skew"
        out.append(
            f"\nclock {removed} fitted per pair of clocks (lower envelope) and removed from the receive times "
            "where the status says applied:"
        )
        out.append(clock_fit_text(seen.meta["clock_fit"]))
    if "radio" in seen.meta:  # a receiver's monitor-mode capture: its retries and unseen numbers
        out.append(f"\n{seen.meta['radio']}")
    out += _trace_notes(seen)
    out += sender_evidence_lines(seen.evidence)
    out.append("")
    columns = list(summary.columns) if verbose else [c for c in MAIN_SUMMARY_COLUMNS if c in summary.columns]
    out.append(summary_shown(summary[columns]).to_string(index=False))
    if len(seen.evidence):
        out.append(
            "(flows read in the sender's view: gaps are the moments it detected losses, rott its RTT less "
            "the lowest, iat the time between ACK samples)"
        )
    if not verbose:
        out.append(
            "(the main columns; inspect -v shows all, with ROTT and IAT mean, p50, p95 and max, "
            "reordered and duplicates; --json everything)"
        )
    return "\n".join(out) + "\n"


def sender_evidence_lines(evidence: pd.DataFrame) -> list:
    """The sender's own evidence per flow read in its view: retransmissions by trigger, the
    spurious ones, the real losses, RTT and delivery rate (what it knows without any truth)."""
    if evidence.empty:
        return []
    shown = evidence.copy()
    shown["loss_rate"] = shown["loss_rate"].map(formatting.percent)
    return [
        "\nthe sender's own evidence (flows read in the sender's view: retransmissions by what triggered "
        "them, declared losses shown spurious and by what evidence, real losses; RTT in ms, delivery rate "
        "in Mbit/s, 10th/50th/90th percentiles):",
        shown.round(2).reset_index().to_string(index=False),
    ]


def _background_lines(meta: dict, shown: set) -> list:
    """An ns-2 trace's background flows among those ``shown``, which the scoring commands leave out."""
    background = [label for label in background_flows(meta.get("flow_types", {})) if label in shown]
    if not background:
        return []
    types = sorted({kind for label in background for kind in meta["flow_types"][label]})
    return [
        f"background traffic ({', '.join(types)}), which score, sweep and batch leave out unless "
        f"--flows names it (or all): {', '.join(background)}"
    ]


def _vantage_lines(meta: dict) -> list:
    """The captures along a path: each one's clock fit against the sender's, and the losses per segment."""
    if "vantages" not in meta:
        return []
    vantages = pd.DataFrame(meta["vantages"])
    vantages["offset_ms"] = vantages["offset_s"] * 1e3
    columns = ["path", "cause", "records", "matched", "unmatched", "missed", "offset_ms", "skew_ppm", "skew_status"]
    segments = pd.DataFrame(meta["segments"])
    if not segments["cause_unknown"].any():  # only an air vantage leaves losses without a cause
        segments = segments.drop(columns="cause_unknown")
    return [
        "\ncaptures along the path (clock fit against the sender's: minimal delay and skew):",
        vantages[columns].round(3).to_string(index=False),
        "\nlosses per segment:",
        segments.to_string(index=False),
    ]


def _trace_notes(seen: Inspected) -> list:
    """The labels read, the lines skipped, the route losses, the packet types ignored and the RTT samples."""
    meta, out = seen.meta, []
    if "labels" in meta:
        out.append("\nlabels: " + ", ".join(f"{k} {v}" for k, v in meta["labels"].items()))
    skipped = meta.get("skipped_lines")
    if skipped:
        out.append("lines that are no packet event, skipped: " + ", ".join(f"{k} ({v})" for k, v in skipped.items()))
    if seen.routes:
        out.append("route: losses to routing and mobility; `score` leaves them out of M_c/M_w (see --route-as)")
    ignored = meta.get("ignored_types")
    if ignored:
        out.append("ignored packet types: " + ", ".join(f"{k} ({v})" for k, v in ignored.items()))
    if len(seen.rtt):
        rtt = seen.rtt.groupby("flow")["rtt"].agg(["size", "mean", "min"])
        out.append(
            "RTT samples from feedback: "
            + ", ".join(
                f"flow {f}: {int(r['size'])} (mean {r['mean'] * 1e3:.1f} ms, min {r['min'] * 1e3:.1f} ms)"
                for f, r in rtt.iterrows()
            )
        )
    return out


def send_time_source(info: dict) -> str:
    """Where a capture stream's send times came from, in words."""
    kind = info.get("kind", "")
    if info.get("send_time") == "abs-send-time":
        return f"abs-send-time header extension (id {info['abs_send_time_id']})"
    if kind == "rtp":
        frames = ", per frame" if "frames" in info else ""
        refused = (
            f"; sender reports refused: {info['sender_report_refused']}" if "sender_report_refused" in info else ""
        )
        envelope = (
            f"; its lower envelope read {info['clock_envelope_rate']:,.0f} Hz" if "clock_envelope_rate" in info else ""
        )
        disagrees = "; the stream's clock disagrees, see the warning" if "clock_given_disagrees" in info else ""
        return (
            f"RTP timestamp at {info.get('clock_rate', float('nan')):g} Hz "
            f"({info.get('clock_source', '?')}{refused}{envelope}{disagrees}){frames}"
        )
    if kind == "tcp":
        return f"TCP TSval at {info.get('clock_rate', float('nan')):g} Hz ({info.get('clock_source', '?')})"
    if kind.startswith(("iperf3", "iperf2")):
        return f"{kind} payload (sender's wall clock)"
    return {"order": "sender's capture time", "vantage": "sender's capture time"}.get(kind, f"{kind} payload")


def streams_lines(meta: dict) -> list:
    """A capture's tunnels opened, its capture host, the streams read (kind, direction, counts,
    send time source), the noise SSRCs and the streams skipped, a printed line each."""
    rows = []
    for label, info in meta.get("flows", {}).items():
        at_sender = info.get("view") == "sender"
        out = info.get("outgoing", False) and not at_sender
        rows.append(
            {
                "stream": label,
                "kind": info.get("kind", ""),
                "direction": "out" if out or at_sender else "in",
                "view": "sender" if at_sender else "-" if out else "receiver",
                "packets": info.get("packets", 0),
                "lost": "-" if out else info.get("lost", 0),
                **({"capture gap": "-" if out else info.get("capture_gap", 0)} if meta.get("capture_outages") else {}),
                "rtx repaired": info.get("rtx_repaired", 0),
                "padding only": info.get("padding_only", 0),
                "fec": info.get("fec_packets", 0),
                "send times from": "- (sent by the capture host)"
                if out
                else "the capture (the sender's clock)"
                if at_sender
                else send_time_source(info),
            }
        )
    lines = []
    records = meta.get("records", {})
    opened = records.get("tunnels")
    if opened or records.get("tunnel_other") or records.get("tunnel_too_deep"):
        kinds = ", ".join(f"{kind} {n}" for kind, n in opened.items()) or "none"
        lines.append(
            f"\ntunnels opened (packets by kind): {kinds}; not opened: {records.get('tunnel_other', 0)} "
            f"(signalling, other protocols), {records.get('tunnel_too_deep', 0)} deeper than 4 tunnels"
        )
    host = meta.get("capture_host")
    if host:
        lines.append(f"\ncapture host: {host['address'] or 'not known'} ({host['how']})")
    if rows:
        lines.append(
            "\nstreams read (send times from the best source each carries; view: sender, a flow the capture "
            "host sent whose ACKs it captured, read as its sender saw it; out without a view: sent by the "
            "capture host, captured before the path, so its fates are unknown here):"
        )
        lines.append(pd.DataFrame(rows).to_string(index=False))
    noise = sum(info.get("noise_ssrcs", 0) for info in meta.get("flows", {}).values())
    if noise:
        lines.append(f"noise: {noise} one- or two-packet SSRCs (packets that only look like RTP)")
    for label, why in meta.get("skipped_streams", {}).items():
        lines.append(f"skipped stream {label}: {why}")
    return lines


def clock_fit_text(fit: pd.DataFrame) -> str:
    """The clock fits as ``inspect`` prints them: skew and its uncertainty in ppm with one
    decimal, the flow's and its pair's samples (the skew rests on the pair's), the offset in ms
    where the two clocks share an origin, and whether each fit was applied."""
    if not len(fit):
        return "  (none: no flow read here has send times on another host's clock)"
    fit = fit.copy()
    columns = {
        "flow": "flow",
        "skew_ppm": "skew ppm",
        "uncertainty_ppm": "± ppm",
        "samples": "samples",
        "pair_samples": "pair samples",
    }
    if fit["reverse_samples"].any():  # both directions (Paxson): each one's own fit
        columns.update(forward_ppm="forward ppm", reverse_ppm="reverse ppm", reverse_samples="reverse samples")
    shared_origin = fit["offset_s"].abs() < OFFSET_SHOWN_BELOW_S
    fit["offset_ms"] = (fit["offset_s"] * 1e3).where(shared_origin)
    columns["offset_ms"] = "offset ms"
    note = (
        ""
        if shared_origin.all()
        else "\n  (offset -: the flow's send times count from an origin of their own, "
        "as an RTP timestamp or a TCP TSval does)"
    )
    columns["status"] = "status"
    decimals = dict.fromkeys(("skew_ppm", "uncertainty_ppm", "forward_ppm", "reverse_ppm", "offset_ms"), 1)
    table = formatting.shown(fit[list(columns)], fixed=decimals).rename(columns=columns)
    return table.to_string(index=False) + note


# -- a capture whose flows carry no sequence numbers -------------------------------------------
# where the decoder stopped on a record (``record.STATUS_NAMES``), in words
STATUS_WORDS = {
    "too_short": "cut before its headers",
    "not_ip": "not IP",
    "ip_fragment": "IP fragment (no transport header)",
    "wifi_protected": "protected (encrypted)",
    "wifi_not_data": "no data (null data frames)",
    "bad_fcs": "bad FCS",
    "unsupported_link": "link type not read",
    "malformed": "malformed",
}
REASON_WORDS = {"wifi_not_data": "802.11 frames without data (management, control, null data)"}
# how to decrypt protected 802.11 frames into a capture ldanalyze reads (raw IP packets)
DECRYPT_COMMAND = (
    "tshark -r {path} -2 -o wlan.enable_decryption:TRUE "
    '-o \'uat:80211_keys:"wpa-pwd","PASSPHRASE:SSID"\' -U IP -w decrypted.pcapng'
)


def described_json(path: str, description: dict) -> str:
    """``inspect --json`` of a capture without sequence numbers: its description
    (``io.capture.describe.capture_description``), the reasons, and no flow."""
    payload = {
        "trace": path,
        "format": description["format"],
        "flows": [],
        "rtt_samples": 0,
        "description": description,
        "why": unreadable_reasons(path, description),
    }
    return json.dumps(payload, indent=2, default=json_default) + "\n"


def described_text(path: str, description: dict) -> str:
    """``inspect`` of a capture whose flows carry no sequence numbers: what it holds (records,
    link types, time span, snap length and records cut, 802.11 frames, the protocol hierarchy),
    then why nothing carries sequence numbers."""
    d = description
    span = ""
    if d["first"] is not None:
        ends = formatting.shown(pd.DataFrame({"first": [d["first"]], "last": [d["last"]]}), utc=("first", "last"))
        span = f" over {d['seconds']:.2f} s ({ends['first'].iat[0]} to {ends['last'].iat[0]} UTC)"
    out = [
        f"{path}: {d['format']}, {d['records']} records{span}, {d['flows']} flow(s); "
        "none carries sequence numbers, so there is nothing to score (why: below)",
        "\nlink types (snap length: the capture's limit per record, in bytes; cut: records shorter than their frame):",
        pd.DataFrame(d["links"]).drop(columns="iface").to_string(index=False),
    ]
    if d["cut"]:
        out.append(f"{d['cut']} record(s) cut by the snap length, to at most {d['cut_to']} bytes")
    wifi = d["wifi"]
    if wifi:
        kinds = ", ".join(
            f"{n} {kind.removeprefix('802.11 ')}" for kind, n in wifi.items() if kind != "protected" and n
        )
        out.append(f"\n802.11 frames: {kinds}; {wifi['protected']} protected (encrypted)")
    out.append("\nprotocols (records per layer, as tshark -z io,phs counts frames):")
    width = max((2 * len(row["layers"]) + len(_layer_name(row["layers"][-1])) for row in d["protocols"]), default=0)
    for row in d["protocols"]:
        name = "  " * (len(row["layers"]) - 1) + _layer_name(row["layers"][-1])
        out.append(f"  {name:<{width}} {row['records']:>8}")
    out.append("\nwhy no flow carries sequence numbers:")
    out += [f"  {why}" for why in unreadable_reasons(path, d)]
    return "\n".join(out) + "\n"


def _layer_name(layer: str) -> str:
    """A layer of the hierarchy as shown: a protocol's name, or where the decoder stopped in words."""
    return STATUS_WORDS.get(layer, layer)


def unreadable_reasons(path: str, description: dict) -> list:
    """Why no flow of a described capture carries sequence numbers, a sentence each: protected
    802.11 frames (and how to decrypt them), records cut before their headers, frames that are
    no IP packet, and each flow's own reason."""
    d, out = description, []
    protected = (d["wifi"] or {}).get("protected", 0)
    if protected:
        out.append(
            f"{protected} of {d['records']} records are protected (encrypted) 802.11 frames: decrypt them with "
            f"the network's passphrase and read the result: {DECRYPT_COMMAND.format(path=shlex.quote(path))}"
        )
    short = d["decode"].get("too_short", 0)
    if short:
        out.append(f"{short} record(s) cut before the headers a flow needs (snap length {d['cut_to']} bytes)")
    others = {name: n for name, n in d["decode"].items() if name not in ("too_short", "wifi_protected")}
    if others:
        out.append(
            "records without an IP flow: "
            + ", ".join(f"{REASON_WORDS.get(k, STATUS_WORDS.get(k, k))} {n}" for k, n in others.items())
        )
    if d["flows"]:
        out.append(f"{d['flows']} flow(s), none with sequence numbers: {reasons_in_brief(d['skipped_flows'])}")
        out.append(
            "if its packets carry a sequence number and a send time in a layout of their own, say where: "
            "--field seq=OFF:W,time=OFF:W:UNITS (docs/captures.md)"
        )
    else:
        out.append("no record decoded into a flow (an IP packet with its transport header)")
    return out
