"""`skillgate init` asks a platform registered by its own package what its spec declares,
checks the answers the way the platform says, and writes them: no edit under gateway/."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.channels.loopchat.fake import TOKEN, FakeLoopchat
from tests.fakes.openai_server import FakeOpenAI
from tests.ops.conftest import PUBLIC_URL
from tests.ops.test_init import choose_the_fake_model, env_file
from tests.serve_process import skillgate
from tests.terminal import DOWN, ENTER, Terminal

REPO = Path(__file__).resolve().parents[3]


async def test_init_asks_loopchats_settings_checks_them_and_writes_them(
    installed: Path, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(installed), str(REPO)])}
    async with FakeLoopchat() as loopchat:
        term = Terminal(tmp_path, env, "init")
        await choose_the_fake_model(term, fake_llm)
        await term.shows("Which bots should it answer?")
        await term.shows("Loopchat")  # offered beside the built-in platforms
        term.press(DOWN, DOWN, ENTER)  # Telegram, LINE, Loopchat
        await term.shows("Loopchat API address")
        term.type("not an address")
        await term.shows("that does not look right")
        term.press(*["\x7f"] * len("not an address"))
        term.type(loopchat.url)
        await term.shows("Loopchat bot secret")
        term.type("loop-token-ffffffffffffffff")
        await term.shows("Loopchat admin ids")
        term.type("u7,u8")
        await term.shows("Loopchat refused the secret (HTTP 401)")
        await term.shows("Try another token?")
        term.press("y")
        await term.shows("Loopchat API address")  # asked again, the address kept
        term.press(ENTER)
        await term.shows("Loopchat bot secret")
        term.type(TOKEN)
        await term.shows("Loopchat admin ids")
        term.press(ENTER)  # keeps u7,u8
        await term.shows("✓ Loopbot (@loopbot)")
        await term.shows("The public https address")  # Loopchat posts by webhook
        term.type(PUBLIC_URL)
        assert await term.ends() == 0, term.seen

    written = tmp_path / ".env"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    values = env_file(written)
    assert values["LOOPCHAT_API_URL"] == loopchat.url and values["LOOPCHAT_SECRET"] == TOKEN
    assert values["LOOPCHAT_ADMIN_IDS"] == "u7,u8" and values["SKILLGATE_PUBLIC_URL"] == PUBLIC_URL
    assert "# Loopchat: Loopbot, updates by webhook at SKILLGATE_PUBLIC_URL/webhook/loopchat." in (
        written.read_text()
    )
    assert not any(k.startswith(("TELEGRAM_", "LINE_")) for k in values)
    assert TOKEN not in term.seen  # typed without echo


async def test_init_takes_loopchats_settings_from_its_flags(
    installed: Path, tmp_path: Path
) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(installed), str(REPO)])}
    code, out, _ = await skillgate("init", "--help", env=env)
    assert code == 0 and "--loopchat-secret" in out and "--loopchat-admin-ids" in out
    target = tmp_path / "loop.env"
    flags = ["--env-file", str(target), "init", "--non-interactive", "--no-check"]
    loop = ["--loopchat-api-url", "http://127.0.0.1:9", "--public-url", PUBLIC_URL]

    code, _, err = await skillgate(*flags, *loop, "--loopchat-admin-ids", "@ada", env=env)
    assert code == 1 and "LOOPCHAT_ADMIN_IDS" in err and not target.exists()
    code, _, err = await skillgate(*flags, *loop, env=env)
    assert code == 1 and "Loopchat needs LOOPCHAT_API_URL and LOOPCHAT_SECRET" in err

    code, _, err = await skillgate(
        *flags, *loop, "--loopchat-secret", TOKEN, "--loopchat-admin-ids", "u1", env=env
    )
    assert code == 0, err
    values = env_file(target)
    assert values["LOOPCHAT_SECRET"] == TOKEN and values["LOOPCHAT_ADMIN_IDS"] == "u1"
