"""The line scanner of the ns-2 wireless reader: one numba pass over a block of CMU trace text.

It keeps only what the reader needs: the agent-level events (``s``/``r`` at ``AGT``) and the
drops of the packet types asked for, with their fields as numbers; every other packet line is
checked (its fixed fields must read) and passed over; lines that are no packet event in any
format (movement, energy, DSR's log lines ...) are listed for the reader to count. Field
layouts per format are those of ``wireless.py``'s docstring; the plain twin is
``tests/naive/ns2.py``'s ``cmu_line`` (one line at a time).
"""

from __future__ import annotations

import numba as nb
import numpy as np

OLD, NEW, TAGGED = 0, 1, 2
# error codes: the reader turns them into messages naming the line
ERR_FIELD = 1  # a fixed field (time, node, uid, size) does not read as a number
ERR_ADDRESS = 2  # an agent-level data packet without IP addresses or sequence number
ERR_SEQ = 3  # its sequence number is not an integer
ERR_WIRED = 4  # a line of the ns-2 wired format
ERR_NODE = 5  # a new-format line without -Ni/-Hs
MESSAGES = {
    ERR_FIELD: "malformed ns-2 wireless line (a time, node, uid or size is not a number)",
    ERR_ADDRESS: "agent-level data packet without IP addresses or sequence number",
    ERR_SEQ: "sequence number {} is not an integer",
    ERR_WIRED: "not an ns-2 wireless trace line (this looks like an ns-2 wired trace)",
    ERR_NODE: "malformed ns-2 wireless line (no node: -Ni or -Hs)",
}
RECORD = np.dtype(
    [
        ("line", np.int64),
        ("fmt", np.int8),
        ("ev", np.uint8),
        ("time", np.float64),
        ("node", np.int64),
        ("level", np.int64),
        ("reason", np.int64),
        ("uid", np.int64),
        ("ptype", np.int16),
        ("size", np.int64),
        ("src", np.int64),
        ("sport", np.int64),
        ("dst", np.int64),
        ("dport", np.int64),
        ("seq", np.int64),
        ("has_ip", np.bool_),
        ("has_seq", np.bool_),
        ("time_at", np.int64),
        ("time_len", np.int64),
    ]
)
AGT = 0x544741  # "AGT" packed little-end first (see pack())
NO_REASON = 0x3F  # "?"
_IP_S = np.frombuffer(b"-IP:s", np.uint8)
_IP_SP = np.frombuffer(b"-IP:sp", np.uint8)
_IP_D = np.frombuffer(b"-IP:d", np.uint8)
_IP_DP = np.frombuffer(b"-IP:dp", np.uint8)
_TCP_S = np.frombuffer(b"-tcp:s", np.uint8)


def pack(text: bytes) -> int:
    """A level or reason (at most 7 bytes) as the integer the scanner packs it into."""
    value = 0
    for k, byte in enumerate(text[:7]):
        value |= byte << (8 * k)
    return value


def unpack(value: int) -> str:
    out = bytearray()
    while value:
        out.append(value & 0xFF)
        value >>= 8
    return out.decode("latin-1")


def type_table(names) -> np.ndarray:
    """Packet type names as a padded byte matrix (one row per name, last column the length)."""
    width = max([len(n) for n in names] + [1])
    table = np.zeros((len(names), width + 1), np.uint8)
    for i, name in enumerate(names):
        raw = name.encode()
        table[i, : len(raw)] = np.frombuffer(raw, np.uint8)
        table[i, width] = len(raw)
    return table


@nb.njit(cache=True, inline="always")
def _is_space(c):
    return c == 32 or c == 9 or c == 13


@nb.njit(cache=True)
def _tokens(b, start, end, starts, ends):
    """Split a line into whitespace-separated tokens (at most len(starts)); their count."""
    n = 0
    i = start
    while i < end and n < starts.shape[0]:
        while i < end and _is_space(b[i]):
            i += 1
        if i >= end:
            break
        starts[n] = i
        while i < end and not _is_space(b[i]):
            i += 1
        ends[n] = i
        n += 1
    return n


@nb.njit(cache=True)
def _int(b, s, e):
    """A signed decimal integer in b[s:e]; (value, ok)."""
    if s >= e:
        return 0, False
    neg = False
    if b[s] == 45 or b[s] == 43:
        neg = b[s] == 45
        s += 1
        if s >= e:
            return 0, False
    if e - s > 18:
        return 0, False
    v = 0
    for i in range(s, e):
        c = b[i]
        if c < 48 or c > 57:
            return 0, False
        v = v * 10 + (c - 48)
    return (-v if neg else v), True


