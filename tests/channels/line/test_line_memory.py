"""LINE: a group message without a userId reads and writes no memory."""

from __future__ import annotations

from gateway.store.sql import Conn
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import GROUP_ID, LineRig


async def memory_rows(rig: LineRig) -> int:
    async def work(c: Conn) -> int:
        return int(await c.fetchval("select count(*) from user_memory"))

    return await rig.store._run(work, transaction=False)


async def test_a_group_message_without_a_user_id_reads_and_writes_no_memory(
    line: LineRig, fake_llm: FakeOpenAI
) -> None:
    def anonymous(text: str) -> dict[str, object]:
        event = text_event(
            text, group_id=GROUP_ID, reply_token=line.token(GROUP_ID), mention_self=True
        )
        del event["source"]["userId"]  # a user who has not agreed to share their profile
        return event

    await line.deliver(anonymous("/remember my name is Alice"))
    assert line.fake.delivered_texts(GROUP_ID)[-1].startswith("I can't tell who sent this")
    fake_llm.tool_call("remember", text="my name is Alice")  # offered or not, it is refused
    fake_llm.reply("Hello.")
    await line.deliver(anonymous("remember that my name is Alice"))
    assert "remember" not in str(fake_llm.requests[-2].get("tools"))
    assert fake_llm.requests[-1]["messages"][-1]["content"].startswith("error: memory")
    assert await memory_rows(line) == 0
    assert "Remembered" not in " ".join(line.fake.delivered_texts(GROUP_ID))
