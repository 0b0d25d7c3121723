"""👍/👎 on LINE: postbacks store ratings, a 👎 asks what went wrong and keeps the answer."""

from __future__ import annotations

import time

from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import Scripted
from tests.line_support import GROUP_ID, REPLY, LineRig, quick_reply_data

OTHER_USER = "U" + "2" * 32


async def answered(line: LineRig, text: str = "question", **event: object) -> list[str]:
    """Ask something and return the postback data of the answer's 👍 and 👎."""
    to = str(event.get("group_id") or event.get("user_id") or USER_ID)
    await line.deliver(text_event(text, reply_token=line.token(to), **event))  # type: ignore[arg-type]
    return quick_reply_data(line.fake.calls_to(REPLY)[-1].body["messages"][-1])


async def test_a_thumbs_up_postback_stores_plus_one(line: LineRig) -> None:
    up, _down = await answered(line)
    await line.deliver(postback_event(up, reply_token=line.token()))

    [row] = await line.feedback()
    assert (row["channel"], row["chat"], row["user"], row["rating"]) == (
        "line",
        USER_ID,
        USER_ID,
        1,
    )
    assert row["message_id"] == int(up.split(":")[1])
    assert row["comment"] is None
    assert len(line.fake.calls_to(REPLY)) == 1  # 👍 needs no answer; the chat shows "👍"


async def test_a_thumbs_down_asks_what_went_wrong_and_keeps_the_next_text_as_comment(
    line: LineRig,
) -> None:
    _up, down = await answered(line)
    await line.deliver(postback_event(down, reply_token=line.token()))
    assert line.fake.delivered_texts()[-1].startswith("What went wrong?")

    await line.deliver(text_event("It ignored my question.", reply_token=line.token()))
    [row] = await line.feedback()
    assert row["rating"] == -1 and row["comment"] == "It ignored my question."
    assert len(line.llm.requests) == 1  # the comment was not a turn
    assert line.fake.delivered_texts()[-1].startswith("Thanks")

    await line.deliver(text_event("next question", reply_token=line.token()))
    assert line.last_prompt() == "next question"


async def test_a_rating_can_be_changed_but_never_duplicated(line: LineRig) -> None:
    up, down = await answered(line)
    await line.deliver(postback_event(down, reply_token=line.token()))
    await line.deliver(postback_event(up, reply_token=line.token()))
    await line.deliver(postback_event(up, reply_token=line.token()))
    [row] = await line.feedback()
    assert row["rating"] == 1
    # Changed to 👍: the next text is a question again, not a comment on the old answer.
    await line.deliver(text_event("new question", reply_token=line.token()))
    assert line.last_prompt() == "new question"
    assert (await line.feedback())[0]["comment"] is None


async def test_the_comment_window_closes_after_a_few_minutes(line: LineRig) -> None:
    _up, down = await answered(line)
    await line.deliver(postback_event(down, reply_token=line.token()))
    line.conversation.questions.clock = lambda: time.time() + 301
    await line.deliver(text_event("a new question", reply_token=line.token()))
    assert line.last_prompt() == "a new question"
    assert (await line.feedback())[0]["comment"] is None


async def test_ratings_from_another_chat_or_with_bad_data_are_ignored(line: LineRig) -> None:
    up, _down = await answered(line)
    for event in (
        postback_event(up, user_id=OTHER_USER),  # someone else's 1:1 chat
        postback_event(up, group_id=GROUP_ID),
        postback_event("rate:abc:+1"),
        postback_event(up.replace("+1", "+5")),
        postback_event("rate:999999:+1"),
        postback_event("something-else"),
    ):
        resp = await line.post(event)
        assert resp.status == 200
    await line.idle()
    assert await line.feedback() == []
    assert await line.inbox_errors() == []


async def test_group_feedback_comes_from_the_user_who_tapped(line: LineRig) -> None:
    _up, down = await answered(line, "help us", group_id=GROUP_ID, mention_self=True)
    await line.deliver(
        postback_event(
            down, group_id=GROUP_ID, user_id=OTHER_USER, reply_token=line.token(GROUP_ID)
        )
    )
    # Only the user who tapped is asked, and only a message to the bot is the answer.
    await line.deliver(text_event("unrelated chatter", group_id=GROUP_ID))
    await line.deliver(text_event("Too vague, I said", group_id=GROUP_ID, user_id=OTHER_USER))
    await line.deliver(
        text_event("@FakeBot Too vague.", group_id=GROUP_ID, user_id=OTHER_USER, mention_self=True)
    )
    [row] = await line.feedback()
    assert (row["chat"], row["user"], row["rating"], row["comment"]) == (
        GROUP_ID,
        OTHER_USER,
        -1,
        "Too vague.",
    )
    assert len(line.llm.requests) == 1


async def test_a_postback_is_handled_while_the_chat_waits_for_the_model(line: LineRig) -> None:
    _up, down = await answered(line)
    line.llm.script.append(Scripted(text="slow answer", delay=1.0))
    assert (await line.post(text_event("slow one", reply_token=line.token()))).status == 200
    await line.llm.wait_for_requests(2)
    await line.deliver(postback_event(down, reply_token=line.token()))
    texts = line.fake.delivered_texts()
    assert texts[-2].startswith("What went wrong?") and texts[-1] == "slow answer"
