from __future__ import annotations

import re

from docs_rag_pipeline.chunking import Budget, chunk_page, logical_path, page_parents, split_text
from docs_rag_pipeline.embedding import LocalEmbedder
from docs_rag_pipeline.records import ParsedPage, Section

import pytest


@pytest.fixture(scope="module")
def count():
    return LocalEmbedder().count_tokens


def _page(text: str, title: str = "Guide") -> ParsedPage:
    return ParsedPage(title=title, sections=[
        Section(headings=(), anchor="", level=1, text="Intro paragraph."),
        Section(headings=("Big",), anchor="big", level=2, text=text),
        Section(headings=("Big", "Small"), anchor="small", level=3, text="A small subsection."),
    ])


def test_chunks_fit_the_model_window_with_header(count):
    long = "\n\n".join(f"Paragraph {i} explains configuration option number {i} in some detail, "
                       "with enough words to matter for the token budget of the model." for i in range(60))
    budget = Budget(window=256, overlap=32)
    chunks = chunk_page(_page(long), source="s", page_url="u", content_hash="h", updated_at="t",
                        budget=budget, count=count)
    big = [c for c in chunks if c.headings == ["Big"]]
    assert len(big) > 3
    for c in chunks:
        # what the model sees: title + headings + text, plus [CLS]/[SEP]
        assert count(c.embedding_text()) + 2 <= 256, c.token_count
        assert c.token_count == count(c.text)
    # overlap: later pieces start with the tail of the previous piece
    assert big[1].text.startswith("… ")
    tail = big[0].text.split()[-3:]
    assert " ".join(tail) in big[1].text
    # every paragraph is somewhere
    for i in range(60):
        assert any(f"Paragraph {i} explains" in c.text for c in big)


def test_target_tokens_caps_below_the_window(count):
    text = " ".join(f"word{i}" for i in range(400))
    chunks = chunk_page(_page(text), source="s", page_url="u", content_hash="h", updated_at="t",
                        budget=Budget(window=256, target=64, overlap=0), count=count)
    assert all(c.token_count <= 64 for c in chunks)


def test_code_blocks_are_not_split_when_they_fit(count):
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```"
    page = ParsedPage(title="T", sections=[Section(headings=("Code",), anchor="code", level=2,
                                                   text="Before.\n\n" + code + "\n\nAfter.")])
    chunks = chunk_page(page, source="s", page_url="u", content_hash="h", updated_at="t",
                        budget=Budget(window=256), count=count)
    assert any(code in c.text for c in chunks)


def test_a_code_block_too_long_for_one_chunk_is_fenced_again_in_every_piece(count):
    """A long block is cut by lines; each piece opens with the block's own fence line (its language
    kept) and closes it, so a chunk never starts inside code or ends with a stray fence, and the
    lines of code are all there, in order."""
    lines = [f"config_option_{i} = 'value number {i}'  # [1] note" for i in range(80)]
    code = "```python\n" + "\n".join(lines[:40]) + "\n\n" + "\n".join(lines[40:]) + "\n```"
    for overlap in (0, 32):
        pieces = split_text("Before the code.\n\n" + code + "\n\nAfter the code.", 120, overlap, count)
        code_pieces = [p for p in pieces if "config_option_" in p]
        assert len(code_pieces) > 2 and all(count(p) <= 120 for p in pieces)
        for p in code_pieces:
            body = p.split("\n")
            start, end = body.index("```python"), len(body) - 1 - body[::-1].index("```")
            assert p.count("```") == 2 and start < end, p  # one balanced fence per piece
            assert all(start < i < end for i, x in enumerate(body) if "config_option_" in x), p
            assert not p.startswith("…")  # no overlap words taken from inside code
        got = [x for p in code_pieces for x in p.split("\n") if "config_option_" in x]
        assert got == lines
    # a fence line that is never closed (stray backticks of a page showing raw Markdown) is text: it
    # does not make the rest of the section one code block, and no fence is added to the pieces
    stray = "``` augroup black_on_save\n\nautocmd BufWritePre *.py Black\n\naugroup end ```\n\n" + "\n\n".join(lines)
    pieces = split_text(stray, 120, 0, count)
    assert sum(p.count("```") for p in pieces) == 2 and len(pieces) > 2
    assert [x for p in pieces for x in p.split("\n") if "config_option_" in x] == lines


