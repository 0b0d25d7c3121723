"""Operator tooling: webhook registration, platform checks for doctor, backups."""
