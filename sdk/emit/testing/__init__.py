"""Testing workers and producers: a handler called on a made-up job, and a real `emit dev`.

Without a server, a handler is a function of its held job:

    from emit.testing import call, held_job

    ran = call(charge_invoice, held_job({"invoiceId": "inv_1", "amountCents": 100}))
    assert ran.completed and ran.result == {"chargeId": "ch_inv_1"}

Against a real `emit dev` (the service installed beside the SDK: `emit-service[local]`),
the pytest plugin (`emit.testing.plugin`, loaded by pytest on its own) gives `emit_dev`,
`emit_space`, `emit_client` and `emit_env`; `work` runs a handler as a worker until the
given jobs finish. Outside pytest, `start_dev()` is the same server in a `with` block.

Nothing here imports pytest but the plugin, nor the service: `emit dev` runs in a
process of its own.
"""

from emit.testing.dev import DevServer, DevServerError, new_space, start_dev, start_dev_server, work
from emit.testing.held import Ran, RecordedJob, call, call_async, held_job

__all__ = [
    "DevServer",
    "DevServerError",
    "Ran",
    "RecordedJob",
    "call",
    "call_async",
    "held_job",
    "new_space",
    "start_dev",
    "start_dev_server",
    "work",
]
