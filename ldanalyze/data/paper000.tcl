# paper000.tcl -- ns-2.35 scenarios for ldanalyze (loss differentiation study)
#
# Builds the two topologies of Section V ("Network parameters") of the LDA
# paper (/work/shared/papers/000_ac6926a29ed3c248.txt):
#
#   WLH (Wireless Last Hop, Sec. V-A, Fig. 5):
#       S_i --LAN 10Mb/1ms--> R1 --shared rate_shared/20ms--> R2
#           --wireless 150kb/10ms--> D_i        (one wireless link per receiver)
#       rate_shared = max(N,2)*130 kb/s; for N=1 it is ~2x the wireless
#       capacity (300 kb/s) so that the wireless last hop is the bottleneck
#       (Sec. V-C, "Bandwidth").
#
#   WB (Wireless Backbone, Sec. V-A, Fig. 6):
#       S_i --LAN 10Mb/1ms--> R1 --wireless rate_wshared/20ms--> R2
#           --LAN 10Mb/1ms--> D_i
#       rate_wshared = 800 kb/s for N=1, 1600 kb/s otherwise (Sec. V-C).
#
# Every link is a DropTail duplex link whose queue holds
# max(bandwidth/60kb/s, 6) packets (Sec. V-C, "Queue Size"/"Queuing Policy").
# All data packets are 762 bytes on the wire (Sec. V-C, "Packet Size").
#
# Wireless loss (Sec. V-B) is applied only on the wireless link(s), forward
# direction only (S -> D).  The paper uses Jakes-model error traces; we use
#   loss=uniform : Bernoulli per-packet loss (ErrorModel, unit pkt,
#                  RandomVariable/Uniform)
#   loss=bursty  : two-state Gilbert-Elliott per-packet Markov chain built from
#                  ErrorModel/MultiState with two Uniform sub-models
#                  (good state: loss good_loss, bad state: loss bad_loss)
#   loss=none    : no error model
# with average packet loss rate `rate` (high 0.078, medium 0.031, low 0.010,
# Table I).
#
# Usage (key=value arguments, any order, all optional):
#   ns paper000.tcl topology=wlh|wb flows=N traffic=tfrc|tcp|cbr|mix
#                   loss=uniform|bursty|none rate=0.078|high|medium|low
#                   duration=S seed=K cbr_share=0.9 out=FILE.tr [emtrace=FILE]
#                   [warmup=S] [emplace=link|queue] [burst=4] [bad_loss=0.5]
#                   [good_loss=0] [cross=none|expoo] [cross_share=0.4]
#                   [types=tfrc,tcp,cbr,...] [tcp_window=20]
#                   [lda=NAME] [ldalog=FILE] [ldareports=FILE]
#                   [wireless_as_received=0|1] [ldaparams=NAME VALUE ...]
#                   [reorder=P] [reorder_delay=S] [shared_delay=S]
#
# Closed loop (needs the ns built by ldanalyze/data/ns2/build): with lda=NAME every TFRC
# flow's receiver is an Agent/TFRCSink/LDA whose LDA NAME (unaware, omniscient,
# biaz, mbiaz, spike, wro_ldaplus, zigzag, zbs, win_ldaplus, veno, xrtp) keeps
# the losses it calls wireless out of TFRC's loss event rate (paper 000 Secs. I, IV);
# ldalog=FILE logs every detected loss with the decision of each LDA, and
# ldareports=FILE every report a receiver sends (p, X_recv; tfrc-lda-sink.h).
# wireless_as_received=1: a loss the LDA calls wireless also counts as received
# in TFRC's receive rate X_recv (paper 000 Sec. IV, "in the same way as received
# packets"); 0, the default: X_recv counts the packets that arrived, as ns-2's
# receiver does.  ldaparams= sets the receivers' LDA parameters: a Tcl list of
# OTcl variable names of Agent/TFRCSink/LDA and their values, e.g.
# ldaparams="biaz_upper_ 2.5 zigzag_dev_factors_ {-1 -0.5 0 1}" (ldanalyze writes
# it from its own LDAs' parameters: closedloop.receiver_options).  A
# Connector/LDAOracle behind each error model tells the omniscient receiver
# which packets the radio dropped; it only passes packets on, so the trace is
# the same as without it.
#
# shared_delay=S: the one-way delay of the shared link (WLH) or the wireless
# backbone (WB), in seconds; 0.02 as Sec. V-C gives it.  Other values change the
# round-trip time (the throughput model grid of ldanalyze.reproduce.model_grid).
#
# Reordering (reorder=P, default 0: none): on each wireless link, after its
# error model, a share P of the packets that survive it (forward direction,
# Bernoulli with its own random stream) is held back reorder_delay seconds
# (default 0.1) by an ErrorModel with delay_pkt_ set, and so arrives after
# packets sent later: a gap the receiver detects that a late arrival fills.
#
# Output: classic ns-2 wired trace (`$ns trace-all`), one line per event:
#   ev time from to ptype size flags fid src.port dst.port seqno uid
# with ev in {+,-,r,d}.  Optional emtrace=FILE: a second trace in the same
# format containing ONLY the packets dropped by the wireless error model(s)
# (a Trace/Drop object spliced between the error model and the link's drop
# head), used to cross-check the classification of `d` events.
#
# Node numbering (deterministic, from creation order):
#   0 = R1, 1 = R2, 2..N+1 = senders S_1..S_N, N+2..2N+1 = receivers D_1..D_N,
#   then the warm-up node W (if warmup>0), then the cross-traffic node X
#   (if cross=expoo).  Flow i uses fid_ i (data AND its ACKs/feedback),
#   sender S_i, receiver D_i.
#   Warm-up traffic: fid 100 (ptype exp), W -> R2 (sink at R2).
#   Cross traffic:   fid 101 (ptype exp), X -> D_1 (competes with flow 1).

