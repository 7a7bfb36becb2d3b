// heldout.cc -- ns-3 (3.37) evaluation-only Wi-Fi scenario for ldanalyze (issue #48, the held-out
// generator): never trained on, deliberately unlike the training scenario (wifi.cc), with
// per-packet ground truth.
//
//   server ==(point-to-point `bottleneck`, `delay`, FIFO of `queue` packets)== AP (FIFO of `apqueue`)
//       AP ))) measured stations (UDP CBR)   AP ))) a TCP bulk-download station   an uplink station (((
//
// What differs from training (wifi.cc: 802.11a, AARF, log-distance exponent 3 + Nakagami, a FIFO
// of 20 packets behind 4-10 Mbps and 10 ms, CBR flows only, retry limits 1/4/7, no aggregation):
// * 802.11n (`standard` n) or 802.11ac (ac) at 5 GHz, `width` MHz channels, HT/VHT rates chosen by
//   Minstrel-HT, with block ack and A-MPDU aggregation up to `ampdu` bytes (0: none, for 802.11n;
//   an 802.11ac MAC sets up a block-ack agreement all the same, VHT frames being A-MPDUs);
// * a three-slope log-distance loss (exponent 2 to 10 m, 3.5 to 40 m, 4.5 beyond) with Rayleigh
//   fading correlated in time (Jakes, `doppler` Hz: a fade lasts some 1/`doppler` s, long enough
//   to take a frame's every retry), where training draws Nakagami fading afresh for every frame;
// * the wired bottleneck runs at `bottleneck` with a `delay` ms one-way delay and a FIFO of `queue`
//   packets; the AP's own Wi-Fi interface has a FIFO queue disc of `apqueue` packets in front of
//   its MAC queue, a second congestion point when the radio is the slower link;
// * cross traffic: `tcp` TCP bulk downloads (BulkSend, windows above the path's bandwidth-delay
//   product) from the server to a near station share the bottleneck and the AP's air time, so
//   the queue fills and drains in TCP's sawtooth; `burst` (a rate, "0" for none) adds on-off UDP
//   bursts to that station (on 0.4 s, off 1.6 s on average, exponential), episodes of overload;
//   `uplink` ("0" for none) makes a competing station send UDP to the server, contending for air;
// * the measured station 0 stands `distance` m from the AP and walks straight away at `speed`
//   m/s from 2 s on (0: static); station i > 0 stands `distance` + i*`spacing` m away, on
//   another bearing. A measured flow starts at 2 s, or later when its station associates later
//   (a far one may take seconds; the AP would refuse what it is sent before).
// Retries. `retries` sets MaxSsrc and MaxSlrc to `retries` + 1 attempts, but Minstrel-HT keeps its
// own retry chain: MinstrelHtWifiManager::DoNeedRetransmission (3.37 source) returns the
// manager's MaxSsrc/MaxSlrc verdict only until it has initialised a station; afterwards a frame
// gets CountRetries attempts, the sum of the retry counts of its best-throughput, second-best and
// most-reliable rates, each 1 to 7 as many as fit in 6 ms of air time (CalculateRetransmits,
// constants in the source): no attribute bounds it in 3.37. Under a block-ack agreement an
// A-MPDU whose block ack is missed is retried on that chain; an MPDU a block ack reports lost is
// retransmitted until its MAC lifetime (WifiMacQueue MaxDelay, `lifetime` ms) runs out or the
// agreement's window moves past it.
// Each measured station receives one UDP flow from the server whose payload starts with ns-3's
// SeqTsHeader (seq u32, send time u64 ns): UdpClient sends `size`-byte packets every `interval`
// seconds (station i every interval * (1 + 0.017 i)). Neighbour caches are filled beforehand and
// stations never give up their association over missed beacons.
//
// Outputs, in `out` (a folder), as wifi.cc's:
//   sta-<i>.pcap           measured station i's IP packets as received (raw IP)
//   sta-<i>-radiotap.pcap  the frames its radio received (802.11 with radiotap): one record per
//                          MPDU, an A-MPDU's subframes each with the radiotap A-MPDU status; an
//                          MPDU retransmitted after a block ack comes after MPDUs numbered past it
//   sender.pcap            the server's measured packets as its IP layer sent them (raw IP)
//   sta-<i>.labels.csv     flow,seq,cause,detail: each packet sent to station i and never received,
//                          with the first drop traced for it. Congestion: the bottleneck's FIFO
//                          (queue-disc), the AP's FIFO (ap-queue-disc), the MAC queue full
//                          (mac-queue-full), a lifetime run out before the frame was ever sent
//                          (mac-lifetime). Wireless: the retry chain given up (retry-limit), a
//                          lifetime run out after the frame was sent and not acknowledged
//                          (lifetime-retried: its retry bit is set), a block-ack window moved past
//                          a frame sent and not acknowledged (ba-old), the MAC's refusal
//                          (mac-tx-drop). IP: route. A packet given up that reached its station
//                          anyway is not labelled.
//   sent.csv               flow,seq: the ledger of every measured packet the server sent
//   stats.csv              received, labelled, dropped_but_delivered (written last)
// Conservation (traces/ns3/truth.h): every packet of the ledger is received or labelled, never
// both; one neither received nor dropped where traced makes the run fail.
//
// Usage: heldout --duration=S --stations=N --distance=M --spacing=M --speed=V --standard=n|ac
//                --width=MHZ --ampdu=B --retries=R --lifetime=MS --doppler=HZ --bottleneck=RATE
//                --delay=MS --queue=P --apqueue=P --tcp=N --burst=RATE --uplink=RATE --interval=S
//                --size=B --seed=K --out=DIR
#include <cstring>  // before ns-3 3.37's headers: mac64-address.h uses memcmp without it

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/propagation-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include "truth.h"

