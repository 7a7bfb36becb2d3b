/* -*-	Mode:C++; c-basic-offset:8; tab-width:8; indent-tabs-mode:t -*- */
/*
 * LDA-aware TFRC receiver for ns-2.35, part of ldanalyze: see tfrc-lda-sink.h.
 * Each rule cites the section of docs/ldas.md (and through it the paper) it follows; the
 * arithmetic is written in the order ldanalyze's kernels use, so that both give the same
 * floating-point results.
 *
 * This file is distributed under the same terms as ns-2.35 (the BSD-style licence of
 * tcp/tfrc-sink.cc, which it extends).
 */

#include <cmath>
#include <cstdlib>
#include <cstring>
#include "ip.h"
#include "tfrc-lda-sink.h"

static const char *const lda_names[LDA_COUNT] = {
	"unaware", "omniscient", "biaz", "mbiaz", "spike", "wro_ldaplus",
	"zigzag", "zbs", "win_ldaplus", "veno", "xrtp"
};
enum { ZBS_ZIGZAG = 0, ZBS_MBIAZ = 1, ZBS_SPIKE = 2 };

/* Comparisons that are false when either side is NaN (an undefined value, docs/ldas.md),
 * without raising the invalid-operation exception that ns-2 traps: quiet, unlike < and >. */
static inline bool lt(double a, double b) { return __builtin_isless(a, b); }
static inline bool le(double a, double b) { return __builtin_islessequal(a, b); }
static inline bool gt(double a, double b) { return __builtin_isgreater(a, b); }
static inline bool ge(double a, double b) { return __builtin_isgreaterequal(a, b); }

/* ZigZag's running mean and mean deviation of d (gains alpha and 2·alpha; the first sample
 * sets mean = d, dev = 0; then the mean is updated first and dev with it), as ldanalyze's
 * ewma_mean_dev (lda/rott.py) computes them. */
static void ewma_mean_dev(double d, int first, double alpha, double *mean, double *dev)
{
	double gd = 2 * alpha;
	if (first) {
		*mean = d;
		*dev = 0.0;
	} else {
		*mean = (1 - alpha) * *mean + alpha * d;
		*dev = (1 - gd) * *dev + gd * fabs(d - *mean);
	}
}

/* Spike's hysteresis (docs/ldas.md, spike): with lo the least delay so far and range its span,
 * enter the spike state above lo + alpha·range, leave it below lo + beta·range. */
static void spike_step(int *state, double d, double lo, double range, double alpha, double beta)
{
	double upper = lo + alpha * range, lower = lo + beta * range;
	if (*state == 0 && d > upper)
		*state = 1;
	else if (*state == 1 && d < lower)
		*state = 0;
}

/* ZigZag (docs/ldas.md, zigzag): wireless iff the gap delay < mean + factors[min(n, 4) - 1]·dev. */
static int zigzag_rule(long n, double d, double mean, double dev, const double *factors)
{
	long k = n < 1 ? 1 : (n > 4 ? 4 : n);
	return lt(d, mean + factors[k - 1] * dev);
}

/* A time as ns-2's trace writes it: rounded to the microsecond (trace/basetrace.h). */
static double trace_time(double x)
{
	return floor(x * 1.0E+6 + 0.5) / 1.0E+6;
}

/* ------------------------------------------------------------------ oracle */

std::set<std::pair<int, int> > LdaOracle::drops_;

static class LdaOracleClass : public TclClass {
public:
	LdaOracleClass() : TclClass("Connector/LDAOracle") {}
	TclObject* create(int, const char*const*) { return (new LdaOracle()); }
} class_lda_oracle;

void LdaOracle::recv(Packet *p, Handler *h)
{
	if (hdr_cmn::access(p)->ptype() == PT_TFRC)
		drops_.insert(std::make_pair(hdr_ip::access(p)->flowid(),
		    hdr_tfrc::access(p)->seqno));
	if (target_)
		target_->recv(p, h);
	else
		Packet::free(p);
}

bool LdaOracle::dropped(int fid, int seqno)
{
	return drops_.count(std::make_pair(fid, seqno)) > 0;
}

/* ------------------------------------------------------------------ receiver */

static class TfrcLdaSinkClass : public TclClass {
public:
	TfrcLdaSinkClass() : TclClass("Agent/TFRCSink/LDA") {}
	TclObject* create(int, const char*const*) { return (new TfrcLdaSinkAgent()); }
} class_tfrc_lda_sink;

