"""Figures in the manner of the papers' (matplotlib; ``ldanalyze.plot``). Each function returns
its Figure, or draws into the ``ax`` it is given.

- ``timeline``: ROTT and inter-arrival time of one flow against time, every loss marked where
  the receiver detected it, by true cause (marker shape) and by each LDA's decision (colour);
  the first LDA's internal state below. Lines are decimated to the pixels they cover; losses
  never are.
- ``mc_mw``: M_c against M_w, one point per LDA with its confidence intervals, the per-flow
  spread behind it, the ideal corner marked (paper 000 §VI weighs the two this way).
- ``confusion``: paper 001 Table I as a 2 × 2 heat map per LDA.
- ``called_wireless``: the share of its losses each LDA called wireless, with its interval and
  the per-flow spread; the true share where the causes are known. The first figure of a trace
  without ground truth: there it is what the LDAs say.
- ``kappa``: Cohen's kappa between every pair of LDAs as a heat map (``consensus``).
- ``shares_over_time``: each LDA's share called wireless per time window, as a heat map.
- ``rates``: each controller's allowed rate fed several LDAs, omniscient and unaware as
  bounds, against time (open-loop replay).
- ``sender``: one flow of a sender's view: what it sent and resent (each declared loss by its
  trigger, spurious ones apart, the true cause where known), its RTT and delivery rate, its
  chunks and a policer detector's token rate per policed chunk.
- ``across``: a metric against a trace property over a set of traces (paper 000 Figs. 8-9).
- ``zbs_usage``: the share of time each ZBS base scheme was in force (paper 000 Fig. 13).
- ``sweep``: a parameter sweep's M_c against M_w, the frontier and the defaults.
- ``evaluation``: the learned LDA's grouped cross-validation: accuracy per held-out group and
  LDA with its intervals, and the features' permutation importance.

Colours are Okabe and Ito's colour-blind-safe palette. matplotlib is imported when a figure is
drawn, not with ldanalyze.
"""

from .scores import across, called_wireless, confusion, kappa, mc_mw, shares_over_time
from .sender import sender
from .studies import evaluation, sweep, zbs_usage
from .timelines import rates, timeline

__all__ = [
    "timeline",
    "mc_mw",
    "confusion",
    "called_wireless",
    "kappa",
    "shares_over_time",
    "rates",
    "sender",
    "across",
    "zbs_usage",
    "sweep",
    "evaluation",
]
