"""The catalogs: every text in the code is in each language, complete, and fits the platforms."""

from __future__ import annotations

import os
import re
import string
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from gateway.channels.line import cards as line_cards
from gateway.channels.line import responder as line_responder
from gateway.channels.line.format import MAX_TEXT_UTF16, line_parts
from gateway.channels.telegram import cards as telegram_cards
from gateway.channels.telegram import responder as telegram_responder
from gateway.channels.telegram.cards import TelegramCards
from gateway.channels.telegram.format import MAX_TEXT as TELEGRAM_TEXT
from gateway.channels.telegram.format import render_parts
from gateway.channels.telegram.operator import MENU_LANGUAGES
from gateway.channels.text import CUT_NOTE, MAX_ANSWER_PARTS, utf16_len
from gateway.conversation import feedback, review
from gateway.conversation.dispatch import COMMANDS
from gateway.conversation.language import buttons as language_buttons
from gateway.conversation.review import ADMIN_COMMANDS
from gateway.i18n import LANGUAGES, SOURCE, texts_for
from gateway.i18n.catalog import LOCALE_DIR, po_path
from gateway.review import repeats
from gateway.review.buttons import CardSigner
from gateway.review.cards import SESSIONS, Card, Evidence
from tests.review.test_cards_render import make_proposal

ROOT = Path(__file__).resolve().parents[2]
TRANSLATED = [code for code in LANGUAGES if code != SOURCE]
KEYWORDS = {"N_": None, "Np_": (1, 2)}

LINE_LABEL = 20
"""LINE: a postback action's label (quick reply, Flex button) holds at most 20 characters."""
LINE_DISPLAY_TEXT = 300
TELEGRAM_ANSWER = 200
"""Telegram: the text of answerCallbackQuery, 0-200 characters."""
TELEGRAM_PLACEHOLDER = 64
TELEGRAM_COMMAND_DESCRIPTION = 256


def key(message: str | tuple[str, ...]) -> str:
    return message if isinstance(message, str) else message[0]


def extracted() -> dict[str, str | tuple[str, ...]]:
    """Every marked text in gateway/, as `scripts/catalogs` extracts it."""
    found = extract_from_dir(
        str(ROOT),
        method_map=[("gateway/**.py", "python")],
        keywords=KEYWORDS,
        comment_tags=("TRANSLATORS:",),
    )
    return {key(message): message for _file, _line, message, _comments, _context in found}


def catalog(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as po:
        return read_po(po, locale=locale)


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def commands(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/])/[a-z]+\b", text))


def test_the_template_holds_exactly_the_texts_marked_in_the_code() -> None:
    template = {key(m.id): m.id for m in catalog(LOCALE_DIR / "messages.pot") if m.id}
    code = extracted()
    assert sorted(set(code) - set(template)) == [], "new texts: run scripts/catalogs"
    assert sorted(set(template) - set(code)) == [], "texts gone from the code: run scripts/catalogs"
    assert template == code  # the plural forms too


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_catalog_translates_every_message_with_the_same_placeholders(language: str) -> None:
    template = catalog(LOCALE_DIR / "messages.pot")
    translated = catalog(po_path(language), language)
    wanted = {key(m.id) for m in template if m.id}
    entries = {key(m.id): m for m in translated if m.id}
    assert sorted(wanted - set(entries)) == [], f"{language}: run scripts/catalogs and translate"
    assert sorted(set(entries) - wanted) == [], f"{language}: obsolete entries"
    for msgid, entry in entries.items():
        forms = [entry.string] if isinstance(entry.string, str) else list(entry.string)
        assert forms and all(f.strip() for f in forms), f"{language}: {msgid!r} is untranslated"
        assert "fuzzy" not in entry.flags, f"{language}: {msgid!r} is fuzzy"
        english = [entry.id] if isinstance(entry.id, str) else list(entry.id)
        for form in forms:
            assert fields(form) == set().union(*map(fields, english)), (language, msgid, form)
            assert commands(form) == commands(english[0]), (language, msgid, form)
            assert "<" not in form or "<" in english[0], (language, msgid)  # no markup


@pytest.mark.parametrize("language", TRANSLATED)
def test_a_catalog_is_read_and_used_and_a_missing_text_stays_english(language: str) -> None:
    texts = texts_for(language)
    assert texts.language == language
    assert texts(feedback.STALE) != feedback.STALE
    assert texts("A text no catalog has.") == "A text no catalog has."
    assert texts("") == ""  # not the catalog's header
    assert texts_for("xx").language == SOURCE


