"""`confirm` tools: the asker gets a signed ✅/✖ card; only their first press in time counts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from tests.fakes.line_api import postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_callback_update, make_text_update
from tests.line_support import PUSH, REPLY, line_rig
from tests.telegram_harness import Gateway, telegram_gateway
from tests.tools.http_server import ToyServer
from tests.tools.support import last_trace, tools_file


@pytest.fixture
async def toy() -> AsyncIterator[ToyServer]:
    async with ToyServer().running() as server:
        yield server


@pytest.fixture
def telegram(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> Callable[..., Any]:
    @asynccontextmanager
    async def start(**settings: Any) -> AsyncIterator[Gateway]:
        path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
        async with telegram_gateway(make_settings, fake_llm, tools_file=path, **settings) as gw:
            yield gw

    return start


def script_note(fake_llm: FakeOpenAI) -> None:
    fake_llm.tool_call("toy__note", text="buy milk")
    fake_llm.reply("Done.")


async def card_buttons(gw: Gateway) -> tuple[int, str, str]:
    """The card's message id and its ✅ and ✖ data, once it was sent."""
    [card] = await gw.fake.wait_for("sendMessage", timeout=30)
    assert "toy__note" in card.params["text"] and "buy milk" in card.params["text"]
    [row] = card.params["reply_markup"]["inline_keyboard"]
    assert [b["text"] for b in row] == ["✅", "✖"]
    return 1, row[0]["callback_data"], row[1]["callback_data"]


async def press(gw: Gateway, update_id: int, data: str, message_id: int, user: int = 1001) -> str:
    """Press a button; what the press was answered with."""
    before = len(gw.fake.calls_of("answerCallbackQuery"))
    update = make_callback_update(update_id, data, message_id=message_id, user_id=user)
    resp = await gw.post(update)
    assert resp.status == 200
    calls = await gw.fake.wait_for("answerCallbackQuery", before + 1, timeout=30)
    return str(calls[before].params.get("text", ""))


