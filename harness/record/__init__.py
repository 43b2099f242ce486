"""Recording: recipes that elicit tool-call shapes from live providers, redaction, importing
foreign recordings, and a loopback provider for tests."""
