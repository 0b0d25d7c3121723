"""Review: proposals, staging, decisions, start-up repair, proposal cards and their delivery."""