# ----------------------------------------------------------------------------
# 1. Command-line parsing (key=value pairs from $argv)
# ----------------------------------------------------------------------------
# (named cfg, not opt: ns-2 itself keeps a global array called opt)
array set cfg {
    topology    wlh
    flows       1
    traffic     tfrc
    types       ""
    loss        uniform
    rate        0.078
    duration    100
    seed        1
    cbr_share   0.9
    out         out.tr
    emtrace     ""
    warmup      5
    emplace     link
    burst       4
    bad_loss    0.5
    good_loss   0.0
    cross       none
    cross_share 0.4
    tcp_window  20
    lda         ""
    ldalog      ""
    ldareports  ""
    wireless_as_received 0
    ldaparams   ""
    reorder     0
    reorder_delay 0.1
    shared_delay 0.02
}

proc die {msg} {
    puts stderr "paper000.tcl: $msg"
    exit 1
}

foreach arg $argv {
    if {![regexp {^([a-z_]+)=(.*)$} $arg -> key val]} {
        die "bad argument '$arg' (expected key=value)"
    }
    if {![info exists cfg($key)]} {
        die "unknown option '$key' (known: [lsort [array names cfg]])"
    }
    set cfg($key) $val
}

foreach k {ldalog ldareports} {
    if {$cfg($k) ne ""} {
        if {$cfg(lda) eq ""} { die "$k= needs lda=" }
        close [open $cfg($k) w]   ;# the receivers append to it
    }
}
if {[lsearch -exact {0 1} $cfg(wireless_as_received)] < 0} { die "wireless_as_received must be 0 or 1" }
if {$cfg(wireless_as_received) && $cfg(lda) eq ""} { die "wireless_as_received=1 needs lda=" }
if {$cfg(ldaparams) ne ""} {
    if {$cfg(lda) eq ""} { die "ldaparams= needs lda=" }
    if {[catch {llength $cfg(ldaparams)} n] || $n % 2} { die "ldaparams= must be a list of names and values" }
    foreach {k v} $cfg(ldaparams) {
        # a name the receiver does not bind would be set and never read
        if {[catch {Agent/TFRCSink/LDA set $k}]} { die "ldaparams=: Agent/TFRCSink/LDA has no variable '$k'" }
    }
}

# Named loss levels of Table I.
switch -- $cfg(rate) {
    high   { set cfg(rate) 0.078 }
    medium { set cfg(rate) 0.031 }
    low    { set cfg(rate) 0.010 }
}

