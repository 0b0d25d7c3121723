"""Properties over generated webhook bodies and button data (hypothesis, derandomized).

For any body: never a 500, and no handler fails on what was stored. For any button data:
no proposal, skill or file changes, and a rating changes only for the exact data of a
real rating button.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.conversation.feedback import parse_rating
from tests.cards_support import ALICE, LINE_ADMIN, LINE_OTHER, LINE_SECRET, Rig
from tests.fakes.line_api import postback_event, sign, webhook_body
from tests.fakes.telegram_api import make_callback_update
from tests.reliability.hostile import Seeded
from tests.reliability.state import inbox_errors, snapshot
from tests.telegram_harness import SECRET as TG_SECRET

PROFILE = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PROTECTED = ("proposals", "rejections", "skills", "runs", "files")
_ids = iter(range(900_000, 10_000_000))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=25,
)
update_like = st.fixed_dictionaries(
    {"update_id": st.integers(min_value=-(2**63), max_value=2**63)},
    optional={
        "message": st.dictionaries(
            st.sampled_from(["message_id", "date", "chat", "from", "text", "entities"]),
            json_values,
        ),
        "callback_query": st.dictionaries(
            st.sampled_from(["id", "from", "data", "message", "chat_instance"]), json_values
        ),
    },
)
telegram_bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    update_like.map(lambda v: json.dumps(v).encode()),
)
line_bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(json_values, max_size=3).map(
        lambda events: json.dumps({"destination": "x", "events": events}).encode()
    ),
)
button_data = st.one_of(
    st.text(max_size=80),
    st.tuples(
        st.sampled_from(["rate", "pa", "pr", "pd", "ps", "p", "", "rate:1"]),
        st.text(alphabet="0123456789+-:٤²abcAZ_", max_size=24),
    ).map(":".join),
)


async def post_telegram(rig: Rig, body: bytes) -> int:
    headers = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET, "Content-Type": "application/json"}
    resp = await rig.client.post("/webhook/telegram", data=body, headers=headers)
    return resp.status


async def post_line(rig: Rig, body: bytes) -> int:
    headers = {"X-Line-Signature": sign(LINE_SECRET, body), "Content-Type": "application/json"}
    resp = await rig.client.post("/webhook/line", data=body, headers=headers)
    return resp.status


async def handled_without_harm(rig: Rig, send: Any, feedback_may_change: bool = False) -> int:
    """Send, wait until handled; the status, after checking nothing protected moved."""
    errors = await inbox_errors(rig)
    before = await snapshot(rig)
    status = await send
    await rig.idle()
    after = await snapshot(rig)
    assert status < 500
    assert await inbox_errors(rig) == errors, "a handler failed"
    keys = PROTECTED if feedback_may_change else (*PROTECTED, "feedback")
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}
    return status


@pytest.mark.asyncio(loop_scope="module")
@PROFILE
@given(body=telegram_bodies)
async def test_any_telegram_webhook_body_is_refused_or_handled(
    hostile: tuple[Rig, Seeded], body: bytes
) -> None:
    rig, _ = hostile
    status = await handled_without_harm(rig, post_telegram(rig, body))
    assert status in (200, 400, 413)


@pytest.mark.asyncio(loop_scope="module")
@PROFILE
@given(body=line_bodies)
async def test_any_signed_line_webhook_body_is_refused_or_handled(
    hostile: tuple[Rig, Seeded], body: bytes
) -> None:
    rig, _ = hostile
    assert await handled_without_harm(rig, post_line(rig, body)) in (200, 400)


@pytest.mark.asyncio(loop_scope="module")
@PROFILE
@given(data=button_data, admin=st.booleans())
async def test_any_telegram_callback_data_changes_only_what_its_button_would(
    hostile: tuple[Rig, Seeded], data: str, admin: bool
) -> None:
    rig, seeded = hostile
    user = ALICE if admin else 1003
    update = make_callback_update(
        next(_ids), data, chat_id=ALICE, user_id=user, message_id=seeded.tg_message_id
    )
    rating = parse_rating(data)
    real = rating is not None and rating[0] == seeded.tg_answer
    body = json.dumps(update).encode()
    assert await handled_without_harm(rig, post_telegram(rig, body), real) == 200


@pytest.mark.asyncio(loop_scope="module")
@PROFILE
@given(data=button_data, admin=st.booleans())
async def test_any_line_postback_data_changes_only_what_its_button_would(
    hostile: tuple[Rig, Seeded], data: str, admin: bool
) -> None:
    rig, seeded = hostile
    user = LINE_ADMIN if admin else LINE_OTHER
    token = rig.line.issue_reply_token(to=user)
    body = webhook_body(postback_event(data, user_id=user, reply_token=token))
    rating = parse_rating(data)
    real = rating is not None and rating[0] == seeded.line_answer and user == LINE_OTHER
    assert await handled_without_harm(rig, post_line(rig, body), real) == 200
