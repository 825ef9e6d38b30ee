"""The dispatch token bucket (spec §2.5) and D8 (monotonic refill time)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain import ratelimit as rl

S = 1_000_000_000  # one second in ns
T0 = 1_700_000_000 * S


@pytest.mark.parametrize(
    ("qps", "cap"),
    [(0.001, 1), (1, 1), (1000, 1), (1000.5, 100.05), (2000, 200), (2560, 256), (1e300, 256)],
)
def test_capacity(qps: float, cap: float) -> None:
    assert rl.capacity(qps) == pytest.approx(cap)


def test_unset_bucket_starts_full() -> None:
    assert rl.refill(None, None, T0, 2.5) == 1
    assert rl.refill(None, T0, T0, 2000) == 200
    assert rl.refill(0.0, None, T0, 2000) == 200


def test_refill_accrues_and_caps() -> None:
    assert rl.refill(0.0, T0, T0 + S // 10, 2.5) == pytest.approx(0.25)
    assert rl.refill(0.0, T0, T0 + 10 * S, 2.5) == 1
    assert rl.refill(10.0, T0, T0 + S // 100, 2000) == pytest.approx(30)


def test_refill_never_goes_backwards_in_time() -> None:
    assert rl.refill(0.5, T0, T0 - 5 * S, 2.5) == 0.5


def test_spec_example_qps_2_5() -> None:
    tokens = rl.refill(None, None, T0, 2.5)
    assert rl.whole_tokens(tokens) == 1
    state, wait = rl.after_claim(tokens, 1, None, T0, 2.5)
    assert wait == 400
    later = T0 + 100_000_000
    tokens = rl.refill(state.tokens, state.refilled_at_ns, later, 2.5)
    assert rl.whole_tokens(tokens) == 0
    assert rl.retry_after_ms(tokens, 2.5) == 300


def test_spec_example_qps_2000() -> None:
    tokens = rl.refill(None, None, T0, 2000)
    assert min(256, rl.whole_tokens(tokens)) == 200
    state, wait = rl.after_claim(tokens, 200, None, T0, 2000)
    assert state.tokens == 0 and wait == 1  # ceil(1000/2000) → at least 1 ms


def test_spec_example_qps_huge() -> None:
    tokens = rl.refill(None, None, T0, 1e300)
    assert tokens == 256 and rl.whole_tokens(tokens) == 256
    state, wait = rl.after_claim(tokens, 256, None, T0, 1e300)
    assert wait == 1
    assert rl.refill(state.tokens, state.refilled_at_ns, T0 + 1, 1e300) == 256


def test_spec_example_qps_0_001() -> None:
    tokens = rl.refill(None, None, T0, 0.001)
    state, wait = rl.after_claim(tokens, 1, None, T0, 0.001)
    assert wait == 1_000_000
    tokens = rl.refill(state.tokens, state.refilled_at_ns, T0 + S // 100, 0.001)
    retry = rl.retry_after_ms(tokens, 0.001)
    assert 999_000 <= retry <= 1_000_000
    assert math.ceil(retry / 1000) == 1000  # Retry-After seconds


def test_retry_after_rounds_up_and_has_floor_of_one() -> None:
    assert rl.retry_after_ms(0.999999, 1000) == 1
    assert rl.retry_after_ms(0.9999999, 1) == 1
    assert rl.retry_after_ms(0.5, 3) == 167  # 166.67 → 167
    assert rl.retry_after_ms(-2.0, 1) == 3000


@pytest.mark.parametrize("qps", [1e-300, 1e-20, 5e-324])
def test_retry_after_saturates_at_int64_max(qps: float) -> None:
    assert rl.retry_after_ms(0.0, qps) == 2**63 - 1


def test_whole_tokens() -> None:
    assert rl.whole_tokens(0.999) == 0
    assert rl.whole_tokens(1.0) == 1
    assert rl.whole_tokens(199.9) == 199
    assert rl.whole_tokens(256.0) == 256


def test_after_claim_with_tokens_left_returns_zero_wait() -> None:
    state, wait = rl.after_claim(200.0, 100, T0, T0 + S, 2000)
    assert (state.tokens, state.refilled_at_ns, wait) == (100.0, T0 + S, 0)
    state, wait = rl.after_claim(2.0, 1, T0, T0, 2000)
    assert wait == 0


def test_d8_refill_time_only_moves_forward() -> None:
    assert rl.advance_refill_time(None, T0) == T0
    assert rl.advance_refill_time(T0, T0 + 1) == T0 + 1
    assert rl.advance_refill_time(T0, T0 - S) == T0
    state, _ = rl.after_claim(1.0, 1, T0, T0 - S, 2.5)
    assert state.refilled_at_ns == T0


# --- properties -------------------------------------------------------------------------------

qps_values = st.one_of(
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.001, 2.5, 1000.0, 1000.5, 2000.0, 1e300]),
)


@given(qps_values)
def test_capacity_bounds(qps: float) -> None:
    cap = rl.capacity(qps)
    assert 1 <= cap <= 256
    assert rl.whole_tokens(cap) >= 1


@given(
    qps_values,
    st.floats(min_value=0, max_value=256, allow_nan=False),
    st.integers(min_value=-10 * S, max_value=10 * S),
)
def test_refill_never_exceeds_capacity(qps: float, tokens: float, dt: int) -> None:
    tokens = min(tokens, rl.capacity(qps))
    after = rl.refill(tokens, T0, T0 + dt, qps)
    assert after <= rl.capacity(qps)
    assert after >= tokens  # never loses tokens


@given(st.floats(min_value=-256, max_value=0.999999, allow_nan=False), qps_values)
def test_retry_after_is_positive_and_sufficient(tokens: float, qps: float) -> None:
    wait = rl.retry_after_ms(tokens, qps)
    assert 1 <= wait <= 2**63 - 1
    if wait < 2**53:
        refilled = rl.refill(tokens, 0, wait * 1_000_000, qps)
        assert refilled >= 1 - 1e-9 or refilled == rl.capacity(qps)


def simulate(qps: float, claims: list[tuple[int, int]]) -> tuple[int, float]:
    """Run claims (time offset ns, wanted jobs) through the bucket as an adapter would:
    plan → take min(wanted, whole tokens) → persist. Returns (dispatched, lowest tokens)."""
    tokens: float | None = None
    refilled_at: int | None = None
    dispatched, lowest = 0, math.inf
    for offset, wanted in claims:
        now = T0 + offset
        available = rl.refill(tokens, refilled_at, now, qps)
        assert available <= rl.capacity(qps)
        taken = min(wanted, rl.whole_tokens(available))
        if taken >= 1:
            state, wait = rl.after_claim(available, taken, refilled_at, now, qps)
            assert state.tokens >= 0
            assert (wait == 0) is (state.tokens >= 1)
            lowest = min(lowest, state.tokens)
        else:
            state = rl.BucketState(available, rl.advance_refill_time(refilled_at, now))
        tokens, refilled_at = state.tokens, state.refilled_at_ns
        dispatched += taken
    return dispatched, lowest


claim_lists = st.lists(
    st.tuples(st.integers(min_value=0, max_value=5 * S), st.integers(min_value=1, max_value=256)),
    min_size=1,
    max_size=40,
)


@given(qps_values, claim_lists)
def test_dispatch_bounded_with_any_claim_order(qps: float, claims: list[tuple[int, int]]) -> None:
    """D8: whatever order the claims' clock readings arrive in (a claim may read its clock
    before waiting for the lock), dispatched ≤ capacity + qps·T over the window [0, T]."""
    dispatched, lowest = simulate(qps, claims)
    horizon_s = max(t for t, _ in claims) / S
    assert dispatched <= rl.capacity(qps) + qps * horizon_s + 1e-6
    assert lowest >= 0


@given(qps_values, claim_lists)
def test_dispatch_bounded_for_sorted_claims(qps: float, claims: list[tuple[int, int]]) -> None:
    claims = sorted(claims)
    dispatched, _ = simulate(qps, claims)
    window_s = (claims[-1][0] - claims[0][0]) / S
    assert dispatched <= rl.capacity(qps) + qps * window_s + 1e-6


def test_stale_clock_would_mint_tokens_without_d8() -> None:
    """The D8 regression: a claim with an older clock reading must not refill again."""
    qps = 1.0
    # Claim A at t=10 s empties the bucket; claim B read t=9 s before waiting, then claim C at
    # t=10 s. With a backwards-moving refill time, C would see a second of tokens from 9→10.
    state, _ = rl.after_claim(rl.refill(None, None, T0 + 10 * S, qps), 1, None, T0 + 10 * S, qps)
    b_tokens = rl.refill(state.tokens, state.refilled_at_ns, T0 + 9 * S, qps)
    assert rl.whole_tokens(b_tokens) == 0
    b_state = rl.BucketState(b_tokens, rl.advance_refill_time(state.refilled_at_ns, T0 + 9 * S))
    c_tokens = rl.refill(b_state.tokens, b_state.refilled_at_ns, T0 + 10 * S, qps)
    assert rl.whole_tokens(c_tokens) == 0
