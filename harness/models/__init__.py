"""Model sources: local and packaged checkpoints, tiny seeded models, GGUF conversion and prompts."""