# Validation.
if {[lsearch -exact {wlh wb} $cfg(topology)] < 0} { die "topology must be wlh or wb" }
if {![string is integer -strict $cfg(flows)] || $cfg(flows) < 1} { die "flows must be an integer >= 1" }
if {[lsearch -exact {tfrc tcp cbr mix} $cfg(traffic)] < 0} { die "traffic must be tfrc, tcp, cbr or mix" }
if {[lsearch -exact {uniform bursty none} $cfg(loss)] < 0} { die "loss must be uniform, bursty or none" }
if {[lsearch -exact {link queue} $cfg(emplace)] < 0} { die "emplace must be link or queue" }
if {[lsearch -exact {none expoo} $cfg(cross)] < 0} { die "cross must be none or expoo" }
foreach k {rate duration cbr_share warmup burst bad_loss good_loss cross_share reorder reorder_delay shared_delay} {
    if {![string is double -strict $cfg($k)] || $cfg($k) < 0} { die "$k must be a non-negative number" }
}
if {![string is integer -strict $cfg(seed)] || $cfg(seed) < 0} { die "seed must be an integer >= 0" }
if {$cfg(rate) >= 1} { die "rate must be < 1" }
if {$cfg(reorder) >= 1} { die "reorder must be < 1" }

set N $cfg(flows)

# Per-flow traffic type list: explicit `types=` wins; otherwise derived from
# `traffic`.  mix = TFRC flows 1..N-1 plus one TCP NewReno flow (flow N), i.e.
# TFRC competing with TCP (Sec. VI-C/D "competition").
if {$cfg(types) ne ""} {
    set ftype [split $cfg(types) ,]
    if {[llength $ftype] != $N} { die "types= must list exactly flows=$N entries" }
    foreach t $ftype {
        if {[lsearch -exact {tfrc tcp cbr} $t] < 0} { die "bad flow type '$t' in types=" }
    }
} elseif {$cfg(traffic) eq "mix"} {
    if {$N < 2} { die "traffic=mix needs flows >= 2" }
    set ftype {}
    for {set i 1} {$i < $N} {incr i} { lappend ftype tfrc }
    lappend ftype tcp
} else {
    set ftype {}
    for {set i 1} {$i <= $N} {incr i} { lappend ftype $cfg(traffic) }
}

# ----------------------------------------------------------------------------
# 2. Network parameters (Sec. V-C); bandwidths in kb/s
# ----------------------------------------------------------------------------
set PKT        762          ;# bytes on the wire for every data packet
set RATE_LAN   10000        ;# 10 Mb/s
set DELAY_LAN  1ms
set RATE_WLAST 150          ;# wireless last hop (WLH)
set DELAY_WLAST 10ms
set DELAY_SHARED $cfg(shared_delay)   ;# delay_shared = delay_wshared = 20 ms (Sec. V-C), the default

if {$cfg(topology) eq "wlh"} {
    if {$N == 1} {
        set RATE_SHARED 300     ;# ~2x the wireless link: wireless is bottleneck
    } else {
        set RATE_SHARED [expr {($N > 2 ? $N : 2) * 130}]
    }
    # Fair share of the bottleneck for one flow (used for CBR rates).
    set per_flow [expr {min($RATE_WLAST, double($RATE_SHARED) / $N)}]
} else {
    set RATE_SHARED [expr {$N == 1 ? 800 : 1600}]
    set per_flow [expr {double($RATE_SHARED) / $N}]
}

# Queue size rule of Sec. V-C: max(bandwidth / 60 kb/s, 6) packets.
proc qlimit {kbps} {
    set q [expr {int($kbps / 60)}]
    return [expr {$q > 6 ? $q : 6}]
}

# ----------------------------------------------------------------------------
# 3. Simulator, trace, random number streams
# ----------------------------------------------------------------------------
set ns [new Simulator]
set tracefd [open $cfg(out) w]
$ns trace-all $tracefd          ;# must precede link creation
set emfd ""
if {$cfg(emtrace) ne ""} {
    set emfd [open $cfg(emtrace) w]
}

# Seeding.  Seeding an RNG with small integers gives strongly correlated
# streams in ns-2 (MRG32k3a seeded with k, k+1, ...), so instead every random
# object gets its own `new RNG` (independent streams, created in a fixed
# order) and the replication number `seed` selects the substream: each stream
# is advanced `seed` times with next-substream.  Same seed -> identical run.
proc new_rng {} {
    global cfg
    set r [new RNG]
    for {set i 0} {$i < $cfg(seed)} {incr i} { $r next-substream }
    return $r
}
global defaultRNG
for {set i 0} {$i < $cfg(seed)} {incr i} { $defaultRNG next-substream }
set startrng [new_rng]          ;# flow start times