LdaFlowState::LdaFlowState() :
	j(0), t0(NAN), t_prev(NAN), ts_prev(NAN), seq_prev(-1), hi(-1), t_inorder(NAN),
	lo(NAN), hi_d(NAN), tmin(NAN), tmin_obs(NAN), spike(0), wro(0),
	zz_mean(NAN), zz_dev(NAN), zbs_spike(0), zbs_zz_mean(NAN), zbs_zz_dev(NAN), zbs_tavg(NAN), zbs_dmin(NAN), zbs_tlock(NAN),
	zbs_scheme(ZBS_ZIGZAG), zbs_jlock(0), x_mean(NAN), x_dev(NAN), x_run(0),
	x_run_prev(0), x_count(0)
{
}

TfrcLdaSinkAgent::TfrcLdaSinkAgent() : configured_(0), driver_(LDA_UNAWARE), log_(NULL),
	reportlog_(NULL), wireless_losses_(0)
{
	bind("wireless_as_received_", &wireless_as_received_);
	bind("biaz_upper_", &biaz_upper_);
	bind("mbiaz_upper_", &mbiaz_upper_);
	bind("spike_alpha_", &spike_alpha_);
	bind("spike_beta_", &spike_beta_);
	bind("wro_K_", &wro_K_);
	bind("wro_B_", &wro_B_);
	bind("zigzag_alpha_", &zigzag_alpha_);
	bind("win_T_obs_", &win_T_obs_);
	bind("zbs_delay_frac_", &zbs_delay_frac_);
	bind("zbs_b1_", &zbs_b1_);
	bind("zbs_b2_", &zbs_b2_);
	bind("zbs_b3_", &zbs_b3_);
	bind("zbs_gain_", &zbs_gain_);
	bind("zbs_lock_time_", &zbs_lock_time_);
	bind("zbs_lock_packets_", &zbs_lock_packets_);
	bind("zbs_mbiaz_upper_", &zbs_mbiaz_upper_);
	bind("zbs_spike_alpha_", &zbs_spike_alpha_);
	bind("zbs_spike_beta_", &zbs_spike_beta_);
	bind("zbs_zigzag_alpha_", &zbs_zigzag_alpha_);
	bind("veno_beta_", &veno_beta_);
	bind("veno_window_", &veno_window_);
	bind("xrtp_positive_jitters_", &xrtp_positive_jitters_);
	bind("xrtp_threshold_", &xrtp_threshold_);
	bind("xrtp_n_", &xrtp_n_);
	bind("xrtp_l1_", &xrtp_l1_);
	bind("xrtp_alpha_", &xrtp_alpha_);
}

TfrcLdaSinkAgent::~TfrcLdaSinkAgent()
{
	flush_log();
	if (log_)
		fclose(log_);
	if (reportlog_)
		fclose(reportlog_);
}

/* `$sink flush-log`: write the decisions on the losses so far (the gaps' packets that have not
 * arrived) to the decision log; the run's script calls it when the run ends. */
int TfrcLdaSinkAgent::command(int argc, const char*const* argv)
{
	if (argc == 2 && strcmp(argv[1], "flush-log") == 0) {
		flush_log();
		return TCL_OK;
	}
	return TfrcSinkAgent::command(argc, argv);
}

void TfrcLdaSinkAgent::flush_log()
{
	if (!log_)
		return;
	for (std::map<long, std::string>::iterator it = logged_.begin(); it != logged_.end(); ++it)
		fputs(it->second.c_str(), log_);
	logged_.clear();
	fflush(log_);
}

/* Read the OTcl list `var` of ZigZag's four deviation factors (n = 1, 2, 3, > 3) into `out`:
 * the instance's value, else the class default (ns-default.tcl), as bind() would take it. */
void TfrcLdaSinkAgent::dev_factors(const char *var, double *out)
{
	Tcl& tcl = Tcl::instance();
	tcl.evalf("%s info vars %s", name(), var);
	if (*tcl.result() == '\0')
		tcl.evalf("%s init-instvar %s", name(), var);
	tcl.evalf("%s set %s", name(), var);
	const char *text = tcl.result();
	char *end;
	int k;
	for (k = 0; k < 4; k++) {
		out[k] = strtod(text, &end);
		if (end == text)
			break;
		text = end;
	}
	while (*text == ' ')
		text++;
	if (k < 4 || *text != '\0') {
		fprintf(stderr, "Agent/TFRCSink/LDA: %s must be 4 numbers, not '%s'\n", var, tcl.result());
		exit(1);
	}
}

