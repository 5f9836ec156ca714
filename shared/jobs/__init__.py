"""The queue's use cases, one module each, all functions over one `Context`.

`create`, `claim`, `report`, `cancel`, `read` (get, list, lines, events), `retry`,
`notify`, `deadlines`, `follow`. Each decides with `shared.machine` and persists with
`shared.store`; the Lambda handlers (`functions/`) parse the request, call one of these
with `shared.runtime`'s context, and render. A use case that needs another calls its
function with the same context (a retry and a notice are creates): none holds another's
object to reach through it.
"""