def test_ids_are_stable_and_parents_follow_sections(count):
    kw = dict(source="s", page_url="https://x.org/p", content_hash="h", budget=Budget(window=256), count=count)
    a = chunk_page(_page("Some text."), updated_at="t1", **kw)
    b = chunk_page(_page("Some text."), updated_at="t2", **kw)
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    intro, big, small = a
    assert intro.parent_id is None and big.parent_id == intro.chunk_id and small.parent_id == big.chunk_id
    assert small.url == "https://x.org/p#small" and intro.url == "https://x.org/p"
    c = chunk_page(_page("Other text."), updated_at="t1", **kw)
    assert c[1].chunk_id != a[1].chunk_id and c[0].chunk_id == a[0].chunk_id


@pytest.mark.parametrize("overlap", [0, 10, 40])
def test_split_text_never_exceeds_limit(count, overlap):
    text = "x " * 2000 + "\n\n" + "\n\n".join(f"Sentence {i} is here. And another one {i}." for i in range(50))
    text += "\n\n" + " | ".join(f"cell{i}" for i in range(300))  # one very long table row
    text += "\n\n" + "QmFzZTY0" * 200  # one "word" longer than the budget
    pieces = split_text(text, 50, overlap, count)
    assert pieces and all(count(p) <= 50 for p in pieces)


def test_page_hierarchy():
    assert logical_path("forms/index.md") == "forms" and logical_path("index.mdx") == ""
    assert logical_path("a/b/README.md") == "a/b"
    paths = {"u/index": "index.md", "u/forms": "forms.md", "u/bind": "forms/binding.md",
             "u/deep": "forms/advanced/deep.md", "u/adv": "forms/advanced/index.md", "u/lone": "x/y/z.md"}
    parents = page_parents(paths)
    assert parents == {"u/forms": "u/index", "u/bind": "u/forms", "u/deep": "u/adv", "u/adv": "u/forms",
                       "u/lone": "u/index"}


def test_metadata_rules_and_shared_filter_values():
    from docs_rag_pipeline.config import MetadataRule
    from docs_rag_pipeline.metadata_rules import derive_metadata, shared_values
    from docs_rag_pipeline.retrieval import filter_sql

    rules = (MetadataRule(key="framework", values=(("**/flow/**", "flow"), ("**/hilla/**", "hilla")), default="common"),
             MetadataRule(key="version", pattern=r"^(v\d+)/"),
             MetadataRule(key="audience", frontmatter="audience"))
    assert derive_metadata(rules, path="v24/flow/binding.md", frontmatter={"audience": "dev"}) == {
        "framework": "flow", "version": "v24", "audience": "dev"}
    assert derive_metadata(rules, path="intro.md", frontmatter={}) == {"framework": "common"}
    sql = filter_sql("docs", {"framework": "flow"}, shared=shared_values(rules))
    assert sql == "source = 'docs' AND array_has_any(tags, ['framework=flow', 'framework=common'])"


def test_a_code_block_inside_a_list_item_cut_between_chunks_is_closed_and_opened_again(count):
    """A block that is not itself a code block (a list whose item holds a long example) is cut by
    lines; a cut inside its code closes the fence and opens it again, with its language."""
    code = [f"    settings_{i} = compute_value({i}, cache=True)  # step {i}" for i in range(40)]
    block = "- The proxy API has changed slightly. The scheme is now required.\n```python\n" + "\n".join(code) + \
        "\n```\n- Another change, described in a sentence after the example."
    pieces = split_text(block, 100, 0, count)
    assert len(pieces) > 2 and all(count(p) <= 100 for p in pieces)
    for p in pieces:
        lines = p.split("\n")
        assert sum(1 for x in lines if x.startswith("```")) % 2 == 0, p  # every piece's fences balanced
        if any("settings_" in x for x in lines):
            first = next(i for i, x in enumerate(lines) if "settings_" in x)
            assert lines[first - 1] == "```python", p  # code in a piece always follows its opening fence
    assert [x for p in pieces for x in p.split("\n") if "settings_" in x] == code
    assert pieces[0].startswith("- The proxy API") and pieces[-1].endswith("after the example.")


