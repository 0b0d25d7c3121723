"""Skillgate: a Telegram and LINE chat-bot gateway that learns skills under human review."""

__version__ = "0.1.0"
