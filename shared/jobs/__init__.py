"""The queue's use cases, one module each, all functions over one `Context`.

`create` (with `records`: a request checked and resolved into what is written),
`claim`, `report` (with `report_decision`: the transition a report asks for, or why it
is refused), `cancel`, `read` (get, list, lines, events), `retry`, `notify`,
`deadlines`, `follow`. Each decides with `shared.machine` and persists with
`shared.store`; the Lambda handlers (`functions/`) parse the request, call one of these
with `shared.runtime`'s context, and render what it answers (`shared.jobs.outcomes`, the
values of `read` and `follow`) with `shared.render`. A use case that needs another calls its
function with the same context (a retry and a notice are creates): none holds another's
object to reach through it.
"""