def test_a_code_line_too_long_for_a_chunk_is_cut_inside_its_fences(count):
    """A code line longer than the budget (a long literal in a list item's example, or in a whole
    code block) is cut by words into lines of the same code block: every piece still has balanced
    fences and its code still follows the opening fence, so no piece holds a stray fence."""
    long_line = "    payload = [" + ", ".join(f"'item_{i}'" for i in range(120)) + "]"
    for block in ("- Send the whole list at once:\n```python\n    import json\n" + long_line + "\n    send(payload)\n```\n- Then wait.",
                  "```python\n    import json\n" + long_line + "\n    send(payload)\n```"):
        pieces = split_text(block, 100, 0, count)
        assert len(pieces) > 2 and all(count(p) <= 100 for p in pieces)
        for p in pieces:
            lines = p.split("\n")
            assert sum(1 for x in lines if x.startswith("```")) % 2 == 0, p
            code = [i for i, x in enumerate(lines) if "item_" in x or "send(" in x or "import json" in x]
            assert code and lines[code[0] - 1] == "```python" or not code, p
        words = " ".join(x for p in pieces for x in p.split("\n") if not x.startswith("```")).split()
        assert words == " ".join(x for x in block.split("\n") if not x.startswith("```")).split()


def test_a_word_too_long_for_the_tokenizer_is_sized_by_its_length(count):
    """A word-piece tokenizer turns a word of over 100 letters (a blob, a hash, a data URI) into
    one [UNK] token: a page holding a 100,000-character blob became one chunk of 100,000 characters
    counted as 29 tokens. Such a word now counts the word pieces of its 100-character slices, so it
    is cut like any text too long for a chunk, and every piece is the size of a chunk."""
    blob = "".join("QWxhZGRpbjpvcGVuIHNlc2FtZQ"[i % 26] for i in range(100_000))
    tok = LocalEmbedder()._tokenizer
    assert count(blob) >= 100_000 // 8 and len(tok.encode(blob).ids) <= 3  # the model: one [UNK]
    assert count(blob[:100]) == len(tok.encode(blob[:100], add_special_tokens=False).ids) > 20  # as before
    text = f"The blob below is a test fixture.\n\n{blob}\n\nAfter the blob comes the conclusion."
    chunks = chunk_page(_page(text), source="s", page_url="u", content_hash="h", updated_at="t",
                        budget=Budget(window=256, overlap=32), count=count)
    assert len(chunks) > 40 and max(len(c.text) for c in chunks) < 256 * 8
    assert all(count(c.embedding_text()) + 2 <= 256 for c in chunks)
    assert "".join(c.text for c in chunks if "conclusion" not in c.text and "fixture" not in c.text
                   and c.headings == ["Big"]).replace("… ", "").count("Q") >= blob.count("Q") - 200


class _Recording:
    """A tokenizer that passes everything to the real one and records the texts ``encode_batch`` gets."""

    def __init__(self, tok) -> None:  # noqa: ANN001
        self._tok, self.batched = tok, []

    def encode_batch(self, texts, **kw):  # noqa: ANN001, ANN201
        self.batched.extend(texts)
        return self._tok.encode_batch(texts, **kw)

    def __getattr__(self, name):  # noqa: ANN001, ANN204
        return getattr(self._tok, name)


def test_a_long_words_count_is_the_tokenizers_without_its_slow_search(count):
    """A word of over 100 letters counts the word pieces of its 100-character slices. The slices went
    through the tokenizer, whose word-piece search tries every end of a slice from the last (thousands
    of vocabulary look-ups a slice): a page of one huge word (a base64 blob, a hex dump) chunked at
    ~60 µs a character, a 5 MB page in minutes (ops6 F4). The slices are now counted by a forward
    search over the vocabulary's prefixes, outside the tokenizer, with the tokenizer's counts: the
    same, checked here on random words of eight scripts, for every slice and every whole word."""
    import random

    from docs_rag_pipeline.embedding import wordpiece_count

    tok = LocalEmbedder()._tokenizer
    recording = _Recording(tok)
    rnd = random.Random(5)
    scripts = ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "aeiouéèêëàâäôöüçñßøåæœÉÀÇİıŁł",
               "абвгдежзийклмнопрстуфхцчшщъыьэюяЖЩ", "αβγδεζηθικλμνξοπρστυφχψωΣΩ", "漢字中文日本語かなカナ한국어",
               "a1é漢Ж²٣ⅷﬁᵃ", "aeiou", "thequickbrownfoxjumps"]
    for letters in scripts:
        for _ in range(60):
            word = "".join(rnd.choice(letters) for _ in range(rnd.randint(101, 400)))
            slices = [word[i:i + 100] for i in range(0, len(word), 100)]
            text = f"see {word} here"
            want = len(tok.encode(text, add_special_tokens=False).ids) - 1 + sum(
                len(e.ids) for e in tok.encode_batch(slices, add_special_tokens=False))
            assert wordpiece_count(recording, text) == want, word
    assert recording.batched == []  # no slice went through the tokenizer's search
    # a word too long for the budget is still cut by characters, every piece its count's size
    blob = "".join(rnd.choice(scripts[0]) for _ in range(20_000))
    chunks = chunk_page(_page(f"Data:\n\n```\n{blob}\n```"), source="s", page_url="u", content_hash="h",
                        updated_at="t", budget=Budget(window=256), count=count)
    assert all(count(c.embedding_text()) + 2 <= 256 for c in chunks)
    assert "".join(re.sub(r"```|\s", "", c.text) for c in chunks if c.headings == ["Big"]) == "Data:" + blob


