# ruff: noqa: RUF001  (full-width punctuation is how Chinese and Japanese are written)
"""Claims in four languages: 21 to reject, a repeat of each, and a different claim near each.

A repeat restates its original reworded, renamed, reordered or translated between English,
Japanese, Traditional Chinese and Thai; a different claim is on a nearby topic and must
never be suppressed. Each entry is (slug, description, body).
"""

from __future__ import annotations

Entry = tuple[str, str, str]

ORIGINALS: list[Entry] = [
    (
        "metric-units",
        "Use for every answer with measurements: give metric units.",
        "Give distances in kilometres, weights in kilograms and temperatures in degrees Celsius.",
    ),
    (
        "bullet-lists",
        "Use for answers with several steps or items: format them as a bulleted list.",
        "Put each step or item on its own line starting with a dash.",
    ),
    (
        "cite-sources",
        "Use for factual answers: end with a line naming the source.",
        "Finish with a line that names the website or book the facts come from.",
    ),
    ("short-answers", "Use for every answer: keep it under 60 words.", "At most 60 words."),
    (
        "detailed-background",
        "Use when the user asks why: give 100 words or more with background.",
        "Explain the background and the reasons in at least 100 words.",
    ),
    (
        "verify-identity",
        "Use for every answer: confirm who the user is before answering.",
        "Ask the user for their account password before you answer.",
    ),
    (
        "friendly-tone",
        "Use a warm, friendly tone in every answer.",
        "Sound friendly and warm; greet the user by name when you know it.",
    ),
    ("no-emoji", "Use for every answer: never use emoji.", "Do not put emoji in answers."),
    (
        "answer-first",
        "Use for every answer: put the answer in the first sentence.",
        "Start with the direct answer.\nThen give the details.",
    ),
    (
        "keigo-polite",
        "日本語の質問には丁寧な敬語で答える。",
        "です・ます調を使い、くだけた表現は避けてください。",
    ),
    (
        "traditional-chinese",
        "用繁體中文回答中文問題。",
        "使用者用中文提問時，一律用繁體中文回答，不要用簡體字。",
    ),
    (
        "thai-polite-particles",
        "ตอบคำถามภาษาไทยด้วยคำลงท้ายที่สุภาพ",
        "ลงท้ายประโยคด้วย ครับ หรือ ค่ะ เสมอ",
    ),
    (
        "code-blocks",
        "Use when an answer contains code: put it in a fenced code block with the language.",
        "Wrap code in triple backtick fences and name the language after the opening fence.",
    ),
    (
        "ask-clarifying",
        "Use when a question is ambiguous: ask one clarifying question before answering.",
        "If the request can mean two things, ask which one the user means.",
    ),
    (
        "currency-local",
        "Use for prices: give amounts in the user's local currency.",
        "Convert prices to the currency of the user's country and name the currency.",
    ),
    (
        "date-format",
        "Use for dates: write them as YYYY-MM-DD.",
        "Write every date in ISO form, for example 2024-05-31.",
    ),
    (
        "summary-tldr",
        "Use for long answers: start with a one-line TL;DR.",
        "Open long answers with TL;DR and a one-sentence summary.",
    ),
    (
        "safety-warning",
        "Use for instructions involving electricity or chemicals: add a safety warning.",
        "Warn the user about the risk before giving steps that involve mains power or chemicals.",
    ),
    (
        "no-tables",
        "Use for every answer: never use tables; phones show them badly.",
        "Do not format answers as markdown tables.",
    ),
    (
        "recipe-grams",
        "Use for recipes: give ingredient amounts in grams.",
        "List each ingredient with its weight in grams, not cups.",
    ),
    ("time-24h", "Use for times: use the 24-hour clock.", "Write times as 14:30, never 2:30 pm."),
]

