"""HTTP load generator: a minimal keep-alive HTTP/1.1 client and the worker scenarios."""
