// lte.cc -- ns-3 (3.37) LTE scenario for ldanalyze: a remote host behind a wired bottleneck
// sends to user equipments (UEs) of one eNB over the EPC, with per-packet ground truth.
//
//   remote host --(point-to-point, `bottleneck`, FIFO queue disc of `queue` packets)-- PGW/SGW
//        --(S1-U)-- eNB ))) UEs
//
// UE i stands 100 + i*`spacing` m from the eNB; the last one walks away at `speed` m/s for half
// the run and comes back (log-distance path loss, exponent 3.5: its SINR falls, the scheduler's
// adaptive modulation follows it late, and HARQ gives up on some transport blocks). The eNB's
// RLC transmission buffer (`buffer` bytes) overflows when a UE's link is slower than its flow.
//   `rlc`       um (the default, RLC_UM_ALWAYS): unacknowledged mode, what HARQ loses is lost, as
//               for real-time media. am (RLC_AM_ALWAYS): acknowledged mode, the RLC retransmits what
//               HARQ lost (ARQ above HARQ, 3GPP TS 36.322 §5.2), so the radio's losses become
//               retransmissions and delay, and loss happens where the eNB's buffer (which then also
//               holds what awaits its acknowledgement) overflows: `enb-buffer`, congestion, as every
//               overflow of that buffer is labelled. Measured (3 UEs, spacing 60 m, walking at 20
//               m/s, rr, seed 3): the walking UE's 65 radio losses under UM are gone under AM, but
//               under AM it receives 67 packets and then nothing (UM: 815): at the cell edge ns-3's
//               AM stalls, the eNB's buffer fills and the rest is dropped there (866 `enb-buffer`
//               losses) or left in it (32 `radio`). Why it stalls was not found: not the uplink
//               of its status reports (the UE at 30 dBm instead of 10: the same 67 packets), nor
//               retransmissions waiting for a grant big enough
//               (LteRlcAm::TxOpportunityForRetxAlwaysBigEnough: the same). So under AM a UE at the
//               cell edge loses to a full buffer what the radio held up: labelled congestion, the
//               cause ns-3 traces.
//   `scheduler` the eNB's MAC scheduler: pf (proportional fair, PfFfMacScheduler: the default), rr
//               (round robin, RrFfMacScheduler), tdmt (time-domain maximum throughput,
//               TdMtFfMacScheduler: the far UE gets what the near ones leave), pss (priority set,
//               PssFfMacScheduler).
// Each UE receives one UDP flow whose payload starts with ns-3's SeqTsHeader (seq
// u32, send time u64 ns): UdpClient sends `size`-byte packets about every `interval` seconds (UE i
// every interval * (1 + 0.013 i)).
//
// Outputs, in `out` (a folder):
//   ue-<i>.pcap         the UE's IP packets as received (the IP layer's receive trace; raw IP)
//   ue-<i>.labels.csv   flow,seq,cause,detail: each packet sent to the UE and never received:
//                       queue-disc drop at the bottleneck (congestion), the eNB's RLC buffer full
//                       (congestion, `enb-buffer`), IP drop (route), or -- when the packet reached
//                       the eNB (its S1-U receive trace), was not dropped there, and never reached
//                       the UE -- lost on the air interface (wireless, `radio`: HARQ gave up or the
//                       UE's RLC discarded what it could not reassemble; ns-3 traces no per-packet
//                       drop there, so this cause is what remains once every traced drop is counted),
//                       or -- sent while the eNB had released the UE after its radio link failed
//                       (the RRC's release and re-establishment traces) -- discarded at the eNB
//                       (wireless, `link-failure`)
//   s1u.pcap            the S1-U link at the eNB (PPP link type): every user packet inside GTP-U,
//                       as it left the core for the eNB
//   sent.csv            flow,seq: every packet the remote host's IP layer sent (the ledger)
//   stats.csv           received, labelled, dropped_but_delivered (0 here), written last
// Every packet of the ledger is received or labelled, never both; a packet that neither reached
// the eNB nor was dropped on the way is unexplained, and makes the run fail.
//
// Usage: lte --duration=S --ues=N --spacing=M --bottleneck=RATE --queue=P --buffer=B --interval=S
//            --size=B --speed=V --rlc=um|am --scheduler=pf|rr|tdmt|pss --seed=K --out=DIR
#include <cstring>  // before ns-3 3.37's headers: mac64-address.h uses memcmp without it

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/lte-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "truth.h"

