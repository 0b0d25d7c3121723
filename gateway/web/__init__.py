"""The HTTP server's own limits and bounded JSON."""
