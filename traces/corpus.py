"""The labelled corpus of the learned LDA: traces of every family the project can simulate or run,
each loss with its cause, varied on purpose (what changes the answer: distance and mobility,
retry limits, bottleneck rate and queue, the ratio of congestion to radio losses).

Families (``FAMILIES``; ``small=True`` keeps a few cases of each, for CI):

* ``ns2-wlh``, ``ns2-wb``: paper 000's ns-2 topologies (``ldanalyze/data/paper000.tcl``) with
  TFRC, TCP and constant-rate UDP, 1-16 flows, uniform and bursty wireless loss;
* ``ns2-manet``: ns-2's mobile ad hoc scenario (``traces/wireless/manet.tcl``): 802.11 DCF on
  every hop with a frame error rate at every radio and MAC retry limits 2-7 (a third link layer
  that retransmits, beside ns-3's Wi-Fi and LTE), DSDV or AODV routes over moving nodes, CBR
  and TCP flows that overflow the interface queues; congestion-to-radio ratios from about 1:2
  (2 retries) to 300:1 (7 retries);
* ``ns3-wifi``: the ns-3 802.11a scenario (``traces/ns3/wifi.cc``): a wired bottleneck before
  an access point, stations at several distances, one walking away; MAC retry limits 1-7
  (a link layer that retransmits: radio trouble becomes delay before it becomes loss); QoS
  (WMM) MACs, as every 802.11n and later network has, whose 802.11 sequence numbers count per
  receiver and TID; each station read from its own monitor-mode (radiotap) capture, its flow
  only, so that the radio's evidence (``unseen_on_air``) is there, as it is for ns3-policed;
* ``ns3-lte``: the ns-3 LTE scenario (``traces/ns3/lte.cc``): HARQ, RLC UM, the eNB's buffer;
* ``ns3-policed``: the Wi-Fi scenario with a token-bucket policer instead of the bottleneck
  queue (``--policer``), one walking subscriber, QoS MACs (the learned LDA reads the 802.11
  numbers of QoS frames only: ``packets.AIR_COLUMNS``);
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
from concurrent.futures import ProcessPoolExecutor

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


def manet_cases(small: bool, seeds: tuple[int, ...]) -> list[dict]:
    """manet.tcl's options: routing, frame error rate, retry limit, load and speed varied (small:
    3 of them, on the first seed)."""
    cases = [
        {"rp": rp, "per": per, "retries": retries, "interval": interval, "speed": speed, "seed": seed,
         "nodes": 8, "x": 700, "y": 300, "pause": 20, "cbr": 2, "tcp": 1, "duration": 60}
        for rp, per, retries, interval, speed, seed in itertools.product(
            ("DSDV", "AODV"), (0.05, 0.15), (2, 4, 7), (0.01, 0.02), (1, 5), seeds)
    ]  # fmt: skip
    return [c for c in cases if c["seed"] == seeds[0]][::16][:3] if small else cases


def _analysed_manet(case: dict, folder: pathlib.Path):
    name = "manet_{rp}_per{per}_r{retries}_i{interval}_v{speed}_s{seed}".format(**case)
    path = folder / f"{name}_{script_key(MANET, case)}.tr.gz"
    if not path.exists():
        run_ns2(MANET, case, path, timeout=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return path.name, case, learn.analyse(str(path))


def ns3_cases(family: str, small: bool, seeds: tuple[int, ...]) -> list[tuple[str, dict]]:
    """(scenario, parameters) of one ns-3 family: the knobs that move the congestion-to-radio
    ratio (bottleneck rate and queue against the stations' distance, speed and retries)."""
    if family == "ns3-wifi":
        grid = itertools.product((1, 4, 7), ("4Mbps", "6Mbps", "10Mbps"), (2.0, 5.0), seeds)
        cases = [("wifi", {"duration": 12, "stations": 3, "retries": r, "bottleneck": b, "speed": v, "seed": s,
                           "spacing": 10 + 2 * ((s - 1) % 2), "qos": 1}) for r, b, v, s in grid]  # fmt: skip
    elif family == "ns3-lte":
        grid = itertools.product(("1500kbps", "2500kbps", "4000kbps"), (10000, 40000), (15.0, 40.0), seeds)
        cases = [("lte", {"duration": 10, "ues": 3, "bottleneck": b, "buffer": buf, "speed": v, "seed": s})
                 for b, buf, v, s in grid]  # fmt: skip
    elif family == "ns3-policed":
        grid = itertools.product(("1200kbps", "1600kbps"), (3000, 12000), (4.0, 8.0), seeds)
        cases = [("wifi", {"duration": 12, "stations": 1, "policer": p, "policer_burst": burst, "speed": v,
                           "seed": s, "qos": 1}) for p, burst, v, s in grid]  # fmt: skip
    else:
        raise ValueError(family)
    return cases[:: max(1, len(cases) // 3)][:3] if small else cases


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
    out = scenario.run(name, **params)
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