#include <vector>

using namespace ns3;

namespace
{
std::set<truth::Key> reachedEnb;
std::map<uint64_t, uint32_t> ueOfImsi;                             // IMSI -> UE index
std::map<uint32_t, std::vector<std::pair<double, double>>> outages; // UE -> [released, re-established)
const double kPathSlack = 0.2; // s: the longest a packet takes from the server to the eNB here

void QueueDiscDrop(Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (ipItem)
    {
        truth::Drop(truth::WithHeader(ipItem->GetPacket(), ipItem->GetHeader()), "congestion", "queue-disc");
    }
}

// the eNB's RLC transmission buffer was full: the packet is a PDCP PDU
void RlcTxDrop(Ptr<const Packet> packet)
{
    Ptr<Packet> copy = packet->Copy();
    LtePdcpHeader pdcp;
    copy->RemoveHeader(pdcp);
    truth::Drop(copy, "congestion", "enb-buffer");
}

// a packet from the S1-U socket at the eNB, for a UE the eNB knows (3.37 fires the trace once it
// has taken the GTP-U header off)
void EnbFromS1u(Ptr<Packet> packet)
{
    truth::Key key;
    uint32_t ue;
    if (truth::Identify(packet->Copy(), key, ue))
    {
        reachedEnb.insert(key);
    }
}

// the eNB released a UE's context (its radio link failed): what reaches the eNB for it until it
// connects again is discarded there, with no trace of its own
void ConnectionRelease(uint64_t imsi, uint16_t, uint16_t)
{
    outages[ueOfImsi[imsi]].emplace_back(Simulator::Now().GetSeconds(), 1e300);
}

void ConnectionEstablished(uint64_t imsi, uint16_t, uint16_t)
{
    auto& mine = outages[ueOfImsi[imsi]];
    if (!mine.empty() && mine.back().second > 1e299)
    {
        mine.back().second = Simulator::Now().GetSeconds();
    }
}

// the cause of a packet not received with no drop traced for it ("" if there is none to give)
std::string Residual(const truth::Key& key, uint32_t ue)
{
    if (reachedEnb.count(key))
    {
        return "wireless,radio";
    }
    double sent = truth::sentAt[key];
    for (const auto& [from, to] : outages[ue])
    {
        if (sent + kPathSlack >= from && sent < to)
        {
            return "wireless,link-failure";
        }
    }
    return "";
}
} // namespace