def test_chunking_a_page_counts_each_text_once(count):
    """Cutting a block counts the block, then its line, then its words (the same text each time):
    a one-word blob was counted about eight times over. ``chunk_page`` keeps each count it made."""
    seen: list[str] = []

    def recording(text: str) -> int:
        seen.append(text)
        return count(text)

    blob = "".join("QWxhZGRpbjpvcGVuIHNlc2FtZQ"[i % 26] for i in range(20_000))
    text = "\n\n".join(f"Paragraph {i} explains option {i} in some detail." for i in range(40))
    for body in (f"Data:\n\n```\n{blob}\n```", text, f"{text}\n\n{blob}"):
        seen.clear()
        chunk_page(_page(body), source="s", page_url="u", content_hash="h", updated_at="t",
                   budget=Budget(window=256), count=recording)
        assert len(seen) == len(set(seen))


def test_sentences_end_in_any_script_and_cjk_text_is_cut_at_its_sentence_and_clause_marks(count):
    """Sentence ends were ``.!?``, whitespace and an ASCII capital only: ``。！？`` ended nothing, so a
    Chinese paragraph over the budget was cut by characters mid-sentence (even mid-number), and a Russian
    or French sentence starting with ``П`` or ``É`` ran on into the one before it (one answer "sentence").
    Now a capital of any script starts a sentence, ``。！？`` (with a closing quote) end one without a
    space, and a CJK sentence over the budget is cut at its clause marks (``，、；``) before characters."""
    from docs_rag_pipeline.answering.extractive import sentences

    para = "".join(f"第{i}条规则规定每个用户每天最多可以上传{i * 10}个文件。" for i in range(1, 40))
    pieces = split_text(para, 60, 0, count)
    assert len(pieces) > 3 and all(count(p) <= 60 for p in pieces)
    assert all(p.startswith("第") and p.endswith("个文件。") for p in pieces), pieces
    assert "".join(pieces) == para  # no space put between CJK sentences
    clauses = "，".join(f"第{i}项设置控制日志级别" for i in range(1, 30)) + "。"  # one sentence, many clauses
    pieces = split_text(clauses, 40, 0, count)
    assert len(pieces) > 2 and all(count(p) <= 40 for p in pieces)
    assert all(p.endswith(("，", "。")) for p in pieces) and "".join(pieces) == clauses
    assert sentences("要恢复数据，请先停止服务器。备份保存三十天！「真的吗？」是的。") == [
        "要恢复数据，请先停止服务器。", "备份保存三十天！", "「真的吗？」", "是的。"]
    assert sentences("Для работы нужно четыре гигабайта памяти. Поддерживаются Linux и Windows.") == [
        "Для работы нужно четыре гигабайта памяти.", "Поддерживаются Linux и Windows."]
    assert sentences("Le fichier est lu au démarrage. Éditez-le puis redémarrez. Σ est la somme. e.g. this.") == [
        "Le fichier est lu au démarrage.", "Éditez-le puis redémarrez.", "Σ est la somme. e.g. this."]
    # ASCII text: as before (a lowercase word after ". " starts no sentence)
    assert sentences("Run it. then stop. Done. `x` is set.") == ["Run it. then stop.", "Done.", "`x` is set."]


