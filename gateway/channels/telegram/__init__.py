"""Telegram through python-telegram-bot: the only package that imports it."""
