"""Reading and writing `.json`, `.json.gz`, `.jsonl` and `.jsonl.gz` with located errors."""
from __future__ import annotations

import gzip
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prover.data.errors import DataError, SkipLog


def resolve(path: str | Path) -> Path:
    """Return `path`, or its `.gz` twin when only that exists (train splits ship gzipped)."""
    p = Path(path)
    if p.exists():
        return p
    gz = p.with_name(p.name + ".gz")
    if gz.exists():
        return gz
    from prover.data.location import missing_hint
    hint = missing_hint(p)
    raise DataError(str(p), "file not found (nor its .gz)" + (f"; {hint}" if hint else ""))


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError) as e:
        raise DataError(str(path), f"cannot read: {e}") from None


def _decode(raw: bytes, path: Path, record: int | str | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(str(path), f"not valid UTF-8 at byte {e.start}", record=record) from None


_ESCAPED = re.compile("[\udc80-\udcff]")


def _decode_lenient(raw: bytes) -> tuple[str, list[int]]:
    """Decode, replacing each byte that is not UTF-8 by U+FFFD; also return the character
    offsets of the replacements, so the records holding them can be found and dropped."""
    text = raw.decode("utf-8", errors="surrogateescape")
    bad = [m.start() for m in _ESCAPED.finditer(text)]
    return (_ESCAPED.sub("\ufffd", text) if bad else text), bad


_WS = re.compile(r"[ \t\n\r]*")


class _ArrayError(Exception):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _iter_array(text: str) -> Iterator[tuple[int, int, int, Any]]:
    """Yield (index, start offset, end offset, value) for each element of a top-level JSON
    array, one element at a time; raise _ArrayError naming the element that does not parse."""
    dec = json.JSONDecoder()
    i = _WS.match(text, 0).end()
    if not text.startswith("[", i):
        raise _ArrayError(-1, "not a JSON array")
    i = _WS.match(text, i + 1).end()
    if text.startswith("]", i):
        return
    index = 0
    while True:
        try:
            value, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise _ArrayError(index, _where(e)) from None
        yield index, i, end, value
        index += 1
        j = _WS.match(text, end).end()
        if text.startswith(",", j):
            i = _WS.match(text, j + 1).end()
        elif text.startswith("]", j):
            if text[_WS.match(text, j + 1).end():]:
                raise _ArrayError(index, _where_at(text, j + 1, "extra data after the array"))
            return
        else:
            raise _ArrayError(index, _where_at(text, j, "expected ',' or ']' after a record"))


def _where(e: json.JSONDecodeError) -> str:
    return f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"


def _where_at(text: str, pos: int, msg: str) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"malformed JSON at line {line} column {col}: {msg}"


def _truncation_hint(text: str) -> str:
    end = text.rstrip()[-1:]
    start = text.lstrip()[:1]
    if start in ("[", "{") and end != {"[": "]", "{": "}"}[start]:
        return " (the file ends mid-document: truncated?)"
    return ""


def _record_at(text: str, offset: int) -> int | None:
    """Index of the top-level array element spanning character `offset`, if it parses."""
    try:
        for index, start, end, _ in _iter_array(text):
            if start <= offset < end:
                return index
            if start > offset:
                return None
    except _ArrayError as e:
        return e.index if e.index >= 0 else None
    return None


def load_json(path: str | Path) -> Any:
    """Load one JSON document (a split file is an array of theorem records).

    Errors are DataErrors naming the file and, for an array, the record that does not parse
    or holds bytes that are not UTF-8."""
    p = resolve(path)
    raw = _read_bytes(p)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        text, _ = _decode_lenient(raw)
        record = _record_at(text, len(raw[:e.start].decode("utf-8")))
        raise DataError(str(p), f"not valid UTF-8 at byte {e.start} (line {line})",
                        record=record) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    if not text or text.isspace():
        raise DataError(str(p), "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        record = _record_at(text, e.pos) if text.lstrip().startswith("[") else None
        raise DataError(str(p), _where(e) + _truncation_hint(text), record=record) from None


def load_json_array(path: str | Path, skips: SkipLog | None = None) -> list[tuple[int, Any]]:
    """Read a JSON array as (index, element) pairs.

    Without `skips` this is `load_json` (the first problem raises a located DataError). With
    it, an element holding non-UTF-8 bytes is dropped and counted, and a file that stops
    parsing (truncated, say) keeps the elements before the bad one and counts the loss."""
    if skips is None:
        value = load_json(path)
        if not isinstance(value, list):
            raise DataError(str(resolve(path)),
                            f"expected a JSON array of records, got {type(value).__name__}")
        return list(enumerate(value))
    p = resolve(path)
    raw = _read_bytes(p)
    text, bad = _decode_lenient(raw)
    if text.startswith("\ufeff"):
        text, bad = text[1:], [b - 1 for b in bad]
    if not text or text.isspace():
        raise DataError(str(p), "file is empty")
    if not bad:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            pass  # located below, element by element
        else:
            if not isinstance(value, list):
                raise DataError(str(p), f"expected a JSON array of records, got {type(value).__name__}")
            return list(enumerate(value))
    out: list[tuple[int, Any]] = []
    k = 0  # next bad offset to test
    try:
        for index, start, end, value in _iter_array(text):
            while k < len(bad) and bad[k] < start:
                k += 1
            if k < len(bad) and bad[k] < end:
                skips.add("record not valid UTF-8",
                          str(DataError(str(p), "not valid UTF-8", record=index)))
                continue
            out.append((index, value))
    except _ArrayError as e:
        if e.index < 0:
            raise DataError(str(p), "expected a JSON array of records") from None
        skips.add("malformed JSON (rest of file dropped)",
                  str(DataError(str(p), e.message + _truncation_hint(text), record=e.index)))
    return out


def iter_jsonl(path: str | Path, skips: SkipLog | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, object) for each non-empty line; a bad line raises a located
    DataError, or with `skips` is counted and left out."""
    p = resolve(path)
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                rec = f"line {lineno}"
                try:
                    # Without its newline, so a line cut short is located at its end, not at
                    # "column 1" of the line after it.
                    line = _decode(raw, p, record=rec).rstrip("\r\n")
                    if lineno == 1:
                        line = line.removeprefix("\ufeff")
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise DataError(str(p), f"malformed JSON: {e.msg} (column {e.colno})",
                                        record=rec) from None
                except DataError as e:
                    if skips is None:
                        raise
                    skips.add("bad line", str(e))
                    continue
                yield lineno, obj
    except (OSError, EOFError) as e:
        raise DataError(str(p), f"cannot read: {e}") from None


def write_json(path: str | Path, obj: Any) -> None:
    """Write atomically (temp file + rename) so an interrupted write never leaves half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=None if p.suffix == ".gz" else 2)
    os.replace(tmp, p)


def write_jsonl(path: str | Path, rows: list[Any]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "wb") as raw:
        # No time or file name in the gzip header: the same rows give the same bytes.
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if p.suffix == ".gz" else None
        with io.TextIOWrapper(gz or raw, encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, p)


def append_jsonl(path: str | Path, row: Any) -> None:
    """Append one line and fsync: results of long runs survive a crash or Ctrl-C."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
