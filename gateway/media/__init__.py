"""Reading what users send besides text: voice notes, photos and documents.

Channel-neutral mechanics, each bounded: `remote` (a file not downloaded yet, as a channel
describes it, and the caps per kind), `sniff` (the type from the bytes, never from the
platform), `images` (Pillow: pixel limit, resized and compressed for the model),
`documents` (pypdf with a page limit, python-docx, text; cut to a token budget), `stt`
(an OpenAI-compatible /audio/transcriptions endpoint) and `keep` (kept files, only when a
setting asks). What the gateway does with them, and what it tells the user, is the
conversation layer's (`conversation/attachments.py`). Nothing here imports a platform SDK,
a web server or a database driver.
"""