def test_a_sentence_goes_on_after_an_abbreviation_and_ends_after_etc():
    """``. `` and a capital ended a sentence after "e.g." or "i.e." too: "In the event of a network problem
    (e.g." and "DNS failure, refused connection, etc), the client raises …" were two sentences (also two
    chunk pieces), and an answer quoted the back half. Now a sentence goes on after a general English
    abbreviation (the list the LLM answer's statement splitter uses); "etc." still ends one."""
    from docs_rag_pipeline.answering.citations import statements
    from docs_rag_pipeline.answering.extractive import sentences
    from docs_rag_pipeline.chunking import split_sentences

    text = ("In the event of a network problem (e.g. DNS failure, refused connection, etc), the client raises "
            "a ConnectionFailure. Retries are off (i.e. Zero retries are made). Compare cf. Section 2 and "
            "Fig. 3 with the old one vs. The new one. It reads files, folders, etc. Then it stops.")
    assert [t for t, _ in split_sentences(text)] == [
        "In the event of a network problem (e.g. DNS failure, refused connection, etc), the client raises "
        "a ConnectionFailure.", "Retries are off (i.e. Zero retries are made).",
        "Compare cf. Section 2 and Fig. 3 with the old one vs. The new one.", "It reads files, folders, etc.",
        "Then it stops."]
    assert sentences(text)[0].startswith("In the event") and not any(s.startswith("DNS") for s in sentences(text))
    # a chunk cut by sentences is never cut after the abbreviation either
    pieces = split_text(text, 30, 0, lambda t: len(t.split()))
    assert all(not p.rstrip().endswith(("e.g.", "i.e.", "cf.", "Fig.", "vs.")) for p in pieces), pieces
    # the LLM answer's statements join after the same abbreviations (one list, chunking.ABBREVIATIONS)
    assert [t for _, t in statements("Use a proxy (e.g. Squid) [1]. Or not [2].")] == [
        "Use a proxy (e.g. Squid) [1].", "Or not [2]."]


def test_a_long_list_item_is_cut_at_sentence_ends_not_inside_a_sentence():
    """A list item (or table row) is one line, and a line over the budget was cut by words: answers
    then quoted "… docs-rag ingest is what creates a storage" without its last word."""
    from docs_rag_pipeline.chunking import split_text

    def count(t: str) -> int:
        return len(t.split())

    said = [f"Sentence number {i} says what the storage folder {i} holds for the server." for i in range(30)]
    text = "Intro paragraph.\n\n- " + " ".join(said) + "\n- A short item."
    pieces = split_text(text, 60, 0, count)
    assert len(pieces) > 2
    for p in pieces:
        assert count(p) <= 60
        for line in p.split("\n"):
            assert not line.strip() or line.rstrip().endswith("."), line  # no piece ends inside a sentence
    assert sum(p.count("Sentence number") for p in pieces) == 30


def test_a_table_cut_into_pieces_repeats_its_header_row_in_each():
    """A table longer than a chunk is cut by rows; the pieces after the first started with a data row,
    which an answer then drew as the table's header (``| exclude | list of globs | … |`` over the
    other keys), and the chunk lost the column names a question may use. Each piece now starts with
    the table's header row, as each piece of a cut code block opens its fence again."""
    from docs_rag_pipeline.answering.tables import markdown_table

    def count(t: str) -> int:
        return len(t.split())

    header = "Key | Type | Default | Meaning"
    rows = [f"key_{i} | integer | {i} | How many widgets the pool number {i} keeps warm." for i in range(40)]
    text = "The keys:\n\n" + "\n".join([header, *rows]) + "\n\nAfter the table."
    pieces = split_text(text, 60, 0, count)
    tables = [p for p in pieces if " | " in p]
    assert len(tables) > 3
    blocks = [b for p in tables for b in p.split("\n\n") if " | " in b]
    assert len(blocks) == len(tables)
    for p, b in zip(tables, blocks):
        assert count(p) <= 60
        assert b.split("\n")[0] == header, p
        assert markdown_table(b).split("\n")[0] == "| Key | Type | Default | Meaning |"
    assert [ln for b in blocks for ln in b.split("\n")[1:]] == rows  # every row once, in order

    # a row whose first cell is empty opens with its pipe ("| …"): still a row of the table (chatpage F3)
    two = [f"| How many widgets the pool number {i} keeps warm for the server." if i % 2 else
           f"key_{i} | How many widgets the pool number {i} keeps warm." for i in range(40)]
    cut = split_text("\n".join(["Key | Meaning", *two]), 60, 0, count)
    assert len(cut) > 3 and all(p.startswith("Key | Meaning\n") for p in cut), cut

    # a block that is not a table (a list, lines of prose) is cut as before, nothing repeated
    listing = "\n".join(f"- item {i} says what the pool number {i} keeps warm for the server." for i in range(40))
    cut = split_text(listing, 60, 0, count)
    assert sum(p.count("- item ") for p in cut) == 40 and not any(p.startswith("- item 0") for p in cut[1:])
    # a header row too long to repeat (over a quarter of the budget) is not repeated
    wide = " | ".join(f"column{i}" for i in range(20))
    cut = split_text("\n".join([wide, *rows]), 60, 0, count)
    assert sum(p.count(wide) for p in cut) == 1


