// truth.h -- the per-packet ground truth the ns-3 scenarios keep (wifi.cc, lte.cc).
//
// A measured packet is an IPv4/UDP datagram whose payload starts with ns-3's SeqTsHeader; it is
// known by its flow ("src:sport>dst:dport/udp") and sequence number. The scenario reports each
// packet its sender's IP layer sends (the ledger, sent.csv), each one a receiver's IP layer gets
// (written to that receiver's capture), and the drops it traces; `Finish` then writes one labels
// file per receiver: every packet of the ledger not received, with the first drop traced for it
// (or, when none was, what the scenario's `residual` says), and refuses to when one is left
// unexplained.
#ifndef LDANALYZE_NS3_TRUTH_H
#define LDANALYZE_NS3_TRUTH_H

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/applications-module.h"

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace truth
{
using namespace ns3;
using Key = std::pair<std::string, uint32_t>; // (flow, seq)

std::map<Ipv4Address, uint32_t> receiverOf;             // receiver address -> its index
std::map<uint32_t, Ptr<PcapFileWrapper>> captureOfNode; // node id -> its receiver's capture
Ptr<PcapFileWrapper> senderCapture;                     // what the sender's IP layer sends
std::map<Key, uint32_t> ledger;                         // sent -> receiver index
std::map<Key, double> sentAt;                           // sent -> the sender's send time (s)
std::map<Key, std::string> drops;                       // -> "cause,detail" of the first drop traced
std::set<Key> received;
std::ofstream sentFile;

// the flow and sequence number of an IP packet (header included) that carries UDP and a
// SeqTsHeader to one of the receivers
bool Identify(Ptr<Packet> packet, Key& key, uint32_t& receiver)
{
    Ipv4Header ip;
    UdpHeader udp;
    SeqTsHeader seqTs;
    if (packet->GetSize() < 20 + 8 + seqTs.GetSerializedSize() || packet->RemoveHeader(ip) == 0 ||
        ip.GetProtocol() != 17 || packet->RemoveHeader(udp) == 0 || !receiverOf.count(ip.GetDestination()))
    {
        return false;
    }
    packet->RemoveHeader(seqTs);
    std::ostringstream flow;
    flow << ip.GetSource() << ":" << udp.GetSourcePort() << ">" << ip.GetDestination() << ":"
         << udp.GetDestinationPort() << "/udp";
    key = {flow.str(), seqTs.GetSeq()};
    receiver = receiverOf[ip.GetDestination()];
    return true;
}

// an IP packet given as its header and the rest
Ptr<Packet> WithHeader(Ptr<const Packet> packet, const Ipv4Header& ip)
{
    Ptr<Packet> copy = packet->Copy();
    copy->AddHeader(ip);
    return copy;
}

void Drop(Ptr<Packet> ipPacket, const std::string& cause, const std::string& detail)
{
    Key key;
    uint32_t receiver;
    if (Identify(ipPacket, key, receiver))
    {
        drops.emplace(key, cause + "," + detail);
    }
}

// the sender's IP layer sending a datagram (Ipv4L3Protocol/SendOutgoing: it fires after the
// packet went down, so a drop below may be traced first; the ledger is a set, so that is fine)
void SenderSend(const Ipv4Header& ip, Ptr<const Packet> packet, uint32_t)
{
    Key key;
    uint32_t receiver;
    Ptr<Packet> sent = WithHeader(packet, ip);
    if (Identify(sent->Copy(), key, receiver))
    {
        senderCapture->Write(Simulator::Now(), sent);
        sentFile << key.first << "," << key.second << "\n";
        ledger[key] = receiver;
        sentAt[key] = Simulator::Now().GetSeconds();
    }
}

// a receiver's IP layer getting a packet (Ipv4L3Protocol/Rx): into its capture
void ReceiverRx(Ptr<const Packet> packet, Ptr<Ipv4> ipv4, uint32_t)
{
    auto capture = captureOfNode.find(ipv4->GetObject<Node>()->GetId());
    if (capture == captureOfNode.end())
    {
        return;
    }
    capture->second->Write(Simulator::Now(), packet);
    Key key;
    uint32_t receiver;
    if (Identify(packet->Copy(), key, receiver))
    {
        received.insert(key);
    }
}

// the files and traces every scenario has: the ledger, the sender's capture of the measured
// packets and the receivers' captures (raw IP), the
// sender's and the receivers' IP layers, IP drops (route)
void Start(const std::string& out, const std::string& prefix, Ptr<Node> sender, const NodeContainer& receivers,
           const Ipv4InterfaceContainer& addresses)
{
    sentFile.open(out + "/sent.csv");
    sentFile << "flow,seq\n";
    PcapHelper pcap;
    senderCapture = pcap.CreateFile(out + "/sender.pcap", std::ios::out, PcapHelper::DLT_RAW);
    for (uint32_t i = 0; i < receivers.GetN(); ++i)
    {
        receiverOf[addresses.GetAddress(i)] = i;
        captureOfNode[receivers.Get(i)->GetId()] =
            pcap.CreateFile(out + "/" + prefix + "-" + std::to_string(i) + ".pcap", std::ios::out, PcapHelper::DLT_RAW);
    }
    sender->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("SendOutgoing", MakeCallback(&SenderSend));
    Config::ConnectWithoutContextFailSafe("/NodeList/*/$ns3::Ipv4L3Protocol/Rx", MakeCallback(&ReceiverRx));
    Config::ConnectWithoutContextFailSafe(
        "/NodeList/*/$ns3::Ipv4L3Protocol/Drop",
        MakeCallback(+[](const Ipv4Header& ip, Ptr<const Packet> packet, Ipv4L3Protocol::DropReason, Ptr<Ipv4>,
                         uint32_t) { Drop(WithHeader(packet, ip), "route", "ip-drop"); }));
}

// one labels file per receiver, then stats.csv (written last); `residual` names the cause of a
// packet not received and with no drop traced ("" when there is none to name). Returns the
// number of packets left unexplained: when it is not zero, no stats.csv is written.
uint32_t Finish(const std::string& out, const std::string& prefix, uint32_t receivers,
                const std::function<std::string(const Key&, uint32_t)>& residual)
{
    sentFile.close();
    std::vector<std::ofstream> labels(receivers);
    for (uint32_t i = 0; i < receivers; ++i)
    {
        labels[i].open(out + "/" + prefix + "-" + std::to_string(i) + ".labels.csv");
        labels[i] << "flow,seq,cause,detail\n";
    }
    uint32_t labelled = 0, unexplained = 0, droppedButDelivered = 0;
    for (const auto& [key, receiver] : ledger)
    {
        auto drop = drops.find(key);
        if (received.count(key))
        {
            droppedButDelivered += drop != drops.end(); // its sender gave it up, yet it arrived
            continue;
        }
        std::string why = drop != drops.end() ? drop->second : residual(key, receiver);
        if (why.empty())
        {
            ++unexplained;
            continue;
        }
        labels[receiver] << key.first << "," << key.second << "," << why << "\n";
        ++labelled;
    }
    if (unexplained == 0)
    {
        std::ofstream stats(out + "/stats.csv");
        stats << "received,labelled,dropped_but_delivered\n"
              << received.size() << "," << labelled << "," << droppedButDelivered << "\n";
    }
    return unexplained;
}
} // namespace truth

#endif
