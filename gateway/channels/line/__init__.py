"""LINE through line-bot-sdk: the only package that imports it."""