int main(int argc, char* argv[])
{
    double duration = 10;
    uint32_t ues = 3;
    double spacing = 60;
    std::string bottleneck = "2500kbps";
    uint32_t queue = 30;
    uint32_t buffer = 20000;
    double interval = 0.005;
    uint32_t size = 600;
    double speed = 30;
    std::string rlc = "um";
    std::string scheduler = "pf";
    uint32_t seed = 1;
    std::string out = ".";
    CommandLine cmd;
    cmd.AddValue("duration", "seconds of traffic", duration);
    cmd.AddValue("ues", "user equipments", ues);
    cmd.AddValue("spacing", "metres between UEs", spacing);
    cmd.AddValue("bottleneck", "wired bottleneck rate", bottleneck);
    cmd.AddValue("queue", "bottleneck queue disc limit, packets", queue);
    cmd.AddValue("buffer", "the eNB's RLC transmission buffer per bearer, bytes", buffer);
    cmd.AddValue("interval", "seconds between packets of a flow", interval);
    cmd.AddValue("size", "UDP payload bytes", size);
    cmd.AddValue("speed", "m/s at which the last UE walks away for half the run, then back", speed);
    cmd.AddValue("rlc", "RLC mode: um or am", rlc);
    cmd.AddValue("scheduler", "the eNB's MAC scheduler: pf, rr, tdmt or pss", scheduler);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("out", "output folder", out);
    cmd.Parse(argc, argv);
    static const std::map<std::string, std::string> schedulers = {{"pf", "ns3::PfFfMacScheduler"},
                                                                  {"rr", "ns3::RrFfMacScheduler"},
                                                                  {"tdmt", "ns3::TdMtFfMacScheduler"},
                                                                  {"pss", "ns3::PssFfMacScheduler"}};
    if ((rlc != "um" && rlc != "am") || !schedulers.count(scheduler))
    {
        std::cerr << "lte.cc: rlc is um or am, scheduler pf, rr, tdmt or pss\n";
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    Config::SetDefault("ns3::LteEnbRrc::EpsBearerToRlcMapping",
                       EnumValue(rlc == "am" ? LteEnbRrc::RLC_AM_ALWAYS : LteEnbRrc::RLC_UM_ALWAYS));
    Config::SetDefault("ns3::LteRlcUm::MaxTxBufferSize", UintegerValue(buffer));
    Config::SetDefault("ns3::LteRlcAm::MaxTxBufferSize", UintegerValue(buffer));

    Ptr<LteHelper> lte = CreateObject<LteHelper>();
    lte->SetSchedulerType(schedulers.at(scheduler));
    Ptr<PointToPointEpcHelper> epc = CreateObject<PointToPointEpcHelper>();
    lte->SetEpcHelper(epc);
    lte->SetAttribute("PathlossModel", StringValue("ns3::LogDistancePropagationLossModel"));
    lte->SetPathlossModelAttribute("Exponent", DoubleValue(3.5));
    Ptr<Node> pgw = epc->GetPgwNode();

    NodeContainer remote;
    remote.Create(1);
    InternetStackHelper internet;
    internet.Install(remote);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(bottleneck));
    p2p.SetChannelAttribute("Delay", StringValue("10ms"));
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p")); // the queue disc queues
    NetDeviceContainer wired = p2p.Install(remote.Get(0), pgw);
    TrafficControlHelper tc;
    tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(queue) + "p"));
    QueueDiscContainer discs = tc.Install(wired.Get(0));
    Ipv4AddressHelper address;
    address.SetBase("1.0.0.0", "255.0.0.0");
    address.Assign(wired);
    Ipv4StaticRoutingHelper routing;
    routing.GetStaticRouting(remote.Get(0)->GetObject<Ipv4>())
        ->AddNetworkRouteTo(Ipv4Address("7.0.0.0"), Ipv4Mask("255.0.0.0"), 1);

    NodeContainer enb, ue;
    enb.Create(1);
    ue.Create(ues);
    MobilityHelper mobility;
    Ptr<ListPositionAllocator> positions = CreateObject<ListPositionAllocator>();
    positions->Add(Vector(0, 0, 0));
    for (uint32_t i = 0; i < ues; ++i)
    {
        positions->Add(Vector(100 + i * spacing, 0, 0));
    }
    mobility.SetPositionAllocator(positions);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(enb);
    for (uint32_t i = 0; i + 1 < ues; ++i)
    {
        mobility.Install(ue.Get(i));
    }
    mobility.SetMobilityModel("ns3::ConstantVelocityMobilityModel");
    mobility.Install(ue.Get(ues - 1));
    Ptr<ConstantVelocityMobilityModel> walker = ue.Get(ues - 1)->GetObject<ConstantVelocityMobilityModel>();
    Simulator::Schedule(Seconds(1.0), &ConstantVelocityMobilityModel::SetVelocity, walker, Vector(speed, 0, 0));
    Simulator::Schedule(Seconds(1.0 + duration / 2), &ConstantVelocityMobilityModel::SetVelocity, walker,
                        Vector(-speed, 0, 0));
    Simulator::Schedule(Seconds(1.0 + duration), &ConstantVelocityMobilityModel::SetVelocity, walker, Vector());

    NetDeviceContainer enbDevices = lte->InstallEnbDevice(enb);
    for (uint32_t d = 0; d < enb.Get(0)->GetNDevices(); ++d) // the S1-U link's end at the eNB
    {
        if (Ptr<PointToPointNetDevice> s1u = DynamicCast<PointToPointNetDevice>(enb.Get(0)->GetDevice(d)))
        {
            p2p.EnablePcap(out + "/s1u.pcap", s1u, false, true);
        }
    }
    NetDeviceContainer ueDevices = lte->InstallUeDevice(ue);
    internet.Install(ue);
    Ipv4InterfaceContainer ueAddresses = epc->AssignUeIpv4Address(ueDevices);
    for (uint32_t i = 0; i < ues; ++i)
    {
        routing.GetStaticRouting(ue.Get(i)->GetObject<Ipv4>())->SetDefaultRoute(epc->GetUeDefaultGatewayAddress(), 1);
        ueOfImsi[ueDevices.Get(i)->GetObject<LteUeNetDevice>()->GetImsi()] = i;
    }
    lte->Attach(ueDevices, enbDevices.Get(0));

    truth::Start(out, "ue", remote.Get(0), ue, ueAddresses);
    for (uint32_t i = 0; i < ues; ++i)
    {
        UdpServerHelper sink(9);
        sink.Install(ue.Get(i)).Start(Seconds(0.1));
        UdpClientHelper client(ueAddresses.GetAddress(i), 9);
        client.SetAttribute("MaxPackets", UintegerValue(uint32_t(duration / interval) + 10));
        // a slightly different period per flow: strictly periodic flows of one period lock into
        // a phase where the same flow always meets the full queue, and the others never do
        client.SetAttribute("Interval", TimeValue(Seconds(interval * (1 + 0.013 * i))));
        client.SetAttribute("PacketSize", UintegerValue(size));
        ApplicationContainer c = client.Install(remote.Get(0));
        c.Start(Seconds(1.0 + 0.001 * i)); // after the UEs have attached
        c.Stop(Seconds(1.0 + duration));
    }
    discs.Get(0)->TraceConnectWithoutContext("Drop", MakeCallback(&QueueDiscDrop));
    if (!Config::ConnectWithoutContextFailSafe("/NodeList/*/ApplicationList/*/$ns3::EpcEnbApplication/RxFromS1u",
                                               MakeCallback(&EnbFromS1u)))
    {
        std::cerr << "lte.cc: no EpcEnbApplication/RxFromS1u trace source to connect to\n";
        return 1;
    }
    for (const auto& [name, callback] :
         {std::make_pair("NotifyConnectionRelease", MakeCallback(&ConnectionRelease)),
          std::make_pair("ConnectionEstablished", MakeCallback(&ConnectionEstablished))})
    {
        if (!Config::ConnectWithoutContextFailSafe(
                std::string("/NodeList/*/DeviceList/*/$ns3::LteEnbNetDevice/LteEnbRrc/") + name, callback))
        {
            std::cerr << "lte.cc: no eNB RRC " << name << " trace source to connect to\n";
            return 1;
        }
    }
    // the RLC entities exist once the bearers are set up: connect after attachment
    Simulator::Schedule(Seconds(0.9), [] {
        if (!Config::ConnectWithoutContextFailSafe(
                "/NodeList/*/DeviceList/*/$ns3::LteEnbNetDevice/LteEnbRrc/UeMap/*/DataRadioBearerMap/*/LteRlc/TxDrop",
                MakeCallback(&RlcTxDrop)))
        {
            std::cerr << "lte.cc: no eNB RLC TxDrop trace source to connect to\n";
            std::exit(1);
        }
    });

    Simulator::Stop(Seconds(duration + 3.0));
    Simulator::Run();
    Simulator::Destroy();
    uint32_t unexplained = truth::Finish(out, "ue", ues, &Residual);
    if (unexplained)
    {
        std::cerr << "lte.cc: " << unexplained << " packet(s) neither received, dropped where traced, seen at the "
                  << "eNB, nor sent while the eNB had released their UE\n";
        return 1;
    }
    return 0;
}
