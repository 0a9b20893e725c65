"""Running points: planning, the runner, a point's steps, isolation, workers, lifecycle and shards."""
