"""`skillgate init` in a pseudo-terminal against the Bot API, LINE and model fakes.

Every wait is on what the terminal shows, bounded; keys are what a person presses
(arrow down is ESC [ B, Enter is CR).
"""

from __future__ import annotations

import stat
from pathlib import Path

import aiohttp
import pytest

from gateway.channels.line.dialect import ADMIN_RECORDED
from tests.fakes.line_api import REPLY_PATH, USER_ID, FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.ops.conftest import LINE_SECRET, PUBLIC_URL
from tests.serve_process import free_port, serving, skillgate
from tests.terminal import DOWN, ENTER, Terminal

OTHER_SERVER = 6  # "another OpenAI-compatible server" in the list of model servers


@pytest.fixture
def platforms(telegram_api: FakeTelegramAPI, line_api: FakeLineAPI) -> dict[str, str]:
    """The platform endpoints pointed at the fakes, as an operator would set them."""
    return {"TELEGRAM_API_BASE_URL": telegram_api.base_url, "LINE_API_BASE_URL": line_api.base_url}


def env_file(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


async def choose_the_fake_model(term: Terminal, fake_llm: FakeOpenAI) -> None:
    await term.shows("Where does the model run?")
    term.press(*[DOWN] * OTHER_SERVER, ENTER)
    await term.shows("Its base URL (ends in /v1):")
    term.type(fake_llm.base_url)
    await term.shows("API key (empty if it needs none)")
    term.press(ENTER)
    await term.shows("Which model?")
    term.press(ENTER)  # the one the server lists
    await term.shows("OK   model chat: yes")


async def test_telegram_with_polling_takes_the_admin_from_start_and_writes_a_private_env(
    tmp_path: Path, fake_llm: FakeOpenAI, telegram_api: FakeTelegramAPI, platforms: dict[str, str]
) -> None:
    term = Terminal(tmp_path, platforms, "init")
    await choose_the_fake_model(term, fake_llm)
    await term.shows("Which bots should it answer?")
    term.press(ENTER)  # Telegram
    await term.shows("Telegram bot token")
    term.type("not-a-token")
    await term.shows("Try another token?")
    term.press("y")
    await term.shows("Telegram bot token")
    term.type(telegram_api.token)
    await term.shows("✓ @skillgate_test_bot (Test Bot)")
    await term.shows("How should Telegram updates arrive?")
    term.press(ENTER)  # polling
    await term.shows("Now send /start to @skillgate_test_bot")
    telegram_api.push_update(make_text_update(1, "/start", user_id=4242, first_name="Ada"))
    await term.shows("Make Ada (@alice), id 4242 an admin?")
    term.press("y")
    assert await term.ends() == 0, term.seen
    assert "./scripts/serve" not in term.seen and "skillgate serve" in term.seen

    written = tmp_path / ".env"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    values = env_file(written)
    assert values["LLM_BASE_URL"] == fake_llm.base_url and values["LLM_MODEL"] == "fake-model"
    assert values["TELEGRAM_BOT_TOKEN"] == telegram_api.token
    assert values["TELEGRAM_POLLING"] == "true" and values["TELEGRAM_ADMIN_IDS"] == "4242"
    assert len(values["SKILLGATE_ADMIN_TOKEN"]) >= 32
    assert "TELEGRAM_WEBHOOK_SECRET" not in values and "SKILLGATE_DATA_DIR" not in values
    assert len(written.read_text().splitlines()) < 25  # short, not the whole example
    # The /start was read, not confirmed: the gateway answers it once it polls.
    polls = telegram_api.calls_of("getUpdates")
    assert polls and all("offset" not in c.params for c in polls)
    # ... and asks for what the gateway asks for: the bot keeps the last list it was given.
    assert polls[-1].params["allowed_updates"] == ["message", "callback_query"]

    # What it wrote works: doctor, with this .env and nothing else, finds nothing wrong,
    # and `skillgate serve` (what ./scripts/serve runs) answers in Telegram by polling.
    code, out, _ = await skillgate("doctor", env={})
    assert code == 0, out
    assert "OK   telegram bot: @skillgate_test_bot" in out
    fake_llm.reply("Bonjour!")
    async with serving(env={}) as served:
        assert served.health["channels"]["telegram"]["mode"] == "polling"
        telegram_api.push_update(make_text_update(2, "Say hello in French", user_id=4242))
        await telegram_api.wait_for("sendMessage", count=2, timeout=30)  # /start, then this
    assert telegram_api.sent_texts(1001)[-1] == "Bonjour!"


async def test_line_takes_the_admin_from_a_one_time_code_sent_to_the_bot(
    tmp_path: Path, fake_llm: FakeOpenAI, line_api: FakeLineAPI, platforms: dict[str, str]
) -> None:
    line_api.webhook_active = True
    port = free_port()
    term = Terminal(tmp_path, platforms, "init", "--listen", f"127.0.0.1:{port}")
    await choose_the_fake_model(term, fake_llm)
    await term.shows("Which bots should it answer?")
    term.press(DOWN, ENTER)  # LINE
    await term.shows("LINE channel secret")
    term.type(LINE_SECRET)
    await term.shows("LINE channel access token")
    term.type(line_api.access_token)
    await term.shows("✓ FakeBot (@000fakebot)")
    await term.shows("The public https address")
    term.type("http://not-https.example")  # refused: LINE posts to https only
    await term.shows("that does not look right")
    term.press(*["\x7f"] * len("http://not-https.example"))
    term.type(PUBLIC_URL)
    await term.shows("Your LINE user id")
    term.press(ENTER)  # by a code
    code = (await term.match(r"Now send (\d{6}) to FakeBot")).group(1)
    assert line_api.webhook_endpoint == f"{PUBLIC_URL}/webhook/line"

    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}/webhook/line"
        forged = webhook_body(text_event(code))
        async with http.post(url, data=forged, headers={"X-Line-Signature": "bad"}) as resp:
            assert resp.status == 401
        token = line_api.issue_reply_token(to=USER_ID)
        body = webhook_body(text_event("hello"), text_event(code, reply_token=token))
        headers = {"X-Line-Signature": sign(LINE_SECRET, body), "Content-Type": "application/json"}
        async with http.post(url, data=body, headers=headers) as resp:
            assert resp.status == 200
    await term.shows(f"✓ admin: {USER_ID}")
    assert await term.ends() == 0, term.seen
    [reply] = line_api.calls_to(REPLY_PATH)
    assert reply.body["messages"][0]["text"] == ADMIN_RECORDED

    values = env_file(tmp_path / ".env")
    assert values["LINE_CHANNEL_SECRET"] == LINE_SECRET
    assert values["LINE_CHANNEL_ACCESS_TOKEN"] == line_api.access_token
    assert values["LINE_ADMIN_IDS"] == USER_ID and values["SKILLGATE_PUBLIC_URL"] == PUBLIC_URL
    assert "set-webhook" in term.seen  # the next commands for a webhook setup


