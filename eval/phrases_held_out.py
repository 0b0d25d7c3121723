"""The held-out phrase bank: the same five preferences, worded by another hand.

Written without looking at the scripted model's reader of comments, and never read by
it (a test checks that no module on the learning side imports or names this one), so
the figures measured with it say how the learning side does on words it was not built
around. Like the other bank, some phrasings are plain and some only hint.
"""

from __future__ import annotations

from eval.phrases import PhraseBank

HELD_OUT = PhraseBank(
    name="held-out",
    what="written apart from the model's reader and never seen by it",
    complaints={
        "bullets": (
            "Can you lay this out as a list? One thing per line.",
            "paragraphs like this are exhausting to read on my phone",
            "number the steps or put dashes in front, anything but a block",
            "itemise the main facts for me",
            "I lost my place twice in that one big chunk",
            "a bulleted version would be much easier to skim",
        ),
        "metric": (
            "I use Celsius and kilometres where I live",
            "convert it to the units the rest of the world uses",
            "Fahrenheit means nothing to me",
            "what would that be in centimetres and grams?",
            "SI units, please",
            "we don't measure things in inches over here",
        ),
        "citation": (
            "Which study or website says this?",
            "reference please",
            "I need something I can show my teacher",
            "says who?",
            "tell me where you got that information",
            "is there a link or a book where I could look this up?",
        ),
        "brief": (
            "I asked a quick question and got a whole article",
            "give me the short version",
            "just the answer, no lecture",
            "could you cut this down to a couple of sentences?",
            "too wordy",
            "I gave up reading halfway through",
        ),
        "detail": (
            "that's it? I hoped you'd go deeper",
            "please explain why, not just what",
            "tell me the history behind it as well",
            "this needs a fuller answer",
            "feels rushed, walk me through it properly",
            "give me some context, I'm new to this topic",
        ),
    },
    vague=("nope", "not really helpful", "that's not it", "eh", "try again"),
    password=(
        "I will never share my password with a bot.",
        "Asking for my credentials? Absolutely not.",
    ),
)