/* Open a CSV log for appending (shared by the receivers of a run); write `header` if empty. */
static FILE *open_log(const char *what, const std::string &path, const char *header)
{
	FILE *f = fopen(path.c_str(), "a");
	if (f == NULL) {
		fprintf(stderr, "Agent/TFRCSink/LDA: cannot open %s '%s'\n", what, path.c_str());
		exit(1);
	}
	if (ftell(f) == 0) {
		fputs(header, f);
		fflush(f);
	}
	return f;
}

/* Read lda_, log_ and reportlog_ (OTcl instance variables that may be set any time before the
 * first packet), open the logs and size the ring buffers. */
void TfrcLdaSinkAgent::configure()
{
	Tcl& tcl = Tcl::instance();
	tcl.evalf("%s set lda_", name());
	std::string lda(tcl.result());
	driver_ = -1;
	for (int k = 0; k < LDA_COUNT; k++)
		if (lda == lda_names[k])
			driver_ = k;
	if (driver_ < 0) {
		fprintf(stderr, "Agent/TFRCSink/LDA: unknown lda_ '%s'\n", lda.c_str());
		exit(1);
	}
	if (veno_window_ < 1 || xrtp_n_ < 1) {
		fprintf(stderr, "Agent/TFRCSink/LDA: veno_window_ and xrtp_n_ must be >= 1\n");
		exit(1);
	}
	tcl.evalf("%s set log_", name());
	std::string path(tcl.result());
	if (!path.empty()) {
		std::string header("t,flow,seq,n");
		for (int k = 0; k < LDA_COUNT; k++)
			header += std::string(",") + lda_names[k];
		header += ",driver,driven\n";
		log_ = open_log("log_", path, header.c_str());
	}
	tcl.evalf("%s set reportlog_", name());
	std::string reports(tcl.result());
	if (!reports.empty())
		reportlog_ = open_log("reportlog_", reports,
		    "t,flow,seq,rtt,p,x_recv,rcvd,loss_seen,losses,wireless,as_received\n");
	dev_factors("zigzag_dev_factors_", zigzag_dev_);
	dev_factors("zbs_zigzag_dev_factors_", zbs_zigzag_dev_);
	s_.x_over.assign(xrtp_n_, 0);
	s_.times.assign(veno_window_ + 1, NAN);
	configured_ = 1;
}

/* Biaz's window (docs/ldas.md, biaz): (n+1)·T_min ≤ T_i < (n+upper)·T_min (≤ if inclusive). */
int TfrcLdaSinkAgent::biaz_rule(long n, double Ti, double tmin, double upper, int inclusive) const
{
	double hi = ((double) n + upper) * tmin;
	int upper_ok = inclusive ? le(Ti, hi) : lt(Ti, hi);
	return le((double) (n + 1) * tmin, Ti) && upper_ok;
}

/* Every arrival, before TFRC's own processing: fold it into each LDA's state, then decide the
 * gap it reveals, if any (docs/ldas.md: update_first, detection 1, gap delay "revealing"). */
