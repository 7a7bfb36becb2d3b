// wifi.cc -- ns-3 (3.37) Wi-Fi scenario for ldanalyze: a wired bottleneck before an access point
// and stations at several distances, one walking away and back, with per-packet ground truth;
// optionally a token-bucket policer in place of the bottleneck's queue, and cross traffic.
//
//   server --(point-to-point, `bottleneck`, FIFO queue disc of `queue` packets)-- AP ))) stations
//   server --(point-to-point, `bottleneck`, policer: TBF of `policer`, `policer_burst`)-- AP ))) stations
//
// Station i stands 5 + i*`spacing` m from the AP; the last one walks away at `speed` m/s for half
// the run and comes back. Log-distance loss (exponent 3) with Nakagami fading. Each station
// receives one UDP flow from the server whose payload starts with ns-3's SeqTsHeader (seq u32,
// send time u64 ns): UdpClient sends `size`-byte packets about every `interval` seconds (station
// i every interval * (1 + 0.013 i)). `per` adds a frame error rate at the stations' receivers.
//
// The radio (defaults: today's 802.11a with AARF, non-QoS MACs):
//   `standard`  a (5 GHz, 20 MHz), g (2.4 GHz ERP-OFDM), n (HT, 5 GHz channel 36, 20 MHz) or ac
//               (VHT, 5 GHz channel 42, 80 MHz). n and ac are QoS MACs (`qos` must be 1) and
//               aggregate: A-MPDU with block ack (ns-3's default 65535-byte limit for best effort),
//               no A-MSDU. A station's radiotap capture still holds every MPDU with its own 802.11
//               header (ns-3's pcap writer takes each A-MPDU subframe's delimiter and padding off
//               and writes the subframes as records of their own, flagged in radiotap's A-MPDU
//               field), so the sequence numbers the corpus reads are there, one per MPDU.
//   `manager`   rate control: aarf (a, g only: AARF has no HT rates), minstrel (Minstrel for a/g,
//               Minstrel-HT for n/ac), ideal (the rate the last SNR heard from the peer allows,
//               at a bit error rate of 1e-6), constant (one fixed rate: 18 Mbit/s OFDM for a/g,
//               HT MCS 3 for n, VHT MCS 3 for ac).
//   `retries`   MAC retransmissions before a frame is dropped (MaxSsrc = MaxSlrc = retries + 1),
//               honoured by aarf, ideal and constant and, under block ack, per MPDU. Minstrel and
//               Minstrel-HT keep their own multi-rate retry chain (max-throughput, second-best,
//               max-probability and base rate, each with a retry count fitted to a fixed air-time
//               budget of about 6 ms in their code) and end a frame when that chain is spent,
//               whatever MaxSsrc and MaxSlrc say: in 3.37 none of their attributes bounds it. Measured
//               with `retries` 1, seed 3, by a sniffer 3 m from the AP (a lower bound): up to 13
//               attempts of one frame to the walking station under Minstrel, 7 under Minstrel-HT, 2
//               under AARF and Ideal. What else ends a frame there is the MAC queue's lifetime
//               (WifiMacQueue::MaxDelay, 500 ms): `mac-lifetime` (congestion) for a frame that
//               waited it out in the queue unsent, `lifetime-retried` (wireless) for one that was
//               sent and never acknowledged (its retry bit set), which under block ack is how most
//               radio failures end (as traces/ns3/heldout.cc labels them).
//               Under block ack (n, ac) a frame given up on is not always traced as such: the
//               originator moves its window past it and ns-3 drops it as an old packet
//               (WIFI_MAC_DROP_QOS_OLD_PACKET), labelled wireless, `ba-window` (a frame dropped for
//               its lifetime is traced as that first).
//   `qos`       1 makes the MACs QoS (WMM) ones, which number their data frames per receiver and
//               TID (as every 802.11n and later network does) instead of from one counter per sender.
//   `mac_queue` the MACs' queue (WifiMacQueue) in packets, 0 (the default) for ns-3's own: 500
//               packets under the default queue disc that IP installs on the AP's Wi-Fi device
//               (TrafficControlHelper::Default: FqCoDel, under an mq root for a QoS MAC's four
//               queues; its drops are labelled congestion, `ap-queue-disc`). A size > 0 also
//               puts a one-packet FIFO in place of that queue disc, so the MAC queue is the AP's
//               buffer: when it is full the device stops (flow control) and the FIFO drops what
//               comes next (congestion, `ap-queue-disc`), as at an AP whose driver queue is its
//               buffer. (Without a queue disc, IP's traffic control would drop those packets
//               with no IP header to know them by.)
//   `cross`     unmeasured cross traffic through the AP: none (the default), udp-down:RATE (a UDP
//               stream of 1000-byte packets at RATE from the server to an extra station 10 m from
//               the AP: it shares the bottleneck and the air), udp-up:RATE (from that station to
//               the server: it shares the air only), tcp-down or tcp-up (a TCP BulkSend, as fast
//               as TCP gets). Its packets have no ledger entry and no labels.
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
//                        detail tbf), the AP's queue disc (congestion, ap-queue-disc), MAC retry limit
//                        (wireless), MAC queue full or lifetime expired unsent (congestion; the detail
//                        says which), lifetime expired after it was sent (wireless, lifetime-retried),
//                        MAC refusal (wireless), ARP (route), IP (route). A packet a MAC gave up on that reached its station anyway (its ACK
//                        was lost) is not labelled.
//   sent.csv             flow,seq: every packet the server's IP layer sent (the ledger)
//   stats.csv            received, labelled, dropped_but_delivered (written last)
// Every packet of the ledger is received or labelled, never both: the conservation check; a packet
// neither received nor dropped where traced makes the run fail (traces/ns3/truth.h).
//
// Usage: wifi --duration=S --stations=N --spacing=M --bottleneck=RATE --queue=P --interval=S
//             --size=B --per=P --retries=R --speed=V --policer=RATE --policer_burst=B --sniffer=M
//             --qos=0|1 --standard=a|g|n|ac --manager=aarf|minstrel|ideal|constant --mac_queue=P
//             --cross=none|udp-down:RATE|udp-up:RATE|tcp-down|tcp-up --seed=K --out=DIR
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

