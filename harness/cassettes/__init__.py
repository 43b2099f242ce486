"""Cassettes: the format (model and safe YAML storage) and the bundled corpus."""