# ----------------------------------------------------------------------------
# 4. Topology (Sec. V-A, Fig. 5 / Fig. 6)
# ----------------------------------------------------------------------------
proc dlink {a b kbps delay} {
    global ns
    $ns duplex-link $a $b ${kbps}kb $delay DropTail
    $ns queue-limit $a $b [qlimit $kbps]
    $ns queue-limit $b $a [qlimit $kbps]
}

set R1 [$ns node]
set R2 [$ns node]
for {set i 1} {$i <= $N} {incr i} { set S($i) [$ns node] }
for {set i 1} {$i <= $N} {incr i} { set D($i) [$ns node] }

for {set i 1} {$i <= $N} {incr i} { dlink $S($i) $R1 $RATE_LAN $DELAY_LAN }
dlink $R1 $R2 $RATE_SHARED $DELAY_SHARED

# wireless: list of {from to} pairs that get a forward-direction error model
set wireless {}
if {$cfg(topology) eq "wlh"} {
    for {set i 1} {$i <= $N} {incr i} {
        dlink $R2 $D($i) $RATE_WLAST $DELAY_WLAST
        lappend wireless [list $R2 $D($i)]
    }
} else {
    for {set i 1} {$i <= $N} {incr i} { dlink $R2 $D($i) $RATE_LAN $DELAY_LAN }
    lappend wireless [list $R1 $R2]
}

if {$cfg(warmup) > 0} {
    set W [$ns node]
    dlink $W $R1 $RATE_LAN $DELAY_LAN
}
if {$cfg(cross) eq "expoo"} {
    set X [$ns node]
    dlink $X $R1 $RATE_LAN $DELAY_LAN
}

# ----------------------------------------------------------------------------
# 5. Wireless error models (Sec. V-B), forward direction only
# ----------------------------------------------------------------------------
# Bernoulli (uniform) per-packet model with its own random stream.
proc uniform_em {rate} {
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $rate
    set rv [new RandomVariable/Uniform]
    $rv use-rng [new_rng]
    $em ranvar $rv
    return $em
}

# Gilbert-Elliott: ErrorModel/MultiState with per-packet ("pkt") state
# transitions.  ns-2.35's stock MultiState draws its transitions from the
# global defaultRNG (Tcl `uniform`); this subclass uses a private stream so
# that every wireless link has an independent, reproducible loss process.
Class ErrorModel/MultiState/GE -superclass ErrorModel/MultiState
ErrorModel/MultiState/GE instproc set-rng {rng} {
    $self set ge_rng_ $rng
}
ErrorModel/MultiState/GE instproc transition {} {
    $self instvar states_ transmatrix_ curstate_ nstates_ ge_rng_
    set i [lsearch -exact $states_ $curstate_]
    set trans [lindex $transmatrix_ $i]
    set p [$ge_rng_ uniform 0 1]
    set total 0
    for {set j 0} {$j < $nstates_} {incr j} {
        set total [expr {$total + [lindex $trans $j]}]
        if {$p <= $total} { return [lindex $states_ $j] }
    }
    return [lindex $states_ end]
}

# Mean bad-state sojourn = burst packets (exit probability q = 1/burst);
# entry probability p chosen so that the stationary loss rate
#   pi_bad*bad_loss + (1-pi_bad)*good_loss = rate,  pi_bad = p/(p+q).
proc bursty_em {rate} {
    global cfg
    set q [expr {1.0 / $cfg(burst)}]
    set pg $cfg(good_loss)
    set pb $cfg(bad_loss)
    if {$pb <= $pg || $rate <= $pg || $rate >= $pb} {
        die "bursty: need good_loss < rate < bad_loss"
    }
    set pibad [expr {($rate - $pg) / ($pb - $pg)}]
    set p [expr {$q * $pibad / (1.0 - $pibad)}]
    if {$q > 1 || $p > 1} { die "bursty: burst must be >= 1 and rate feasible" }
    set good [uniform_em $pg]
    set bad  [uniform_em $pb]
    set trans [list [list [expr {1.0 - $p}] $p] [list $q [expr {1.0 - $q}]]]
    set em [new ErrorModel/MultiState/GE [list $good $bad] {0 0} $trans \
                pkt pkt 2 $good]
    $em set-rng [new_rng]
    $em unit pkt
    return $em
}