def test_counts_take_their_plural_form_in_english_and_one_form_elsewhere() -> None:
    en, ja = texts_for("en"), texts_for("ja")
    assert (en.plural(SESSIONS, 1), en.plural(SESSIONS, 3)) == ("1 session", "3 sessions")
    assert (ja.plural(SESSIONS, 1), ja.plural(SESSIONS, 3)) == ("会話 1 件", "会話 3 件")
    more = review.more_pending(4, 9, texts_for("th"))
    assert "4" in more and "9" in more and "/proposals" in more


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_button_label_and_short_answer_fits_the_platforms_limits(language: str) -> None:
    texts = texts_for(language)
    line_labels = [line_cards.APPROVE, line_cards.REJECT, line_cards.FULL_DIFF, line_responder.SKIP]
    for label in line_labels:
        shown = texts(label)
        assert 0 < utf16_len(shown) <= LINE_LABEL, (language, shown)
        pressed = texts(line_cards.PRESSED, label=shown, id=10**18)
        assert utf16_len(pressed) <= LINE_DISPLAY_TEXT
    for button in language_buttons(texts):
        assert 0 < utf16_len(button.label) <= LINE_LABEL, (language, button.label)
        assert len(f"{button.action}:{button.value}".encode()) <= 64  # Telegram callback data
    for label in (telegram_cards.APPROVE, telegram_cards.REJECT, telegram_cards.FULL_DIFF):
        assert 0 < utf16_len(texts(label)) <= LINE_LABEL and "\n" not in texts(label)
    signer = CardSigner("a-bot-token")
    for label in (repeats.COMPARE_LABEL, repeats.REOPEN_LABEL):  # a repeat notice's buttons
        button = repeats.repeat_button(signer, texts(label, id=99_999), "reopen", 10**18)
        assert 0 < utf16_len(button.label) <= LINE_LABEL, (language, button.label)
        assert len(f"{button.action}:{button.value}".encode()) <= 64
    for placeholder in (
        telegram_responder.COMMENT_PLACEHOLDER,
        telegram_responder.REASON_PLACEHOLDER,
    ):
        assert 0 < len(texts(placeholder)) <= TELEGRAM_PLACEHOLDER
    for _name, description in [*COMMANDS, *ADMIN_COMMANDS]:
        assert 0 < len(texts(description)) <= TELEGRAM_COMMAND_DESCRIPTION
    slug = "a" * 64  # the longest slug a skill may have
    answers = [
        texts(m)
        for m in (
            feedback.STALE,
            feedback.PRIVATE,
            feedback.THANKS_UP,
            feedback.THANKS_DOWN,
            review.NOT_ALLOWED,
            review.INVALID_BUTTON,
            review.NO_REASON,
            review.GONE,
            review.NOT_APPLIED_STALE,
            telegram_responder.SENDING_DIFF,
        )
    ]
    answers += [texts(review.REJECTED, id=10**6, slug=slug), texts(review.APPROVED, slug=slug)]
    answers += [texts(m, who="x" * 60, at="2026-05-01 12:34 UTC") for m in review.ALREADY.values()]
    assert all(utf16_len(a) <= TELEGRAM_ANSWER for a in answers), language


def test_telegram_menus_cover_every_catalog() -> None:
    assert sorted(MENU_LANGUAGES.values()) == sorted(LANGUAGES)


@pytest.mark.parametrize("language", TRANSLATED)
def test_card_buttons_are_translated_but_their_callback_data_is_not(language: str) -> None:
    signer = CardSigner("secret")
    transport = TelegramCards(sender=None, signer=signer, admins=[])  # type: ignore[arg-type]
    p = make_proposal(id=7)
    english = transport.keyboard(Card(p, Evidence(sessions=1), diff=""))
    local = transport.keyboard(Card(p, Evidence(sessions=1), diff="", texts=texts_for(language)))
    assert english is not None and local is not None
    labels = [[b.text for b in row] for row in local.inline_keyboard]
    assert labels != [[b.text for b in row] for row in english.inline_keyboard]
    data = [[b.callback_data for b in row] for row in local.inline_keyboard]
    assert data == [[b.callback_data for b in row] for row in english.inline_keyboard]
    assert all(len(str(d).encode()) <= 64 for row in data for d in row)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_cut_answer_ends_with_the_note_in_the_users_language_within_the_limits(
    language: str,
) -> None:
    note = texts_for(language)(CUT_NOTE)
    answer = "ข้อความภาษาไทย 😀 日本語の文章 " * 3000  # emoji count two UTF-16 units
    telegram = [p.plain for p in render_parts(answer, note=note)]
    line = line_parts(answer, note=note)
    for parts, limit in ((telegram, TELEGRAM_TEXT), (line, MAX_TEXT_UTF16)):
        assert len(parts) == MAX_ANSWER_PARTS and parts[-1].endswith(note)
        assert all(utf16_len(p) <= limit for p in parts)


def test_the_update_command_finds_the_catalogs_up_to_date() -> None:
    pybabel = Path(sys.executable).parent / "pybabel"
    done = subprocess.run(
        [str(ROOT / "scripts" / "catalogs"), "--check"],
        env={**os.environ, "PYBABEL": str(pybabel)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