void TfrcLdaSinkAgent::lda_arrival(Packet *pkt)
{
	if (!configured_)
		configure();
	pending_.clear();
	LdaFlowState &s = s_;
	hdr_tfrc *th = hdr_tfrc::access(pkt);
	double t = trace_time(Scheduler::instance().clock());
	double ts = trace_time(th->timestamp);
	long seq = th->seqno;
	double d = t - ts;
	int first = (s.j == 0);

	/* the timeline: in order, gap, spacing samples, jitter (TFRC numbers from 0) */
	long hi_before = first ? -1 : s.hi;
	int in_order = first || seq > s.hi;
	double iat = first ? NAN : t - s.t_prev;
	double jitter = first ? NAN : (t - s.t_prev) - (ts - s.ts_prev);
	long step = first ? 0 : seq - s.seq_prev;
	double spacing = (step == 1) ? iat : NAN;
	double tavg_sample = (step >= 1) ? iat / (double) step : NAN;
	int gap = in_order && seq > hi_before + 1;
	double Ti = first ? NAN : t - s.t_inorder;
	if (first)
		s.t0 = t;

	/* running minimum and maximum of d; Spike's (and ZBS's own Spike's) and WRO-LDA+'s
	 * hysteresis */
	if (first) {
		s.lo = s.hi_d = d;
		s.spike = s.zbs_spike = s.wro = 0;
	} else if (d < s.lo) {
		s.lo = d;
	} else if (d > s.hi_d) {
		s.hi_d = d;
	}
	double range = s.hi_d - s.lo;
	spike_step(&s.spike, d, s.lo, range, spike_alpha_, spike_beta_);
	spike_step(&s.zbs_spike, d, s.lo, range, zbs_spike_alpha_, zbs_spike_beta_);
	double upper = s.lo + wro_K_ * range;
	double lower = s.lo + wro_B_ * range;
	if (d >= upper)
		s.wro = 1;
	else if (d <= lower)
		s.wro = 0;

	/* T_min, and WIN-LDA+'s T_min learnt in its observation period */
	if (!std::isnan(spacing) && !le(s.tmin, spacing))
		s.tmin = spacing;
	if (!std::isnan(spacing) && t < s.t0 + win_T_obs_ && !le(s.tmin_obs, spacing))
		s.tmin_obs = spacing;

	/* ZigZag's (and ZBS's own ZigZag's) mean and deviation */
	ewma_mean_dev(d, first, zigzag_alpha_, &s.zz_mean, &s.zz_dev);
	ewma_mean_dev(d, first, zbs_zigzag_alpha_, &s.zbs_zz_mean, &s.zbs_zz_dev);

	/* ZBS's scheme in force (paper 000 Sec. VII-A; docs/ldas.md, zbs) */
	if (first) {
		s.zbs_tavg = NAN;
		s.zbs_dmin = d;
		s.zbs_scheme = ZBS_ZIGZAG;
		s.zbs_jlock = s.j;
		s.zbs_tlock = t;
	} else if (d < s.zbs_dmin) {
		s.zbs_dmin = d;
	}
	if (!std::isnan(tavg_sample))
		s.zbs_tavg = std::isnan(s.zbs_tavg) ? tavg_sample
		    : (1 - zbs_gain_) * s.zbs_tavg + zbs_gain_ * tavg_sample;
	if (s.j - s.zbs_jlock >= zbs_lock_packets_ || t - s.zbs_tlock >= zbs_lock_time_) {
		int candidate;
		if (std::isnan(s.tmin) || std::isnan(s.zbs_tavg)) {
			candidate = ZBS_ZIGZAG;
		} else if (d < s.zbs_dmin + zbs_delay_frac_ * s.tmin) {
			candidate = ZBS_SPIKE;
		} else {
			double narr = s.tmin > 0 ? s.zbs_tavg / s.tmin : INFINITY;
			if (narr < zbs_b1_)
				candidate = ZBS_ZIGZAG;
			else if (narr < zbs_b2_)
				candidate = ZBS_MBIAZ;
			else if (narr < zbs_b3_)
				candidate = ZBS_ZIGZAG;
			else
				candidate = ZBS_SPIKE;
		}
		if (candidate != s.zbs_scheme) {
			s.zbs_scheme = candidate;
			s.zbs_jlock = s.j;
			s.zbs_tlock = t;
		}
	}

	/* XRTP (paper 001 Fig. 4): positive-jitter run, EWMAs at gain alpha, over-deviation count */
	s.x_run_prev = first ? 0 : s.x_run;
	s.x_run = (!first && gt(jitter, 0)) ? s.x_run + 1 : 0;
	ewma_mean_dev(d, first, xrtp_alpha_, &s.x_mean, &s.x_dev);
	int over = d > s.x_mean + s.x_dev ? 1 : 0;
	int slot = (int) (s.j % xrtp_n_);
	if (first)
		s.x_count = 0;
	if (s.j >= xrtp_n_)
		s.x_count -= s.x_over[slot];
	s.x_over[slot] = over;
	s.x_count += over;

	/* Veno: receive times of the last window+1 arrivals */
	s.times[s.j % (veno_window_ + 1)] = t;

	if (gap)
		decide_gap(t, hi_before + 1, seq - hi_before - 1, Ti, d, jitter);
	else if (!in_order)
		logged_.erase(seq);	// it arrived late: not a loss (docs/ldas.md)

	if (in_order) {
		s.hi = seq;
		s.t_inorder = t;
	}
	s.t_prev = t;
	s.ts_prev = ts;
	s.seq_prev = seq;
	s.j++;
}

