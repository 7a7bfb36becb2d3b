"""Packet captures, along the data flow: the pcap/pcapng container walk (``walk``) and
``read_capture`` (``pcap``); one frame decoded (``frame``: its link layer in ``linklayer``, its
tunnels in ``tunnels``, the record and the flow table in ``record``); payload kinds and send
clocks (``payload``); and chains of captures along a path (``vantage``)."""
