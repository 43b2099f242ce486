"""Repository-level pytest configuration: the suite never reaches the internet."""