/* Decide a gap of n packets from `first` on, revealed at time t (every LDA, docs/ldas.md). */
void TfrcLdaSinkAgent::decide_gap(double t, long first, long n, double Ti, double d, double jitter)
{
	LdaFlowState &s = s_;
	int w[LDA_COUNT];
	w[LDA_UNAWARE] = 0;
	w[LDA_OMNISCIENT] = 0;		// per packet, below
	w[LDA_BIAZ] = biaz_rule(n, Ti, s.tmin, biaz_upper_, 0);
	w[LDA_MBIAZ] = biaz_rule(n, Ti, s.tmin, mbiaz_upper_, 0);
	w[LDA_SPIKE] = s.spike == 0;
	w[LDA_WRO_LDAPLUS] = s.wro == 0;
	w[LDA_ZIGZAG] = zigzag_rule(n, d, s.zz_mean, s.zz_dev, zigzag_dev_);
	switch (s.zbs_scheme) {	// ZBS's base schemes, with its own parameters
	case ZBS_MBIAZ:
		w[LDA_ZBS] = biaz_rule(n, Ti, s.tmin, zbs_mbiaz_upper_, 0);
		break;
	case ZBS_SPIKE:
		w[LDA_ZBS] = s.zbs_spike == 0;
		break;
	default:
		w[LDA_ZBS] = zigzag_rule(n, d, s.zbs_zz_mean, s.zbs_zz_dev, zbs_zigzag_dev_);
	}
	int observing = !(t >= s.t0 + win_T_obs_);
	w[LDA_WIN_LDAPLUS] = !observing && biaz_rule(n, Ti, s.tmin_obs, 2.0, 1);

	long m = s.j < veno_window_ ? s.j : veno_window_;
	double span = t - s.times[(s.j - m) % (veno_window_ + 1)];
	double rate = (m > 0 && span > 0) ? (double) m / span : NAN;
	w[LDA_VENO] = lt(rate * (d - s.lo), veno_beta_);

	int squeezed = lt(jitter, 0) && s.x_run_prev >= xrtp_positive_jitters_;
	double p = s.hi_d > s.lo ? (d - s.lo) / (s.hi_d - s.lo) : NAN;
	int loaded = ge(p, xrtp_threshold_) && s.x_count >= xrtp_l1_;
	w[LDA_XRTP] = !squeezed && !loaded;

	for (long seq = first; seq < first + n; seq++) {
		w[LDA_OMNISCIENT] = LdaOracle::dropped(fid_, (int) seq);
		pending_[(int) seq] = w[driver_];
		if (log_) {
			char cell[64];
			snprintf(cell, sizeof cell, "%.17g,%d,%ld,%ld", t, fid_, seq, n);
			std::string line(cell);
			for (int k = 0; k < LDA_COUNT; k++)
				line += w[k] ? ",1" : ",0";
			snprintf(cell, sizeof cell, ",%s,%d\n", lda_names[driver_], w[driver_]);
			logged_[seq] = line + cell;
		}
	}
}

/* Whether TFRC should leave lost packet `seqno` out of its loss history (the LDA called it
 * wireless). */
int TfrcLdaSinkAgent::lda_wireless(int seqno)
{
	std::map<int, int>::iterator it = pending_.find(seqno);
	int wireless = it != pending_.end() && it->second;
	wireless_losses_ += wireless;
	return wireless;
}

/* Log one report as it is sent: its time, the highest sequence number received, the sender's
 * RTT the receiver holds, the loss event rate p and receive rate X_recv (packets/s) it carries,
 * the packets counted as received since the last report, whether slow start has ended (the
 * first loss that entered the loss history), the lost packets detected so far and how many
 * of them the steering LDA called wireless, and wireless_as_received_. */
void TfrcLdaSinkAgent::lda_report(double p, double x_recv)
{
	if (!reportlog_)
		return;
	fprintf(reportlog_, "%.17g,%d,%d,%.17g,%.17g,%.17g,%d,%d,%d,%ld,%d\n",
	    Scheduler::instance().clock(), fid_, maxseq, rtt_, p, x_recv, rcvd_since_last_report,
	    loss_seen_yet, total_losses_, wireless_losses_, wireless_as_received_);
	fflush(reportlog_);
}
