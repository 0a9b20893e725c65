"""The result record: its typed parts, the metric catalogue, columns, the record store and provenance."""
