"""What the bot says in Telegram, and how long it waits for the answer to a question.

Each text is an English message id, translated where it is shown (`gateway.i18n`).
"""

from __future__ import annotations

from gateway.channels.api import N_, Dialect

START = N_(
    "Hi {name}! I'm an AI assistant: ask me anything.\n"
    "Rate my answers with 👍 or 👎, that is how I get better. /help tells more."
)
HELP = N_(
    "Send me a message and I'll answer it.\n\n"
    "/new finishes this conversation and starts a fresh one\n"
    "/language chooses the language of these messages\n"
    "/help shows this message\n"
    "/remember keeps something about you for later, /memory shows or deletes it\n"
    "/persona shows this chat's persona\n"
    "/remind sets a reminder, /tasks lists them, /timezone sets your timezone\n"
    "/forget deletes everything I keep about you\n\n"
    "Under each answer, 👍 or 👎 tells me how it went; after 👎 you can say what went wrong."
)
GROUP_HINT = N_(
    "\n\nIn a group I answer when you mention me, reply to one of my messages or use a command."
)
NEW = N_("Done: this conversation is finished. Your next message starts a fresh one.")
REFUSAL = N_(
    "Sorry, this bot is private. If you should have access, ask its owner to add your"
    " Telegram user id: {user_id}"
)
TEXT_ONLY = N_(
    "Sorry, I can't read this kind of message. Send me text, a voice message, a photo or a"
    " document (PDF, Word, text), or add your question as a caption."
)
UNKNOWN = N_("I don't know /{command}. /help lists what I understand.")
THANKS_FOR_COMMENT = N_("Thanks, I've noted that.")
RUNNING_SYNTHESIS = N_("Running a synthesis pass now…")

TELEGRAM = Dialect(
    help=HELP,
    new=NEW,
    refusal=REFUSAL,
    thanks_for_comment=THANKS_FOR_COMMENT,
    start=START,
    unknown=UNKNOWN,
    group_hint=GROUP_HINT,
    text_only=TEXT_ONLY,
    running_synthesis=RUNNING_SYNTHESIS,
    comment_seconds=10 * 60,
    reason_seconds=10 * 60,
)
