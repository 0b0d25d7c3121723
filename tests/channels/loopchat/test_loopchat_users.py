"""A user of a platform registered by its own package is exported and forgotten like any other,
from the console, the admin API and the CLI, and its admins are named as its spec says;
nothing under gateway/ names the platform."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.review.cards import build_card
from gateway.review.proposals import Candidate
from tests.channels.loopchat.driver import ADMIN, loopchat_rig
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.synthesis_support import seed_session

REPO = Path(__file__).resolve().parents[3]


async def test_a_loopchat_user_is_exported_and_forgotten_in_the_api_and_the_console(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        fake_llm.reply("Hello, API user.")
        await chat.say("my secret plan", user="u7")
        fake_llm.reply("Hello, console user.")
        await chat.say("another secret plan", user="u8")
        client = chat.client

        data = await (await client.get("/admin/api/users/loopchat/u7", headers=ADMIN)).json()
        assert [m["text"] for m in data["messages"]] == ["my secret plan", "Hello, API user."]
        resp = await client.delete("/admin/api/users/loopchat/u7", headers=ADMIN)
        assert resp.status == 200 and (await resp.json())["messages"] == 2
        gone = await (await client.get("/admin/api/users/loopchat/u7", headers=ADMIN)).json()
        assert gone["messages"] == []

        csrf = await sign_in(client)
        page = await (await client.get("/admin/users")).text()
        assert "<option>loopchat</option>" in page
        listed = await (await client.get("/admin/conversations?channel=loopchat")).text()
        assert '?channel=loopchat" aria-current="page">Loopchat</a>' in listed
        assert "1 session on loopchat" in listed  # u7 was forgotten above
        export = await client.get("/admin/users/export?channel=loopchat&user=u8")
        assert json.loads(await export.text())["messages"][0]["text"] == "another secret plan"
        form = {"csrf": csrf, "channel": "loopchat", "user": "u8", "confirm": "yes"}
        done = await client.post("/admin/users/forget", data=form)
        assert done.status == 200 and "Deleted everything about loopchat user" in await done.text()
        assert (await chat.parts.store.export_user("loopchat", "u8"))["messages"] == []


async def test_a_loopchat_user_is_exported_and_forgotten_from_the_terminal(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        fake_llm.reply("Hello, terminal user.")
        await chat.say("a plan for the terminal", user="u9")
        data_dir = str(chat.parts.settings.data_dir)
    # The command finds the platform the way the server does: through its entry point.
    path = os.pathsep.join([str(installed), str(REPO)])
    env = {"SKILLGATE_DATA_DIR": data_dir, "PYTHONPATH": path}
    code, out, err = await skillgate("forget", "--help", env=env)
    assert code == 0 and "loopchat" in out and "Loopchat: u and digits" in out
    target = tmp_path / "u9.json"
    code, out, err = await skillgate("export", "loopchat", "u9", "-o", str(target), env=env)
    assert code == 0 and "wrote 2 message(s)" in out, err
    assert json.loads(target.read_text())["messages"][0]["text"] == "a plan for the terminal"
    code, out, err = await skillgate("forget", "loopchat", "u9", "--yes", env=env)
    assert code == 0 and "1 session(s), 2 message(s)" in out, err
    code, out, err = await skillgate("export", "loopchat", "u9", env=env)
    assert code == 0 and json.loads(out)["messages"] == [], err


async def test_without_the_package_the_terminal_does_not_know_the_platform() -> None:
    env = {"PYTHONPATH": str(REPO)}
    code, _, err = await skillgate("forget", "loopchat", "u9", "--yes", env=env)
    assert code == 2 and "invalid choice: 'loopchat'" in err


async def test_a_loopchat_admin_who_decided_is_named_by_its_spec_on_cards_and_in_the_terminal(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        parts = chat.parts
        sid = await seed_session(parts.store, channel="loopchat")
        candidate = Candidate(
            kind="create",
            name="chat-brevity",
            description="Short answers.",
            content="---\nname: chat-brevity\ndescription: Short answers.\n---\n# Brevity\n",
            content_hash="h",
            based_on=[sid],
            generated_at=1.0,
        )
        made = await parts.review.submit(candidate)
        await parts.review.reject(made.id, "loopchat:u5", "not needed")
        card = await build_card(await parts.review.get(made.id), parts.review, parts.store)
        assert card.outcome() == "❌ Rejected by Loopchat user u5: not needed"
        data_dir = str(parts.settings.data_dir)
    env = {
        "SKILLGATE_DATA_DIR": data_dir,
        "PYTHONPATH": os.pathsep.join([str(installed), str(REPO)]),
    }
    code, out, err = await skillgate("proposals", "list", env=env)
    assert code == 0 and "[Loopchat user u5, " in out, err
