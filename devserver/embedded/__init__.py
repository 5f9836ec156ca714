"""The embedded DynamoDB of `emit dev`, made fast: moto's own tables, read and written without
botocore in between, and queried through per-partition lookups instead of a sort of the whole
table on every call.

Three parts, each proven equal to plain moto by tests/local/test_conformance.py:

- `partitions`: sorted lookups for each partition of a table and of each of its global
  indexes (and of its TTL attribute), kept current on every write, with moto's Table.query
  answering from them (a patch of moto, applied only for the moto version it was written for).
- `client`: a DynamoDB client with the calls the store makes that goes straight to moto's
  backend: the calls the store makes most are done here with moto's own pieces (its items,
  its condition evaluation, its stream shard), everything else by moto's own request handler;
  errors come back as the ClientError boto3 would raise.
- `streams`: the same for the DynamoDB Streams calls of `emit dev`'s stream reader, with the
  records already read dropped from the shard so that a long run does not keep them all.
"""
