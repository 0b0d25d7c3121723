"""Tests of the operator tooling: webhooks, doctor, backups, deploy files."""
