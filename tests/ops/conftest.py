"""Bots configured against the loopback Telegram, LINE and model fakes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.config import Settings
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI

PUBLIC_URL = "https://bot.example.test"
WEBHOOK_SECRET = "webhook-secret_0123456789"
LINE_SECRET = "line-channel-secret-0123"
LLM_KEY = "sk-test-key-0123456789"


@pytest.fixture
def bot_settings(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
) -> Settings:
    """Both channels, the model and the public URL, all pointing at the fakes."""
    return make_settings(
        public_url=PUBLIC_URL,
        admin_token="admin-secret-token",
        telegram_bot_token=telegram_api.token,
        telegram_webhook_secret=WEBHOOK_SECRET,
        telegram_api_base_url=telegram_api.base_url,
        line_channel_secret=LINE_SECRET,
        line_channel_access_token=line_api.access_token,
        line_api_base_url=line_api.base_url,
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        llm_api_key=LLM_KEY,
    )
