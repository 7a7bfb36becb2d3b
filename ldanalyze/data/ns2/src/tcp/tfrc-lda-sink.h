/* -*-	Mode:C++; c-basic-offset:8; tab-width:8; indent-tabs-mode:t -*- */
/*
 * LDA-aware TFRC receiver for ns-2.35, part of ldanalyze (ldanalyze/data/ns2/).
 *
 * Paper 000 (Cen, Cosman, Voelker, "End-to-end differentiation of congestion and wireless
 * losses", IEEE/ACM ToN 2003), Sec. I and Sec. IV: when the TFRC receiver detects losses it
 * invokes the LDA; a loss the LDA classifies as congestion enters the loss event rate, one it
 * classifies as wireless does not (Sec. I).  Sec. IV adds that a loss classified wireless is
 * treated "in the same way as received packets": with `wireless_as_received_` set, it also
 * counts as received in TFRC's receive rate X_recv (est_thput: the sender's 2 X_recv cap and
 * the first loss interval's seed), as if it had arrived when its loss was detected; unset (the
 * default), X_recv counts only the packets that arrived, as ns-2's receiver does.
 * Every LDA follows ldanalyze's written contract, docs/ldas.md, with
 * its default replay (detection at the revealing arrival, statistics updated with the
 * arriving packet first, the gap judged by the revealing packet's delay).  Times are taken
 * as the trace prints them (rounded to the microsecond), so that the offline replay of the
 * run's trace sees exactly the numbers this receiver saw.
 *
 * All LDAs run side by side on every arrival; `lda_` names the one whose decisions steer
 * TFRC.  With `log_` set, every lost packet the receiver detects is logged with the decision
 * of each LDA (one CSV line per packet): a loss is a packet of a gap that never arrives
 * (docs/ldas.md), so the lines are kept until the run ends (`flush-log`) and a packet that
 * arrives late, after its gap was decided, leaves the log; TFRC itself was steered by the
 * decision at the gap.  With `reportlog_` set, every report the receiver sends is logged with
 * what it tells the sender (p, X_recv) and the state behind it (one CSV line per report).
 * Each LDA's parameters are OTcl variables (ns-default.tcl), ZBS's base schemes with their own
 * (zbs_mbiaz_upper_, zbs_spike_alpha_, ...), set from ldanalyze's parameter objects.
 *
 * This file is distributed under the same terms as ns-2.35 (the BSD-style licence of
 * tcp/tfrc-sink.h, which it extends).
 */

#ifndef ns_tfrc_lda_sink_h
#define ns_tfrc_lda_sink_h

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include "connector.h"
#include "tfrc-sink.h"

/* The LDAs, in the order of the log's columns. */
enum LdaName {
	LDA_UNAWARE, LDA_OMNISCIENT, LDA_BIAZ, LDA_MBIAZ, LDA_SPIKE, LDA_WRO_LDAPLUS,
	LDA_ZIGZAG, LDA_ZBS, LDA_WIN_LDAPLUS, LDA_VENO, LDA_XRTP, LDA_COUNT
};

/*
 * Ground truth for the omniscient receiver: a connector spliced in as a wireless error
 * model's drop target notes every TFRC data packet that model drops, then passes it on.
 */
class LdaOracle : public Connector {
public:
	void recv(Packet *p, Handler *h);
	static bool dropped(int fid, int seqno);
private:
	static std::set<std::pair<int, int> > drops_;
};

/* One flow's LDA state, updated on every arrival (docs/ldas.md, "What an LDA sees"). */
struct LdaFlowState {
	LdaFlowState();
	long j;			// arrivals so far
	double t0;		// first arrival time
	double t_prev, ts_prev;	// previous arrival's receive and send time
	long seq_prev;
	long hi;		// highest sequence number received
	double t_inorder;	// receive time of the last in-order arrival (P_i)
	double lo, hi_d;	// running minimum and maximum of the one-way delay d
	double tmin;		// T_min: least spacing of consecutive in-sequence arrivals
	double tmin_obs;	// T_min learnt during WIN-LDA+'s observation period
	int spike;		// Spike's state (1 = in spike)
	int wro;		// WRO-LDA+'s state (1 = Congestion)
	double zz_mean, zz_dev;	// ZigZag's EWMAs
	int zbs_spike;		// ZBS's own Spike's state
	double zbs_zz_mean, zbs_zz_dev;	// ZBS's own ZigZag's EWMAs
	double zbs_tavg, zbs_dmin, zbs_tlock;
	int zbs_scheme;
	long zbs_jlock;
	double x_mean, x_dev;	// XRTP's EWMAs
	long x_run, x_run_prev;	// run of positive jitters ending at the arrival, and before it
	std::vector<int> x_over;	// over-deviation flags of the last n arrivals (ring)
	long x_count;
	std::vector<double> times;	// receive times of the last window+1 arrivals (ring)
};

class TfrcLdaSinkAgent : public TfrcSinkAgent {
public:
	TfrcLdaSinkAgent();
	~TfrcLdaSinkAgent();
protected:
	void lda_arrival(Packet *pkt);
	int lda_wireless(int seqno);
	int lda_as_received() { return wireless_as_received_; }
	void lda_report(double p, double x_recv);
	int command(int argc, const char*const* argv);
private:
	void configure();
	void dev_factors(const char *var, double *out);
	void decide_gap(double t, long first, long n, double Ti, double d, double jitter);
	void flush_log();
	int biaz_rule(long n, double Ti, double tmin, double upper, int inclusive) const;

	int configured_;
	int driver_;		// index of the LDA that steers TFRC
	FILE *log_;
	FILE *reportlog_;
	long wireless_losses_;	// lost packets the driver called wireless, so far
	int wireless_as_received_;
	LdaFlowState s_;
	std::map<int, int> pending_;	// lost seqno -> 1 if the driver called it wireless
	std::map<long, std::string> logged_;	// lost seqno -> its log line, until flush_log

	// parameters (docs/ldas.md), bound as OTcl variables
	double biaz_upper_, mbiaz_upper_;
	double spike_alpha_, spike_beta_;
	double wro_K_, wro_B_;
	double zigzag_alpha_, zigzag_dev_[4];
	double win_T_obs_;
	double zbs_delay_frac_, zbs_b1_, zbs_b2_, zbs_b3_, zbs_gain_, zbs_lock_time_;
	int zbs_lock_packets_;
	double zbs_mbiaz_upper_, zbs_spike_alpha_, zbs_spike_beta_, zbs_zigzag_alpha_, zbs_zigzag_dev_[4];
	double veno_beta_;
	int veno_window_;
	int xrtp_positive_jitters_, xrtp_n_, xrtp_l1_;
	double xrtp_threshold_, xrtp_alpha_;
};

#endif
