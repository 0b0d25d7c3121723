"""Skills: the library on disk, the prompt index, synthesis and review."""