#include <cmath>

using namespace ns3;

namespace
{
struct Params
{
    double duration = 12;
    uint32_t stations = 1;
    double distance = 20;
    double spacing = 15;
    double speed = 0;
    std::string standard = "n";
    uint32_t width = 20;
    uint32_t ampdu = 65535;
    uint32_t retries = 2;
    uint32_t lifetime = 500;
    double doppler = 15;
    std::string bottleneck = "20Mbps";
    uint32_t delay = 30;
    uint32_t queue = 100;
    uint32_t apqueue = 60;
    uint32_t tcp = 1;
    std::string uplink = "0";
    std::string burst = "0";
    double interval = 0.003;
    uint32_t size = 1200;
    uint32_t seed = 1;
    std::string out = ".";
};

const double START = 2.0; // seconds: measured traffic starts (later for a station associating later)

// the IP datagram inside an 802.11 data MPDU's body (LLC/SNAP stripped), or nullptr
Ptr<Packet> Datagram(Ptr<const WifiMpdu> mpdu)
{
    if (!mpdu->GetHeader().IsData())
    {
        return nullptr;
    }
    Ptr<Packet> body = mpdu->GetPacket()->Copy();
    LlcSnapHeader snap;
    if (body->RemoveHeader(snap) == 0 || snap.GetType() != 0x0800)
    {
        return nullptr;
    }
    return body;
}

void OnMpduDropped(WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
{
    static const std::map<WifiMacDropReason, std::pair<const char*, const char*>> causeOf = {
        {WIFI_MAC_DROP_REACHED_RETRY_LIMIT, {"wireless", "retry-limit"}},
        {WIFI_MAC_DROP_QOS_OLD_PACKET, {"wireless", "ba-old"}},
        {WIFI_MAC_DROP_FAILED_ENQUEUE, {"congestion", "mac-queue-full"}},
        {WIFI_MAC_DROP_EXPIRED_LIFETIME, {"congestion", "mac-lifetime"}},
    };
    Ptr<Packet> datagram = Datagram(mpdu);
    if (!datagram)
    {
        return;
    }
    if (reason == WIFI_MAC_DROP_EXPIRED_LIFETIME && mpdu->GetHeader().IsRetry())
    {
        // sent and not acknowledged (its retry bit set for the next attempt): the radio kept failing it
        truth::Drop(datagram, "wireless", "lifetime-retried");
        return;
    }
    const auto& [cause, detail] = causeOf.at(reason);
    truth::Drop(datagram, cause, detail);
}

void OnMacQueueExpired(Ptr<const WifiMpdu> mpdu)
{
    OnMpduDropped(WIFI_MAC_DROP_EXPIRED_LIFETIME, mpdu);
}

void OnMacQueueDrop(Ptr<const WifiMpdu> mpdu)
{
    OnMpduDropped(WIFI_MAC_DROP_FAILED_ENQUEUE, mpdu);
}

void OnMacTxDrop(Ptr<const Packet> frame)
{
    Ptr<Packet> body = frame->Copy();
    LlcSnapHeader snap;
    if (body->RemoveHeader(snap) != 0 && snap.GetType() == 0x0800)
    {
        truth::Drop(body, "wireless", "mac-tx-drop");
    }
}

// a measured flow, which starts when its station has associated (and not before `start`): a far
// station may take seconds to, and the AP refuses what it is sent before
struct MeasuredFlow
{
    UdpClientHelper cbr;
    Ptr<Node> sender;
    Time start, stop;
    bool started = false;
};

void StartOnAssociation(MeasuredFlow* flow, Mac48Address)
{
    Time now = Simulator::Now();
    if (flow->started || now >= flow->stop)
    {
        return;
    }
    flow->started = true;
    ApplicationContainer app = flow->cbr.Install(flow->sender); // times count from now
    app.Start(Max(flow->start - now, Seconds(0)));
    app.Stop(flow->stop - now);
}

// a FIFO queue disc's drops, as `detail` congestion
void WatchFifo(Ptr<QueueDisc> disc, const std::string& detail)
{
    disc->TraceConnectWithoutContext(
        "Drop", MakeBoundCallback(
                    +[](std::string* what, Ptr<const QueueDiscItem> item) {
                        if (auto ip = DynamicCast<const Ipv4QueueDiscItem>(item))
                        {
                            truth::Drop(truth::WithHeader(ip->GetPacket(), ip->GetHeader()), "congestion", *what);
                        }
                    },
                    new std::string(detail)));
}

Params Parse(int argc, char* argv[])
{
    Params p;
    CommandLine cmd;
    cmd.AddValue("duration", "seconds of measured traffic", p.duration);
    cmd.AddValue("stations", "measured stations, one UDP flow each", p.stations);
    cmd.AddValue("distance", "metres from the AP of measured station 0 at the start", p.distance);
    cmd.AddValue("spacing", "metres further for each next measured station", p.spacing);
    cmd.AddValue("speed", "m/s at which station 0 walks away from the AP (0: static)", p.speed);
    cmd.AddValue("standard", "n (802.11n) or ac (802.11ac), at 5 GHz", p.standard);
    cmd.AddValue("width", "channel width, MHz", p.width);
    cmd.AddValue("ampdu", "largest A-MPDU, bytes (0: no aggregation)", p.ampdu);
    cmd.AddValue("retries", "MaxSsrc/MaxSlrc - 1 (Minstrel-HT honours it until it has statistics)", p.retries);
    cmd.AddValue("lifetime", "MAC queue lifetime of a frame, ms", p.lifetime);
    cmd.AddValue("doppler", "the fading's Doppler frequency, Hz (its fades last about 1 / this)", p.doppler);
    cmd.AddValue("bottleneck", "wired bottleneck rate", p.bottleneck);
    cmd.AddValue("delay", "wired one-way delay, ms", p.delay);
    cmd.AddValue("queue", "bottleneck FIFO, packets", p.queue);
    cmd.AddValue("apqueue", "the AP's Wi-Fi FIFO queue disc, packets", p.apqueue);
    cmd.AddValue("tcp", "TCP bulk downloads to a near station (cross traffic)", p.tcp);
    cmd.AddValue("burst", "UDP rate of on-off bursts to the TCP station (0: none)", p.burst);
    cmd.AddValue("uplink", "UDP rate a competing station sends to the server (0: none)", p.uplink);
    cmd.AddValue("interval", "seconds between packets of a measured flow", p.interval);
    cmd.AddValue("size", "UDP payload bytes of a measured flow", p.size);
    cmd.AddValue("seed", "run number", p.seed);
    cmd.AddValue("out", "output folder", p.out);
    cmd.Parse(argc, argv);
    return p;
}

// measured stations first, then the TCP station, then the uplink station
Vector Place(uint32_t node, const Params& p)
{
    if (node < p.stations)
    {
        double r = p.distance + node * p.spacing, bearing = node * 2.1; // radians apart
        return Vector(r * std::cos(bearing), r * std::sin(bearing), 0);
    }
    return node == p.stations ? Vector(0, 8, 0) : Vector(-12, -6, 0);
}
} // namespace

int main(int argc, char* argv[])
{
    const Params p = Parse(argc, argv);
    if (p.standard != "n" && p.standard != "ac")
    {
        std::cerr << "heldout.cc: --standard is n or ac, not " << p.standard << "\n";
        return 1;
    }
    Config::SetDefault("ns3::StaWifiMac::MaxMissedBeacons", UintegerValue(1000000));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(MilliSeconds(p.lifetime)));
    Config::SetDefault("ns3::JakesProcess::DopplerFrequencyHz", DoubleValue(p.doppler));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1400));
    // windows larger than the path's bandwidth-delay product: TCP fills the bottleneck's FIFO
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 22));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 22));
    RngSeedManager::SetSeed(7);
    RngSeedManager::SetRun(p.seed);
    const bool uplink = DataRate(p.uplink).GetBitRate() > 0;

    NodeContainer server, ap, measured, others;
    server.Create(1);
    ap.Create(1);
    measured.Create(p.stations);
    others.Create(1 + (uplink ? 1 : 0)); // the TCP station, the uplink station
    NodeContainer everyStation(measured, others);

    PointToPointHelper wire;
    wire.SetDeviceAttribute("DataRate", StringValue(p.bottleneck));
    wire.SetChannelAttribute("Delay", TimeValue(MilliSeconds(p.delay)));
    wire.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer wired = wire.Install(server.Get(0), ap.Get(0));

    YansWifiChannelHelper air;
    air.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    air.AddPropagationLoss("ns3::ThreeLogDistancePropagationLossModel", "Distance0", DoubleValue(1.0), "Distance1",
                           DoubleValue(10.0), "Distance2", DoubleValue(40.0), "Exponent0", DoubleValue(2.0),
                           "Exponent1", DoubleValue(3.5), "Exponent2", DoubleValue(4.5), "ReferenceLoss",
                           DoubleValue(46.7));
    air.AddPropagationLoss("ns3::JakesPropagationLossModel"); // Rayleigh, correlated in time
    YansWifiPhyHelper radio;
    radio.SetChannel(air.Create());
    radio.SetPcapDataLinkType(WifiPhyHelper::DLT_IEEE802_11_RADIO);
    radio.Set("ChannelSettings", StringValue("{0, " + std::to_string(p.width) + ", BAND_5GHZ, 0}"));
    WifiHelper wifi;
    wifi.SetStandard(p.standard == "n" ? WIFI_STANDARD_80211n : WIFI_STANDARD_80211ac);
    wifi.SetRemoteStationManager("ns3::MinstrelHtWifiManager", "MaxSsrc", UintegerValue(p.retries + 1), "MaxSlrc",
                                 UintegerValue(p.retries + 1));
    WifiMacHelper mac;
    Ssid ssid("heldout");
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", UintegerValue(p.ampdu));
    NetDeviceContainer staDevices = wifi.Install(radio, mac, everyStation);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", UintegerValue(p.ampdu));
    NetDeviceContainer apDevice = wifi.Install(radio, mac, ap);

    MobilityHelper still;
    Ptr<ListPositionAllocator> spots = CreateObject<ListPositionAllocator>();
    spots->Add(Vector(0, 0, 0)); // the AP
    for (uint32_t n = 1; n < everyStation.GetN(); ++n)
    {
        spots->Add(Place(n, p));
    }
    still.SetPositionAllocator(spots);
    still.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    still.Install(ap);
    for (uint32_t n = 1; n < everyStation.GetN(); ++n)
    {
        still.Install(everyStation.Get(n));
    }
    MobilityHelper walking;
    walking.SetMobilityModel("ns3::ConstantVelocityMobilityModel");
    walking.Install(measured.Get(0));
    auto walker = measured.Get(0)->GetObject<ConstantVelocityMobilityModel>();
    walker->SetPosition(Place(0, p));
    Simulator::Schedule(Seconds(START), &ConstantVelocityMobilityModel::SetVelocity, walker, Vector(p.speed, 0, 0));

    InternetStackHelper ip;
    ip.Install(server);
    ip.Install(ap);
    ip.Install(everyStation);
    TrafficControlHelper bottleneckFifo, apFifo;
    bottleneckFifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(p.queue) + "p"));
    apFifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(p.apqueue) + "p"));
    WatchFifo(bottleneckFifo.Install(wired.Get(0)).Get(0), "queue-disc");
    WatchFifo(apFifo.Install(apDevice.Get(0)).Get(0), "ap-queue-disc");
    Ipv4AddressHelper addresses;
    addresses.SetBase("10.7.1.0", "255.255.255.0");
    Ipv4InterfaceContainer wiredIfaces = addresses.Assign(wired);
    addresses.SetBase("10.7.2.0", "255.255.255.0");
    Ipv4InterfaceContainer stationIfaces = addresses.Assign(staDevices);
    addresses.Assign(apDevice);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    NeighborCacheHelper().PopulateNeighborCache();

    Ipv4InterfaceContainer measuredIfaces;
    for (uint32_t i = 0; i < p.stations; ++i)
    {
        measuredIfaces.Add(stationIfaces.Get(i));
    }
    truth::Start(p.out, "sta", server.Get(0), measured, measuredIfaces);
    const Time stop = Seconds(START + p.duration);
    for (uint32_t i = 0; i < p.stations; ++i)
    {
        UdpServerHelper(4000).Install(measured.Get(i)).Start(Seconds(0.2));
        auto flow = new MeasuredFlow{UdpClientHelper(measuredIfaces.GetAddress(i), 4000), server.Get(0),
                                     Seconds(START + 0.013 * i), stop};
        flow->cbr.SetAttribute("MaxPackets", UintegerValue(uint32_t(p.duration / p.interval) + 10));
        flow->cbr.SetAttribute("Interval", TimeValue(Seconds(p.interval * (1 + 0.017 * i))));
        flow->cbr.SetAttribute("PacketSize", UintegerValue(p.size));
        DynamicCast<WifiNetDevice>(staDevices.Get(i))
            ->GetMac()
            ->TraceConnectWithoutContext("Assoc", MakeBoundCallback(&StartOnAssociation, flow));
        radio.EnablePcap(p.out + "/sta-" + std::to_string(i) + "-radiotap.pcap", staDevices.Get(i), false, true);
    }
    Ipv4Address tcpStation = stationIfaces.GetAddress(p.stations);
    for (uint32_t k = 0; k < p.tcp; ++k)
    {
        uint16_t port = 5000 + k;
        PacketSinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port))
            .Install(others.Get(0))
            .Start(Seconds(0.2));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(tcpStation, port));
        ApplicationContainer download = bulk.Install(server.Get(0));
        download.Start(Seconds(START - 1.0 + 0.5 * k)); // TCP has left slow start when measuring begins
        download.Stop(stop);
    }
    if (DataRate(p.burst).GetBitRate() > 0)
    {
        // unresponsive bursts (a video's key frames, a backup): on 0.4 s, off 1.6 s on average
        PacketSinkHelper("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 6001))
            .Install(others.Get(0))
            .Start(Seconds(0.2));
        OnOffHelper bursts("ns3::UdpSocketFactory", InetSocketAddress(tcpStation, 6001));
        bursts.SetConstantRate(DataRate(p.burst), 1400);
        bursts.SetAttribute("OnTime", StringValue("ns3::ExponentialRandomVariable[Mean=0.4]"));
        bursts.SetAttribute("OffTime", StringValue("ns3::ExponentialRandomVariable[Mean=1.6]"));
        ApplicationContainer sender = bursts.Install(server.Get(0));
        sender.Start(Seconds(START));
        sender.Stop(stop);
    }
    if (uplink)
    {
        PacketSinkHelper("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 6000))
            .Install(server.Get(0))
            .Start(Seconds(0.2));
        OnOffHelper competing("ns3::UdpSocketFactory", InetSocketAddress(wiredIfaces.GetAddress(0), 6000));
        competing.SetConstantRate(DataRate(p.uplink), 1000);
        ApplicationContainer sender = competing.Install(others.Get(1));
        sender.Start(Seconds(START));
        sender.Stop(stop);
    }

    if (!Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/DroppedMpdu",
                                               MakeCallback(&OnMpduDropped)))
    {
        std::cerr << "heldout.cc: the MACs have no DroppedMpdu trace\n";
        return 1;
    }
    Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/MacTxDrop",
                                          MakeCallback(&OnMacTxDrop));
    for (const char* ac : {"BE", "BK", "VI", "VO"})
    {
        std::string queue = std::string("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/") + ac + "_Txop/Queue/";
        Config::ConnectWithoutContextFailSafe(queue + "Expired", MakeCallback(&OnMacQueueExpired));
        Config::ConnectWithoutContextFailSafe(queue + "Drop", MakeCallback(&OnMacQueueDrop));
    }

    Simulator::Stop(stop + Seconds(3.0));
    Simulator::Run();
    Simulator::Destroy();
    uint32_t unexplained = truth::Finish(p.out, "sta", p.stations, [](const truth::Key&, uint32_t) { return ""; });
    if (unexplained)
    {
        std::cerr << "heldout.cc: " << unexplained << " packet(s) neither received nor dropped where traced\n";
        return 1;
    }
    return 0;
}
