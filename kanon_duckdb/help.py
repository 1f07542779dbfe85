"""Descriptions of the SQL surface, readable from SQL.

Each macro in ``sql/`` is documented once, by the comment block right above its
``CREATE [OR REPLACE] [TEMP] MACRO name`` whose first sentence starts with ``-- name(...)``
(``-- gcp(tbl): Global Certainty Penalty ...``). Registration turns that sentence into the
macro's DuckDB comment (``COMMENT ON MACRO [TABLE] name IS ...``), so

    SELECT function_name, comment FROM duckdb_functions() WHERE function_name LIKE 'kanon%';
    FROM kanon_help();            -- every kanon-duckdb macro: name, kind, parameters, description

document the product in SQL. (DuckDB keeps user comments in ``duckdb_functions().comment``; its
``description`` column is for built-in functions only, and Python UDFs cannot carry a comment,
so every user-facing Python UDF is called through a documented macro and keeps a ``__kanon_``
name.) ``kanon_help``'s list of names is filled in at registration (``/*KANON_MACRO_NAMES*/``).
"""
from __future__ import annotations

import functools
import re

_CREATE = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?MACRO\s+"
                     r"(\"?)([A-Za-z_]\w*)\1", re.IGNORECASE)
_MAX = 400  # characters of a description


def macro_docs(text: str) -> list:
    """[(name, description or None)] of every macro created in the SQL ``text``, in order.

    The description is the sentence of the comment block above the CREATE that starts at
    ``name(``: its lines up to the first one ending with '.' or ':' (at most 4 lines).
    """
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _CREATE.match(line)
        if not m:
            continue
        name = m.group(2)
        j, block = i - 1, []
        while j >= 0 and lines[j].lstrip().startswith("--"):
            block.insert(0, lines[j].lstrip()[2:].strip())
            j -= 1
        out.append((name, _sentence(block, name)))
    return out


def _sentence(block: list, name: str):
    start = next((k for k, b in enumerate(block) if b.startswith(f"{name}(")), None)
    if start is None:
        return None
    words, taken = [], 0
    for b in block[start:]:
        if not b:
            if taken and not _only_signature(" ".join(words), name):
                break
            continue  # a bare signature line: the description is the next paragraph
        words.append(b)
        taken += 1
        if (b.endswith((".", ":")) and not _only_signature(" ".join(words), name)) or taken >= 5:
            break
    text = " ".join(words).rstrip(":").strip()
    return text[:_MAX - 1] + "…" if len(text) > _MAX else text


def _only_signature(text: str, name: str) -> bool:
    """True when ``text`` is just ``name(...)`` (balanced parentheses, nothing after)."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return not text[k + 1:].strip(" :")
    return True


@functools.lru_cache(maxsize=1)
def _all_docs(scripts: tuple) -> tuple:
    return tuple(d for _name, text in scripts for d in macro_docs(text))


def public_names(scripts) -> list:
    """Names of the user-facing macros of ``scripts`` ((file name, text) pairs): not ``__``."""
    return sorted({n for n, _ in _all_docs(tuple(scripts)) if not n.startswith("__")})


def render_help(text: str, scripts) -> str:
    """Fill ``/*KANON_MACRO_NAMES*/`` in a SQL file with the public macro names as a list."""
    if "/*KANON_MACRO_NAMES*/" not in text:
        return text
    names = ", ".join("'" + n.replace("'", "''") + "'" for n in public_names(scripts))
    return text.replace("/*KANON_MACRO_NAMES*/", f"[{names}]::VARCHAR[]")


_AS_TABLE = re.compile(r"\s*AS\s+TABLE\b", re.IGNORECASE)


def macro_kinds(text: str) -> dict:
    """{name: 'table_macro' or 'macro'} of every macro created in the SQL ``text``: read from
    its first overload (``...) AS TABLE``), as ``duckdb_functions().function_type`` has it,
    without listing DuckDB's thousands of functions (26 ms of connect()). O(len(text))."""
    out = {}
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for i, line in enumerate(lines):
        m = _CREATE.match(line)
        if not m:
            continue
        j, depth = text.index("(", starts[i] + m.end()), 0
        while j < len(text):
            depth += (text[j] == "(") - (text[j] == ")")
            if depth == 0:
                break
            j += 1
        out[m.group(2)] = "table_macro" if _AS_TABLE.match(text, j + 1) else "macro"
    return out


def apply_comments(con, scripts) -> None:
    """``COMMENT ON MACRO`` every documented macro of ``scripts`` on ``con`` (after they ran),
    in one statement batch."""
    kinds = {n: k for _name, text in scripts for n, k in macro_kinds(text).items()}
    comments = []
    for name, doc in _all_docs(tuple(scripts)):
        if doc is None or name not in kinds:
            continue
        what = "MACRO TABLE" if kinds[name] == "table_macro" else "MACRO"
        comments.append(f'COMMENT ON {what} "{name}" IS \'' + doc.replace("'", "''") + "'")
    if comments:
        con.execute(";\n".join(comments))