// a queue disc dropped an IP packet: the bottleneck's FIFO, the policer, the AP's own
void DiscDrop(std::string cause, std::string detail, Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (ipItem)
    {
        truth::Drop(truth::WithHeader(ipItem->GetPacket(), ipItem->GetHeader()), cause, detail);
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
        if (mpdu->GetHeader().IsRetry())  // sent and never acknowledged: the radio kept failing it
        {
            truth::Drop(ip, "wireless", "lifetime-retried");
        }
        else  // it waited its whole lifetime in the queue without being sent
        {
            truth::Drop(ip, "congestion", "mac-lifetime");
        }
        break;
    case WIFI_MAC_DROP_QOS_OLD_PACKET:  // block ack: the window moved past it (see the header)
        truth::Drop(ip, "wireless", "ba-window");
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

// the rate control named `manager` for `standard` (see the header), or "" where it has none
std::string Manager(const std::string& manager, const std::string& standard)
{
    bool ht = standard == "n" || standard == "ac";
    if (manager == "aarf")
    {
        return ht ? "" : "ns3::AarfWifiManager";
    }
    if (manager == "minstrel")
    {
        return ht ? "ns3::MinstrelHtWifiManager" : "ns3::MinstrelWifiManager";
    }
    if (manager == "ideal")
    {
        return "ns3::IdealWifiManager";
    }
    return manager == "constant" ? "ns3::ConstantRateWifiManager" : "";
}

// the fixed rate of the constant manager
std::string ConstantMode(const std::string& standard)
{
    return standard == "n" ? "HtMcs3" : standard == "ac" ? "VhtMcs3" : standard == "g" ? "ErpOfdmRate18Mbps" : "OfdmRate18Mbps";
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
    std::string standard = "a";
    std::string manager = "aarf";
    uint32_t macQueue = 0;
    std::string cross = "none";
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
    cmd.AddValue("standard", "a, g, n or ac", standard);
    cmd.AddValue("manager", "rate control: aarf, minstrel (Minstrel-HT for n, ac), ideal or constant", manager);
    cmd.AddValue("mac_queue", "the MACs' queue, packets; 0: ns-3's (500) under the default queue disc", macQueue);
    cmd.AddValue("cross", "none, udp-down:RATE, udp-up:RATE, tcp-down or tcp-up", cross);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("out", "output folder", out);
    cmd.Parse(argc, argv);
    static const std::map<std::string, WifiStandard> standards = {
        {"a", WIFI_STANDARD_80211a}, {"g", WIFI_STANDARD_80211g}, {"n", WIFI_STANDARD_80211n}, {"ac", WIFI_STANDARD_80211ac}};
    bool ht = standard == "n" || standard == "ac";
    std::string crossKind = cross.substr(0, cross.find(':'));
    std::string crossRate = cross.find(':') == std::string::npos ? "" : cross.substr(cross.find(':') + 1);
    std::string why = !standards.count(standard)       ? "standard is a, g, n or ac"
                      : Manager(manager, standard).empty() ? "manager is aarf (a, g only), minstrel, ideal or constant"
                      : ht && !qos                       ? "802.11n and ac MACs are QoS ones: qos=1"
                      : (crossKind == "udp-down" || crossKind == "udp-up") ? (crossRate.empty() ? "udp cross traffic needs a rate (udp-down:2Mbps)" : "")
                      : crossKind == "none" || crossKind == "tcp-down" || crossKind == "tcp-up" ? ""
                                                                 : "cross is none, udp-down:RATE, udp-up:RATE, tcp-down or tcp-up";
    if (!why.empty())
    {
        std::cerr << "wifi.cc: " << why << "\n";
        return 2;
    }
    if (macQueue > 0)
    {
        Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize(std::to_string(macQueue) + "p")));
    }
    // a station that misses beacons would disassociate, and 3.37 aborts on reassociating
    Config::SetDefault("ns3::StaWifiMac::MaxMissedBeacons", UintegerValue(1000000));
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // a short retry limit, so that frames the radio keeps losing are dropped at the MAC and
    // labelled wireless; A-MPDU only where the standard has it (n, ac)
    NodeContainer server, ap, stas, crossSta;
    server.Create(1);
    ap.Create(1);
    stas.Create(stations);
    crossSta.Create(crossKind == "none" ? 0 : 1);  // created after the others: without it nothing changes

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
    if (ht)
    {
        phy.Set("ChannelSettings", StringValue(standard == "n" ? "{36, 20, BAND_5GHZ, 0}" : "{42, 80, BAND_5GHZ, 0}"));
    }
    WifiHelper wifi;
    wifi.SetStandard(standards.at(standard));
    wifi.SetRemoteStationManager(Manager(manager, standard), "MaxSsrc", UintegerValue(retries + 1), "MaxSlrc",
                                 UintegerValue(retries + 1));
    if (manager == "constant")
    {
        wifi.SetRemoteStationManager(Manager(manager, standard), "MaxSsrc", UintegerValue(retries + 1), "MaxSlrc",
                                     UintegerValue(retries + 1), "DataMode", StringValue(ConstantMode(standard)));
    }
    WifiMacHelper mac;
    Ssid ssid("ldanalyze");
    UintegerValue ampdu(ht ? 65535 : 0);
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", ampdu, "QosSupported",
                BooleanValue(qos));
    NetDeviceContainer staDevices = wifi.Install(phy, mac, stas);
    NetDeviceContainer crossDevice = wifi.Install(phy, mac, crossSta);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid), "BE_MaxAmpduSize", ampdu, "QosSupported",
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
    if (crossSta.GetN())
    {
        Ptr<ListPositionAllocator> near = CreateObject<ListPositionAllocator>();
        near->Add(Vector(0, 10, 0));
        mobility.SetPositionAllocator(near);
        mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
        mobility.Install(crossSta);
    }

    InternetStackHelper internet;
    internet.Install(server);
    internet.Install(ap);
    internet.Install(stas);
    internet.Install(crossSta);
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
    Ipv4InterfaceContainer wiredIfaces = address.Assign(wired);
    address.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4InterfaceContainer staIfaces = address.Assign(staDevices);
    address.Assign(apDevice);
    Ipv4InterfaceContainer crossIface = address.Assign(crossDevice);
    // IP put its default queue disc on the AP's Wi-Fi device; with `mac_queue` a one-packet FIFO
    // takes its place: the MAC queue stops the device when full, and the FIFO drops what comes then
    if (macQueue > 0)
    {
        tc.Uninstall(apDevice);
        TrafficControlHelper apTc;
        apTc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("1p"));
        apTc.Install(apDevice);
    }
    if (Ptr<QueueDisc> apDisc = ap.Get(0)->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(apDevice.Get(0)))
    {
        apDisc->TraceConnectWithoutContext(
            "Drop", MakeBoundCallback(&DiscDrop, std::string("congestion"), std::string("ap-queue-disc")));
    }
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
    if (crossSta.GetN())
    {
        bool down = crossKind.substr(crossKind.size() - 4) == "down";
        Ptr<Node> from = down ? server.Get(0) : crossSta.Get(0), to = down ? crossSta.Get(0) : server.Get(0);
        Address sink(InetSocketAddress(down ? crossIface.GetAddress(0) : wiredIfaces.GetAddress(0), 7));
        std::string protocol = crossKind.substr(0, 3) == "tcp" ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
        PacketSinkHelper(protocol, InetSocketAddress(Ipv4Address::GetAny(), 7)).Install(to).Start(Seconds(0.5));
        ApplicationContainer app;
        if (protocol == "ns3::TcpSocketFactory")
        {
            app = BulkSendHelper(protocol, sink).Install(from);
        }
        else
        {
            OnOffHelper onOff(protocol, sink);
            onOff.SetConstantRate(DataRate(crossRate), 1000);
            app = onOff.Install(from);
        }
        app.Start(Seconds(3.05));
        app.Stop(Seconds(3.0 + duration));
    }
    if (!Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/DroppedMpdu",
                                               MakeCallback(&MacDrop)))
    {
        std::cerr << "wifi.cc: no DroppedMpdu trace source to connect to\n";
        return 1;
    }
    discs.Get(0)->TraceConnectWithoutContext(
        "Drop", policed ? MakeBoundCallback(&DiscDrop, std::string("policing"), std::string("tbf"))
                        : MakeBoundCallback(&DiscDrop, std::string("congestion"), std::string("queue-disc")));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/MacTxDrop",
                                          MakeCallback(&MacTxDrop));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::ArpL3Protocol/Drop", MakeCallback(&ArpDrop));
    // the MAC queue drops what waited too long (lifetime) or found it full, with traces of its own
    // (the QoS MACs' best-effort queue, the others' one queue)
    for (std::string txop : {"BE_Txop", "Txop"})
    {
        std::string queuePath = "/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/" + txop + "/Queue/";
        Config::ConnectWithoutContextFailSafe(queuePath + "Expired", MakeCallback(&QueueExpired));
        Config::ConnectWithoutContextFailSafe(queuePath + "Drop", MakeCallback(&QueueFull));
    }

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