set emcount 0
if {$cfg(loss) ne "none" && $cfg(rate) > 0} {
    foreach pair $wireless {
        lassign $pair from to
        if {$cfg(loss) eq "uniform"} {
            set em [uniform_em $cfg(rate)]
        } else {
            set em [bursty_em $cfg(rate)]
        }
        if {$cfg(emplace) eq "link"} {
            # AFTER queue+link (SimpleLink insert-linkloss: between the
            # DelayLink and the TTL checker/receive trace): an erroneous
            # packet has + and - on the link, then `d` at the time its `r`
            # would have been logged (after transmission + propagation).
            $ns link-lossmodel $em $from $to
        } else {
            # BEFORE the queue (SimpleLink errormodule, head of the link,
            # ahead of the enqueue trace): `d` with no earlier event of that
            # packet on the link, at the time it reaches the link.
            $ns lossmodel $em $from $to
        }
        if {$cfg(lda) ne ""} {
            set oracle [new Connector/LDAOracle]
            $oracle target [$em drop-target]
            $em drop-target $oracle
        }
        if {$emfd ne ""} {
            # Splice a Trace/Drop between the error model and the link's
            # drop head: every packet the error model drops is written to
            # the emtrace file, then continues to the normal drop trace.
            set lnk [$ns link $from $to]
            set et [$ns create-trace Drop $emfd $from $to]
            $et target [$lnk set drophead_]
            if {$cfg(lda) ne ""} { $oracle target $et } else { $em drop-target $et }
        }
        incr emcount
    }
}

# Reordering: hold back a share of the packets that left each wireless link,
# behind its error model when that sits on the link (emplace=link), so that it acts
# on the packets the radio did not drop, at the time they would have arrived.
# Created after the error models: their random streams stay those of reorder=0.
if {$cfg(reorder) > 0} {
    foreach pair $wireless {
        lassign $pair from to
        set rm [uniform_em $cfg(reorder)]
        $rm set delay_pkt_ true
        $rm set delay_ $cfg(reorder_delay)
        set lnk [$ns link $from $to]
        set before [$lnk link]
        if {[llength [$lnk info vars link_errmodule_]]} { set before [$lnk set link_errmodule_] }
        $rm target [$before target]
        $before target $rm
    }
}

# ----------------------------------------------------------------------------
# 6. Traffic (fid_ i for flow i)
# ----------------------------------------------------------------------------
set ldasinks {}     ;# the LDA receivers, whose decision logs finish writes
set t_start $cfg(warmup)
set t_stop  [expr {$cfg(warmup) + $cfg(duration)}]
set t_end   [expr {$t_stop + 2.0}]    ;# drain time for packets in flight

