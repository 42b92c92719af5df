"""A learner over many examples at once: logs replayed in parallel, replicas, clusters."""
