"""What a use case answers for each job of a request that acts on many (report, cancel,
retry): one value per job, in the order sent, which the handler renders
(`shared.render.outcome`).

Values rather than answer bodies, so a use case decides and a handler shows: the
contract's shapes (`shared.answers.Outcomes`, `RetryOutcomes`) are built in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.job import JobStatus


@dataclass(frozen=True)
class Applied:
    """The report or the cancel applied: the job's status after it."""

    status: JobStatus
    traceparent: str | None = field(default=None, compare=False)
    """A report's job's W3C trace context, if it has one: the handler annotates its X-Ray
    segment with it (`shared.observability.annotate_traces`); never shown."""


@dataclass(frozen=True)
class Refused:
    """Nothing applied for this job, and why (`NOT_FOUND`, `STALE`, ...; the contract's
    rejection reasons)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Retried:
    """A retry's new job, or (`new` false) the one an earlier retry of the job made."""

    id: str
    retry_of: str
    new: bool


Outcome = Applied | Refused
RetryOutcome = Retried | Refused