async def test_both_bots_with_a_telegram_webhook_already_set(
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    platforms: dict[str, str],
) -> None:
    telegram_api.webhook_url = "https://old.example.test/webhook/telegram"
    (tmp_path / ".env").write_text("SKILLGATE_SESSION_IDLE_MINUTES=5\nLLM_MODEL=old\n")
    term = Terminal(tmp_path, platforms, "init")
    await term.shows(".env exists. Replace it?")
    term.press("y")
    await choose_the_fake_model(term, fake_llm)
    await term.shows("Which bots should it answer?")
    term.press(DOWN, DOWN, ENTER)  # both
    await term.shows("Telegram bot token")
    term.type(telegram_api.token)
    await term.shows("How should Telegram updates arrive?")
    term.press(DOWN, ENTER)  # webhook
    await term.shows("The public https address")
    term.type(PUBLIC_URL)
    # getUpdates is refused while a webhook is set: init says so and asks first.
    await term.shows("Telegram holds a webhook (https://old.example.test/webhook/telegram)")
    term.press("y")
    link = await term.match(r"https://t\.me/skillgate_test_bot\?start=([0-9a-f]{8})")
    assert telegram_api.webhook_url == ""
    telegram_api.push_update(make_text_update(7, f"/start {link.group(1)}", user_id=555))
    await term.shows("✓ admin: Alice (@alice), id 555")  # the code needs no confirmation
    await term.shows("LINE channel secret")
    term.type(LINE_SECRET)
    await term.shows("LINE channel access token")
    term.type(line_api.access_token)
    await term.shows("Your LINE user id")
    term.press(DOWN, ENTER)  # paste it
    await term.shows("LINE user id(s)")
    term.type(USER_ID)
    assert await term.ends() == 0, term.seen

    values = env_file(tmp_path / ".env")
    assert values["TELEGRAM_ADMIN_IDS"] == "555" and values["LINE_ADMIN_IDS"] == USER_ID
    assert "TELEGRAM_POLLING" not in values and len(values["TELEGRAM_WEBHOOK_SECRET"]) >= 32
    assert values["SKILLGATE_SESSION_IDLE_MINUTES"] == "5"  # carried over
    assert values["LLM_MODEL"] == "fake-model"
    assert (
        tmp_path / ".env.bak"
    ).read_text() == "SKILLGATE_SESSION_IDLE_MINUTES=5\nLLM_MODEL=old\n"


