"""The embedded DynamoDB of `emit dev`, made fast: moto's own tables, read and written without
botocore in between, and queried through per-partition lookups instead of a sort of the whole
table on every call.

- `partitions`: sorted lookups for each partition of a table and of each of its global
  indexes (and of its TTL attribute), kept current on every write, with moto's Table.query
  answering from them (a patch of moto, for the moto version `compat` names).
- `expressions`: condition, key condition and update expressions parsed once per shape.
- `client`: a DynamoDB client that goes straight to moto's backend: the calls the store
  makes most are done with moto's own pieces (its items, condition trees, stream records),
  everything else by moto's own request handler; errors are the ClientError boto3 raises.
- `streams`: the same for the DynamoDB Streams calls of `emit dev`'s stream reader, with the
  records already read let go of, so that a long run does not keep them all.
- `wire`: answers and errors as botocore parses them.
- `heap`: garbage collection that does not walk a large table again on each full collection.

tests/local/ proves it: test_conformance.py runs the store's every call on it and on plain
moto side by side and requires the same answers, errors and stream records; test_edges.py
does the same for requests the store never makes; test_partitions.py for random queries.
"""
