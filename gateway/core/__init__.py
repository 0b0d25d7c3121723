"""Channel-neutral core: models, the agent, model access and prompt building."""
