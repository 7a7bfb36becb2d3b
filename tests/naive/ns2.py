"""Plain twins of ldanalyze/io/ns2: the wired ground-truth rule and the wireless (CMU) reader."""

from __future__ import annotations

import math
import re

from . import twin_of


@twin_of(
    "ldanalyze.io.ns2.wired.scan_rows", "ldanalyze.io.ns2.wired.first_sightings", "ldanalyze.io.ns2.wired.walk_events"
)
def wired_labels(lines, data_types=("tcpFriend", "cbr", "udp", "tcp", "exp"), error_events=("e",)):
    """The ns-2 wired ground-truth rule, one line at a time.

    Returns {uid: (fate, reason, t_send, t_recv)} with fate delivered/congestion/wireless/
    lost/None (None: neither received nor dropped; the flow-level rule decides later).
    """
    packets = {}
    for line in lines:
        f = line.split()
        if not f:
            continue
        ev, t, frm, to, ptype = f[0], float(f[1]), int(f[2]), int(f[3]), f[4]
        src_node, dst_node, uid = int(f[8].split(".")[0]), int(f[9].split(".")[0]), int(f[11])
        if ptype not in data_types:
            continue
        p = packets.setdefault(uid, {"last": None, "fate": None, "reason": "", "t_send": None, "t_recv": None})
        if p["t_send"] is None and frm == src_node:
            p["t_send"] = t
        if ev == "r" and to == dst_node and p["t_recv"] is None:
            p["t_recv"] = t
        if ev == "d" or ev in error_events:
            last = p["last"]
            if ev in error_events:
                p["fate"], p["reason"] = "wireless", "error-event"
            elif last is None or (last[1], last[2]) != (frm, to):
                p["fate"], p["reason"] = "wireless", "ingress-error"
            elif last[0] == "+":
                p["fate"], p["reason"] = "congestion", "queue"
            elif last[0] == "-":
                p["fate"], p["reason"] = "wireless", "link-error"
            else:
                p["fate"], p["reason"] = "lost", "after-receive"
            if p["t_send"] is None:
                p["t_send"] = t
        p["last"] = (ev, frm, to)
    out = {}
    for uid, p in packets.items():
        if p["t_recv"] is not None:
            out[uid] = ("delivered", "", p["t_send"], p["t_recv"])
        else:
            out[uid] = (p["fate"], p["reason"], p["t_send"], math.nan)
    return out


# ---------------------------------------------------------------------------------------------
# --- ns-2 wireless: the plain twin of ldanalyze/io/ns2/cmu_scan.py + wireless.py's assembly ---
# One line at a time, fields split on white space (the rules: wireless.py's docstring).
# ---------------------------------------------------------------------------------------------

CMU_TAGGED_EVENTS = {"+": "s", "h": "f", "r": "r", "d": "D"}


def _cmu_int(text):
    """A signed decimal integer of at most 18 digits (ASCII only), as the scanner reads it."""
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
        raise ValueError(text)
    return int(text)


def _cmu_float(text):
    if not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text):
        raise ValueError(text)
    return float(text)


def _cmu_format(f):
    """io/detect.py's line_format, restated."""
    if len(f) < 3:
        return None
    wireless = {"s", "r", "f", "D", "d", "M", "N"}
    if f[1] == "-t" and f[0] in wireless:
        return "new"
    if f[0] in wireless and f[2].startswith("_") and f[2].endswith("_"):
        return "old"
    if f[0] in {"+", "h", "r", "d"} and f[2] == "-s" and "-k" in f[3:]:
        return "tagged"
    if f[0] in {"+", "-", "r", "d"} and len(f) == 12:
        return "wired"
    return None


def _cmu_pairs(f, first):
    """-key value pairs from token ``first`` on; a braced value spans to its closing brace;
    the first occurrence of a key wins."""
    kv, j = {}, first
    while j + 1 < len(f):
        key, value = f[j], f[j + 1]
        j += 2
        if value.startswith("{"):
            while not f[j - 1].endswith("}") and j < len(f):
                j += 1
        kv.setdefault(key, value)
    return kv


def cmu_line(text):
    """One line → "blank", None (no packet event: skipped), ("wired",), or a dict of its
    fields. Raises ValueError where a fixed field does not read."""
    f = text.split()
    if not f:
        return "blank"
    fmt = _cmu_format(f)
    if fmt == "wired":
        return ("wired",)
    packet = f[0] in {"s", "r", "f", "D", "d"} or (fmt == "tagged" and f[0] in {"+", "h"})
    if fmt is None or not packet:
        return None
    rec = {"src": None, "dst": None, "seq": None}
    if fmt == "old":
        rec["ev"] = "D" if f[0] == "d" else f[0]
        rec["time"] = _cmu_float(f[1])
        rec["node"] = _cmu_int(f[2][1:-1])
        rec["level"], rec["reason"] = f[3], f[4]
        rec["uid"], rec["ptype"], rec["size"] = _cmu_int(f[5]), f[6], _cmu_int(f[7])
        for j in range(8, len(f) - 3):
            if f[j].startswith("[") and ":" in f[j] and ":" in f[j + 1]:
                rec["src"] = f[j][1:].replace(":", ".", 1)
                rec["dst"] = f[j + 1].replace(":", ".", 1)
                if j + 4 < len(f) and f[j + 4].startswith("["):
                    rec["seq"] = f[j + 4]
                break
    elif fmt == "new":
        kv = _cmu_pairs(f, 1)
        rec["ev"] = "D" if f[0] == "d" else f[0]
        rec["time"] = _cmu_float(kv["-t"])
        node = kv.get("-Ni", kv.get("-Hs"))
        if node is None:
            raise ValueError("no node")
        rec["node"] = _cmu_int(node)
        rec["level"], rec["reason"] = kv.get("-Nl", ""), kv.get("-Nw", "---")
        rec["uid"] = _cmu_int(kv["-Ii"]) if "-Ii" in kv else -1
        rec["ptype"] = kv.get("-It", "")
        rec["size"] = _cmu_int(kv["-Il"]) if "-Il" in kv else 0
        rec["src"], rec["dst"] = kv.get("-Is"), kv.get("-Id")
        rec["seq"] = kv.get("-Pi", kv.get("-Ps"))
    else:
        kv = _cmu_pairs(f, 2)
        rec["ev"] = CMU_TAGGED_EVENTS[f[0]]
        rec["time"] = _cmu_float(f[1])
        rec["node"] = _cmu_int(kv["-s"])
        rec["level"], rec["reason"] = kv.get("-k", ""), "?"
        rec["uid"] = _cmu_int(kv["-i"]) if "-i" in kv else -1
        rec["ptype"] = kv.get("-p", "")
        rec["size"] = _cmu_int(kv["-e"]) if "-e" in kv else 0
        if "-IP:s" in kv and "-IP:d" in kv:
            try:
                src = f"{_cmu_int(kv['-IP:s'])}.{_cmu_int(kv.get('-IP:sp', '0'))}"
                dst = f"{_cmu_int(kv['-IP:d'])}.{_cmu_int(kv.get('-IP:dp', '0'))}"
                rec["src"], rec["dst"] = src, dst
            except ValueError:
                pass
        rec["seq"] = kv.get(f"-{rec['ptype']}:s", kv.get("-tcp:s"))
    return rec


