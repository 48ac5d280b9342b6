"""one_line: every title and preview is the words of a text on one line, cut at a limit, read
from only as much of the text as that takes; the same as joining all of its words, whatever
the text (white space of every kind, words longer than the part read, a cut inside a word)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.layouts.base import one_line

# the white space str.split() splits on (ASCII, the separators Unicode names, the file separators)
SPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2003\u200a\u2028\u2029\u202f\u205f\u3000"
WORDS = st.text(alphabet=st.sampled_from("ab\u00e9\u4e2d\U0001f600-" + SPACE), max_size=400)
LONG_WORD = st.integers(0, 3000).map(lambda n: "x" * n)


@settings(max_examples=400)
@given(st.lists(st.one_of(WORDS, LONG_WORD, st.sampled_from(SPACE)), max_size=30).map("".join), st.integers(0, 200))
def test_the_words_joined_and_cut(text, limit):
    assert one_line(text, limit) == " ".join(text.split())[:limit]


@given(st.integers(1, 50), st.integers(0, 5000), st.sampled_from(SPACE))
def test_a_cut_at_every_place_of_a_long_text(word, repeat, space):
    text = (("w" * word) + space) * repeat
    assert one_line(text) == " ".join(text.split())[:120]
    assert one_line(text, 7) == " ".join(text.split())[:7]


def test_texts_of_megabytes():
    text = "fix the build please " + "y" * (8 << 20)  # (a prompt and a pasted file: one word of 8 MB)
    assert one_line(text) == "fix the build please " + "y" * 99
    text = "word " * 2_000_000  # 10 MB of words: only a prefix is split
    assert one_line(text) == " ".join(["word"] * 30)[:120]