@nb.njit(cache=True)
def _float(b, s, e):
    """A decimal number ``[sign] digits [. digits] [e [sign] digits]`` in b[s:e]; (value, ok,
    exact). Exact when it has no exponent and its digits fit a double's integer range (one
    correctly rounded division); otherwise the caller converts the text (exact = False)."""
    i = s
    if i < e and (b[i] == 45 or b[i] == 43):
        i += 1
    mant = 0
    digits = 0
    frac = 0
    big = False
    seen_dot = False
    while i < e and (48 <= b[i] <= 57 or (b[i] == 46 and not seen_dot)):
        if b[i] == 46:
            seen_dot = True
        else:
            digits += 1
            if mant < (1 << 53):
                mant = mant * 10 + (b[i] - 48)
                frac += 1 if seen_dot else 0
            elif not seen_dot:
                big = True
        i += 1
    if digits == 0:
        return 0.0, False, False
    if i < e:
        if b[i] != 101 and b[i] != 69:
            return 0.0, False, False
        i += 1
        if i < e and (b[i] == 45 or b[i] == 43):
            i += 1
        if i >= e:
            return 0.0, False, False
        while i < e:
            if not 48 <= b[i] <= 57:
                return 0.0, False, False
            i += 1
        return 0.0, True, False
    if big or mant >= (1 << 53) or frac > 22:
        return 0.0, True, False
    v = mant / 10.0**frac if frac else float(mant)
    return (-v if b[s] == 45 else v), True, True


@nb.njit(cache=True)
def _pack(b, s, e):
    v = 0
    n = min(e - s, 7)
    for k in range(n):
        v |= np.int64(b[s + k]) << (8 * k)  # type: ignore[assignment]  # numba's int64, an int to mypy
    return v


@nb.njit(cache=True)
def _type_code(b, s, e, types):
    width = types.shape[1] - 1
    n = e - s
    for t in range(types.shape[0]):
        if types[t, width] != n:
            continue
        same = True
        for k in range(n):
            if b[s + k] != types[t, k]:
                same = False
                break
        if same:
            return t
    return -1


@nb.njit(cache=True)
def _equals(b, s, e, text):
    if e - s != len(text):
        return False
    for k in range(e - s):
        if b[s + k] != text[k]:
            return False
    return True


@nb.njit(cache=True)
def _address(b, s, e, sep):
    """``node<sep>port`` → (node, port, ok); the old format writes ``[0:0`` (a leading bracket)."""
    if s < e and b[s] == 91:
        s += 1
    for i in range(s, e):
        if b[i] == sep:
            node, ok1 = _int(b, s, i)
            port, ok2 = _int(b, i + 1, e)
            return node, port, ok1 and ok2
    return 0, 0, False


@nb.njit(cache=True)
def _seq_token(b, s, e):
    """``[123]`` or ``[123`` (TCP: ``[seq ack]``) → (value, ok)."""
    if s < e and b[s] == 91:
        s += 1
    if s < e and b[e - 1] == 93:
        e -= 1
    return _int(b, s, e)


