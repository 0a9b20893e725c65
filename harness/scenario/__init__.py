"""Scenario files: the schema, strict YAML reading and sweep expansion into points."""