def _cmu_address(text):
    """'node.port' → the same text with its parts as integers, or None."""
    try:
        node, port = text.lstrip("[").split(".", 1)
        return f"{_cmu_int(node)}.{_cmu_int(port)}"
    except ValueError:
        return None


def _cmu_seq(text):
    try:
        return _cmu_int(text.strip("[").rstrip("]")) if text is not None else None
    except ValueError:
        return None


@twin_of("ldanalyze.io.ns2.cmu_scan.scan")
def read_ns2_wireless_naive(lines, data_types, feedback_types, causes, end_time=None):
    """The wireless reader, plainly: returns (rows, skipped, feedback) where rows is one dict
    per data packet sent (uid, flow, seq, size, t_send, t_recv, t_drop, fate before the
    flow-level 'vanished' rule, reason), or raises ValueError("line N: ...")."""
    sends, recvs, drops, feedback, skipped = {}, {}, {}, [], {}
    last_time = None
    for number, text in enumerate(lines, 1):
        try:
            rec = cmu_line(text)
        except (ValueError, KeyError, IndexError) as exc:
            raise ValueError(f"line {number}: malformed ({exc})") from None
        if rec == "blank":
            continue
        if rec is None:
            word = text.split()[0][:14]
            skipped[word] = skipped.get(word, 0) + 1
            continue
        if rec == ("wired",):
            raise ValueError(f"line {number}: wired")
        if not math.isfinite(rec["time"]):
            raise ValueError(f"line {number}: time")
        last_time = rec["time"] if last_time is None else max(last_time, rec["time"])
        data = rec["ptype"] in data_types
        if rec["ev"] == "D":
            if data:
                before = drops.get(rec["uid"])
                echo = (
                    before is not None
                    and (rec["level"], rec["reason"]) == ("RTR", "CBK")
                    and before[1:] == ("MAC", "RET")
                    and before[0] == rec["time"]
                )
                if not echo:
                    drops[rec["uid"]] = (rec["time"], rec["level"], rec["reason"])
            continue
        if rec["level"] != "AGT" or rec["ev"] not in ("s", "r"):
            continue
        src = _cmu_address(rec["src"]) if rec["src"] is not None else None
        dst = _cmu_address(rec["dst"]) if rec["dst"] is not None else None
        seq = _cmu_seq(rec["seq"])
        if data:
            if src is None or dst is None or seq is None:
                raise ValueError(f"line {number}: address or seq")
            if rec["ev"] == "s" and rec["uid"] not in sends:
                sends[rec["uid"]] = (rec["time"], src, dst, seq, rec["size"])
            elif rec["ev"] == "r" and rec["uid"] not in recvs and int(dst.split(".")[0]) == rec["node"]:
                recvs[rec["uid"]] = rec["time"]
        elif rec["ptype"] in feedback_types and rec["ev"] == "r" and src and dst and seq is not None:
            if int(dst.split(".")[0]) == rec["node"]:
                feedback.append((rec["time"], src, dst, seq))
    if end_time is None:
        counts = {}
        for t, level, why in drops.values():
            if level == "IFQ" and why == "?":
                counts[t] = counts.get(t, 0) + 1
        flushes = [t for t, n in counts.items() if n >= 2]
        end_time = max(flushes) if flushes and max(flushes) >= last_time - 1.0 else math.inf
    rows = []
    for uid, (t, src, dst, seq, size) in sends.items():
        row = {
            "uid": uid,
            "flow": f"{src}>{dst}",
            "seq": seq,
            "size": size,
            "t_send": t,
            "t_recv": recvs.get(uid, math.nan),
            "t_drop": math.nan,
            "fate": "unobserved",
            "reason": "",
        }
        if uid in recvs:
            row["fate"] = "delivered"
        elif uid in drops:
            t_drop, level, why = drops[uid]
            row["t_drop"], row["reason"] = t_drop, f"{level} {why}"
            flushed = why == "END" or (why == "?" and level == "IFQ" and t_drop >= end_time)
            row["fate"] = "unobserved" if flushed else causes.get(f"{level} {why}", "lost")
        rows.append(row)
    return rows, skipped, feedback
