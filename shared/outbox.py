"""How the stream and the clock hand deliveries to the callback sender, and how the
sender reads them back (`functions/callback_sender.py`).

A message names one delivery, `{"space", "jobId"}`, and carries the finished job as the
stream saw it (`job`, the store's `Snapshot.wire`) when the stream had it at hand and it
is small: the first try then needs no read of the job (a finished job never changes, so
the copy is the job). A large one is left out, and the sender reads it; SQS takes at most
256 KiB a message and a batch.

- On AWS, `SqsOutbox`: a standard queue, each message in its space's group, so SQS's fair
  queues keep one space's backlog from delaying the others' messages.
- Locally, `LocalOutbox`: deliveries wait in memory, per space, for `emit dev`'s sender
  threads (`devserver.background.Sender`), which send at most `SPACE_SENDS` of one space
  at once and every other space's at once.

Either may hand a delivery over twice (SQS delivers at least once, a tick repeats one the
sender has not taken yet): the sender's hold (`DeliveryStore.take`) sends it once.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from shared.callbacks import Dispatcher, Due
from shared.store.port import Snapshot

MAX_MESSAGE = 64 * 1024
"""A message that would carry the finished job is at most this long, else it goes without
and the sender reads the job: four such messages fill one SQS batch."""
SQS_BATCH_BYTES = 256 * 1024
"""SQS's limit for one message, and for all the messages of one SendMessageBatch."""
SQS_BATCH_ENTRIES = 10
SPACE_SENDS = 16
"""Locally: one space's sends in flight at once (the others wait their turn), so a space
whose targets never answer cannot take every sender's slot."""


def message(due: Due) -> str:
    """The message body that hands `due` over."""
    content: dict[str, Any] = {"space": due[0], "jobId": due[1]}
    if len(due) == 3:
        carrying = json.dumps(content | {"job": due[2].wire()}, separators=(",", ":"))
        if len(carrying) <= MAX_MESSAGE:
            return carrying
    return json.dumps(content, separators=(",", ":"))


def due_of(body: str) -> Due:
    """The delivery a message body hands over (ValueError if it is not one)."""
    content = json.loads(body)
    space, job_id = content.get("space"), content.get("jobId")
    if not isinstance(space, str) or not isinstance(job_id, str):
        raise ValueError("a callback message needs a space and a jobId")
    if isinstance(content.get("job"), dict):
        return space, job_id, Snapshot.of_wire(space, content["job"])
    return space, job_id


def send(dispatcher: Dispatcher, bodies: Sequence[str]) -> list[str | BaseException]:
    """Try the deliveries these messages hand over, side by side: each message's outcome,
    the delivery's state or what kept its attempt from being made (a body that is not a
    message, the table failing). A delivery named twice is tried once; both answer alike."""
    parsed: list[Due | ValueError] = []
    for body in bodies:
        try:
            parsed.append(due_of(body))
        except (ValueError, TypeError) as exc:
            parsed.append(ValueError(f"not a callback message: {exc}"))
    once = {(due[0], due[1]): due for due in parsed if not isinstance(due, ValueError)}
    outcomes = dict(zip(once, dispatcher.dispatch_each(list(once.values())), strict=True))
    return [due if isinstance(due, ValueError) else outcomes[due[0], due[1]] for due in parsed]


class SqsOutbox:
    """The sender's queue on AWS (`EMIT_CALLBACK_QUEUE_URL`)."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url

    def submit(self, dues: Sequence[Due]) -> None:
        """Every delivery handed over, or an exception: the stream's batch, or the tick,
        fails and is made again (handing over twice sends once)."""
        for batch in _batches([(due[0], message(due)) for due in dues]):
            entries = [
                {"Id": str(n), "MessageBody": body, "MessageGroupId": space}
                for n, (space, body) in enumerate(batch)
            ]
            answer = self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            if answer.get("Failed"):
                failed = answer["Failed"]
                raise RuntimeError(f"{len(failed)} callbacks not handed over: {failed[0].get('Message')}")


def _batches(messages: list[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    """SendMessageBatch calls: at most ten messages, and 256 KiB in all, each."""
    batch: list[tuple[str, str]] = []
    size = 0
    for space, body in messages:
        length = len(body.encode())
        if batch and (len(batch) == SQS_BATCH_ENTRIES or size + length > SQS_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((space, body))
        size += length
    if batch:
        yield batch


class LocalOutbox:
    """`emit dev`'s: deliveries handed over wait here, per space and in order, until the
    sender takes them (`take`) and says they are done (`done`). One already waiting or
    being sent is not taken twice."""

    def __init__(self, *, per_space: int = SPACE_SENDS, batch: int = SQS_BATCH_ENTRIES) -> None:
        self.per_space = per_space
        self.batch = batch
        self.on_submit: Callable[[], None] | None = None
        """The sender's wake-up, while its threads run."""
        self._lock = threading.Lock()
        self._waiting: dict[str, dict[str, Due]] = {}
        self._sending: dict[str, set[str]] = {}

    def submit(self, dues: Sequence[Due]) -> None:
        with self._lock:
            for due in dues:
                space, job_id = due[0], due[1]
                if job_id in self._sending.get(space, ()):
                    continue
                waiting = self._waiting.setdefault(space, {})
                if job_id not in waiting or len(due) == 3:  # the finished job saves a read
                    waiting[job_id] = due
        wake = self.on_submit
        if wake is not None:
            wake()

    def take(self) -> list[list[Due]]:
        """Batches to send now, each of one space: as many as each space has room for."""
        batches: list[list[Due]] = []
        with self._lock:
            for space in list(self._waiting):
                waiting, sending = self._waiting[space], self._sending.setdefault(space, set())
                while waiting and len(sending) < self.per_space:
                    room = min(self.batch, self.per_space - len(sending))
                    batch = [waiting.pop(job_id) for job_id in list(itertools.islice(waiting, room))]
                    sending.update(due[1] for due in batch)
                    batches.append(batch)
                if not waiting:
                    del self._waiting[space]
        return batches

    def done(self, batch: Sequence[Due]) -> None:
        with self._lock:
            for due in batch:
                sending = self._sending.get(due[0])
                if sending is not None:
                    sending.discard(due[1])
                    if not sending:
                        del self._sending[due[0]]

    def idle(self) -> bool:
        with self._lock:
            return not self._waiting and not self._sending
