// wifi.cc -- ns-3 (3.37) Wi-Fi scenario for ldanalyze: a wired bottleneck before an access point
// and stations at several distances, one walking away and back, with per-packet ground truth;
// optionally a token-bucket policer in place of the bottleneck's queue.
//
//   server --(point-to-point, `bottleneck`, FIFO queue disc of `queue` packets)-- AP ))) stations
//   server --(point-to-point, `bottleneck`, policer: TBF of `policer`, `policer_burst`)-- AP ))) stations
//
// Station i stands 5 + i*`spacing` m from the AP; the last one walks away at `speed` m/s for half
// the run and comes back. 802.11a, log-distance loss (exponent 3) with Nakagami fading, AARF rate
// adaptation (it honours the retry limit, `retries` retransmissions: Minstrel keeps its own retry
// chain and ignores it), no block ack; `qos` 1 makes the MACs QoS (WMM) ones, which number their
// data frames per receiver and TID (as every 802.11n and later network does) instead of from one
// counter per sender. Each station receives one UDP flow from the server whose
// payload starts with ns-3's SeqTsHeader (seq u32, send time u64 ns): UdpClient sends `size`-byte
// packets about every `interval` seconds (station i every interval * (1 + 0.013 i)). `per` adds a
// frame error rate at the stations' receivers.
// `policer` (a rate, e.g. 1600kbps; "0", the default, for none) puts a policer where the FIFO was:
// a TbfQueueDisc of that token rate and a bucket of `policer_burst` bytes (at least an IP packet,
// or nothing passes) whose own queue holds a single packet, so that what exceeds the tokens is
// dropped at once instead of queued (Flach et al., SIGCOMM 2016); `queue` is then unused. The one
// packet it may hold waits at most one packet's worth of tokens (size / rate). It polices the
// stations' flows together: one station, one policed subscriber.
// Neighbour caches are filled beforehand (no ARP stalls) and stations never give up their
// association over missed beacons (3.37 aborts on reassociating).
//
// Outputs, in `out` (a folder):
//   sta-<i>.pcap         the station's IP packets as received (the IP layer's receive trace; pcap,
//                        link type raw IP)
//   sta-<i>-radiotap.pcap  the frames its radio received (802.11 with radiotap): retransmissions
//                        whose ACK was lost show up twice there, once above the MAC
//   sender.pcap          the server's measured packets as its IP layer sent them (raw IP): the
//                        sender's vantage of a capture chain
//   air.pcap             with `sniffer` > 0: a monitor-mode capture (802.11 with radiotap) by a
//                        node `sniffer` m from the AP on the stations' far side, its own radio
//                        and fading: every frame it decoded, retransmissions included; it misses
//                        some, as a real sniffer does. The air vantage of a chain sender > air > sta
//   sta-<i>.labels.csv   flow,seq,cause,detail: each packet sent to the station and never received,
//                        with the first drop traced for it: queue-disc (congestion), policer (policing,
//                        detail tbf), MAC retry limit (wireless), MAC queue full or lifetime expired
//                        (congestion; the detail says which), MAC refusal (wireless), ARP (route), IP
//                        (route). A packet a MAC gave up on that reached its station anyway (its ACK
//                        was lost) is not labelled.
//   sent.csv             flow,seq: every packet the server's IP layer sent (the ledger)
//   stats.csv            received, labelled, dropped_but_delivered (written last)
// Every packet of the ledger is received or labelled, never both: the conservation check; a packet
// neither received nor dropped where traced makes the run fail (traces/ns3/truth.h).
//
// Usage: wifi --duration=S --stations=N --spacing=M --bottleneck=RATE --queue=P --interval=S
//             --size=B --per=P --retries=R --speed=V --policer=RATE --policer_burst=B --sniffer=M
//             --qos=0|1 --seed=K --out=DIR
#include <cstring>  // before ns-3 3.37's headers: mac64-address.h uses memcmp without it

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include "truth.h"

using namespace ns3;