async def test_an_approved_call_runs_and_the_model_is_told_its_result(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    script_note(fake_llm)
    async with telegram() as gw:
        assert (await gw.post(make_text_update(1, "note: buy milk"))).status == 200
        message_id, yes, _ = await card_buttons(gw)
        assert await press(gw, 2, yes, message_id) == "✅ Allowed."
        await gw.idle()
        assert gw.fake.sent_texts()[-1] == "Done."
        # Decided: the card keeps no ✅/✖ to press.
        [closed] = gw.fake.calls_of("editMessageReplyMarkup")
        assert closed.params["message_id"] == message_id
        assert not closed.params.get("reply_markup")
        trace = await last_trace(gw.parts.store)
        # Pressed again (a replay): already decided, nothing runs twice.
        assert await press(gw, 3, yes, message_id) == (
            "This question was already answered, or its time ran out."
        )
        await gw.idle()
    assert toy.notes == ["buy milk"]
    assert "noted" in fake_llm.requests[1]["messages"][-1]["content"]
    assert len(fake_llm.requests) == 2
    assert [c.status for c in trace.tool_calls] == ["ok"]


async def test_a_declined_call_does_not_run_and_the_model_is_told_so(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    script_note(fake_llm)
    async with telegram() as gw:
        await gw.post(make_text_update(1, "note: buy milk"))
        message_id, _, no = await card_buttons(gw)
        assert await press(gw, 2, no, message_id) == "✖ Not allowed."
        await gw.idle()
        trace = await last_trace(gw.parts.store)
        assert len(gw.fake.calls_of("editMessageReplyMarkup")) == 1  # its buttons went
    assert toy.notes == []
    assert "declined" in fake_llm.requests[1]["messages"][-1]["content"]
    assert [c.status for c in trace.tool_calls] == ["declined"]


async def test_no_press_in_time_means_no_and_a_late_press_changes_nothing(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    script_note(fake_llm)
    async with telegram(tool_confirm_seconds=0.2) as gw:
        await gw.post(make_text_update(1, "note: buy milk"))
        message_id, yes, _ = await card_buttons(gw)
        await gw.idle()  # the turn ended without a press
        assert gw.fake.sent_texts()[-1] == "Done."
        late = await press(gw, 2, yes, message_id)
        await gw.idle()
        trace = await last_trace(gw.parts.store)
    assert late == "This question was already answered, or its time ran out."
    assert toy.notes == []
    assert [c.status for c in trace.tool_calls] == ["declined"]


async def test_forged_and_foreign_presses_decide_nothing(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    script_note(fake_llm)
    async with telegram() as gw:
        await gw.post(make_text_update(1, "note: buy milk"))
        message_id, yes, no = await card_buttons(gw)
        confirmation = yes.split(":")[1]
        forged = f"tc:{confirmation}:y:{'A' * 12}"
        assert await press(gw, 2, forged, message_id) == "This button is not valid."
        foreign = await press(gw, 3, yes, message_id, user=2002)
        assert foreign == "Only the person who asked can answer this."
        assert await press(gw, 4, no, message_id) == "✖ Not allowed."
        await gw.idle()
    assert toy.notes == []


async def test_a_line_user_confirms_a_call_with_the_card_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> None:
    script_note(fake_llm)
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url}})
    async with line_rig(make_settings, fake_llm, tools_file=path) as rig:
        resp = await rig.post(text_event("note: buy milk", reply_token=rig.token()))
        assert resp.status == 200
        [card] = await rig.fake.wait_for(REPLY, timeout=30)
        [message] = card.body["messages"]
        assert "toy__note" in message["text"]
        actions = [item["action"] for item in message["quickReply"]["items"]]
        assert [a["label"] for a in actions] == ["✅", "✖"]
        await rig.deliver(postback_event(actions[0]["data"], reply_token=rig.token()))
        await rig.idle()
        said = [m["text"] for c in rig.fake.calls_to(PUSH) for m in c.body["messages"]]
        said += [m["text"] for c in rig.fake.calls_to(REPLY) for m in c.body["messages"]]
    assert toy.notes == ["buy milk"]
    assert "Done." in said


# The third hostile review's attack: a harmless first argument long enough to push the
# real one off a card cut at 300 characters.
HARMLESS = "Tidying up the old notes folder as you asked, nothing important is touched. " * 5
PAYROLL = "/srv/payroll/ALL-EMPLOYEES"


async def test_the_card_shows_every_argument_the_tool_runs_with_and_runs_exactly_those(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    assert len(HARMLESS) > 330
    fake_llm.tool_call("toy__danger", reason=HARMLESS, path=PAYROLL)
    fake_llm.reply("Done.")
    async with telegram() as gw:
        await gw.post(make_text_update(1, "tidy my notes"))
        [card] = await gw.fake.wait_for("sendMessage", timeout=30)
        text = card.params["text"]
        [row] = card.params["reply_markup"]["inline_keyboard"]
        assert await press(gw, 2, row[0]["callback_data"], 1) == "✅ Allowed."
        await gw.idle()
    lines = text.splitlines()
    assert f'• path: "{PAYROLL}"' in lines  # the argument that matters, on its own line
    assert f'• reason: "{HARMLESS}"' in lines  # and the long one whole, not cut
    assert toy.calls == [("danger", {"reason": HARMLESS, "path": PAYROLL})]


async def test_a_press_signed_for_other_arguments_decides_nothing(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    script_note(fake_llm)
    async with telegram() as gw:
        await gw.post(make_text_update(1, "note: buy milk"))
        message_id, yes, no = await card_buttons(gw)
        action, confirmation, answer, digest, _ = yes.split(":")
        # Signed with the channel's key, but for arguments this question was not asked for.
        other = f"{confirmation}:{answer}:{'0' * 16}"
        forged = f"{action}:{other}:{gw.channel.profile.signer.sign(f'{action}:{other}')}"
        assert digest != "0" * 16
        assert await press(gw, 2, forged, message_id) == "This button is not valid."
        assert await press(gw, 3, no, message_id) == "✖ Not allowed."
        await gw.idle()
    assert toy.notes == []


async def test_arguments_too_long_to_show_are_refused_before_anyone_is_asked(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    fake_llm.tool_call("toy__danger", reason="x" * 5000, path=PAYROLL)
    fake_llm.reply("I could not do that.")
    async with telegram() as gw:
        await gw.post(make_text_update(1, "tidy my notes"))
        await gw.idle()
        trace = await last_trace(gw.parts.store)
        sent = gw.fake.sent_texts()
    assert sent == ["I could not do that."]  # no card
    assert toy.calls == []
    [call] = trace.tool_calls
    assert call.status == "refused"
    assert "too long to show for confirmation" in fake_llm.requests[1]["messages"][-1]["content"]


async def test_the_card_writes_out_invisible_and_reordering_characters_and_masks_secrets(
    telegram: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    token = "123456:TEST-TOKEN"  # the gateway's own bot token (the fake Bot API's)
    key = "sk-live-0123456789"  # shaped like a key
    fake_llm.tool_call("toy__danger", reason=f"tidy\u202e{token} {key}", path="/tmp/x\u200b")
    fake_llm.reply("Done.")
    async with telegram() as gw:
        assert gw.fake.token == token
        await gw.post(make_text_update(1, "tidy my notes"))
        [card] = await gw.fake.wait_for("sendMessage", timeout=30)
        [row] = card.params["reply_markup"]["inline_keyboard"]
        assert await press(gw, 2, row[1]["callback_data"], 1) == "✖ Not allowed."
        await gw.idle()
    text = card.params["text"]
    assert "\u202e" not in text and "\u200b" not in text
    assert "tidy\\u202e" in text and '• path: "/tmp/x\\u200b"' in text.splitlines()
    assert token not in text and key not in text
    assert toy.calls == []
