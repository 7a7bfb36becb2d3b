# wlan.tcl -- small ns-2.35 802.11 ad-hoc scenario for ldanalyze test traces.
#
# Produces a wireless (CMU) trace with AGT/RTR/MAC levels and, on purpose,
# interface-queue drops (IFQ) as well as wireless drops (COL, RET, ...).
#
# Usage:  ns wlan.tcl [format=old|new] [duration=S] [seed=K] [out=FILE]
#                     [per=P] [rts=0|1] [rp=AODV|DSDV] [mac=802_11|simple]
#                     [energy=0|1]
#   format    old (default) = classic CMU wireless trace, new = $ns use-newtrace
#   duration  simulated seconds (default 30)
#   seed      seed of ns-2's default RNG (default 1); same seed => same trace
#   out       trace file (default wlan_<format>.tr)
#   per       per-frame error rate of a uniform ErrorModel on every receiving
#             interface (default 0.05; 0 disables the error model)
#   rts       1 (default, ns-2.35's RTSThreshold_ 0) = RTS/CTS before every
#             unicast frame, 0 = no RTS/CTS (basic access)
#   rp        ad-hoc routing protocol (default AODV)
#   mac       802_11 (default) or simple (Mac/Simple: no RTS/ACK/retries, but
#             the only ns-2.35 MAC that logs corrupted frames as "ERR" drops;
#             Mac/802_11 frees them silently)
#   energy    1 = attach an EnergyModel (adds [energy ...] to old-format lines
#             and a real value to -Ne in the new format); default 0
#
# Topology (metres, all nodes z=0), radio range 250 m, carrier sense = range
# (CSThresh_ = RXThresh_) so that n0 and n2 are hidden from each other:
#
#        n3 (0,200) ......                      n4 moves around (no traffic,
#        |                                       AODV relay candidate)
#        n0 (0,0) ---200--- n1 (200,0) ---200--- n2 (400,0)
#
#   fid 1  CBR/UDP  n0 -> n1   512 B every 25 ms  (~164 kb/s)
#   fid 2  CBR/UDP  n2 -> n1   512 B every  6 ms  (~683 kb/s)
#   fid 3  FTP/TCP  n3 -> n1   (Reno, 512 B segments), 2 hops via n0
# 802.11 at 1 Mb/s cannot carry fid 2 (interface-queue overflow at n2), and
# n0/n2 are hidden terminals, so the trace shows IFQ, COL and RET drops.
# n3 walks out of range at 70% of the run (TCP route breaks: NRTE drops).

# ---------------------------------------------------------------- arguments
set opt(format)   old
set opt(duration) 30
set opt(seed)     1
set opt(out)      ""
set opt(per)      0.05
set opt(rts)      1
set opt(rp)       AODV
set opt(mac)      802_11
set opt(energy)   0
foreach a $argv {
    if {![regexp {^([a-z]+)=(.*)$} $a -> k v] || ![info exists opt($k)]} {
        puts stderr "wlan.tcl: bad argument '$a' (expected key=value, keys: [lsort [array names opt]])"
        exit 2
    }
    set opt($k) $v
}
if {$opt(format) ne "old" && $opt(format) ne "new"} {
    puts stderr "wlan.tcl: format must be old or new"; exit 2
}
if {$opt(mac) ne "802_11" && $opt(mac) ne "simple"} {
    puts stderr "wlan.tcl: mac must be 802_11 or simple"; exit 2
}
if {$opt(out) eq ""} { set opt(out) "wlan_$opt(format).tr" }

# ---------------------------------------------------------------- RNG
# All randomness (MAC backoff, error model, AODV jitter) comes from the
# default RNG; seeding it makes the run reproducible.
global defaultRNG
$defaultRNG seed $opt(seed)

# ---------------------------------------------------------------- PHY / MAC
Phy/WirelessPhy set CSThresh_ [Phy/WirelessPhy set RXThresh_]
if {!$opt(rts)} { Mac/802_11 set RTSThreshold_ 3000 }