async def test_init_never_replaces_an_env_file_it_was_not_allowed_to(
    tmp_path: Path, platforms: dict[str, str]
) -> None:
    (tmp_path / ".env").write_text("LLM_MODEL=mine\n")
    term = Terminal(tmp_path, platforms, "init")
    await term.shows(".env exists. Replace it?")
    term.press(ENTER)  # the default is no
    assert await term.ends() == 1
    assert (tmp_path / ".env").read_text() == "LLM_MODEL=mine\n"

    term = Terminal(tmp_path, platforms, "init")
    await term.shows(".env exists. Replace it?")
    term.press("y")
    await term.shows("Where does the model run?")
    term.press("\x03")  # Ctrl-C: nothing is written
    assert await term.ends() == 130 and ".env was not written" in term.seen
    assert (tmp_path / ".env").read_text() == "LLM_MODEL=mine\n"

    code, _, err = await skillgate("init", "--non-interactive", env=platforms)
    assert code == 1 and "--force" in err
    assert (tmp_path / ".env").read_text() == "LLM_MODEL=mine\n"


async def test_non_interactive_checks_the_flags_and_writes_the_service_env_file(
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    platforms: dict[str, str],
) -> None:
    target = tmp_path / "etc" / "skillgate.env"
    flags = [
        "--env-file", str(target), "init", "--non-interactive",
        "--data-dir", "/var/lib/skillgate",
        "--public-url", PUBLIC_URL,
        "--llm-base-url", fake_llm.base_url, "--llm-model", "fake-model",
        "--telegram-admin-ids", "1001,1002",
        "--line-channel-secret", LINE_SECRET, "--line-access-token", line_api.access_token,
    ]  # fmt: skip
    secrets = {"TELEGRAM_BOT_TOKEN": telegram_api.token, **platforms}

    code, out, err = await skillgate(*flags, env={**secrets, "TELEGRAM_BOT_TOKEN": "1:wrong"})
    assert code == 1 and "not written" in err and not target.exists()

    code, out, err = await skillgate(*flags, env=secrets)
    assert code == 0, err
    assert "OK   telegram bot: @skillgate_test_bot" in out and "OK   line bot: FakeBot" in out
    assert f"skillgate --env-file {target} set-webhook" in out
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    values = env_file(target)
    assert values["SKILLGATE_DATA_DIR"] == "/var/lib/skillgate"
    assert values["TELEGRAM_BOT_TOKEN"] == telegram_api.token  # from the environment
    assert values["TELEGRAM_ADMIN_IDS"] == "1001,1002"
    assert "TELEGRAM_POLLING" not in values and values["TELEGRAM_WEBHOOK_SECRET"]
    assert values["LINE_CHANNEL_ACCESS_TOKEN"] == line_api.access_token
    assert telegram_api.token not in out + err and LINE_SECRET not in out + err

    code, _, err = await skillgate(
        "init", "--non-interactive", "--line-channel-secret", LINE_SECRET, env=platforms
    )
    assert code == 1 and "LINE_CHANNEL_ACCESS_TOKEN" in err
    code, _, err = await skillgate(
        "init", "--non-interactive", "--telegram-admin-ids", "@ada", env=platforms
    )
    assert code == 1 and "TELEGRAM_ADMIN_IDS" in err and not (tmp_path / ".env").exists()
