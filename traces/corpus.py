"""The labelled corpus of the learned LDA: traces of every family the project can simulate or run,
each loss with its cause, varied on purpose (what changes the answer: distance and mobility,
retry limits, bottleneck rate and queue, the ratio of congestion to radio losses).

Families (``FAMILIES``; ``small=True`` keeps a few fixed cases of each, for CI). The ns-2
topologies are a grid; the others are drawn at random per family and seed (issue #48: what a
real deployment varies and a grid held fixed; ``ns3_cases``, ``manet_cases``: the same seeds
give the same corpus):

* ``ns2-wlh``, ``ns2-wb``: paper 000's ns-2 topologies (``ldanalyze/data/paper000.tcl``) with
  TFRC, TCP and constant-rate UDP, 1-16 flows, uniform and bursty wireless loss;
* ``ns2-manet``: ns-2's mobile ad hoc scenario (``traces/wireless/manet.tcl``): 802.11 DCF on
  every hop with a frame error rate (0.02-0.2) at every radio and MAC retry limits 2-7 (a third
  link layer that retransmits, beside ns-3's Wi-Fi and LTE), DSDV or AODV routes over 6-30
  nodes moving at up to 1-10 m/s on 300-1000 m by 200-600 m (10 to 500 nodes per km²), 1-3 CBR
  and 0-2 TCP flows that overflow the interface queues;
* ``ns3-wifi``: the ns-3 Wi-Fi scenario (``traces/ns3/wifi.cc``): a wired bottleneck (0.6-1.5
  times the measured flows' rate, a FIFO of 5-100 packets) before an access point, 1-4
  stations 3-14 m apart, the last walking away and back at 0.5-8 m/s; 802.11a, g, n or ac
  (n and ac with A-MPDU), rate control AARF, Minstrel (Minstrel-HT), Ideal or a constant rate,
  MAC retry limits 1-7 (a link layer that retransmits: radio trouble becomes delay before it
  becomes loss), QoS (WMM) MACs or not (n and ac always), the AP's MAC queue ns-3's own or
  10-200 packets, a frame error rate (0.01-0.1) in 30 % of the cases, unmeasured cross traffic
  (UDP 0.3-4 Mbit/s or TCP, down through the bottleneck or up) in 60 %, flows of 1000-byte
  packets every 3-8 ms. Each station is read from its own monitor-mode (radiotap) capture, its
  flow only, so that the radio's evidence (``unseen_on_air``) is there, as it is for
  ns3-policed; with non-QoS MACs the learned LDA leaves it out (``packets.AIR_COLUMNS``);
* ``ns3-lte``: the ns-3 LTE scenario (``traces/ns3/lte.cc``): HARQ, RLC UM or AM, the eNB's
  proportional-fair, round-robin, priority-set or TD max-throughput scheduler, 2-4 UEs 30-90 m
  apart, the last walking at 5-40 m/s, the eNB's buffer 8-60 kB, a bottleneck of 0.6-1.5 times
  the flows' rate with a FIFO of 10-60 packets;
* ``ns3-policed``: the Wi-Fi scenario with a token-bucket policer instead of the bottleneck
  queue (``--policer``: 0.5-0.9 of the flow's rate, a bucket of 1.5-15 kB), one subscriber
  walking at 2-10 m/s, the radio drawn as for ns3-wifi;
* ``ns3-heldout`` (evaluation only, ``HELD_OUT_FAMILIES``: never trained on, issue #48): the
  held-out generator ``traces/ns3/heldout.cc``, written apart from the training scenarios:
  802.11n/ac with Minstrel-HT, block ack and A-MPDU (or none), time-correlated Rayleigh fading,
  a faster wired bottleneck with longer queues, TCP and bursty UDP cross traffic, a competing
  uplink; a station walking away, far static stations, pairs at middle distance, each drawn at
  random (seeded) from ranges unlike the training ones (``heldout_cases``);
* ``lab``: the network-namespace lab (real kernel, iperf3; random drop as the radio, a tbf
  bottleneck that steps down and up); only as root;
* ``lab-media``: the same lab carrying real media stacks: GStreamer's RTP audio (G.711) and
  video (VP8 with FEC and retransmission), and aiortc's WebRTC video; only as root.

Everything is cached: ns-2 traces by ``ldanalyze.simulation`` in the given folder, ns-3 runs by
``traces/ns3/scenario.py`` (``$LDANALYZE_NS3_CACHE``), so building the corpus twice simulates
nothing the second time. ``items(folder, families, small, jobs)`` yields ``(family, name,
Labelled)`` for ``ldanalyze.learn``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import itertools
import pathlib
import random
import sys
import warnings
import zlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze import learn  # noqa: E402
from ldanalyze.errors import TraceError  # noqa: E402
from ldanalyze.io import read_trace  # noqa: E402
from ldanalyze.io.capture.fields import FieldSpec  # noqa: E402
from ldanalyze.io.capture.vantage import read_vantages  # noqa: E402
from ldanalyze.io.labels import apply_labels  # noqa: E402
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab  # noqa: E402
from ldanalyze.reproduce import CBR_SHARE  # noqa: E402
from ldanalyze.simulation import run_ns2, script_key, simulate  # noqa: E402

_spec = importlib.util.spec_from_file_location("ns3_scenario", ROOT / "traces" / "ns3" / "scenario.py")
scenario = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenario)

SEQ_TS = FieldSpec.parse("seq=0:4,time=4:8:ns")  # ns-3's SeqTsHeader


def ns2_cases(topology: str, small: bool, seeds: tuple[int, ...]) -> list[dict]:
    """Paper 000's scenarios on one topology (small: 4 of them, on the first seed)."""
    cases = [
        {"traffic": traffic, **({"cbr_share": CBR_SHARE} if traffic == "cbr" else {}), "topology": topology,
         "flows": flows, "loss": loss, "rate": rate, "seed": seed, "duration": 60 if small else 120, "warmup": 10}
        for traffic, flows, (loss, rate), seed in itertools.product(
            ("tfrc", "tcp", "cbr"), (1, 2, 4, 8, 16),
            (("uniform", 0.031), ("uniform", 0.078), ("bursty", 0.078)), seeds)
    ]  # fmt: skip
    return (
        [c for c in cases if c["seed"] == seeds[0] and c["flows"] in (2, 8) and c["loss"] == "uniform"][:4]
        if small
        else cases
    )