set val(chan)   Channel/WirelessChannel
set val(prop)   Propagation/TwoRayGround
set val(netif)  Phy/WirelessPhy
set val(mac)    [expr {$opt(mac) eq "simple" ? "Mac/Simple" : "Mac/802_11"}]
set val(ifq)    Queue/DropTail/PriQueue
set val(ll)     LL
set val(ant)    Antenna/OmniAntenna
set val(ifqlen) 50
set val(nn)     5
set val(rp)     $opt(rp)
set val(x)      600
set val(y)      800

set ns [new Simulator]
if {$opt(format) eq "new"} { $ns use-newtrace }
set tracefd [open $opt(out) w]
$ns trace-all $tracefd

set topo [new Topography]
$topo load_flatgrid $val(x) $val(y)
create-god $val(nn)
set chan [new $val(chan)]

proc wlan_errmodel {} {
    global opt
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $opt(per)
    $em ranvar [new RandomVariable/Uniform]
    return $em
}

set cfg [list -adhocRouting $val(rp) -llType $val(ll) -macType $val(mac) \
         -ifqType $val(ifq) -ifqLen $val(ifqlen) -antType $val(ant) \
         -propType $val(prop) -phyType $val(netif) -channel $chan \
         -topoInstance $topo -agentTrace ON -routerTrace ON -macTrace ON \
         -movementTrace ON]
if {$opt(per) > 0} { lappend cfg -IncomingErrProc wlan_errmodel }
if {$opt(energy)} {
    lappend cfg -energyModel EnergyModel -initialEnergy 100.0 \
                -txPower 0.6 -rxPower 0.3 -idlePower 0.05
}
eval $ns node-config $cfg

set pos {{0 0} {200 0} {400 0} {0 200} {200 400}}
for {set i 0} {$i < $val(nn)} {incr i} {
    set n($i) [$ns node]
    $n($i) random-motion 0
    $n($i) set X_ [lindex $pos $i 0]
    $n($i) set Y_ [lindex $pos $i 1]
    $n($i) set Z_ 0.0
}

# ---------------------------------------------------------------- traffic
proc cbr_flow {src dst fid size interval start stop} {
    global ns n
    set udp [new Agent/UDP]
    $udp set fid_ $fid
    $ns attach-agent $n($src) $udp
    set sink [new Agent/Null]
    $ns attach-agent $n($dst) $sink
    $ns connect $udp $sink
    set cbr [new Application/Traffic/CBR]
    $cbr set packetSize_ $size
    $cbr set interval_ $interval
    $cbr attach-agent $udp
    $ns at $start "$cbr start"
    $ns at $stop  "$cbr stop"
}
set stop [expr {$opt(duration) - 1.0}]
cbr_flow 0 1 1 512 0.025 1.0 $stop
cbr_flow 2 1 2 512 0.006 1.5 $stop

set tcp [new Agent/TCP/Reno]
$tcp set fid_ 3
$tcp set packetSize_ 512
$tcp set window_ 32
$ns attach-agent $n(3) $tcp
set tsink [new Agent/TCPSink]
$ns attach-agent $n(1) $tsink
$ns connect $tcp $tsink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 3.0 "$ftp start"
$ns at $stop "$ftp stop"

# ---------------------------------------------------------------- mobility
# n4 wanders (produces M lines, can become an AODV relay); n3 leaves at the
# end so that the TCP route breaks.
$ns at 5.0 "$n(4) setdest 100.0 300.0 10.0"
$ns at [expr {$opt(duration) * 0.7}] "$n(3) setdest 1.0 790.0 40.0"

# ---------------------------------------------------------------- end
for {set i 0} {$i < $val(nn)} {incr i} {
    $ns at $opt(duration) "$n($i) reset"
}
$ns at $opt(duration) "finish"
$ns at [expr {$opt(duration) + 0.0001}] "puts \"NS EXITING...\"; $ns halt"
proc finish {} {
    global ns tracefd
    $ns flush-trace
    close $tracefd
}
$ns run
