"""What the bot says in LINE, and how long it waits for the answer to a question.

Each text is an English message id, translated where it is shown (`gateway.i18n`).
"""

from __future__ import annotations

from gateway.channels.api import N_, Dialect

HELP = N_(
    "I'm an AI assistant: ask me anything in plain words.\n"
    "• In a group, mention me so I know you're talking to me.\n"
    "• Tap 👍 or 👎 under an answer to tell me how I did.\n"
    "• /new starts a fresh conversation.\n"
    "• /language chooses the language of these messages.\n"
    "• /help shows this message.\n"
    "• /remember keeps something about you for later; /memory shows or deletes it.\n"
    "• /persona shows this chat's persona.\n"
    "• /remind sets a reminder, /tasks lists them, /timezone sets your timezone.\n"
    "• /forget deletes everything I keep about you."
)
GREETING = N_("Hi, thanks for adding me! 👋\n\n{help}")
WELCOME_BACK = N_("Welcome back! 👋\n\n{help}")
GROUP_GREETING = N_(
    "Hi everyone! 👋 Mention me or start a message with /help to see what I can do."
)
NEW_SESSION = N_("Okay, let's start over. I've set our earlier conversation aside.")
REFUSAL = N_("Sorry, this assistant is private and only answers the people it was set up for.")
ASK_WHAT_WENT_WRONG = N_("What went wrong? Tell me in your next message (optional).")
ASK_IN_GROUP = N_("What went wrong? Mention me in your next message to tell me (optional).")
"""In a group only a message to the bot answers its question."""
TEXT_ONLY = N_(
    "Sorry, I can't read this kind of message. Please send text, a voice message, a photo or"
    " a file (PDF, Word, text)."
)
THANKS_FOR_COMMENT = N_("Thanks, I've noted that. It helps me get better.")
ADMIN_RECORDED = N_(
    "Thanks, that's the code: you are an admin of this bot now. New skill proposals will"
    " come to you here."
)
"""The answer to the one-time code `skillgate init` asked an admin to send."""

LINE = Dialect(
    help=HELP,
    new=NEW_SESSION,
    refusal=REFUSAL,
    thanks_for_comment=THANKS_FOR_COMMENT,
    greeting=GREETING,
    welcome_back=WELCOME_BACK,
    group_greeting=GROUP_GREETING,
    text_only=TEXT_ONLY,
    # After 👎 or Reject, the user's next text (not a reply to a prompt) is the answer.
    comment_seconds=300.0,
    reason_seconds=5 * 60,
)
