"""Binned rates and the sent rate, against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ldanalyze.control.sent_rate import binned_rate, sent_rates
from ldanalyze.errors import UsageError

from .test_control_newreno import paced_flow


def test_binned_rate_integrates_the_step_function():
    # 10 b/s on [0, 1), 20 b/s on [1, 3): bin [0, 2) averages 15, bin [2, 3) is 20
    got = binned_rate(np.array([0.0, 1.0, 3.0]), np.array([10.0, 20.0, np.nan]), np.array([0.0, 2.0, 3.0]))
    np.testing.assert_allclose(got, [15.0, 20.0])
    # undefined on [0, 1): the bin averages over the time the rate is defined only
    got = binned_rate(np.array([0.0, 1.0, 2.0]), np.array([np.nan, 4.0, 9.0]), np.array([0.0, 2.0]))
    np.testing.assert_allclose(got, [4.0])
    # never defined in a bin: NaN
    got = binned_rate(np.array([0.0, 2.0]), np.array([np.nan, 1.0]), np.array([0.0, 1.0, 2.0]))
    assert np.isnan(got).all()


def test_sent_rates_count_every_transmission_by_send_time():
    tl = paced_flow(128, {5: "wireless"})  # 100-byte packets every 2^-6 s: 64 per second
    sent = sent_rates(tl, 1.0)
    assert sent["t"].tolist() == [0.0, 1.0]
    assert sent["sent_bps"].tolist() == [64 * 800.0, 64 * 800.0]  # the lost one counts too
    assert sent_rates(tl, 0.5)["sent_bps"].tolist() == pytest.approx([51200.0] * 4)
    with pytest.raises(UsageError, match="positive"):
        sent_rates(tl, 0)