def test_a_table_row_longer_than_a_chunk_keeps_its_key_in_every_piece():
    """A row longer than a chunk (an exit status table's `2` row, a paragraph long) was cut at its
    sentences, and the later parts stood under the repeated header as lines of text: the chunk read
    ``Status | When`` over ``same message, and nothing is created).``, the answer quoted that pair as
    a sentence, and the status the text describes was in another chunk. Each later part is now a row
    of its own under the row's first cell."""
    from docs_rag_pipeline.answering.tables import table_rows

    def count(t: str) -> int:
        return len(t.split())

    long_cell = " ".join(f"Sentence {i} says what goes wrong with the input here." for i in range(12))
    rows = ["`0` | Success.", f"`2` | {long_cell}", "`3` | A metric is below its threshold."]
    pieces = split_text("\n".join(["Status | When", *rows]), 40, 0, count)
    assert len(pieces) > 3
    seen = []
    for p in pieces:
        assert count(p) <= 40, p
        lines = p.split("\n")
        assert lines[0] == "Status | When" and table_rows(p) is not None, p  # every line a row
        seen.extend(lines[1:])
    twos = [ln for ln in seen if ln.startswith("`2` | ")]
    assert len(twos) > 2 and " ".join(ln.removeprefix("`2` | ") for ln in twos) == long_cell
    assert seen[0] == rows[0] and seen[-1] == rows[2]


def test_a_cut_never_falls_right_after_an_opening_fence():
    """Packing a long block by lines could cut right after a code block's opening fence: the piece
    ended "… use:\n```\n```" (an empty code block) and the code was only in the next piece. Now the cut
    falls before the fence: no piece ends with an empty code block, each code line sits inside its
    fences, and the lines of code are all there, in order."""
    from docs_rag_pipeline.chunking import split_text

    def count(t: str) -> int:
        return len(t.split())

    code = [f"mapping_{i} = ('https://example.org/{i}', None)" for i in range(6)]
    seen_cut_at_fence = False
    for n in range(1, 30):  # filler lengths that move the cut over every line, the fence's included
        lead = [f"Filler line {i} of the section before." for i in range(n)]
        text = "\n".join([*lead, "To add links to the library documentation, use:", "```python", *code, "```"])
        pieces = split_text(text, 40, 0, count)
        assert len(pieces) > 1 and all(count(p) <= 40 for p in pieces)
        for p in pieces:
            assert "```python\n```" not in p, p  # no empty code block
            body = p.split("\n")
            if any(x.startswith("mapping_") for x in body):
                assert body.count("```python") == 1 and body[-1] == "```", p
            seen_cut_at_fence |= p.endswith("use:")
        assert [x for p in pieces for x in p.split("\n") if x.startswith("mapping_")] == code
    assert seen_cut_at_fence  # some length put the cut where the fence was: it moved before it


def _js_example(functions: int) -> list[str]:
    """A long JavaScript example as API pages show them: commented functions set apart by blank lines."""
    lines = ["import { hooks } from 'node:widgets';", ""]
    for f in range(functions):
        lines += [f"// The `step{f}` hook polishes widget {f}.",
                  f"function step{f}(widget, options) {{",
                  "  if (options.verbose) {",
                  f"    console.log('polishing', {f});",
                  "  }",
                  f"  return polish(widget, {f});",
                  "}", ""]
    return [*lines, "hooks.start({ step0, step1 });"]


def _starts_inside_a_body(piece: str) -> bool:
    """The piece's code starts with a line that closes a bracket, sits deeper than a line after it, or
    is a function without its comment."""
    lines = piece.split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].startswith("```"))
    body = [x for x in lines[1:end] if x.strip()]
    low = min(len(x) - len(x.lstrip()) for x in body)
    first = body[0].lstrip()
    # a function parted from the comment above it starts no piece either
    return first.startswith(("}", ")", "]", "function")) or len(body[0]) - len(first) > low


