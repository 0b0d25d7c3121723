"""Synthesis: evidence, prompt, screening (same claim, secrets, fence), synthesizer, retire."""
