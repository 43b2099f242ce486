"""The pytest plugin: hooks, options, fixtures and matrix items, the syrupy extension, the respx mount."""
