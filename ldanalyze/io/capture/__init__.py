"""Packet captures, along the data flow: the pcap/pcapng container walk and ``read_capture``
(``pcap``), link and network layers (``linklayer``), payload kinds and send clocks
(``payload``), and chains of captures along a path (``vantage``)."""
