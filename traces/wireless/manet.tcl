# manet.tcl -- mobile ad hoc scenario generator for ldanalyze (ns-2.35).
#
# Nodes move by random waypoint over a flat area and route with DSDV, AODV or
# DSR; CBR flows and TCP NewReno flows cross multi-hop routes that break as
# nodes move. The trace has every drop kind that routing and mobility cause
# (route-wait buffer full, no route, link-failure callbacks, salvaging, TTL)
# next to interface-queue overflows and MAC losses.
#
# Usage:  ns manet.tcl [key=value ...]
#   nodes     number of mobile nodes (default 6)
#   x, y      area in metres (default 600 x 400)
#   speed     maximum speed m/s; each leg draws uniform [speed/10, speed] (default 10)
#   pause     pause at each waypoint, s (default 2)
#   rp        DSDV | AODV | DSR (default AODV)
#   cbr       number of CBR/UDP flows (default 2), 512 B every `interval` s
#   interval  CBR packet interval, s (default 0.02: ~200 kb/s per flow)
#   tcp       number of FTP/TCP NewReno flows (default 1)
#   format    old | new | tagged (default old)
#   ifqlen    interface queue length, packets (default 50)
#   phy       1 = also trace the PHY level (default 0)
#   per       frame error rate at every receiving radio, 0-1 (default 0): a uniform
#             ErrorModel on each node's incoming path (-IncomingErrProc); the MAC
#             retransmits a frame whose ACK does not come, so these errors reach the
#             trace as losses (MAC RET) only when every attempt fails
#   retries   802.11 retry limits, Short and Long (default 0: ns-2's own, 7 and 4)
#   duration  simulated seconds (default 30)
#   seed      seed of ns-2's default RNG (default 1): same arguments, same trace
#   out       trace file (default manet.tr)
# Flow k (k = 0, 1, ...) runs from node k to node nodes-1-k (CBR flows first, then
# TCP), starting at 1 + 0.1 k s; fid k+1; ports: the agents' own.

set opt(nodes)    6
set opt(x)        600
set opt(y)        400
set opt(speed)    10
set opt(pause)    2
set opt(rp)       AODV
set opt(cbr)      2
set opt(interval) 0.02
set opt(tcp)      1
set opt(format)   old
set opt(ifqlen)   50
set opt(phy)      0
set opt(per)      0
set opt(retries)  0
set opt(duration) 30
set opt(seed)     1
set opt(out)      manet.tr
foreach a $argv {
    if {![regexp {^([a-z]+)=(.*)$} $a -> k v] || ![info exists opt($k)]} {
        puts stderr "manet.tcl: bad argument '$a' (keys: [lsort [array names opt]])"
        exit 2
    }
    set opt($k) $v
}
if {[lsearch {old new tagged} $opt(format)] < 0} { puts stderr "manet.tcl: format is old, new or tagged"; exit 2 }
if {[lsearch {DSDV AODV DSR} $opt(rp)] < 0} { puts stderr "manet.tcl: rp is DSDV, AODV or DSR"; exit 2 }
if {$opt(cbr) + $opt(tcp) > $opt(nodes) / 2} { puts stderr "manet.tcl: at most nodes/2 flows"; exit 2 }

global defaultRNG
$defaultRNG seed $opt(seed)
set rng [new RNG]
$rng seed [expr {$opt(seed) * 7919 + 1}]

set ns [new Simulator]
switch $opt(format) {
    new    { $ns use-newtrace }
    tagged { $ns use-taggedtrace }
}
set tracefd [open $opt(out) w]
$ns trace-all $tracefd

set topo [new Topography]
$topo load_flatgrid $opt(x) $opt(y)
create-god $opt(nodes)
set chan [new Channel/WirelessChannel]

if {$opt(retries) > 0} {
    Mac/802_11 set ShortRetryLimit_ $opt(retries)
    Mac/802_11 set LongRetryLimit_ $opt(retries)
}
proc frame_errors {} {
    global opt
    set err [new ErrorModel]
    $err unit packet
    $err set rate_ $opt(per)
    $err drop-target [new Agent/Null]
    return $err
}

# DSR needs its own priority queue (it logs drops as "IFQ IFQ"); the others DropTail/PriQueue
set ifq [expr {$opt(rp) eq "DSR" ? "CMUPriQueue" : "Queue/DropTail/PriQueue"}]
$ns node-config -adhocRouting $opt(rp) -llType LL -macType Mac/802_11 \
    -ifqType $ifq -ifqLen $opt(ifqlen) -antType Antenna/OmniAntenna \
    -propType Propagation/TwoRayGround -phyType Phy/WirelessPhy -channel $chan \
    -topoInstance $topo -agentTrace ON -routerTrace ON -macTrace ON \
    -movementTrace ON -phyTrace [expr {$opt(phy) ? "ON" : "OFF"}]
if {$opt(per) > 0} { $ns node-config -IncomingErrProc frame_errors }

proc uniform {lo hi} {
    global rng
    return [expr {$lo + ($hi - $lo) * [$rng uniform 0 1]}]
}

# random waypoint: legs scheduled up front, so the whole run is fixed by the seed
for {set i 0} {$i < $opt(nodes)} {incr i} {
    set node($i) [$ns node]
    $node($i) random-motion 0
    set x [uniform 1 [expr {$opt(x) - 1}]]
    set y [uniform 1 [expr {$opt(y) - 1}]]
    $node($i) set X_ $x
    $node($i) set Y_ $y
    $node($i) set Z_ 0.0
    set t 0.5
    while {$t < $opt(duration)} {
        set nx [uniform 1 [expr {$opt(x) - 1}]]
        set ny [uniform 1 [expr {$opt(y) - 1}]]
        set v [uniform [expr {$opt(speed) / 10.0}] $opt(speed)]
        $ns at $t "$node($i) setdest $nx $ny $v"
        set t [expr {$t + hypot($nx - $x, $ny - $y) / $v + $opt(pause)}]
        set x $nx
        set y $ny
    }
}

for {set k 0} {$k < $opt(cbr) + $opt(tcp)} {incr k} {
    set src $node($k)
    set dst $node([expr {$opt(nodes) - 1 - $k}])
    set start [expr {1.0 + 0.1 * $k}]
    if {$k < $opt(cbr)} {
        set agent [new Agent/UDP]
        set sink [new Agent/Null]
        set app [new Application/Traffic/CBR]
        $app set packetSize_ 512
        $app set interval_ $opt(interval)
    } else {
        set agent [new Agent/TCP/Newreno]
        $agent set packetSize_ 512
        set sink [new Agent/TCPSink]
        set app [new Application/FTP]
    }
    $agent set fid_ [expr {$k + 1}]
    $ns attach-agent $src $agent
    $ns attach-agent $dst $sink
    $ns connect $agent $sink
    $app attach-agent $agent
    $ns at $start "$app start"
}

for {set i 0} {$i < $opt(nodes)} {incr i} {
    $ns at $opt(duration) "$node($i) reset"
}
$ns at [expr {$opt(duration) + 0.0001}] "finish"
proc finish {} {
    global ns tracefd
    $ns flush-trace
    close $tracefd
    $ns halt
}
$ns run
