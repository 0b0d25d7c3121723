"""What the bot says in Telegram, and how long it waits for the answer to a question."""

from __future__ import annotations

from gateway.conversation.models import Dialect

START = (
    "Hi {name}! I'm an AI assistant: ask me anything.\n"
    "Rate my answers with 👍 or 👎, that is how I get better. /help tells more."
)
HELP = (
    "Send me a message and I'll answer it.\n\n"
    "/new finishes this conversation and starts a fresh one\n"
    "/help shows this message\n"
    "/forget deletes everything I keep about you\n\n"
    "Under each answer, 👍 or 👎 tells me how it went; after 👎 you can say what went wrong."
)
GROUP_HINT = (
    "\n\nIn a group I answer when you mention me, reply to one of my messages or use a command."
)
NEW = "Done: this conversation is finished. Your next message starts a fresh one."
REFUSAL = (
    "Sorry, this bot is private. If you should have access, ask its owner to add your"
    " Telegram user id: {user_id}"
)
TEXT_ONLY = "Sorry, I can only read text so far: send your question as a message or a caption."
UNKNOWN = "I don't know /{command}. /help lists what I understand."

TELEGRAM = Dialect(
    help=HELP,
    new=NEW,
    refusal=REFUSAL,
    thanks_for_comment="Thanks, I've noted that.",
    start=START,
    unknown=UNKNOWN,
    group_hint=GROUP_HINT,
    text_only=TEXT_ONLY,
    running_synthesis="Running a synthesis pass now…",
    comment_seconds=10 * 60,
    reason_seconds=10 * 60,
)