def test_a_long_code_block_is_cut_between_top_level_statements_not_inside_a_body(count):
    """A code block too long for one chunk was cut at the first line that did not fit, often inside a
    function: the next chunk began with the end of its body (``  console.log(…);\\n}``) and an answer
    quoted that. Now the cut moves back, at most to half the budget, to where a reader would cut: a
    line at the block's lowest indentation after a blank line (a function with its comment), else
    any line at that indentation, else a blank line inside a body. Every piece stays fenced, within
    the budget, and the code is all there, in order; a block with no such place (one long body) is
    still cut by lines."""
    code = _js_example(12)
    for limit in range(150, 300, 5):  # budgets that put the greedy cut everywhere in a function
        pieces = split_text("```mjs\n" + "\n".join(code) + "\n```", limit, 32, count)
        assert len(pieces) > 1 and all(count(p) <= limit for p in pieces)
        for p in pieces:
            lines = p.split("\n")
            assert lines[0] == "```mjs" and lines[-1] == "```" and p.count("```") == 2, p
            assert not _starts_inside_a_body(p), (limit, p)  # every piece starts at a top-level statement
            assert lines[-2].strip(), p  # no blank line left before the closing fence
        got = [x for p in pieces for x in p.split("\n")[1:-1] if x.strip()]
        assert got == [x for x in code if x.strip()]
    # inside a list item, at the item's indentation, and without blank lines: a line at the lowest
    # indentation (a statement) is the cut
    nested = ["    " + x for x in code if x.strip()]
    block = "- Register every hook:\n```mjs\n" + "\n".join(nested) + "\n```\n- Then start the server."
    for limit in range(120, 260, 11):
        pieces = split_text(block, limit, 0, count)
        assert all(count(p) <= limit for p in pieces)
        for p in pieces:
            if p.startswith("```mjs"):
                assert not _starts_inside_a_body(p), (limit, p)
        assert [x for p in pieces for x in p.split("\n") if x.startswith("    ")] == nested
    # one long body: no place is better than another, the cut stays where the budget ends
    body = ["function main() {", *[f"  step{i}(widget, {{ level: {i}, shine: true }});" for i in range(60)], "}"]
    pieces = split_text("```js\n" + "\n".join(body) + "\n```", 100, 0, count)
    assert len(pieces) > 2 and all(count(p) <= 100 for p in pieces)
    assert [x for p in pieces for x in p.split("\n")[1:-1]] == body


def test_a_component_marker_goes_with_its_content_never_into_a_chunk_of_its_own():
    """An MDX component's markers are blocks of their own (``[Steps]``, the list, ``[/Steps]``), and
    packing flushed an opening marker alone when the block after it did not fit beside it, and put a
    closing one alone after a full piece: 16 chunks of the Astro docs were ``[Steps]``, ``[/Steps]``,
    ``[/ReadMore]`` or ``[/note]``, embedded and retrievable, and a labelled marker (``[Aside
    caution]``, ``[TabItem pnpm]``) was parted from the body it names. Now an opening marker goes with
    the block after it and a closing one with the block before it, wherever the cut falls."""
    from docs_rag_pipeline.parsing import parse_document

    def count(t: str) -> int:
        return len(t.split())

    marker = re.compile(r"(…\s*)?(\[/?[A-Za-z][^\]\n]*\]\s*)+")
    for n in range(1, 40):  # filler lengths that move the cuts over every block
        lead = " ".join(f"w{i}" for i in range(n))
        items = "\n".join(f"{i}. Step {i} does something useful." for i in range(1, 6))
        text = "\n\n".join([lead, "[Steps]", items, "[/Steps]", "[Aside caution]",
                            "Mind the gap between the train and the platform.", "[/Aside]", "[/Tabs]"])
        pieces = split_text(text, 24, 0, count)
        assert all(count(p) <= 24 for p in pieces)
        assert not [p for p in pieces if marker.fullmatch(p.strip())], pieces
        assert any(p.startswith("[Steps]\n\n1. Step 1") or "\n\n[Steps]\n\n1. Step 1" in p for p in pieces)
        assert any("5. Step 5 does something useful.\n\n[/Steps]" in p for p in pieces)
        assert any("[Aside caution]\n\nMind the gap" in p for p in pieces)
        assert any(p.endswith("platform.\n\n[/Aside]\n\n[/Tabs]") for p in pieces)
        assert "\n\n".join(pieces).split() == text.split()  # everything, in order, once
    # a page: the list after <Steps> is cut into pieces, the markers go with its first and last
    items = "\n".join(f"{i}. Step number {i} does something useful with the project files and then "
                      f"explains why it matters for deployment of the site in production." for i in range(1, 9))
    page = parse_document(f"## Deploy\n\n<Steps>\n{items}\n</Steps>\n", fmt="mdx", path="deploy.mdx")
    chunks = chunk_page(page, source="s", page_url="deploy.mdx", content_hash="h", updated_at="u",
                        budget=Budget(window=128, overlap=16), count=count)
    assert len(chunks) > 1 and not [c.text for c in chunks if marker.fullmatch(c.text.strip())]
    assert chunks[0].text.startswith("[Steps]\n\n1. Step number 1") and chunks[-1].text.endswith("[/Steps]")


