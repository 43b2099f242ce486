"""The wire: codecs (bytes <-> wire events) and dialects (wire events <-> provider events)."""
