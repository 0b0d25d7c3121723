"""Operator tooling: webhook registration, backups, the move to PostgreSQL."""
