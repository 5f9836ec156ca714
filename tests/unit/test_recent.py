"""The short per-key cache that settings and policies are read through."""

from __future__ import annotations

from shared.clock import ManualClock, Recent


def test_a_value_is_kept_for_its_window_then_read_again_and_forget_drops_it() -> None:
    clock = ManualClock()
    reads: list[int] = []

    def read() -> int:
        reads.append(clock.now_ms())
        return len(reads)

    recent: Recent[str, int] = Recent(clock)
    assert recent.get("s", 1_000, read) == 1
    clock.advance(999)
    assert recent.get("s", 1_000, read) == 1, "still inside the window"
    assert recent.get("s", 999, read) == 2, "the window is asked on each read"
    clock.advance(1_000)
    assert recent.get("s", 1_000, read) == 3
    recent.forget("s")
    assert recent.get("s", 1_000, read) == 4
    assert recent.get("other", 1_000, read) == 5, "kept per key"
