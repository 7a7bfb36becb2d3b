"""A real four-host network lab in Linux network namespaces: real programs and the kernel's own
drops, captured at every hop, with the kernel's count of each kind of loss.

``run_lab`` builds the chain ``sender -- r1 -- r2 -- receiver`` out of four namespaces joined by
veth pairs, sends one iperf3 UDP flow from sender to receiver, and captures it at every hop:

* **r1** plays the lossy wireless link: an nftables rule in its forward chain drops a random
  share of the flow's data datagrams (``numgen random``), counting what it drops;
* **r2** is the bottleneck (``LabConfig.limiter``): a tbf qdisc on its egress toward the receiver,
  slower than the flow, with a short queue, so it drops by tail drop and counts what it drops
  (``"tbf"``: a shaper, its drops congestion); or a token-bucket **policer** that drops what
  exceeds its rate without queueing, on what arrives from r1: an nftables ``limit rate over ...
  drop`` in r2's forward chain (``"nft-limit"``, or ``"nft-policer"`` counting packets, whose
  bucket is exactly its burst: see ``config.LIMITERS``), counting what it drops (cause
  ``policing``); or nothing (``"none"``).

Besides iperf3 and media, ``traffic="chunks"`` is a chunked TCP download (``chunk_peer.py``: a
server in the sender, TCP cubic, chunks with idle gaps), optionally with cross traffic from r1
through r2 (``cross``); ``io.capture.chain_truth`` reads from the captures where each data
segment the sender sent vanished, and ``traces/sender_grid.py`` runs the grid of issue #44.

The result holds the four pcap files and the kernel's own counts of both kinds of loss, so a
test can check what the analyzer says against ground truth: packets(sender) - packets(r1) is
the wireless loss, packets(r1) - packets(r2) the congestion loss, and packets(r2) ==
packets(receiver).

With ``LabConfig.tunnel`` the sender's and the receiver's traffic to each other travels in a
kernel tunnel between them (``ip link add ovl type vxlan``, ``gre``, ``gretap``, ``ipip`` or
``sit``: see ``TUNNELS``), carried by r1 and r2 as any IP packet: the four captures hold the
kernel's encapsulated packets (the underlay), and two more, on the tunnel device at the sender
(egress) and at the receiver (ingress), the inner packets (the overlay). r1's rule and r2's
limiter act on the outer packets as before: the rule matches the data datagrams inside them.

The lab is quiet apart from the experiment: IPv6 is off before any link comes up (no router or
neighbour solicitations), neighbours are static (no ARP), and the veths are created directly
inside the namespaces, so the host's own network namespace is never touched apart from the
namespace names themselves. Every namespace is deleted again, whatever happens.

Needs root and ``ip``, ``ss``, ``tc`` (iproute2), ``nft``, ``sysctl``, ``iperf3`` and ``tcpdump``:
see ``lab_unavailable``; a tunnel, its kernel driver: see ``tunnel_unavailable``; the media
traffic, GStreamer (``gst-launch-1.0``) or aiortc. Nothing in the package imports the lab.

``config`` holds the lab's shape and the run's parameters and results, ``probes`` what the host
allows, ``namespaces`` builds and removes the network, ``traffic`` and ``captures`` run the
senders and tcpdump in it, ``experiment`` one run (``run_lab``); ``webrtc_peer.py`` is the
script each WebRTC peer runs, ``chunk_peer.py`` the chunked download's server and client.
"""

from .config import LIMITERS, TUNNEL_KEY, TUNNELS, LabConfig, LabRun, Tunnel
from .experiment import run_lab
from .probes import TunnelUnavailable, lab_unavailable, tunnel_unavailable

__all__ = [
    "LIMITERS",
    "TUNNELS",
    "TUNNEL_KEY",
    "LabConfig",
    "LabRun",
    "Tunnel",
    "TunnelUnavailable",
    "lab_unavailable",
    "run_lab",
    "tunnel_unavailable",
]
