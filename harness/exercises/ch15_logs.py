"""The cases chapter 15's first check tries: a background shell's log, read a piece at a time.

A background command writes its output to a log file while it runs; each time the model asks,
the harness reads what is new since the last read. The file holds bytes, and a read can land in
the middle of a character the command has not finished writing (``é`` is two bytes in UTF-8,
``€`` three, ``🙂`` four). :func:`read_cases` are hand-made reads, from a test runner's first
line to a log cut inside an emoji; :func:`generated_reads` are sessions of reads over logs of
ASCII, accented letters, CJK, emoji, carriage returns and stray invalid bytes, cut at random
points while the command writes, answered by :func:`reference_read`: the exercise's rules
written out with the standard library's incremental UTF-8 decoder. Used by
:mod:`harness.exercises.ch15`.
"""

from __future__ import annotations

import codecs
import random

Read = tuple[str, int]
ReadCase = tuple[str, bytes, int, int, bool, Read]

OMITTED = "[{} characters omitted]\n"
"""The line in front of a capped read: how many of the new characters were left out."""


def reference_read(log: bytes, offset: int, limit: int, finished: bool = False) -> Read:
    """The new text of ``log`` since ``offset``, and the offset to read from next time.

    The incremental decoder keeps back the bytes that begin a character not yet complete
    (unless ``finished``: then they become ``U+FFFD``, since no more bytes are coming), and
    replaces every invalid byte with ``U+FFFD``. Past ``limit`` characters, only the last
    ``limit`` are kept, after :data:`OMITTED`.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(log[offset:], final=finished)
    held = len(decoder.getstate()[0])
    if len(text) > limit:
        text = OMITTED.format(len(text) - limit) + text[len(text) - limit :]
    return text, len(log) - held


PYTEST = "collected 12 items\n\ntests/test_api.py ....\n"


def read_cases() -> list[ReadCase]:
    """(what, log, offset, limit, finished, (the text read, the next offset))."""
    cafe = "café\n".encode()  # c a f \xc3\xa9 \n: six bytes
    euro = "12 €\n".encode()  # the euro sign is three bytes, \xe2\x82\xac
    smile = "ok 🙂\n".encode()  # the emoji is four bytes, \xf0\x9f\x99\x82
    cjk = "テスト成功\n".encode()  # five characters of three bytes each
    return [
        (
            "the first read of a test runner's log",
            b"collected 12 items\n",
            0,
            1000,
            False,
            ("collected 12 items\n", 19),
        ),
        (
            "a second read, from where the first stopped",
            PYTEST.encode(),
            19,
            1000,
            False,
            ("\ntests/test_api.py ....\n", 43),
        ),
        ("nothing new since the last read", PYTEST.encode(), 43, 1000, False, ("", 43)),
        ("an empty log", b"", 0, 1000, False, ("", 0)),
        (
            "a log that ends inside é (its first byte only): é waits for the next read",
            cafe[:4],
            0,
            1000,
            False,
            ("caf", 3),
        ),
        ("the next read, once é is whole", cafe, 3, 1000, False, ("é\n", 6)),
        (
            "a log that ends after two of the euro sign's three bytes",
            euro[:5],
            0,
            1000,
            False,
            ("12 ", 3),
        ),
        ("an emoji's first byte only", smile[:4], 0, 1000, False, ("ok ", 3)),
        ("an emoji's first three bytes", smile[:6], 2, 1000, False, (" ", 3)),
        ("the emoji whole at last", smile, 3, 1000, False, ("🙂\n", 8)),
        (
            "only part of a character is new: nothing to show, the offset stays",
            smile[:5],
            3,
            1000,
            False,
            ("", 3),
        ),
        (
            "Japanese, cut inside its fourth character",
            cjk[:10],
            0,
            1000,
            False,
            ("テスト", 9),
        ),
        (
            "the command has finished with é cut short: no more bytes are coming",
            cafe[:4],
            0,
            1000,
            True,
            ("caf\ufffd", 4),
        ),
        ("finished, and nothing cut short", cafe, 0, 1000, True, ("café\n", 6)),
        (
            "an invalid byte (0xFF) in the middle: replaced, and the read goes past it",
            b"ok \xff done\n",
            0,
            1000,
            False,
            ("ok \ufffd done\n", 10),
        ),
        (
            "a lone continuation byte at the end begins no character: replaced now",
            b"ok\x80",
            0,
            1000,
            False,
            ("ok\ufffd", 3),
        ),
        (
            "é followed by a stray continuation byte at the end: é is whole, the byte replaced",
            "é".encode() + b"\x80",
            0,
            1000,
            False,
            ("é\ufffd", 3),
        ),
        (
            "0xFF at the end: no character starts with it",
            b"ok\xff",
            0,
            1000,
            False,
            ("ok\ufffd", 3),
        ),
        (
            "more new characters than the limit: the last ones, after a note",
            b"0123456789" * 3,
            0,
            10,
            False,
            (OMITTED.format(20) + "0123456789", 30),
        ),
        ("exactly the limit: no note", b"0123456789", 0, 10, False, ("0123456789", 10)),
        (
            "the limit counts characters, not bytes: ten é are 20 bytes",
            "é".encode() * 10,
            0,
            10,
            False,
            ("é" * 10, 20),
        ),
        (
            "the limit counts only what is new since the offset",
            b"a" * 50 + b"0123456789",
            50,
            10,
            False,
            ("0123456789", 60),
        ),
        (
            "over the limit, with a character cut short at the end",
            "abcdéfghijké".encode()[:-1],
            0,
            5,
            False,
            (OMITTED.format(6) + "ghijk", 12),
        ),
        (
            "a limit of 0: only the note",
            b"progress 100%\n",
            0,
            0,
            False,
            (OMITTED.format(14), 14),
        ),
        (
            "carriage returns (a progress bar) are kept as they are",
            b"\r10%\r55%\r100%\n",
            0,
            1000,
            False,
            ("\r10%\r55%\r100%\n", 14),
        ),
    ]


PIECES: tuple[bytes, ...] = (
    *(
        piece.encode()
        for piece in (
            "PASSED ", "FAILED ", "test_api.py", " ", "\n", "\r", "é", "ü", "€", "—", "日本",
            "テスト", "🙂", "✅", "x" * 12, "0123456789",
        )
    ),
    b"\xff",
    b"\x80",
)  # fmt: skip
"""What the generated logs are made of: whole characters, and two bytes no character starts
with (a program that writes Latin-1, or binary, by mistake)."""


def generated_reads(sessions: int = 40, seed: int = 15) -> list[list[tuple[bytes, int, bool]]]:
    """Sessions of reads: each read is (the log so far, the limit, finished); the log grows
    from read to read, cut at any byte, and the last read of some sessions is after the
    command finished. The offsets come from :func:`reference_read`, read after read."""
    rng = random.Random(seed)
    out: list[list[tuple[bytes, int, bool]]] = []
    for _ in range(sessions):
        full = b"".join(rng.choices(PIECES, k=rng.randint(1, 40)))
        cuts = sorted(rng.sample(range(len(full) + 1), min(len(full) + 1, rng.randint(1, 6))))
        finished = rng.random() < 0.4
        reads = []
        for k, cut in enumerate(cuts):
            last = k == len(cuts) - 1
            log = full if last and finished else full[:cut]
            reads.append((log, rng.choice((0, 1, 5, 16, 40, 1000)), last and finished))
        out.append(reads)
    return out


__all__ = [
    "OMITTED",
    "PIECES",
    "PYTEST",
    "Read",
    "ReadCase",
    "generated_reads",
    "read_cases",
    "reference_read",
]
