# tracestats.awk -- reference counts for an ns-2 wired trace (trace-all format)
#
#   ev time from to ptype size flags fid src.port dst.port seqno uid
#
# Usage:
#   awk -f tracestats.awk [-v em=EMTRACE] TRACE            (per-flow table)
#   awk -f tracestats.awk -v summary=1 [-v em=EMTRACE] TRACE (one line)
#   (gzip'd files: zcat X.tr.gz | awk -f tracestats.awk -v em=<(zcat X.em.gz))
#
# Rules (one packet = one uid; each transmission/retransmission has its own
# uid):
#   * forward packet: every ptype except the reverse-path control packets
#                    tcpFriendCtl (TFRC feedback) and ack (TCP ACK); i.e. data
#                    (tcpFriend = TFRC, tcp, cbr) and exp (warm-up fid 100,
#                    cross traffic fid 101).  Columns sent/uniqseq/rcvd/cong/
#                    wireless/em count forward packets; ctl_* count control.
#   * sent         : `+` event on the link leaving the packet's source node
#                    (from == node part of src.port).
#   * delivered    : `r` event on the link entering the destination node
#                    (to == node part of dst.port).
#   * for every `d` event, look at the PREVIOUS event of the same uid on the
#     same link (same from,to):
#        previous `+`          -> congestion drop (DropTail queue overflow)
#        previous `-`          -> wireless drop (error model after the queue,
#                                 `$ns link-lossmodel`)
#        no previous event     -> wireless drop (error model before the queue,
#                                 `$ns lossmodel`)
#        previous `r`          -> counted as "other" (never seen)
#   * em           : number of `d` lines of the flow in the error-model trace
#                    (written by the Trace/Drop spliced after the error model).
#                    The summary also checks uid by uid that the set of
#                    wireless-classified drops equals the set of em drops.
#   * uniqseq      : distinct (src.port, seqno) pairs among sent packets
#                    (< sent when there are TCP retransmissions).

function node(a,   p) { p = index(a, "."); return substr(a, 1, p - 1) }

BEGIN {
    if (em != "") {
        while ((getline line < em) > 0) {
            split(line, fl, " ")
            if (fl[1] == "d") { emcnt[fl[8]]++; emtot++; emuid[fl[12]] = 1 }
        }
        close(em)
    }
}

{
    ev = $1; from = $3; to = $4; pt = $5; fid = $8; uid = $12
    key = uid SUBSEP from SUBSEP to
    isdata = (pt != "tcpFriendCtl" && pt != "ack")
    fids[fid] = 1
    if (!(fid in ptype) || isdata) ptype[fid] = pt
    if (ev == "+" && from == node($9)) {
        if (isdata) { sent[fid]++; if (!((fid, $9, $11) in seen)) { seen[fid, $9, $11] = 1; uniq[fid]++ } }
        else        ctlsent[fid]++
    }
    if (ev == "r" && to == node($10)) {
        if (isdata) rcvd[fid]++
    }
    if (ev == "d") {
        prev = (key in last) ? last[key] : ""
        if (prev == "+")                    { cls = "cong" }
        else if (prev == "-" || prev == "") { cls = "wl" }
        else                                { cls = "other" }
        if (isdata) cnt[fid, cls]++; else ccnt[fid, cls]++
        tot[cls]++
        # per-uid cross-check against the error-model trace
        if (em != "" && ((cls == "wl") != (uid in emuid))) mism++
        if (prev == "-") wl_after++
        if (prev == "")  wl_before++
    }
    last[key] = ev
    nev[ev]++
    lines++
}

END {
    if (summary) {
        printf "lines=%d", lines
        for (e in nev) if (e != "+" && e != "-" && e != "r" && e != "d") printf " UNEXPECTED_EV[%s]=%d", e, nev[e]
        nf = 0; ds = 0; dr = 0
        for (f in fids) if (f + 0 < 100 && (f in sent) && ptype[f] != "exp") { nf++; ds += sent[f]; dr += rcvd[f] }
        printf " flows=%d data_sent=%d data_rcvd=%d cong_drops=%d wl_drops=%d(after_q=%d,before_q=%d) other_drops=%d",
            nf, ds, dr, tot["cong"] + 0, tot["wl"] + 0, wl_after + 0, wl_before + 0, tot["other"] + 0
        if (em != "") printf " em_drops=%d uid_mismatches=%d%s", emtot + 0, mism + 0,
            (emtot + 0 == tot["wl"] + 0 && mism + 0 == 0) ? " (match)" : " (MISMATCH)"
        printf "\n"
        exit
    }
    printf "%-5s %-10s %8s %8s %8s %8s %8s %8s %10s %10s\n", "fid", "ptype", "sent", "uniqseq", "rcvd", "cong", "wireless", "em", "ctl_sent", "ctl_drops"
    n = 0
    for (f in fids) order[++n] = f + 0
    for (i = 2; i <= n; i++) { v = order[i]; for (j = i - 1; j >= 1 && order[j] > v; j--) order[j + 1] = order[j]; order[j + 1] = v }
    for (i = 1; i <= n; i++) {
        f = order[i]
        printf "%-5s %-10s %8d %8d %8d %8d %8d %8s %10d %10d\n", f, ptype[f], sent[f], uniq[f], rcvd[f],
            cnt[f, "cong"], cnt[f, "wl"] + cnt[f, "other"], (em != "" ? emcnt[f] + 0 : "-"),
            ctlsent[f], ccnt[f, "cong"] + ccnt[f, "wl"] + ccnt[f, "other"]
    }
}
