"""caller_macros reads a macro's CREATE by tokens (literals, quoted names and comments skipped
whole): the same overload heads and end as a character-by-character scan, on generated text."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_duckdb import caller_macros as cm


def _char_by_char(text: str, at: int):
    """The oracle: the scan fold_sides did before it tokenized (one character at a time)."""
    headers, depth, prev, j = [at], 0, None, at
    while j < len(text):
        c = text[j]
        if c in "'\"" or text.startswith("--", j):
            if text.startswith("--", j):
                end = text.find("\n", j)
                nxt = len(text) if end < 0 else end
            else:
                end = text.find(c, j + 1)
                nxt = len(text) if end < 0 else end + 1
            j, prev = nxt, (c if depth == 0 else prev)
            continue
        if c == "(":
            if depth == 0 and prev == ",":
                headers.append(j)
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == ";" and depth == 0:
            break
        if depth == 0 and not c.isspace():
            prev = c
        j += 1
    return headers, j


FRAGMENTS = st.sampled_from([
    " ", "\n", "\t", "x", "-", "1 - 2", "--", "(", ")", ";", ",", ", (", "'a;(b'", "'it''s'",
    '"q(;"', "-- c, (;\n", "-- ,", "f(a, (b))", "', '", "'", '"', "AS", "TABLE"])


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=30))
def test_overload_heads_equal_a_character_by_character_scan(parts):
    text = "CREATE MACRO m(" + "".join(parts)
    at = text.index("(")
    assert cm._overload_heads(text, at) == _char_by_char(text, at)


def test_overload_heads_of_a_two_overload_macro():
    text = ("CREATE MACRO m(a, b) AS f(a, ';(', \"x,(\") -- a, (b;\n,\n  (a, b, c := NULL) AS "
            "(a + b);\nCREATE MACRO n(z) AS z;")
    heads, end = cm._overload_heads(text, text.index("("))
    assert [text[h:h + 4] for h in heads] == ["(a, ", "(a, "] and len(heads) == 2
    assert text[end] == ";" and text[end + 1:].lstrip().startswith("CREATE MACRO n")


def test_overload_heads_on_tricky_text():
    for tail in (",(x)(y);", ", (x) , (y)", "'unterminated, (", '"q, (', "-- no newline, (",
                 ", -- c\n(a) AS 1;", "- -, (a)", "x--y\n,(a);", "(( , (a)));,(b)"):
        text = "CREATE MACRO m(a) AS 1" + tail
        at = text.index("(")
        assert cm._overload_heads(text, at) == _char_by_char(text, at), tail