MANET = ROOT / "traces" / "wireless" / "manet.tcl"
MANET_CASES = 40  # per seed


def _draw(family: str, seed: int) -> np.random.Generator:
    """The random stream of one family on one seed: the same family and seed give the same cases,
    whatever other seeds or families are built with them."""
    return np.random.default_rng([zlib.crc32(family.encode()), seed])


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def manet_cases(small: bool, seeds: tuple[int, ...]) -> list[dict]:
    """manet.tcl's options drawn at random, ``MANET_CASES`` per seed: routing (DSDV, AODV), 6-30
    nodes on 300-1000 m by 200-600 m (densities of 10 to 500 nodes per km²), frame error rate
    0.02-0.2, retry limit 2-7, 1-3 CBR flows at 0.01-0.04 s per packet and 0-2 TCP flows, top
    speed 1-10 m/s (small: 3 fixed cases on the first seed)."""
    if small:
        return [
            {"rp": rp, "per": per, "retries": retries, "interval": 0.01, "speed": 1, "seed": seeds[0], "nodes": 8,
             "x": 700, "y": 300, "pause": 20, "cbr": 2, "tcp": 1, "duration": 60}
            for rp, per, retries in (("DSDV", 0.05, 2), ("DSDV", 0.15, 4), ("AODV", 0.05, 7))
        ]  # fmt: skip
    cases = []
    for seed in seeds:
        rng = _draw("ns2-manet", seed)
        for _ in range(MANET_CASES):
            nodes = int(rng.integers(6, 31))
            cbr = int(rng.integers(1, 4))
            cases.append({
                "rp": str(rng.choice(["DSDV", "AODV"])), "per": round(rng.uniform(0.02, 0.2), 3),
                "retries": int(rng.integers(2, 8)), "interval": round(_log_uniform(rng, 0.01, 0.04), 4),
                "speed": round(rng.uniform(1, 10), 1), "seed": seed, "nodes": nodes,
                "x": int(rng.integers(300, 1001)), "y": int(rng.integers(200, 601)), "pause": 20,
                "cbr": cbr, "tcp": min(int(rng.integers(0, 3)), nodes // 2 - cbr), "duration": 60,
            })  # fmt: skip
    return cases


def _analysed_manet(case: dict, folder: pathlib.Path):
    name = "manet_{rp}_n{nodes}_{x}x{y}_per{per}_r{retries}_i{interval}_v{speed}_s{seed}".format(**case)
    path = folder / f"{name}_{script_key(MANET, case)}.tr.gz"
    if not path.exists():
        run_ns2(MANET, case, path, timeout=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return path.name, case, learn.analyse(str(path))


NS3_CASES = {"ns3-wifi": 64, "ns3-lte": 32, "ns3-policed": 16}  # per seed (ns3_cases: the budget)
UDP_IP = 28  # bytes of IPv4 and UDP headers on each measured packet


def _wifi_radio(rng: np.random.Generator) -> dict:
    """A Wi-Fi network's radio: standard, rate control (the ones it has), QoS, retry limit."""
    standard = str(rng.choice(["a", "g", "n", "ac"]))
    ht = standard in ("n", "ac")
    managers = ["minstrel", "ideal", "constant"] + ([] if ht else ["aarf"])
    return {"standard": standard, "manager": str(rng.choice(managers)), "qos": int(ht or rng.random() < 0.5),
            "retries": int(rng.integers(1, 8))}  # fmt: skip


def _wifi_cross(rng: np.random.Generator) -> str:
    """Unmeasured cross traffic through the AP: none (40 %), UDP down or up at 0.3-4 Mbit/s, or TCP."""
    kind = str(rng.choice(["none", "udp-down", "udp-up", "tcp-down", "tcp-up"], p=[0.4, 0.15, 0.15, 0.15, 0.15]))
    return f"{kind}:{int(_log_uniform(rng, 300, 4000))}kbps" if kind.startswith("udp") else kind


def _wifi_case(rng: np.random.Generator, seed: int) -> dict:
    radio = _wifi_radio(rng)
    stations = int(rng.integers(1, 5))
    interval = round(rng.uniform(0.003, 0.008), 4)
    offered = stations * 8 * (1000 + UDP_IP) / interval / 1e3  # kbit/s, the measured flows together
    return {
        **radio, "duration": 12, "stations": stations, "interval": interval,
        "spacing": round(rng.uniform(3, 9 if radio["standard"] == "ac" else 14), 1),  # 80 MHz: a shorter reach
        "speed": round(rng.uniform(0.5, 8), 1), "bottleneck": f"{int(offered * rng.uniform(0.6, 1.5))}kbps",
        "queue": int(_log_uniform(rng, 5, 100)), "mac_queue": 0 if rng.random() < 0.5 else int(_log_uniform(rng, 10, 200)),
        "per": 0.0 if rng.random() < 0.7 else round(rng.uniform(0.01, 0.1), 3), "cross": _wifi_cross(rng), "seed": seed,
    }  # fmt: skip


def _policed_case(rng: np.random.Generator, seed: int) -> dict:
    interval = round(rng.uniform(0.003, 0.008), 4)
    offered = 8 * (1000 + UDP_IP) / interval / 1e3
    return {
        **_wifi_radio(rng), "duration": 12, "stations": 1, "interval": interval, "speed": round(rng.uniform(2, 10), 1),
        "policer": f"{int(offered * rng.uniform(0.5, 0.9))}kbps", "policer_burst": int(_log_uniform(rng, 1500, 15000)),
        "seed": seed,
    }  # fmt: skip


def _lte_case(rng: np.random.Generator, seed: int) -> dict:
    ues = int(rng.integers(2, 5))
    interval = round(rng.uniform(0.004, 0.008), 4)
    offered = ues * 8 * (600 + UDP_IP) / interval / 1e3
    return {
        "duration": 10, "ues": ues, "interval": interval, "spacing": round(rng.uniform(30, 90)),
        "bottleneck": f"{int(offered * rng.uniform(0.6, 1.5))}kbps", "queue": int(_log_uniform(rng, 10, 60)),
        "buffer": int(_log_uniform(rng, 8000, 60000)), "speed": round(rng.uniform(5, 40), 1),
        "rlc": str(rng.choice(["um", "am"])), "scheduler": str(rng.choice(["pf", "rr", "tdmt", "pss"])), "seed": seed,
    }  # fmt: skip


def _small(family: str, seeds: tuple[int, ...]) -> list[tuple[str, dict]]:
    """CI's three quick cases of an ns-3 family (corners of the grid the draw replaced)."""
    first, last = seeds[0], seeds[-1]
    if family == "ns3-wifi":
        return [("wifi", {"duration": 12, "stations": 3, "retries": r, "bottleneck": "4Mbps", "speed": 2.0,
                          "seed": first, "spacing": 10, "qos": 1}) for r in (1, 4, 7)]  # fmt: skip
    if family == "ns3-lte":
        return [("lte", {"duration": 10, "ues": 3, "bottleneck": b, "buffer": 10000, "speed": 15.0, "seed": first})
                for b in ("1500kbps", "2500kbps", "4000kbps")]  # fmt: skip
    return [("wifi", {"duration": 12, "stations": 1, "policer": p, "policer_burst": burst, "speed": v, "seed": s,
                      "qos": 1}) for p, burst, v, s in
            (("1200kbps", 3000, 4.0, first), ("1200kbps", 12000, 4.0, last), ("1600kbps", 3000, 8.0, first))]  # fmt: skip


def ns3_cases(family: str, small: bool, seeds: tuple[int, ...]) -> list[tuple[str, dict]]:
    """(scenario, parameters) of one ns-3 family, ``NS3_CASES[family]`` drawn at random per seed
    (``_draw``) over what a deployment varies (module docstring; small: 3 fixed cases, ``_small``).

    The budget (issue #48: the training corpus, seeds 11 and 12, every family but the lab ones,
    from an empty cache in at most about 45 minutes with ``--jobs 2`` on this 2-core machine).
    Measured wall time per case, simulation and ``learn.analyse`` of each receiver together, two
    cases at a time (one per core): ns-2 WLH/WB 3.7-16.6 s (mean of 6: 7.3 s), ns2-manet 1.9-7.4
    s (mean of 7: 3.9 s), ns3-wifi 0.9-23.6 s (mean of 24: 6.8 s; 4 stations, cross traffic and
    802.11ac are the slow ones), ns3-lte 3.1-17.3 s (mean of 12: 7.0 s), ns3-policed 2.3-4.1 s
    (mean of 4: 2.9 s). Two seeds: 180 ns-2 cases x 7.3 = 1310 s, 80 MANET x 3.9 = 310 s, 128
    Wi-Fi x 6.8 = 870 s, 64 LTE x 7.0 = 450 s, 32 policed x 2.9 = 90 s: about 3030 s of one core,
    25 minutes on two, which leaves room for a slower draw and a machine shared with other work.
    """
    if small:
        return _small(family, seeds)
    draw = {"ns3-wifi": ("wifi", _wifi_case), "ns3-lte": ("lte", _lte_case), "ns3-policed": ("wifi", _policed_case)}
    if family not in draw:
        raise ValueError(family)
    name, case = draw[family]
    cases = []
    for seed in seeds:
        rng = _draw(family, seed)
        cases += [(name, case(rng, seed)) for _ in range(NS3_CASES[family])]
    return cases


def heldout_cases(small: bool, seeds: tuple[int, ...]) -> list[tuple[str, dict]]:
    """``ns3-heldout``'s runs of ``traces/ns3/heldout.cc``: per seed, three of each kind (a
    station walking away, a far static one, a pair at middle distance) drawn at random from
    ranges the training families never take (bottleneck 12-30 Mbps, 20-40 ms, queues of 30-150
    packets; a 802.11n/ac radio with Minstrel-HT; TCP and on-off UDP cross traffic; 300-1400-byte
    packets every 3-8 ms). small: one walking and one far run, 8 s each."""
    cases = []
    for seed in seeds:
        draw = random.Random(f"ns3-heldout/{seed}")  # string seeds draw the same on every platform
        for k, kind in enumerate(("walk", "far", "pair") * 3):
            rate = draw.choice((12, 15, 20, 25, 30))
            size, interval = draw.choice(((300, 0.003), (600, 0.005), (1000, 0.006), (1400, 0.008)))
            params = {
                "duration": 8 if small else 12, "standard": draw.choice(("n", "ac")), "width": draw.choice((20, 40)),
                "ampdu": draw.choice((65535, 0)), "retries": draw.choice((2, 3)), "doppler": draw.choice((5, 10, 20)),
                "bottleneck": f"{rate}Mbps", "delay": draw.choice((20, 30, 40)), "queue": draw.choice((30, 50, 80, 150)),
                "apqueue": draw.choice((30, 60, 100)), "tcp": draw.choice((1, 2, 3)),
                "burst": draw.choice(("0", f"{round(rate * 1.5)}Mbps", f"{rate * 2}Mbps")),
                "uplink": draw.choice(("0", "3Mbps")), "size": size, "interval": interval, "seed": 100 * seed + k,
            }  # fmt: skip
            if kind == "walk":
                params.update(stations=1, distance=round(draw.uniform(20, 28), 1), speed=round(draw.uniform(3.5, 5), 1))
            elif kind == "far":
                params.update(stations=1, distance=round(draw.uniform(60, 80), 1), speed=0.0)
            else:
                params.update(stations=2, distance=round(draw.uniform(30, 45), 1),
                              spacing=round(draw.uniform(12, 22), 1), speed=draw.choice((0.0, 1.5)))  # fmt: skip
            cases.append(("heldout", params))
    return [cases[0], cases[1]] if small else cases


def _analysed_ns2(case: dict, folder: pathlib.Path):
    path, _ = simulate(case, folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return path.name, case, learn.analyse(str(path))


MONITORED = ("wifi", "heldout")  # scenarios whose stations write their own monitor-mode capture


def _analysed_ns3(case: tuple[str, dict]) -> list:
    name, params = case
    try:
        out = scenario.run(name, **params)
    except scenario.ScenarioError as error:  # one drawn case ns-3 cannot run is no reason to lose the corpus
        print(f"corpus: {name} {params} left out: {error}", file=sys.stderr)
        return []
    count, prefix = scenario.RECEIVERS[name]
    items = []
    for i in range(params.get(count, scenario.DEFAULTS[name][count])):
        # a Wi-Fi station's own monitor-mode capture: its flow with the radio's evidence
        # (802.11 sequence numbers), as a user holding one would read it
        capture = out / (f"{prefix}-{i}-radiotap.pcap" if name in MONITORED else f"{prefix}-{i}.pcap")
        labels = out / f"{prefix}-{i}.labels.csv"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                trace = read_trace(capture, payload=SEQ_TS, skew="keep")  # one simulator clock
                if name in MONITORED:
                    trace = _own_flows(trace, read_trace(out / f"{prefix}-{i}.pcap", payload=SEQ_TS, skew="keep"))
            except TraceError as error:  # a receiver the radio never reached: nothing to learn from
                print(f"corpus: {name} {params}: {prefix}-{i} left out: {error.message}", file=sys.stderr)
                continue
            trace = apply_labels(trace, labels)
            items.append((f"{out.name}/{prefix}-{i}", {"scenario": name, **params}, learn.analyse(trace)))
    return items


def _own_flows(trace, ip_capture):
    """The flows of ``trace`` that the station's own IP capture holds: a monitor-mode capture
    also holds the frames to the other stations that its radio decoded, whose causes no labels
    file gives."""
    own = set(ip_capture.packets["flow"].astype(str))
    packets = trace.packets
    return dataclasses.replace(trace, packets=packets[packets["flow"].astype(str).isin(own)].reset_index(drop=True))


def _lab_configs(family: str, small: bool) -> list:
    """The lab's runs of one family: iperf3 (``lab``) or real media stacks (``lab-media``)."""
    if family == "lab":
        configs = [
            LabConfig(duration_s=10, rate=rate, tbf_rate="3mbit", wireless_drop_percent=loss,
                      tbf_steps=((2.0, low), (5.0, "3mbit"), (7.0, low), (8.5, "3mbit")))
            for rate, low, loss in (("1M", "700kbit", 3), ("1M", "800kbit", 5), ("1500k", "1mbit", 2),
                                    ("1500k", "1200kbit", 6), ("800k", "600kbit", 4), ("1200k", "900kbit", 3))
        ]  # fmt: skip
        return configs[:2] if small else configs
    # GStreamer's G.711 audio (85.6 kbit/s on the wire) and VP8 video (with FEC and RTX), aiortc's
    # WebRTC video: r1's random drops as the radio, r2's tbf as the bottleneck
    configs = [
        LabConfig(duration_s=6 if small else 20, traffic="rtp-audio", port=5004, length=172,
                  wireless_drop_percent=loss, tbf_rate=rate, tbf_burst_bytes=1600, tbf_limit_bytes=2000)
        for loss, rate in ((4, "70kbit"), (2, "78kbit"), (6, "74kbit"))
    ] + [
        LabConfig(duration_s=15, traffic="rtp-video", port=5004, wireless_drop_percent=loss, tbf_rate=rate,
                  tbf_burst_bytes=4000, tbf_limit_bytes=12000)
        for loss, rate in ((3, "900kbit"), (5, "700kbit"))
    ] + [
        LabConfig(duration_s=15, traffic="webrtc", wireless_drop_percent=3, tbf_rate="2500kbit",
                  tbf_limit_bytes=20000, tbf_burst_bytes=4000)
    ]  # fmt: skip
    return configs[:1] if small else configs


def _lab_items(family: str, folder: pathlib.Path, small: bool) -> list:
    if lab_unavailable():
        return []
    items = []
    for k, config in enumerate(_lab_configs(family, small)):
        workdir = folder / f"{family}{k}"
        workdir.mkdir(parents=True, exist_ok=True)
        run = run_lab(workdir, config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labelled = learn.analyse(read_vantages(run.chain(), clocks="common"))
        parameters = {"traffic": config.traffic, "tbf_rate": config.tbf_rate,
                      "wireless_drop_percent": config.wireless_drop_percent,
                      **({"rate": config.rate} if config.traffic == "iperf3" else {})}  # fmt: skip
        items.append((f"{family}{k}", parameters, labelled))
    return items


FAMILIES = ("ns2-wlh", "ns2-wb", "ns2-manet", "ns3-wifi", "ns3-lte", "ns3-policed", "lab", "lab-media")
HELD_OUT_FAMILIES = ("ns3-heldout",)  # evaluation only: traces/train_learned refuses them


def items(folder: pathlib.Path, families=FAMILIES, *, small: bool = False, jobs: int = 2, seeds=(1, 2)):
    """``(family, name, parameters, Labelled)`` of every trace of ``families`` (module
    docstring; ``parameters``: the case's simulation parameters), each simulated case run with
    each of ``seeds`` (the bundled model trains on seeds the
    evaluation and the reproduce suite do not use: ``traces/train_learned``)."""
    folder.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(jobs) as pool:
        for family in families:
            if family == "ns2-manet":
                found = pool.map(_analysed_manet, manet_cases(small, tuple(seeds)), itertools.repeat(folder))
            elif family.startswith("ns2-"):
                cases = ns2_cases(family.removeprefix("ns2-"), small, tuple(seeds))
                found = pool.map(_analysed_ns2, cases, itertools.repeat(folder))
            elif family.startswith("ns3-"):
                cases = (heldout_cases if family in HELD_OUT_FAMILIES else functools.partial(ns3_cases, family))(
                    small, tuple(seeds)
                )
                found = itertools.chain.from_iterable(pool.map(_analysed_ns3, cases))
            else:
                found = _lab_items(family, folder, small)
            for name, parameters, labelled in found:
                yield family, name, parameters, labelled
