"""`skillgate chat` at a terminal: ratings belong to the open session, Ctrl-C leaves at once."""

from __future__ import annotations

from pathlib import Path

from gateway.conversation.feedback import NOTHING_TO_RATE
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.terminal import Terminal


def model_env(tmp_path: Path, fake_llm: FakeOpenAI) -> dict[str, str]:
    return {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_MODEL": "fake-model",
    }


async def test_good_after_new_has_nothing_to_rate_and_ctrl_c_leaves_at_once(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Paris.")
    env = model_env(tmp_path, fake_llm)
    term = Terminal(tmp_path, env, "chat", "--user", "ada")
    await term.shows("you>")
    term.type("/good")
    await term.shows(NOTHING_TO_RATE)
    term.type("Capital of France?")
    await term.shows("bot> Paris.")
    term.type("/new")
    await term.shows("(new session)")
    term.type("/good")  # the answer above belongs to the finished session
    await term.shows(NOTHING_TO_RATE)
    await term.shows("you>")
    term.press("\x03")  # Ctrl-C while waiting for a line: no Enter needed
    assert await term.ends() == 130
    assert "rating stored" not in term.seen


async def test_synthesize_right_after_chatting_says_the_session_is_still_open(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Paris.")
    env = model_env(tmp_path, fake_llm)
    code, _, err = await skillgate("chat", env=env, stdin="Capital of France?\n/bad vague\n")
    assert code == 0, err
    code, out, err = await skillgate("synthesize", env=env)
    assert code == 0, err
    assert "from 0 session(s)" in out
    assert "1 session(s) still open, not read" in out and "/new" in out and "30 idle" in out

    code, _, err = await skillgate(
        "synthesize", env={"SKILLGATE_DATA_DIR": env["SKILLGATE_DATA_DIR"]}
    )
    assert code == 1 and "no model configured: run `skillgate init`" in err


async def test_the_answer_shows_as_the_model_writes_it(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.hold_mid_stream("Once upon a time they lived happily ever after.", after=3)
    term = Terminal(tmp_path, model_env(tmp_path, fake_llm), "chat", "--user", "ada")
    await term.shows("you>")
    term.type("Tell me a story")
    await term.shows("bot> Once upon a")  # while the model still holds the rest back
    assert "happily" not in term.seen
    fake_llm.release()
    await term.shows("time they lived happily ever after.")
    await term.shows("you>")
    term.press("\x03")
    assert await term.ends() == 130
    assert term.seen.count("bot> ") == 1  # streamed once, not printed again at the end


async def test_help_lists_the_commands_and_does_not_go_to_the_model(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    env = model_env(tmp_path, fake_llm)
    code, out, err = await skillgate("chat", env=env, stdin="/help\n")
    assert code == 0, err
    assert "Commands: /new (fresh session)" in out
    assert fake_llm.requests == []
