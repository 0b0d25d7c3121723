"""Proposal cards for chat admins: delivery and updates, whatever the platform."""
