from shared.store.leases import LeaseEntry, decode, encode


def test_lease_entries_round_trip_grouped_by_lease_end() -> None:
    entries = [
        LeaseEntry("01J0000000000000000000000A", 1, 5_000),
        LeaseEntry("01J0000000000000000000000B", 3, 5_000),
        LeaseEntry("01J0000000000000000000000C", 2, 9_000),
    ]
    text = encode(entries)
    assert text.count("=") == 2, "one lease end is written once for the jobs that share it"
    assert decode(text) == entries