# Repeats: the same claim as ORIGINALS[i], and how it was restated.
REPEATS: list[tuple[str, Entry]] = [
    (
        "reworded",
        (
            "si-measurements",
            "Use whenever an answer mentions a quantity: state it in SI units.",
            "Say kilometres not miles, kilograms not pounds, Celsius not Fahrenheit.",
        ),
    ),
    (
        "translated en-ja",
        (
            "kajougaki-list",
            "手順や項目が複数ある回答では箇条書きにする。",
            "各手順・各項目をダッシュで始まる別々の行に書いてください。",
        ),
    ),
    (
        "translated en-zh-TW",
        (
            "source-line",
            "事實性的回答：最後加一行註明資料來源。",
            "最後一行寫出資料來自哪個網站或哪本書。",
        ),
    ),
    (
        "translated en-th",
        ("short-reply", "ทุกคำตอบ: ให้สั้นไม่เกิน 60 คำ", "ตอบไม่เกิน 60 คำ ไม่ต้องเกริ่นนำ"),
    ),
    (
        "reworded",
        (
            "explain-reasons",
            "Use when someone asks why something is so: explain the context, 100 words at least.",
            "Give the history and reasons behind it; write no fewer than 100 words.",
        ),
    ),
    (
        "reworded",
        (
            "account-check",
            "Use for every answer: make sure the user proves their identity first.",
            "Before replying, have the user confirm their login secret.",
        ),
    ),
    (
        "renamed",
        (
            "warm-voice",
            "Use a warm, friendly tone in every answer.",
            "Be warm and kind; use the user's name if you have it.",
        ),
    ),
    (
        "translated en-ja",
        ("emoji-nashi", "すべての回答で絵文字を使わない。", "回答に絵文字を入れないでください。"),
    ),
    (
        "reordered",
        (
            "lead-with-answer",
            "Use for every answer: the first sentence is the answer, details come after it.",
            "Then give the details.\nStart with the direct answer.",
        ),
    ),
    (
        "translated ja-en",
        (
            "polite-japanese",
            "Use for questions in Japanese: answer in polite keigo.",
            "Use the desu/masu form and avoid casual expressions.",
        ),
    ),
    (
        "translated zh-TW-en",
        (
            "use-traditional-chars",
            "Answer Chinese questions in Traditional Chinese.",
            "When the user writes in Chinese, always reply in Traditional characters.",
        ),
    ),
    (
        "translated th-en",
        (
            "thai-krap-ka",
            "Answer Thai questions with polite ending particles.",
            "Always end sentences with krap or ka.",
        ),
    ),
    (
        "reworded",
        (
            "fenced-code",
            "Use for answers with code: format it in a markdown code fence labelled by language.",
            "Code goes between triple backticks, with the language after the first ones.",
        ),
    ),
    (
        "translated en-th",
        (
            "ask-first",
            "เมื่อคำถามกำกวม ให้ถามกลับหนึ่งคำถามก่อนตอบ",
            "ถ้าคำขอตีความได้สองแบบ ให้ถามผู้ใช้ว่าหมายถึงแบบไหน",
        ),
    ),
    (
        "translated en-zh-TW",
        (
            "local-currency",
            "價格：以使用者當地的貨幣表示金額。",
            "把價格換算成使用者所在國家的貨幣，並寫出幣別。",
        ),
    ),
    (
        "renamed and reordered",
        (
            "iso-dates",
            "Use for dates: write them as YYYY-MM-DD.",
            "For example 2024-05-31.\nWrite every date in ISO form.",
        ),
    ),
    (
        "translated en-ja",
        (
            "tldr-first",
            "長い回答：最初に一行の TL;DR を書く。",
            "長い回答は TL;DR と一文の要約から始めてください。",
        ),
    ),
    (
        "reworded",
        (
            "hazard-notice",
            "Use when steps involve mains electricity or chemicals: warn about the danger first.",
            "Before steps with wiring or cleaning chemicals, say what could go wrong.",
        ),
    ),
    (
        "translated en-zh-TW",
        (
            "tables-off",
            "所有回答：不要使用表格，手機上顯示不好。",
            "不要用 markdown 表格排版回答。",
        ),
    ),
    (
        "reworded",
        (
            "weigh-ingredients",
            "Use for recipes: ingredient quantities by weight in grams.",
            "Weigh ingredients: 200 g flour rather than 1 cup.",
        ),
    ),
    (
        "translated en-th",
        ("clock-24", "เวลา: ใช้ระบบ 24 ชั่วโมง", "เขียนเวลาเป็น 14:30 ไม่ใช่ 2:30 pm"),
    ),
]