namespace
{
// an MPDU's IP packet (after its LLC/SNAP header), or nullptr
Ptr<Packet> IpOf(Ptr<const Packet> frameBody)
{
    Ptr<Packet> copy = frameBody->Copy();
    LlcSnapHeader llc;
    if (copy->PeekHeader(llc) == 0 || llc.GetType() != 0x0800)
    {
        return nullptr;
    }
    copy->RemoveHeader(llc);
    return copy;
}

void QueueDiscDrop(Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (ipItem)
    {
        truth::Drop(truth::WithHeader(ipItem->GetPacket(), ipItem->GetHeader()), "congestion", "queue-disc");
    }
}

// the policer's token bucket had too few tokens (and its one-packet queue was taken)
void PolicerDrop(Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (ipItem)
    {
        truth::Drop(truth::WithHeader(ipItem->GetPacket(), ipItem->GetHeader()), "policing", "tbf");
    }
}

void MacDrop(WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
{
    Ptr<Packet> ip = mpdu->GetHeader().IsData() ? IpOf(mpdu->GetPacket()) : nullptr;
    if (!ip)
    {
        return;
    }
    switch (reason)
    {
    case WIFI_MAC_DROP_REACHED_RETRY_LIMIT:
        truth::Drop(ip, "wireless", "retry-limit");
        break;
    case WIFI_MAC_DROP_FAILED_ENQUEUE:
        truth::Drop(ip, "congestion", "mac-queue-full");
        break;
    case WIFI_MAC_DROP_EXPIRED_LIFETIME:
        truth::Drop(ip, "congestion", "mac-lifetime");
        break;
    default:
        truth::Drop(ip, "unknown", "mac-other");
    }
}

void QueueExpired(Ptr<const WifiMpdu> mpdu)
{
    MacDrop(WIFI_MAC_DROP_EXPIRED_LIFETIME, mpdu);
}

void QueueFull(Ptr<const WifiMpdu> mpdu)
{
    MacDrop(WIFI_MAC_DROP_FAILED_ENQUEUE, mpdu);
}

// the MAC refused a packet before queueing it (its station is not associated)
void MacTxDrop(Ptr<const Packet> packet)
{
    Ptr<Packet> ip = IpOf(packet);
    truth::Drop(ip ? ip : packet->Copy(), "wireless", "mac-tx-drop");
}

// ARP gave up on a neighbour, or its queue of packets waiting for the answer was full
void ArpDrop(Ptr<const Packet> packet)
{
    truth::Drop(packet->Copy(), "route", "arp");
}
} // namespace

int main(int argc, char* argv[])
{
    double duration = 10;
    uint32_t stations = 3;
    double spacing = 12;
    std::string bottleneck = "6Mbps";
    uint32_t queue = 20;
    double interval = 0.004;
    double per = 0.0;
    double speed = 3.0;
    uint32_t retries = 1;
    uint32_t size = 1000;
    std::string policer = "0";
    uint32_t policerBurst = 3000;
    double sniffer = 0;
    bool qos = false;
    uint32_t seed = 1;
    std::string out = ".";
    CommandLine cmd;
    cmd.AddValue("duration", "seconds of traffic", duration);
    cmd.AddValue("stations", "stations", stations);
    cmd.AddValue("spacing", "metres between stations", spacing);
    cmd.AddValue("bottleneck", "wired bottleneck rate", bottleneck);
    cmd.AddValue("queue", "bottleneck queue disc limit, packets", queue);
    cmd.AddValue("interval", "seconds between packets of a flow", interval);
    cmd.AddValue("size", "UDP payload bytes", size);
    cmd.AddValue("per", "frame error rate at the stations' receivers (on top of fading)", per);
    cmd.AddValue("retries", "MAC retransmissions before a frame is dropped", retries);
    cmd.AddValue("speed", "m/s at which the last station walks away from the AP for half the run, then back", speed);
    cmd.AddValue("policer", "token rate of a policer in place of the bottleneck's FIFO (0: none)", policer);
    cmd.AddValue("policer_burst", "the policer's bucket, bytes", policerBurst);
    cmd.AddValue("sniffer", "metres from the AP of a monitor-mode sniffer writing air.pcap (0: none)", sniffer);
    cmd.AddValue("qos", "QoS (WMM) MACs: 802.11 sequence numbers per receiver and TID, not one counter per sender", qos);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("out", "output folder", out);
    cmd.Parse(argc, argv);
    // a station that misses beacons would disassociate, and 3.37 aborts on reassociating
    Config::SetDefault("ns3::StaWifiMac::MaxMissedBeacons", UintegerValue(1000000));
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // no A-MPDU (block-ack retries follow other limits) and a short retry limit, so that
    // frames the radio keeps losing are dropped at the MAC and labelled wireless
    NodeContainer server, ap, stas;
    server.Create(1);
    ap.Create(1);
    stas.Create(stations);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(bottleneck));
    p2p.SetChannelAttribute("Delay", StringValue("10ms"));
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));  // the queue disc queues
    NetDeviceContainer wired = p2p.Install(server.Get(0), ap.Get(0));

    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    channel.AddPropagationLoss("ns3::LogDistancePropagationLossModel", "Exponent", DoubleValue(3.0));
    channel.AddPropagationLoss("ns3::NakagamiPropagationLossModel");
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    phy.SetPcapDataLinkType(WifiPhyHelper::DLT_IEEE802_11_RADIO);
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211a);
    wifi.SetRemoteStationManager("ns3::AarfWifiManager", "MaxSsrc", UintegerValue(retries + 1),
                                 "MaxSlrc", UintegerValue(retries + 1));
    WifiMacHelper mac;
    Ssid ssid("ldanalyze");
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", UintegerValue(0), "QosSupported",
                BooleanValue(qos));
    NetDeviceContainer staDevices = wifi.Install(phy, mac, stas);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", UintegerValue(0), "QosSupported",
                BooleanValue(qos));
    NetDeviceContainer apDevice = wifi.Install(phy, mac, ap);
    for (uint32_t i = 0; i < stations; ++i)
    {
        Ptr<RateErrorModel> errors = CreateObject<RateErrorModel>();
        errors->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        errors->SetRate(per);
        DynamicCast<WifiNetDevice>(staDevices.Get(i))->GetPhy()->SetPostReceptionErrorModel(errors);
    }

    MobilityHelper mobility;
    Ptr<ListPositionAllocator> positions = CreateObject<ListPositionAllocator>();
    positions->Add(Vector(0, 0, 0));  // AP
    for (uint32_t i = 0; i < stations; ++i)
    {
        positions->Add(Vector(5 + i * spacing, 0, 0));
    }
    mobility.SetPositionAllocator(positions);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(ap);
    for (uint32_t i = 0; i + 1 < stations; ++i)
    {
        mobility.Install(stas.Get(i));
    }
    mobility.SetMobilityModel("ns3::ConstantVelocityMobilityModel");
    mobility.Install(stas.Get(stations - 1));  // the last station walks away from the AP
    Ptr<ConstantVelocityMobilityModel> walker = stas.Get(stations - 1)->GetObject<ConstantVelocityMobilityModel>();
    Simulator::Schedule(Seconds(3.0), &ConstantVelocityMobilityModel::SetVelocity, walker, Vector(speed, 0, 0));
    Simulator::Schedule(Seconds(3.0 + duration / 2), &ConstantVelocityMobilityModel::SetVelocity, walker,
                        Vector(-speed, 0, 0));  // and comes back
    Simulator::Schedule(Seconds(3.0 + duration), &ConstantVelocityMobilityModel::SetVelocity, walker, Vector());

    InternetStackHelper internet;
    internet.Install(server);
    internet.Install(ap);
    internet.Install(stas);
    TrafficControlHelper tc;
    bool policed = DataRate(policer).GetBitRate() > 0;
    if (policed)
    {
        // a queue of one packet: a policer drops what exceeds its tokens, where a shaper queues it
        tc.SetRootQueueDisc("ns3::TbfQueueDisc", "Rate", DataRateValue(DataRate(policer)), "Burst",
                            UintegerValue(policerBurst), "Mtu", UintegerValue(1500), "MaxSize", StringValue("1p"));
    }
    else
    {
        tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(queue) + "p"));
    }
    QueueDiscContainer discs = tc.Install(wired.Get(0));
    Ipv4AddressHelper address;
    address.SetBase("10.1.1.0", "255.255.255.0");
    address.Assign(wired);
    address.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4InterfaceContainer staIfaces = address.Assign(staDevices);
    address.Assign(apDevice);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    NeighborCacheHelper().PopulateNeighborCache();  // static ARP, as in the netns lab: no address-resolution stalls
    // a sniffer: an ad hoc MAC with no IP stack above it transmits nothing; its PHY's trace is
    // what a monitor-mode capture shows (created last, so that without it nothing else changes)
    if (sniffer > 0)
    {
        NodeContainer sniffers;
        sniffers.Create(1);
        mac.SetType("ns3::AdhocWifiMac");
        NetDeviceContainer snifferDevice = wifi.Install(phy, mac, sniffers);
        Ptr<ListPositionAllocator> beside = CreateObject<ListPositionAllocator>();
        beside->Add(Vector(-sniffer, 0, 0));
        mobility.SetPositionAllocator(beside);
        mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
        mobility.Install(sniffers);
        phy.EnablePcap(out + "/air.pcap", snifferDevice.Get(0), true, true);
    }

    truth::Start(out, "sta", server.Get(0), stas, staIfaces);
    for (uint32_t i = 0; i < stations; ++i)
    {
        UdpServerHelper sink(9);
        ApplicationContainer s = sink.Install(stas.Get(i));
        s.Start(Seconds(0.5));
        UdpClientHelper client(staIfaces.GetAddress(i), 9);
        client.SetAttribute("MaxPackets", UintegerValue(uint32_t(duration / interval) + 10));
        // a slightly different period per flow: strictly periodic flows of one period lock into
        // a phase where the same flow always meets the full queue, and the others never do
        client.SetAttribute("Interval", TimeValue(Seconds(interval * (1 + 0.013 * i))));
        client.SetAttribute("PacketSize", UintegerValue(size));
        ApplicationContainer c = client.Install(server.Get(0));
        c.Start(Seconds(3.0 + 0.01 * i));  // after every station has associated
        c.Stop(Seconds(3.0 + duration));
        // what its radio received, as a monitor-mode capture would show it
        phy.EnablePcap(out + "/sta-" + std::to_string(i) + "-radiotap.pcap", staDevices.Get(i), false, true);
    }
    if (!Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/DroppedMpdu",
                                               MakeCallback(&MacDrop)))
    {
        std::cerr << "wifi.cc: no DroppedMpdu trace source to connect to\n";
        return 1;
    }
    discs.Get(0)->TraceConnectWithoutContext("Drop", MakeCallback(policed ? &PolicerDrop : &QueueDiscDrop));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/MacTxDrop",
                                          MakeCallback(&MacTxDrop));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::ArpL3Protocol/Drop", MakeCallback(&ArpDrop));
    // the MAC queue drops what waited too long (lifetime) or found it full, with traces of its own
    Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/BE_Txop/Queue/Expired",
                                          MakeCallback(&QueueExpired));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/BE_Txop/Queue/Drop",
                                          MakeCallback(&QueueFull));

    Simulator::Stop(Seconds(duration + 5.0));
    Simulator::Run();
    Simulator::Destroy();
    // every drop that matters is traced here: a packet left without one is unexplained
    uint32_t unexplained = truth::Finish(out, "sta", stations, [](const truth::Key&, uint32_t) { return ""; });
    if (unexplained)
    {
        std::cerr << "wifi.cc: " << unexplained << " packet(s) neither received nor dropped where traced\n";
        return 1;
    }
    return 0;
}
