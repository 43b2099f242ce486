"""Recording: recipes that elicit tool-call shapes, the providers that run them (the request
format itself is each dialect's), SigV4 signing, the record flow, redaction, importing foreign
recordings, and a loopback provider for tests."""