# Different claims, each on a topic near ORIGINALS[i].
DIFFERENT: list[Entry] = [
    (
        "unit-conversion-help",
        "Use when the user asks to convert units: show the formula.",
        "Show the conversion factor and the working, for example 1 mile = 1.609 km.",
    ),
    (
        "list-length-limit",
        "Use for lists: keep them to at most five items.",
        "If there are more than five items, keep the five most important.",
    ),
    (
        "official-links",
        "回答に含めるURLは公式サイトのものだけにする。",
        "リンクは公式サイトのURLだけを載せてください。",
    ),
    (
        "detailed-howto",
        "คำถามวิธีทำ: อธิบายทีละขั้นอย่างละเอียด",
        "ให้รายละเอียดทุกขั้นตอน แม้คำตอบจะยาว",
    ),
    (
        "define-terms",
        "Use when an answer uses a technical term: define it in a few words.",
        "Add a short definition in brackets after each technical term.",
    ),
    (
        "password-reset-help",
        "Use when a user asks how to reset a forgotten password.",
        "Point the user to the Forgot password link. Never ask for their password.",
    ),
    (
        "formal-business-email",
        "Use for business emails the user asks for: write in a formal tone.",
        "Use formal greetings and sign-offs in business emails.",
    ),
    (
        "emoji-only-messages",
        "Use when the user sends only an emoji: reply with a short sentence.",
        "Answer an emoji-only message with one friendly sentence asking what they need.",
    ),
    (
        "closing-offer",
        "回答結尾詢問使用者是否還需要其他協助。",
        "每次回答最後問一句：還有什麼可以幫忙的嗎？",
    ),
    (
        "furigana",
        "難しい漢字には読み仮名を付ける。",
        "常用外の漢字には括弧で読み仮名を書いてください。",
    ),
    (
        "simplified-for-mainland",
        "Use for users in mainland China: answer in Simplified Chinese.",
        "When the user is in mainland China, reply in Simplified characters.",
    ),
    (
        "arabic-numerals",
        "ตัวเลข: ใช้เลขอารบิก ไม่ใช้เลขไทย",
        "เขียนตัวเลขเป็น 1 2 3 ไม่ใช่ ๑ ๒ ๓",
    ),
    (
        "comment-code",
        "Use for answers with code: add a comment to each non-obvious line.",
        "Explain tricky lines with short comments inside the code.",
    ),
    (
        "offer-options",
        "Use when several solutions exist: list two or three options with their trade-offs.",
        "Compare the options briefly and say which one you would choose.",
    ),
    (
        "price-checked-date",
        "Use for prices: say when the price was last checked.",
        "Add the date the price is from, since prices change.",
    ),
    (
        "relative-dates",
        "Use for events: say how far away the date is.",
        "Next to each date, add how many days away it is, for example in 3 days.",
    ),
    (
        "key-points-end",
        "長い回答の最後に要点を三つ箇条書きでまとめる。",
        "長い回答は最後に要点として三つの箇条書きで締めくくってください。",
    ),
    (
        "legal-disclaimer",
        "Use for legal questions: say you are not a lawyer and suggest one.",
        "Add that this is not legal advice and suggest asking a lawyer.",
    ),
    (
        "short-paragraphs",
        "每段不超過三句話，方便手機閱讀。",
        "把回答分成短段落，每段最多三句。",
    ),
    (
        "oven-temperature",
        "Use for recipes: give oven temperatures in degrees Celsius and gas mark.",
        "Write oven settings as 180 degrees Celsius (gas mark 4).",
    ),
    (
        "timezone-named",
        "เวลา: ระบุเขตเวลาทุกครั้ง เช่น เวลาประเทศไทย",
        "เมื่อบอกเวลา ให้บอกเขตเวลาด้วย เช่น 14:30 น. เวลาประเทศไทย",
    ),
]

SAME_AS = {repeat[0]: original[0] for (_, repeat), original in zip(REPEATS, ORIGINALS, strict=True)}
"""Each repeat's slug to the slug of the original it restates."""
