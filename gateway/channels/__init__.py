"""Channel adapters: one package per platform (the only importers of its SDK), over one protocol."""
