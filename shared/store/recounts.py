"""The stream's gauges recounted from the jobs themselves (`shared.recount`), so a name's
pending and running counts heal after stream records were lost (a batch sent to the
dead-letter queue: its records are never counted).

Items, under one partition a space (`RECOUNT#{space}`), each kept two days at most (the
TTL is a janitor: a recount left half done is begun again by the next):

- `-`: the survey's progress: when it began, and the job partitions read whole (`done`).
- `n#{name}`: the name's gauges and version as they were before any job was read (`p`,
  `r`, `v`), and what each job partition holds of its unfinished jobs (`t{partition}`:
  pending and running).

A partition's counts are set whole (`SET t{n}`), so a survey step repeated after a crash
writes the same thing again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shared.job import JobStatus
from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item, TransactionConflict, serialize, values
from shared.store.tallies import Gauges

PREFIX = "RECOUNT#"
PROGRESS = "-"
NAME = "n#"
TTL_S = 2 * 86_400
READ_THREADS = 8
"""Job partitions read at once (each waits on DynamoDB most of its time)."""
UNFINISHED = (JobStatus.PENDING.value, JobStatus.RUNNING.value)


@dataclass(frozen=True)
class Counter:
    """A name's gauges as the stream left them (not clamped at zero: a lost record can take
    them below), and their version: every batch that counts a record of the name adds one."""

    pending: int = 0
    running: int = 0
    version: int = 0


@dataclass(frozen=True)
class Survey:
    began_ms: int
    done: frozenset[int]
    """The job partitions read."""
    partitions: int = keys.JOB_SHARDS

    @property
    def left(self) -> list[int]:
        """The job partitions still to read."""
        return [n for n in range(self.partitions) if n not in self.done]


@dataclass(frozen=True)
class Proposal:
    """A name's recount: its gauges before the survey read any job, and what its jobs hold."""

    name: str
    was: Counter
    truth: Gauges

    @property
    def differs(self) -> bool:
        return (self.was.pending, self.was.running) != (self.truth.pending, self.truth.running)


class RecountStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    # -- the survey ----------------------------------------------------------------

    def survey(self, space: str) -> Survey | None:
        row = self.db.get({"pk": PREFIX + space, "sk": PROGRESS})
        if row is None:
            return None
        return Survey(int(row["began"]), frozenset(int(n) for n in row.get("done") or ()))

    def begin(self, space: str, names: Iterable[str], now_ms: int) -> Survey:
        """Start a survey: each name's gauges read now, before any job (strongly consistent),
        kept beside the counts to come; then the progress item."""
        names = list(dict.fromkeys(names))
        found = {
            str(r["pk"]).removeprefix(keys.name_counts(space, "")["pk"]): r
            for r in self.db.batch_get([keys.name_counts(space, n) for n in names], consistent=True)
        }
        ttl = now_ms // 1000 + TTL_S
        self.db.batch_put(
            [
                {"pk": PREFIX + space, "sk": NAME + name, "ttl": ttl} | _counter_attrs(found.get(name))
                for name in names
            ]
        )
        self.db.put({"pk": PREFIX + space, "sk": PROGRESS, "began": now_ms, "ttl": ttl})
        return Survey(now_ms, frozenset())

    def unfinished(self, space: str, partitions: Iterable[int]) -> dict[int, dict[str, Gauges]]:
        """What each job partition numbered `partitions` holds of unfinished jobs, by name:
        each read whole, strongly consistent (a page of 1 MB at a time)."""
        wanted = list(partitions)
        with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="emit-recount") as pool:
            counted = list(pool.map(lambda n: self._partition(space, n), wanted))
        return dict(zip(wanted, counted, strict=True))

    def _partition(self, space: str, n: int) -> dict[str, Gauges]:
        counts: dict[str, list[int]] = {}
        start = None
        while True:
            rows, start = self.db.query(
                "pk = :pk",
                names={"#status": "status", "#name": "name"},
                vals={":pk": keys.job_partition(space, n), ":p": UNFINISHED[0], ":r": UNFINISHED[1]},
                consistent=True,
                start=start,
                filter_expression="#status IN (:p, :r)",
                projection="#name, #status",
            )
            for row in rows:
                pair = counts.setdefault(str(row["name"]), [0, 0])
                pair[0 if row["status"] == UNFINISHED[0] else 1] += 1
            if start is None:
                return {name: Gauges(p, r) for name, (p, r) in counts.items()}

    def record(self, space: str, read: Mapping[int, Mapping[str, Gauges]]) -> None:
        """Keep what the partitions `read` hold, one write a name (each partition's counts set
        whole, `t{n}`; only names the survey began with: a name listed since has no gauges
        from before), then mark them read in one write."""
        by_name: dict[str, dict[str, list[int]]] = {}
        for partition, counts in read.items():
            for name, gauges in counts.items():
                by_name.setdefault(name, {})[f"t{partition}"] = [gauges.pending, gauges.running]
        for name, sets in by_name.items():
            with contextlib.suppress(ConditionFailed):
                self.db.update(
                    {"pk": PREFIX + space, "sk": NAME + name},
                    "SET " + ", ".join(f"#{a} = :{a}" for a in sets),
                    condition="attribute_exists(pk)",
                    names={f"#{a}": a for a in sets},
                    vals={f":{a}": v for a, v in sets.items()},
                )
        if read:
            self.db.update(
                {"pk": PREFIX + space, "sk": PROGRESS},
                "ADD done :n",
                condition="attribute_exists(pk)",
                vals={":n": set(read)},
            )

    def proposals(self, space: str) -> list[Proposal]:
        out: list[Proposal] = []
        start = None
        while True:
            rows, start = self.db.query(
                "pk = :pk AND begins_with(sk, :n)",
                vals={":pk": PREFIX + space, ":n": NAME},
                consistent=True,
                start=start,
            )
            out += [_proposal(row) for row in rows]
            if start is None:
                return out

    # -- settling ------------------------------------------------------------------

    def settle(self, space: str, proposal: Proposal) -> bool:
        """Set the name's gauges to what its jobs hold, unless a batch counted a record of the
        name since the survey began (its version moved); the space's gauges move by as much,
        in the same transaction. Whether it was set."""
        was, truth = proposal.was, proposal.truth
        unchanged = "v = :v" if was.version else "attribute_not_exists(v)"
        name_set = {
            "Update": {
                "Key": serialize(keys.name_counts(space, proposal.name)),
                "UpdateExpression": "SET pending = :p, running = :r ADD v :one",
                "ConditionExpression": unchanged,
                "ExpressionAttributeValues": values(
                    {":p": truth.pending, ":r": truth.running, ":one": 1}
                    | ({":v": was.version} if was.version else {})
                ),
            }
        }
        space_add = {
            "Update": {
                "Key": serialize(keys.space_counts(space)),
                "UpdateExpression": "ADD pending :dp, running :dr",
                "ExpressionAttributeValues": values(
                    {":dp": truth.pending - was.pending, ":dr": truth.running - was.running}
                ),
            }
        }
        try:
            self.db.transact([name_set, space_add])
            return True
        except TransactionConflict as conflict:
            if conflict.reasons and conflict.reasons[0].get("code") == "ConditionalCheckFailed":
                return False
            raise

    def end(self, space: str, names: Iterable[str]) -> None:
        """Remove the survey: its names' items, then its progress."""
        self.db.batch_delete([{"pk": PREFIX + space, "sk": NAME + n} for n in names])
        self.db.delete({"pk": PREFIX + space, "sk": PROGRESS})


def _counter_attrs(row: Item | None) -> dict[str, Any]:
    if row is None:
        return {"p": 0, "r": 0, "v": 0}
    return {"p": int(row.get("pending") or 0), "r": int(row.get("running") or 0), "v": int(row.get("v") or 0)}


def _proposal(row: Item) -> Proposal:
    pending = running = 0
    for attr, value in row.items():
        if attr.startswith("t") and attr[1:].isdigit():
            pending += int(value[0])
            running += int(value[1])
    was = Counter(int(row.get("p") or 0), int(row.get("r") or 0), int(row.get("v") or 0))
    return Proposal(str(row["sk"]).removeprefix(NAME), was, Gauges(pending, running))
