"""LINE has no partial messages: the loading animation stays up for the whole answer."""

from __future__ import annotations

from tests.fakes.line_api import USER_ID, text_event
from tests.line_support import LOADING, REPLY, LineRig


async def test_the_loading_animation_is_renewed_until_a_slow_answer_is_sent(
    line: LineRig,
) -> None:
    session = line.channel.session
    assert session is not None
    session.loading_renew_seconds = 0.25  # 50 s in production: each call shows 60 s
    line.llm.chunk_interval = 0.1
    answer = " ".join(f"word{i}" for i in range(14))  # about 1.3 s of writing
    line.llm.reply(answer)
    await line.deliver(text_event("tell me", reply_token=line.token()))
    loading = line.fake.calls_to(LOADING)
    [reply] = line.fake.calls_to(REPLY)
    assert len(loading) >= 3
    assert all(c.body == {"chatId": USER_ID, "loadingSeconds": 60} for c in loading)
    assert all(c.at < reply.at for c in loading)  # it stops with the answer
    assert line.fake.delivered_texts() == [answer]
    assert line.llm.requests[0]["stream"] is True