for {set i 1} {$i <= $N} {incr i} {
    set type [lindex $ftype [expr {$i - 1}]]
    # Starting order within 2 s after warm-up (Sec. V-C "Test Conditions").
    set st [expr {$t_start + [$startrng uniform 0 2]}]
    switch -- $type {
        tfrc {
            # TFRC needs no application; packetSize_ 730 + 32-byte header
            # (useHeaders_ true) = 762 bytes on the wire.
            set src [new Agent/TFRC]
            $src set packetSize_ 730
            $src set fid_ $i
            if {$cfg(lda) eq ""} {
                set dst [new Agent/TFRCSink]
            } else {
                set dst [new Agent/TFRCSink/LDA]
                $dst set lda_ $cfg(lda)
                $dst set log_ $cfg(ldalog)
                $dst set reportlog_ $cfg(ldareports)
                $dst set wireless_as_received_ $cfg(wireless_as_received)
                foreach {k v} $cfg(ldaparams) { $dst set $k $v }
                lappend ldasinks $dst
            }
            $dst set fid_ $i        ;# feedback (tcpFriendCtl) carries fid i too
            $ns attach-agent $S($i) $src
            $ns attach-agent $D($i) $dst
            $ns connect $src $dst
            $ns at $st "$src start"
            $ns at $t_stop "$src stop"
        }
        tcp {
            # TCP NewReno + FTP; packetSize_ 722 + 40-byte TCP/IP header.
            set src [new Agent/TCP/Newreno]
            $src set packetSize_ [expr {$PKT - 40}]
            $src set window_ $cfg(tcp_window)
            $src set fid_ $i
            set dst [new Agent/TCPSink]
            $dst set fid_ $i        ;# ACKs carry fid i too
            $ns attach-agent $S($i) $src
            $ns attach-agent $D($i) $dst
            $ns connect $src $dst
            set app [new Application/FTP]
            $app attach-agent $src
            $ns at $st "$app start"
            $ns at $t_stop "$app stop"
        }
        cbr {
            # Constant-rate UDP at cbr_share of the flow's bottleneck share;
            # fixed interval (random_ 0): timing independent of losses.
            set src [new Agent/UDP]
            $src set packetSize_ $PKT
            $src set fid_ $i
            set dst [new Agent/Null]
            $ns attach-agent $S($i) $src
            $ns attach-agent $D($i) $dst
            $ns connect $src $dst
            set app [new Application/Traffic/CBR]
            $app set packetSize_ $PKT
            $app set random_ 0
            $app set interval_ [expr {$PKT * 8.0 / ($cfg(cbr_share) * $per_flow * 1000.0)}]
            $app attach-agent $src
            $ns at $st "$app start"
            $ns at $t_stop "$app stop"
        }
    }
}

# Exponential on/off UDP source (ptype exp).
proc expoo_source {node sink fid peak_kbps burst idle} {
    global ns PKT
    set u [new Agent/UDP]
    $u set packetSize_ $PKT
    $u set fid_ $fid
    $ns attach-agent $node $u
    $ns connect $u $sink
    set e [new Application/Traffic/Exponential]
    $e set packetSize_ $PKT
    $e set burst_time_ $burst
    $e set idle_time_ $idle
    $e set rate_ [expr {$peak_kbps * 1000.0}]
    $e attach-agent $u
    $e use-rng [new_rng]
    return $e
}

# Warm-up (Sec. V-C "Random Traffic"): two Traffic/Expoo agents load the
# shared link from t=0, stopping within 2 s after the flows start.  Shortened
# from the paper's 20 s (default 5 s) to keep traces small.  Sink at R2.
if {$cfg(warmup) > 0} {
    set wsink [new Agent/Null]
    $ns attach-agent $R2 $wsink
    for {set k 0} {$k < 2} {incr k} {
        set e [expoo_source $W $wsink 100 [expr {0.5 * $RATE_SHARED}] 0.5 0.5]
        $ns at 0.0 "$e start"
        $ns at [expr {$t_start + [$startrng uniform 0 2]}] "$e stop"
    }
}

# Optional cross traffic (cross=expoo): one Expoo source X -> D_1 with peak
# rate cross_share * per-flow bottleneck (on 0.5 s / off 2 s on average),
# during the whole measurement; it makes the flow-1 bottleneck queue overflow
# now and then even when flow 1 is a CBR below capacity.
if {$cfg(cross) eq "expoo"} {
    set xsink [new Agent/Null]
    $ns attach-agent $D(1) $xsink
    set e [expoo_source $X $xsink 101 [expr {$cfg(cross_share) * $per_flow}] 0.5 2.0]
    $ns at $t_start "$e start"
    $ns at $t_stop "$e stop"
}

# ----------------------------------------------------------------------------
# 7. Run
# ----------------------------------------------------------------------------
proc finish {} {
    global ns tracefd emfd ldasinks
    foreach s $ldasinks { $s flush-log }   ;# the decisions on the losses (tfrc-lda-sink.h)
    $ns flush-trace
    close $tracefd
    if {$emfd ne ""} { close $emfd }
    exit 0
}
$ns at $t_end "finish"

puts [format "scenario: topology=%s flows=%d types=%s loss=%s rate=%.3f emplace=%s duration=%s warmup=%s seed=%d shared=%skb errmodels=%d out=%s" \
          $cfg(topology) $N [join $ftype ,] $cfg(loss) $cfg(rate) $cfg(emplace) \
          $cfg(duration) $cfg(warmup) $cfg(seed) $RATE_SHARED $emcount $cfg(out)]
$ns run