@nb.njit(cache=True)
def scan(b, first_line, types, n_data, out, skipped, where):
    """Scan the text ``b`` (whole lines); fill ``out`` (RECORD rows) and ``skipped`` (per line
    that is no packet event: its first word's first 14 bytes packed in two integers) and, on
    an error about a field, ``where`` (its byte span).
    Returns (records, skipped, packet lines, error, line): ``line`` is the last line read (the
    bad one on an error)."""
    starts = np.empty(96, np.int64)
    ends = np.empty(96, np.int64)
    n_out = 0
    n_skip = 0
    n_packets = 0
    line = first_line - 1
    pos = 0
    size = b.shape[0]
    while pos < size:
        line += 1
        end = pos
        while end < size and b[end] != 10:
            end += 1
        ls = pos
        pos = end + 1
        n = _tokens(b, ls, end, starts, ends)
        if n == 0:
            continue
        c0 = b[starts[0]]
        one = ends[0] - starts[0] == 1
        # the format, as io/detect.py's line_format decides it
        fmt = -1
        if n >= 3:
            wireless_ev = one and (c0 == 115 or c0 == 114 or c0 == 102 or c0 == 68 or c0 == 100 or c0 == 77 or c0 == 78)
            if wireless_ev and ends[1] - starts[1] == 2 and b[starts[1]] == 45 and b[starts[1] + 1] == 116:
                fmt = NEW
            elif wireless_ev and b[starts[2]] == 95 and b[ends[2] - 1] == 95:
                fmt = OLD
            elif (
                one
                and (c0 == 43 or c0 == 104 or c0 == 114 or c0 == 100)
                and ends[2] - starts[2] == 2
                and b[starts[2]] == 45
                and b[starts[2] + 1] == 115
            ):
                for j in range(3, n):
                    if ends[j] - starts[j] == 2 and b[starts[j]] == 45 and b[starts[j] + 1] == 107:
                        fmt = TAGGED
                        break
            if fmt == -1 and one and (c0 == 43 or c0 == 45 or c0 == 114 or c0 == 100) and n == 12:
                return n_out, n_skip, n_packets, ERR_WIRED, line
        packet_ev = one and (
            c0 == 115 or c0 == 114 or c0 == 102 or c0 == 68 or c0 == 100 or (fmt == TAGGED and (c0 == 43 or c0 == 104))
        )
        if fmt == -1 or not packet_ev:
            skipped[n_skip, 0] = _pack(b, starts[0], min(ends[0], starts[0] + 7))
            skipped[n_skip, 1] = _pack(b, starts[0] + 7, ends[0]) if ends[0] > starts[0] + 7 else 0
            n_skip += 1
            continue
        n_packets += 1
        ev = c0
        if fmt == TAGGED:
            ev = 115 if c0 == 43 else (102 if c0 == 104 else (68 if c0 == 100 else c0))
        elif c0 == 100:
            ev = 68
        r = out[n_out]
        r.line = line
        r.fmt = fmt
        r.ev = ev
        r.has_ip = False
        r.has_seq = False
        r.time_at = -1
        t_s, t_e = starts[1], ends[1]
        src_s = src_e = dst_s = dst_e = seq_s = seq_e = -1
        sep = 46
        if fmt == OLD:
            if n < 8:
                return n_out, n_skip, n_packets, ERR_FIELD, line
            node, ok = _int(b, starts[2] + 1, ends[2] - 1)
            if not ok:
                return n_out, n_skip, n_packets, ERR_FIELD, line
            r.node = node
            r.level = _pack(b, starts[3], ends[3])
            r.reason = _pack(b, starts[4], ends[4])
            uid, ok1 = _int(b, starts[5], ends[5])
            ptype = _type_code(b, starts[6], ends[6], types)
            size_, ok2 = _int(b, starts[7], ends[7])
            if not (ok1 and ok2):
                return n_out, n_skip, n_packets, ERR_FIELD, line
            r.uid = uid
            r.size = size_
            r.ptype = ptype
            sep = 58
            for j in range(8, n - 3):
                if b[starts[j]] == 91:
                    colon1 = False
                    for i in range(starts[j], ends[j]):
                        colon1 = colon1 or b[i] == 58
                    colon2 = False
                    for i in range(starts[j + 1], ends[j + 1]):
                        colon2 = colon2 or b[i] == 58
                    if colon1 and colon2:
                        src_s, src_e, dst_s, dst_e = starts[j], ends[j], starts[j + 1], ends[j + 1]
                        if j + 4 < n and b[starts[j + 4]] == 91:
                            seq_s, seq_e = starts[j + 4], ends[j + 4]
                        break
        else:
            node_s = node_e = hs_s = hs_e = -1
            uid_s = uid_e = size_s = size_e = type_s = type_e = lvl_s = lvl_e = why_s = why_e = -1
            tcp_s = tcp_e = sp_s = sp_e = dp_s = dp_e = -1
            j = 1 if fmt == NEW else 2
            while j + 1 < n:
                ks, ke = starts[j], ends[j]
                vs, ve = starts[j + 1], ends[j + 1]
                j += 2
                if b[vs] == 123:  # a braced value spans tokens up to the closing brace
                    while b[ends[j - 1] - 1] != 125 and j < n:
                        j += 1
                klen = ke - ks
                if fmt == NEW:
                    if klen == 2 and b[ks + 1] == 116:
                        t_s, t_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 78 and b[ks + 2] == 105 and node_s < 0:
                        node_s, node_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 72 and b[ks + 2] == 115 and hs_s < 0:
                        hs_s, hs_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 78 and b[ks + 2] == 108 and lvl_s < 0:
                        lvl_s, lvl_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 78 and b[ks + 2] == 119 and why_s < 0:
                        why_s, why_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 73 and b[ks + 2] == 105 and uid_s < 0:
                        uid_s, uid_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 73 and b[ks + 2] == 116 and type_s < 0:
                        type_s, type_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 73 and b[ks + 2] == 108 and size_s < 0:
                        size_s, size_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 73 and b[ks + 2] == 115 and src_s < 0:
                        src_s, src_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 73 and b[ks + 2] == 100 and dst_s < 0:
                        dst_s, dst_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 80 and b[ks + 2] == 105 and seq_s < 0:
                        seq_s, seq_e = vs, ve
                    elif klen == 3 and b[ks + 1] == 80 and b[ks + 2] == 115 and tcp_s < 0:
                        tcp_s, tcp_e = vs, ve
                else:
                    if klen == 2 and b[ks + 1] == 115 and node_s < 0:
                        node_s, node_e = vs, ve
                    elif klen == 2 and b[ks + 1] == 107 and lvl_s < 0:
                        lvl_s, lvl_e = vs, ve
                    elif klen == 2 and b[ks + 1] == 105 and uid_s < 0:
                        uid_s, uid_e = vs, ve
                    elif klen == 2 and b[ks + 1] == 112 and type_s < 0:
                        type_s, type_e = vs, ve
                    elif klen == 2 and b[ks + 1] == 101 and size_s < 0:
                        size_s, size_e = vs, ve
                    elif klen == 5 and _equals(b, ks, ke, _IP_S) and src_s < 0:
                        src_s, src_e = vs, ve
                    elif klen == 6 and _equals(b, ks, ke, _IP_SP) and sp_s < 0:
                        sp_s, sp_e = vs, ve
                    elif klen == 5 and _equals(b, ks, ke, _IP_D) and dst_s < 0:
                        dst_s, dst_e = vs, ve
                    elif klen == 6 and _equals(b, ks, ke, _IP_DP) and dp_s < 0:
                        dp_s, dp_e = vs, ve
                    elif klen == 6 and _equals(b, ks, ke, _TCP_S) and tcp_s < 0:
                        tcp_s, tcp_e = vs, ve
                    elif (
                        type_s >= 0
                        and seq_s < 0
                        and klen == type_e - type_s + 3
                        and b[ke - 2] == 58
                        and b[ke - 1] == 115
                        and _equals(b, ks + 1, ke - 2, b[type_s:type_e])
                    ):
                        seq_s, seq_e = vs, ve  # -<type>:s
            if fmt == NEW:
                if node_s < 0:
                    node_s, node_e = hs_s, hs_e
                if node_s < 0:
                    return n_out, n_skip, n_packets, ERR_NODE, line
            elif node_s < 0:
                return n_out, n_skip, n_packets, ERR_FIELD, line
            node, ok = _int(b, node_s, node_e)
            if not ok:
                return n_out, n_skip, n_packets, ERR_FIELD, line
            r.node = node
            r.level = _pack(b, lvl_s, lvl_e) if lvl_s >= 0 else 0
            if fmt == NEW:
                r.reason = _pack(b, why_s, why_e) if why_s >= 0 else 0x2D2D2D  # "---"
            else:
                r.reason = NO_REASON
            r.uid = -1
            if uid_s >= 0:
                uid, ok = _int(b, uid_s, uid_e)
                if not ok:
                    return n_out, n_skip, n_packets, ERR_FIELD, line
                r.uid = uid
            r.size = 0
            if size_s >= 0:
                size_, ok = _int(b, size_s, size_e)
                if not ok:
                    return n_out, n_skip, n_packets, ERR_FIELD, line
                r.size = size_
            r.ptype = _type_code(b, type_s, type_e, types) if type_s >= 0 else -1
            if seq_s < 0:
                seq_s, seq_e = tcp_s, tcp_e
            if fmt == TAGGED and src_s >= 0 and dst_s >= 0:
                # -IP:s 0 -IP:sp 0: two fields, read as "node.port" below from their parts
                a, ok1 = _int(b, src_s, src_e)
                p, ok2 = _int(b, sp_s, sp_e) if sp_s >= 0 else (0, True)
                c, ok3 = _int(b, dst_s, dst_e)
                d, ok4 = _int(b, dp_s, dp_e) if dp_s >= 0 else (0, True)
                if ok1 and ok2 and ok3 and ok4:
                    r.src = a
                    r.sport = p
                    r.dst = c
                    r.dport = d
                    r.has_ip = True
                src_s = -1
        time, ok, exact = _float(b, t_s, t_e)
        if not ok:
            return n_out, n_skip, n_packets, ERR_FIELD, line
        r.time = time
        if not exact:
            r.time_at, r.time_len = t_s, t_e - t_s
        agent = r.level == AGT
        if r.ptype < 0 or not (agent or r.ev == 68) or (r.ev == 68 and r.ptype >= n_data):
            continue  # checked, not kept
        if src_s >= 0 and dst_s >= 0:
            a, p, ok1 = _address(b, src_s, src_e, sep)
            c, d, ok2 = _address(b, dst_s, dst_e, sep)
            if ok1 and ok2:
                r.src = a
                r.sport = p
                r.dst = c
                r.dport = d
                r.has_ip = True
        if seq_s >= 0:
            seq, ok = _seq_token(b, seq_s, seq_e)
            if ok:
                r.seq = seq
                r.has_seq = True
            elif agent and r.ptype < n_data and r.has_ip and (r.ev == 115 or r.ev == 114):
                where[0] = seq_s
                where[1] = seq_e
                return n_out, n_skip, n_packets, ERR_SEQ, line
        if agent and r.ptype < n_data and (r.ev == 115 or r.ev == 114) and not (r.has_ip and r.has_seq):
            return n_out, n_skip, n_packets, ERR_ADDRESS, line
        n_out += 1
    return n_out, n_skip, n_packets, 0, line
