"""Operator tooling: doctor, model probes, init, set-webhook, backups, the move to PostgreSQL."""
