"""Benchmark helpers: DynamoDB capacity accounting for ``make bench``."""
