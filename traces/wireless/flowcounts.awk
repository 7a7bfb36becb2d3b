# flowcounts.awk -- per-flow reference counts for the ldanalyze wireless test
# traces.  Works on the old (CMU), the new (-t ...) and the tagged (+ t -s ...)
# wireless formats; the format is detected per line ($2 == "-t" => new,
# $3 == "-s" => tagged, which prints no drop reason: "?").
#
#   zcat wlan_old.tr.gz | awk -f flowcounts.awk
#
# Rule (see FORMAT.md, "Reference counts"):
#  * a DATA PACKET is a line with event "s", trace level AGT and packet type
#    cbr or tcp (TCP data; TCP acks "ack" are reported as their own flow);
#    it is identified by (uid, type).  Its flow is "src:sport>dst:dport" taken
#    from the IP addresses of that AGT send line (fid from -If in the new
#    format; the old format has no flow id, see FORMAT.md).
#  * SENT  = number of such AGT send lines of the flow.
#  * RECV  = number of "r" lines at level AGT whose (uid,type) is a data
#            packet of the flow and whose node is the flow's destination
#            (counted per line; the traces contain no duplicate AGT receives,
#            DELIV counts distinct uids to show that).
#  * drops = every "D"/"d" line (any level) whose (uid,type) is a data packet
#            of the flow, counted per line and grouped by reason (the
#            level is printed with it: "IFQ/---" is level IFQ, reason ---).
#  * LOST  = distinct uids of the flow that were sent but never AGT-received.
#  * second table: each LOST uid is attributed to the reason of the LAST drop
#    line (file order) that carries its (uid,type); "(none)" = no drop line.
{
    if ($3 == "-s") {                         # ---------- tagged format
        ev = $1; if (ev == "+") ev = "s"; else if (ev == "h") ev = "f"; else if (ev == "d") ev = "D"
        lvl = ""; why = "?"; uid = ""; typ = ""; node = ""; fid = ""
        sa = ""; sp = ""; da = ""; dp = ""
        # first occurrence of each key; braced values ({x y z}) hold only numbers
        for (i = 2; i < NF; i++) {
            k = $i
            if      (k == "-s"     && node == "") node = $(i+1)
            else if (k == "-k"     && lvl  == "") lvl  = $(i+1)
            else if (k == "-i"     && uid  == "") uid  = $(i+1)
            else if (k == "-p"     && typ  == "") typ  = $(i+1)
            else if (k == "-c"     && fid  == "") fid  = $(i+1)
            else if (k == "-IP:s"  && sa   == "") sa   = $(i+1)
            else if (k == "-IP:sp" && sp   == "") sp   = $(i+1)
            else if (k == "-IP:d"  && da   == "") da   = $(i+1)
            else if (k == "-IP:dp" && dp   == "") dp   = $(i+1)
        }
        src = (sa == "") ? "" : sa ":" sp
        dst = (da == "") ? "" : da ":" dp
    } else if ($2 == "-t") {                  # ---------- new format
        ev = $1; if (ev == "d") ev = "D"
        lvl = ""; why = ""; uid = ""; typ = ""; node = ""; src = ""; dst = ""; fid = ""
        for (i = 2; i < NF; i++) {
            k = $i
            if      (k == "-Ni") node = $(i+1)
            else if (k == "-Nl") lvl  = $(i+1)
            else if (k == "-Nw") why  = $(i+1)
            else if (k == "-Ii") uid  = $(i+1)
            else if (k == "-It") typ  = $(i+1)
            else if (k == "-Is") src  = $(i+1)
            else if (k == "-Id") dst  = $(i+1)
            else if (k == "-If") fid  = $(i+1)
        }
        sub(/\./, ":", src); sub(/\./, ":", dst)
    } else {                                  # ---------- old format
        ev = $1
        if (ev != "s" && ev != "r" && ev != "D" && ev != "f") next
        node = $3; gsub(/_/, "", node)
        lvl = $4; why = $5; uid = $6; typ = $7
        src = ""; dst = ""; fid = "-"
        # the IP block follows the "-------" token: $13 normally, $23 when
        # an "[energy ...]" block (10 tokens) sits after the MAC bracket
        for (i = 13; i < NF; i++) if ($i == "-------") break
        if (i < NF && substr($(i+1), 1, 1) == "[") {
            src = substr($(i+1), 2); dst = $(i+2)
        }
    }
    if (uid == "" || typ == "") next
    key = uid SUBSEP typ
    if (ev == "s" && lvl == "AGT" && (typ == "cbr" || typ == "tcp" || typ == "ack")) {
        fl = src ">" dst
        if (!(fl in seen)) { seen[fl] = 1; order[++nfl] = fl; ftyp[fl] = typ; ffid[fl] = fid
                             split(dst, dd, ":"); fdst[fl] = dd[1] }
        if (key in flowof) dupsend++
        flowof[key] = fl; sent[fl]++
        next
    }
    if (!(key in flowof)) next
    fl = flowof[key]
    if (ev == "r" && lvl == "AGT" && node == fdst[fl]) {
        recv[fl]++
        if (!(key in got)) { got[key] = 1; deliv[fl]++ }
    } else if (ev == "D") {
        r = lvl "/" why
        drop[fl, r]++
        last[key] = r
        if (!(r in rseen)) { rseen[r] = 1; reasons[++nr] = r }
    }
}
END {
    n = asort_reasons()
    printf "%-12s %-4s %-4s %6s %6s %6s %6s", "flow", "fid", "type", "SENT", "RECV", "DELIV", "LOST"
    for (j = 1; j <= nr; j++) printf " %8s", reasons[j]
    printf "\n"
    for (i = 1; i <= nfl; i++) {
        fl = order[i]; lost = 0
        for (k in flowof) if (flowof[k] == fl && !(k in got)) lost++
        printf "%-12s %-4s %-4s %6d %6d %6d %6d", fl, ffid[fl], ftyp[fl], sent[fl], recv[fl], deliv[fl], lost
        for (j = 1; j <= nr; j++) printf " %8d", drop[fl, reasons[j]]
        printf "\n"
    }
    # lost packets by the last drop line seen for them
    for (k in flowof) if (!(k in got)) {
        r = (k in last) ? last[k] : "(none)"
        lostby[flowof[k], r]++
        if (!(r in lseen)) { lseen[r] = 1; lreasons[++nl] = r }
    }
    for (i = 2; i <= nl; i++) { t = lreasons[i]; j = i - 1
        while (j > 0 && lreasons[j] > t) { lreasons[j+1] = lreasons[j]; j-- }
        lreasons[j+1] = t }
    printf "\nLOST by last drop line:\n%-12s", "flow"
    for (j = 1; j <= nl; j++) printf " %8s", lreasons[j]
    printf "\n"
    for (i = 1; i <= nfl; i++) {
        printf "%-12s", order[i]
        for (j = 1; j <= nl; j++) printf " %8d", lostby[order[i], lreasons[j]]
        printf "\n"
    }
    if (dupsend) printf "WARNING: %d AGT sends reuse a (uid,type)\n", dupsend
}
# simple insertion sort of the reason names, for a stable column order
function asort_reasons(   i, j, t) {
    for (i = 2; i <= nr; i++) { t = reasons[i]; j = i - 1
        while (j > 0 && reasons[j] > t) { reasons[j+1] = reasons[j]; j-- }
        reasons[j+1] = t }
    return nr
}
