"""Channel adapters: one module per platform, the only importers of its SDK."""
