"""`generate_image`: a picture from the OpenAI-compatible /images/generations, asked of the
user first (`confirm`), sent as a photo on Telegram and an image message on LINE (by signed
link), counted per user and day; a server that answers too much, nothing or no image
leaves the text answer as it was."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from gateway.config import Settings
from gateway.conversation.pictures import IMAGE_LIMIT, IMAGE_NOT_SENT
from gateway.core.tools import ToolAccess
from gateway.i18n import texts_for
from gateway.runtime.keys import SETTINGS
from gateway.tools.build import image_rule, image_tool
from gateway.tools.config import WebToolConfig
from gateway.tools.image import GENERATE
from gateway.tools.policy import Rule, refusal
from tests.console_support import sign_in
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI, drawn_png
from tests.fakes.telegram_api import make_text_update
from tests.line_support import REPLY, LineRig, line_rig
from tests.telegram_harness import telegram_gateway
from tests.tools.support import last_trace, tool_names, tools_file
from tests.tools.test_confirmations import press

PROMPT = "a red fox asleep under a maple tree"
PUBLIC = "https://bot.example.com"
EN = texts_for("en")


def script_picture(fake_llm: FakeOpenAI, answer: str = "Here is your fox.") -> None:
    fake_llm.tool_call("generate_image", prompt=PROMPT)
    fake_llm.reply(answer)


async def test_a_picture_is_confirmed_then_sent_as_a_telegram_photo_with_its_prompt_traced(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    script_picture(fake_llm)
    async with telegram_gateway(make_settings, fake_llm, image_model="gpt-image-1") as gw:
        assert (await gw.post(make_text_update(1, "draw me a fox"))).status == 200
        [card] = await gw.fake.wait_for("sendMessage", timeout=30)
        # Off by nothing but the default policy: the user is asked first, the prompt shown.
        assert "generate_image" in card.params["text"] and PROMPT in card.params["text"]
        assert fake_llm.generations == []
        [row] = card.params["reply_markup"]["inline_keyboard"]
        assert await press(gw, 2, row[0]["callback_data"], 1) == "✅ Allowed."
        await gw.idle()
        trace = await last_trace(gw.parts.store)
        [photo] = gw.fake.calls_of("sendPhoto")
        texts = gw.fake.sent_texts()
    assert "generate_image" in tool_names(fake_llm.requests[0])
    [asked] = fake_llm.generations
    assert asked == {
        "model": "gpt-image-1",
        "prompt": PROMPT,
        "n": 1,
        "response_format": "b64_json",
    }
    assert gw.fake.photos == [drawn_png(PROMPT)]  # the server's very PNG
    assert photo.params["caption"] == PROMPT
    assert texts[-1] == "Here is your fox."
    [call] = trace.tool_calls
    assert (call.tool, call.status) == ("generate_image", "ok")
    assert json.loads(call.arguments) == {"prompt": PROMPT}  # the prompt, in the trace
    assert "sent" in fake_llm.requests[1]["messages"][-1]["content"]


def test_generate_image_asks_first_and_stays_out_of_groups_unless_the_file_says_so() -> None:
    assert image_rule(None)(GENERATE) == Rule("confirm", False)
    allowed = image_rule(WebToolConfig(policy="auto", groups="allow"))(GENERATE)
    assert allowed == Rule("auto", True)
    in_group = ToolAccess(group=True, confirm=None)
    assert refusal(image_rule(None)(GENERATE), in_group) == "tools are not used in groups"


async def test_past_the_daily_limit_no_picture_is_made_and_the_user_is_told(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tools_file(tmp_path, image={"policy": "auto"})
    script_picture(fake_llm)
    script_picture(fake_llm, "I could not draw it.")
    settings = {"image_model": "gpt-image-1", "user_daily_images": 1, "tools_file": path}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.post(make_text_update(1, "draw me a fox"))
        await gw.idle()
        assert len(gw.fake.photos) == 1
        await gw.post(make_text_update(2, "another one"))
        await gw.idle()
        trace = await last_trace(gw.parts.store)
        texts = gw.fake.sent_texts()
    assert len(fake_llm.generations) == 1  # the second was never asked of the server
    assert len(gw.fake.photos) == 1
    [call] = trace.tool_calls
    assert call.status == "refused" and "SKILLGATE_USER_DAILY_IMAGES" in (call.detail or "")
    assert "I could not draw it." in texts
    assert texts[-1] == EN(IMAGE_LIMIT, limit=1)


async def test_a_picture_is_priced_in_the_days_cost_and_in_usage(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tools_file(tmp_path, image={"policy": "auto"})
    script_picture(fake_llm)
    settings = {
        "image_model": "gpt-image-1",
        "tools_file": path,
        "image_price": 0.04,
        "daily_cost_budget": 100.0,
        "llm_prices": "*=0/0",
    }
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.post(make_text_update(1, "draw me a fox"))
        await gw.idle()
        costs = await gw.parts.store.run(
            lambda db: list(db.query("select scope, cost from quota_counts where scope != 'flag'"))
        )
        got = await gw.client.get(
            "/admin/api/usage", headers={"Authorization": "Bearer admin-secret-token"}
        )
        report = await got.json()
        await sign_in(gw.client, "admin-secret-token")
        html = await (await gw.client.get("/admin/usage")).text()
    assert len(gw.fake.photos) == 1
    # The picture's price is in the day's cost under the budget (the model's tokens are free).
    assert {r["scope"]: r["cost"] for r in costs}["gateway"] == pytest.approx(0.04)
    assert report["images"] == 1
    assert report["media_cost"] == pytest.approx(0.04)
    assert report["cost"] == pytest.approx(0.04)
    assert 'id="media-usage"' in html and "1 picture made, cost 0.0400" in html


@pytest.mark.parametrize("answer", ["flood", "empty", "junk"])
async def test_a_server_answering_too_much_or_nothing_leaves_the_text_answer(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    answer: Literal["flood", "empty", "junk"],
) -> None:
    path = tools_file(tmp_path, image={"policy": "auto"})
    fake_llm.image_answer = answer
    script_picture(fake_llm, "Sorry, no picture this time.")
    settings = {"image_model": "gpt-image-1", "image_max_mb": 1, "tools_file": path}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.post(make_text_update(1, "draw me a fox"))
        await gw.idle()
        trace = await last_trace(gw.parts.store)
        texts = gw.fake.sent_texts()
    assert gw.fake.calls_of("sendPhoto") == []
    assert texts[-1] == "Sorry, no picture this time."
    [call] = trace.tool_calls
    assert call.status == "error"
    told = fake_llm.requests[1]["messages"][-1]["content"]
    if answer == "flood":
        assert "more than 1,048,576 bytes" in told
        assert fake_llm.image_streamed < 4 * 1024 * 1024  # abandoned while reading
    elif answer == "empty":
        assert "no image" in told
    else:
        assert "not an image" in told


def local(url: str) -> str:
    assert url.startswith(PUBLIC + "/media/")
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


async def confirm_on_line(rig: LineRig) -> None:
    await rig.post(text_event("draw me a fox", reply_token=rig.token()))
    [card] = await rig.fake.wait_for(REPLY, timeout=30)
    [message] = card.body["messages"]
    assert "generate_image" in message["text"] and PROMPT in message["text"]
    actions = [item["action"] for item in message["quickReply"]["items"]]
    await rig.deliver(postback_event(actions[0]["data"], reply_token=rig.token()))
    await rig.idle()


async def test_a_confirmed_picture_goes_to_line_as_an_image_message_by_signed_link(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    script_picture(fake_llm)
    settings: dict[str, Any] = {"image_model": "gpt-image-1", "public_url": PUBLIC}
    async with line_rig(make_settings, fake_llm, **settings) as rig:
        await confirm_on_line(rig)
        messages = rig.fake.delivered_messages(USER_ID)
        [image] = [m for m in messages if m["type"] == "image"]
        assert messages[messages.index(image) + 1] == {
            "type": "text",
            "text": "Here is your fox.",
            "quickReply": messages[-1]["quickReply"],
        }
        url = image["originalContentUrl"]
        assert image["previewImageUrl"] == url and USER_ID not in url
        got = await rig.http.get(local(url))
        assert got.status == 200 and got.content_type == "image/png"
        assert await got.read() == drawn_png(PROMPT)
        forged = await rig.http.get(local(url)[:-4] + "0000")
        assert forged.status == 403
        # /forget takes the picture with the user's other files: the link in time finds nothing.
        links_dir = rig.http.app[SETTINGS].data_dir / "links"
        assert [p for p in links_dir.rglob("*") if p.is_file()]
        await rig.deliver(text_event("/forget", reply_token=rig.token()))
        await rig.deliver(postback_event("forget:yes", reply_token=rig.token()))
        assert [p for p in links_dir.rglob("*") if p.is_file()] == []
        assert (await rig.http.get(local(url))).status == 404


async def test_without_an_https_public_url_line_is_told_the_picture_could_not_be_sent(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    script_picture(fake_llm)
    async with line_rig(make_settings, fake_llm, image_model="gpt-image-1") as rig:
        await confirm_on_line(rig)
        messages = rig.fake.delivered_messages(USER_ID)
    assert all(m["type"] == "text" for m in messages)
    said = [m["text"] for m in messages]
    assert "Here is your fox." in said
    assert said[-1] == EN(IMAGE_NOT_SENT)


def test_the_models_key_goes_to_the_image_server_only_when_it_is_the_models(
    make_settings: Callable[..., Settings],
) -> None:
    key = "sk-the-models-own-key"
    model = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m", "llm_api_key": key}
    same = make_settings(image_model="gpt-image-1", **model)
    assert image_tool(same).api_key == key
    elsewhere = make_settings(
        image_model="gpt-image-1", image_base_url="https://images.example.com/v1", **model
    )
    assert image_tool(elsewhere).api_key is None
    own = make_settings(
        image_model="gpt-image-1",
        image_base_url="https://images.example.com/v1",
        image_api_key="sk-images",
        **model,
    )
    assert (image_tool(own).base_url, image_tool(own).api_key) == (
        "https://images.example.com/v1",
        "sk-images",
    )