def test_a_lead_in_that_would_end_a_piece_goes_on_with_the_block_it_announces():
    """Packing filled a piece up to its lead-in ("To install it, run:") and put the code block (list,
    table) it announces in the next piece: one chunk ended saying what comes next, the other held
    commands with nothing saying what they are for. Now the lead-in goes on with its block when the
    two fit in one piece; a colon that ends a list item, code or a heading is not a lead-in."""
    def count(t: str) -> int:
        return len(t.split())

    announced = {"To install it, run:": "```\npip install thing\nthing --init\n```",
                 "The settings are:": "- name: the site's name\n- url: where it lives",
                 "Its columns:": "| a | b |\n| --- | --- |\n| 1 | 2 |"}
    moved = 0
    for n in range(1, 30):  # filler lengths that move the cut over every block
        for lead, block in announced.items():
            filler = " ".join(f"w{i}" for i in range(n)) + "."
            text = "\n\n".join([filler, lead, block, "After it, the page goes on."])
            pieces = split_text(text, 24, 0, count)
            assert all(count(p) <= 24 for p in pieces)
            assert "\n\n".join(pieces).split() == text.split()  # everything, in order, once
            assert not [p for p in pieces[:-1] if p.endswith(lead)], (n, pieces)
            assert any(f"{lead}\n\n{block}" in p for p in pieces), (n, pieces)
            moved += any(p.startswith(f"{lead}\n\n{block}") for p in pieces)
    assert moved  # some cuts fell between a lead-in and its block, and it went on with the block
    # not a lead-in: a list whose last item ends with a colon, a heading-like line; nor a lead-in
    # alone in its piece (moving it would leave an empty one)
    for n in range(1, 30):
        filler = " ".join(f"w{i}" for i in range(n)) + "."
        items = "- first item\n- the last item says:"
        text = "\n\n".join([filler, items, "```\ncode here\n```"])
        pieces = split_text(text, 24, 0, count)
        assert "\n\n".join(pieces).split() == text.split() and all(p.strip() for p in pieces)
        if n + 8 <= 24:  # the filler and the list fit in one piece: the list stays with the filler
            assert pieces[0].startswith(filler) and items in pieces[0], (n, pieces)


def test_a_section_without_targets_is_not_walked_character_by_character() -> None:
    """Placing a section's chunks at its targets (``Section.targets``, the API entries a chunk links) walks the
    section's text one character at a time; a section with no target (every Markdown page's, most of a web
    page's) has nothing to place and is not walked: it was, for every section (a 4.5 MB section cost 1.9 s more
    than before targets; review6 F5). Counted, not timed; a section with targets links as before."""
    from docs_rag_pipeline.chunking import _piece_targets, _split_pieces

    class Watched(str):
        walked = 0

        def __iter__(self):  # noqa: ANN204
            for ch in str.__iter__(self):
                Watched.walked += 1
                yield ch

    text = "".join(f"Paragraph {i}: " + "lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 20 + "\n\n"
                   for i in range(50))
    owns = [own for _, own in _split_pieces(text, 512, 32, lambda s: max(1, len(s) // 4))]
    assert len(owns) > 5 and _piece_targets(Watched(text), [], owns) == [""] * len(owns)
    assert Watched.walked == 0
    middle = text.index(owns[3].split("\n")[0])
    assert _piece_targets(text, [(middle, "entry")], owns)[2:5] == ["", "entry", "entry"]
