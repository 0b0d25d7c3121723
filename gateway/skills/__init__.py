"""Skills: the library on disk, its catalog and the prompt index, selection and effect."""
