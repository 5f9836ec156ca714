"""`make bench`, local part: how `emit dev` holds up with a large table.

Starts a real `emit dev` (a child process on a free port), fills it to `--jobs` jobs (half
finished, with log lines and events; half pending), then measures over HTTP, as users see it:

- an empty claim (a name without jobs) and a one-job claim: median milliseconds;
- a one-job claim of a capped name (`concurrency` set), each claimed job then completed:
  median milliseconds of the claim (a claim and a finish of a capped name are transactions
  with updates of its slot counter);
- create + claim + complete in batches of 100: jobs a second;
- 16 workers claiming and completing one job per request: jobs a second, and that no
  attempt was handed out twice;
- an idle waiting claim: the server's CPU while one claim waits for work that never comes;
- the server's memory (resident set) at the end;
- 64 clients connecting at once: how many were served.

Each figure is one line starting `local:`; the first names the table size they were
measured at. Figures, not verdicts: the targets are in the issue (median claim <= 20 ms,
>= 1,000 and >= 100 jobs/s, <= 5 % of a core, < 1 GB, all 64 served).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

SPACE = "bench"
TOKEN = "bench-local-token"
FILL_BATCH = 1_000
STORED_NAME = "stored"
CAPPED_NAME = "capped"
CAPPED_CONCURRENCY = 3


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process so far."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0


@contextmanager
def emit_dev() -> Iterator[Server]:
    """`emit dev` on a free port, until the block ends."""
    env = dict(os.environ, EMIT_DEV_TOKEN=TOKEN, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "devserver.cli", "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    assert process.stdout is not None
    try:
        deadline = time.monotonic() + 120
        url = None
        while time.monotonic() < deadline and url is None:
            line = process.stdout.readline().decode()
            if not line:
                break
            found = re.search(r"listening on (http://\S+)", line)
            url = found.group(1) if found else None
        if url is None:
            raise RuntimeError("emit dev did not start")
        # Keep reading its output so a full pipe never blocks it.
        threading.Thread(target=lambda: [None for _ in process.stdout or []], daemon=True).start()
        yield Server(url, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


class Client:
    """One keep-alive connection, as a worker holds one."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(
            base_url=f"{url}/v1/spaces/{SPACE}", headers={"authorization": f"Bearer {TOKEN}"}, timeout=120
        )

    def post(self, path: str, body: Any) -> Any:
        answer = self.http.post(path, json=body)
        if answer.status_code >= 300:
            raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()

    def create(self, jobs: list[dict[str, Any]]) -> list[str]:
        return [j["id"] for j in self.post("/jobs", jobs)["jobs"]]

    def claim(self, count: int, names: list[str], wait_ms: int = 0) -> list[dict[str, Any]]:
        return list(self.post("/jobs:claim", {"count": count, "names": names, "waitMs": wait_ms})["jobs"])

    def patch(self, path: str, body: Any) -> Any:
        answer = self.http.patch(path, json=body)
        if answer.status_code >= 300:
            raise RuntimeError(f"PATCH {path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()

    def report(self, reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(self.post("/jobs:report", reports)["outcomes"])

    def close(self) -> None:
        self.http.close()


def _payload(i: int) -> dict[str, Any]:
    return {
        "order": f"ord_{i:08d}",
        "customer": f"cus_{i % 9973}",
        "items": [{"sku": f"SKU-{i % 997}", "qty": 1 + i % 5}],
    }


def fill(client: Client, jobs: int) -> None:
    """`jobs` jobs: the first half finished, each with 3 log lines and an event; the rest pending."""
    finished = jobs // 2
    made = 0
    while made < jobs:
        count = min(FILL_BATCH, jobs - made)
        client.create([{"name": STORED_NAME, "payload": _payload(made + i)} for i in range(count)])
        if made < finished:
            held = client.claim(count, [STORED_NAME])
            lines = [{"level": "INFO", "message": f"step {n} of the order"} for n in range(3)]
            client.report(
                [
                    {
                        "id": h["id"],
                        "attempt": h["attempt"],
                        "lines": lines,
                        "event": {"shipped": True},
                        "complete": {"result": {"ok": True}},
                    }
                    for h in held
                ]
            )
        made += count


def settle(server: Server, *, idle_share: float = 0.2, limit_s: float = 300) -> None:
    """Wait until the server has done what the fill left it (its stream records): until it
    uses less than `idle_share` of a core over a second."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        cpu = server.cpu_seconds()
        time.sleep(1)
        if server.cpu_seconds() - cpu < idle_share:
            return


def timed(call: Callable[[], Any], times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def capped_claims(client: Client, times: int) -> list[float]:
    """`times` one-job claims of a name with `concurrency` set (by its policy), each claimed
    job completed before the next claim (untimed): the claims' milliseconds."""
    client.patch(f"/names/{CAPPED_NAME}/policy", {"concurrency": CAPPED_CONCURRENCY})
    for first in range(0, times, FILL_BATCH):
        client.create(
            [{"name": CAPPED_NAME, "payload": _payload(i)} for i in range(min(FILL_BATCH, times - first))]
        )
    out = []
    for _ in range(times):
        start = time.perf_counter()
        [job] = client.claim(1, [CAPPED_NAME])
        out.append((time.perf_counter() - start) * 1000)
        client.report([{"id": job["id"], "attempt": job["attempt"], "complete": {}}])
    return out


def batches_of_100(client: Client, rounds: int) -> float:
    """Create 100, claim 100, complete 100, `rounds` times: jobs a second."""
    done = 0
    start = time.perf_counter()
    for _ in range(rounds):
        client.create([{"name": "flow", "payload": _payload(i)} for i in range(100)])
        held = client.claim(100, ["flow"])
        outcomes = client.report([{"id": h["id"], "attempt": h["attempt"], "complete": {}} for h in held])
        done += sum(o.get("status") == "COMPLETED" for o in outcomes)
    return done / (time.perf_counter() - start)


def workers(url: str, client: Client, jobs: int, threads: int = 16) -> tuple[float, int, int]:
    """`threads` workers each claiming one job and completing it, until `jobs` are done:
    jobs a second, how many completed, and how many attempts were handed out twice."""
    for first in range(0, jobs, FILL_BATCH):
        client.create([{"name": "w16", "payload": _payload(i)} for i in range(min(FILL_BATCH, jobs - first))])
    handed: list[tuple[str, int]] = []
    completed: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        mine = Client(url)
        empty = 0
        try:
            while empty < 3:
                held = mine.claim(1, ["w16"])
                if not held:
                    empty += 1
                    continue
                [job] = held
                [outcome] = mine.report([{"id": job["id"], "attempt": job["attempt"], "complete": {}}])
                with lock:
                    handed.append((job["id"], job["attempt"]))
                    completed.append(outcome.get("status") == "COMPLETED")
        finally:
            mine.close()

    pool = [threading.Thread(target=work) for _ in range(threads)]
    start = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - start
    return sum(completed) / elapsed, sum(completed), len(handed) - len(set(handed))


def idle_wait(server: Server, client: Client, seconds: float) -> float:
    """The server's CPU, as a share of one core, while one claim waits for work."""
    waiting = threading.Thread(target=client.claim, args=(1, ["never"], int(seconds * 1000)))
    waiting.start()
    time.sleep(1)  # the claim has started waiting
    cpu, wall = server.cpu_seconds(), time.monotonic()
    waiting.join()
    return (server.cpu_seconds() - cpu) / (time.monotonic() - wall)


def connect_at_once(url: str, clients: int = 64) -> int:
    """`clients` new connections made at the same moment, each claiming: how many got an answer."""
    host, port = url.removeprefix("http://").split(":")
    barrier = threading.Barrier(clients)
    served: list[bool] = []
    body = b'{"count": 1, "names": ["never"]}'
    request = (
        f"POST /v1/spaces/{SPACE}/jobs:claim HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body

    def one() -> None:
        barrier.wait()
        try:
            with socket.create_connection((host, int(port)), timeout=60) as sock:
                sock.sendall(request)
                answer = sock.recv(64)
            served.append(answer.startswith(b"HTTP/1.1 200"))
        except OSError:
            served.append(False)

    pool = [threading.Thread(target=one) for _ in range(clients)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return sum(served)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs stored before measuring")
    parser.add_argument("--claims", type=int, default=200, help="claims timed for each median")
    parser.add_argument("--capped-claims", type=int, default=200, help="claims timed for the capped median")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of 100 for the batch figure")
    parser.add_argument("--worker-jobs", type=int, default=2_000, help="jobs for the 16 workers")
    parser.add_argument("--idle-s", type=float, default=10.0, help="how long the idle claim waits")
    args = parser.parse_args(argv)

    with emit_dev() as server:
        client = Client(server.url)
        started = time.perf_counter()
        fill(client, args.jobs)
        settle(server)
        filled_s = time.perf_counter() - started
        finished, pending = args.jobs // 2, args.jobs - args.jobs // 2
        load = os.getloadavg()[0]
        print(
            f"local: emit dev with {args.jobs:,} jobs stored ({finished:,} finished with 3 lines and an "
            f"event each, {pending:,} pending), filled in {filled_s:.0f} s; load average {load:.1f} "
            f"on {os.cpu_count()} cores",
            flush=True,
        )
        for label, names in (("empty claim", ["nothing"]), ("one-job claim", [STORED_NAME])):
            cpu = server.cpu_seconds()
            times = timed(functools.partial(client.claim, 1, names), args.claims)
            each = (server.cpu_seconds() - cpu) * 1000 / len(times)
            print(
                f"local: {label}: median {statistics.median(times):.1f} ms over {len(times)} "
                f"({each:.1f} ms of server CPU each)",
                flush=True,
            )
        times = capped_claims(client, args.capped_claims)
        print(
            f"local: capped-name claim (concurrency {CAPPED_CONCURRENCY}), each job then completed: "
            f"median {statistics.median(times):.1f} ms over {len(times)}",
            flush=True,
        )
        cpu = server.cpu_seconds()
        rate = batches_of_100(client, args.rounds)
        settle(server)
        each = (server.cpu_seconds() - cpu) * 1000 / (100 * args.rounds)
        print(
            f"local: create + claim + complete in batches of 100: {rate:,.0f} jobs/s "
            f"({each:.2f} ms of server CPU a job, its stream records included)",
            flush=True,
        )
        rate, done, twice = workers(server.url, client, args.worker_jobs)
        print(
            f"local: 16 workers claiming and completing one job per request: {rate:,.0f} jobs/s "
            f"({done:,} jobs), {twice} attempts held twice",
            flush=True,
        )
        settle(server)
        share = idle_wait(server, client, args.idle_s)
        print(f"local: an idle waiting claim: {share * 100:.1f} % of a core", flush=True)
        served = connect_at_once(server.url)
        print(f"local: 64 clients connecting at once: {served} served", flush=True)
        print(f"local: server memory: {server.rss_mb():,.0f} MB resident", flush=True)
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
