"""Attachments of user messages on both databases: stored with the message, read back with
the history, the transcript and the evidence (labels only), forgotten on unsend."""

from __future__ import annotations

from typing import Any

from gateway.core.models import AttachmentRecord
from gateway.store import Store
from tests.store.test_store_conversations_backends import LIMITS, rows
from tests.store_support import add_message, attachments_of, history, open_turn

VOICE = AttachmentRecord(
    kind="voice",
    source="voice",
    mime="audio/ogg",
    size=12345,
    duration=4.0,
    text_chars=18,
    sent_as="transcript",
)
REPORT = AttachmentRecord(
    kind="document",
    source="file",
    mime="application/pdf",
    size=99_000,
    name="report.pdf",
    pages=3,
    text_chars=5000,
    content="Revenue grew.",
    note="cut to fit: 13 of 5,000 characters shown",
)


async def turn(store: Store, text: str, *attachments: AttachmentRecord, **at: Any) -> int:
    opened = await open_turn(
        store,
        "telegram",
        "c",
        "u",
        text,
        inbox_id=None,
        **{**LIMITS, **at},
        platform_message_id=f"m-{text}",
        attachments=attachments,
    )
    return opened.history[-1].id


async def test_attachments_come_back_with_the_history_and_the_transcript(any_store: Store) -> None:
    first = await turn(any_store, "where is the station?", VOICE)
    await add_message(any_store, 1, "assistant", "Down the road.", now=1001.0)
    second = await turn(any_store, "sum it up", REPORT, now=1002.0)
    shown = await history(any_store, 1, limit=10)
    assert [len(m.attachments) for m in shown] == [1, 0, 1]
    voice, report = shown[0].attachments[0], shown[2].attachments[0]
    assert voice.model_dump(exclude={"id"}) == {
        **VOICE.model_dump(exclude={"id"}),
        "message_id": first,
    }
    assert (report.message_id, report.content, report.pages) == (second, "Revenue grew.", 3)
    entries = await any_store.session_transcript(1)
    assert [[a.kind for a in e.message.attachments] for e in entries] == [
        ["voice"],
        [],
        ["document"],
    ]


async def test_evidence_has_labels_never_a_documents_text(any_store: Store) -> None:
    await turn(any_store, "where is the station?", VOICE)
    await add_message(any_store, 1, "assistant", "Down the road.", now=1001.0)
    await turn(any_store, "sum it up", REPORT, now=1002.0)
    [evidence] = await any_store.session_evidence([1])
    assert [(t.text, t.attachments) for t in evidence.turns] == [
        ("where is the station?", ["voice message, 0:04, transcribed"]),
        ("Down the road.", []),
        ("sum it up", ["document report.pdf, 3 pages"]),
    ]


async def test_what_the_model_got_can_be_corrected_and_unsend_forgets_the_content(
    any_store: Store,
) -> None:
    photo = AttachmentRecord(
        kind="image", source="photo", mime="image/png", size=10, sent_as="image"
    )
    message = await turn(any_store, "what is it?", photo)
    await any_store.set_attachments_sent(message, "image", "caption", "the model refuses images")
    doc = await turn(any_store, "read this", REPORT, now=1001.0)
    assert await any_store.unsend_message("telegram", "c", "m-read this")
    found = await attachments_of(any_store, [message, doc])
    assert [(a.sent_as, a.note) for a in found[message]] == [
        ("caption", "the model refuses images")
    ]
    assert (found[doc][0].content, found[doc][0].name) == (None, None)
    (row,) = await rows(any_store, "select count(*) as n from attachments")
    assert row["n"] == 2
