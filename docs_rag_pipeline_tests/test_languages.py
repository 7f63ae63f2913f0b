"""Documentation in other languages: words of any script, answers and refusals from non-English
pages (real ingest into LanceDB in a temp dir, the real embedding model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_rag_pipeline import refresh
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.query import ask

from .conftest import write_config, write_docs

BASE = "https://docs.example.org/"

#: a small Russian manual: two pages, five sections
RU_PAGES = {
    "install.md": "# Установка\n\n## Системные требования\n\nДля работы сервера требуется не менее четырёх "
                  "гигабайт оперативной памяти. Поддерживаются Linux и Windows Server.\n\n## Настройка "
                  "прокси-сервера\n\nЧтобы настроить прокси-сервер, укажите его адрес в переменной окружения. "
                  "Сервер читает эту переменную при каждом запуске.\n\n## Журналы\n\nЖурналы сервера записываются "
                  "в каталог журналов. Уровень подробности задаётся параметром `log_level` в файле `config.yaml`.\n",
    "backup.md": "# Резервное копирование\n\n## Создание резервной копии\n\nРезервная копия создаётся "
                 "автоматически каждую ночь в три часа. Копии хранятся тридцать дней, после чего удаляются.\n\n"
                 "## Восстановление из копии\n\nЧтобы восстановить данные, остановите сервер и выберите "
                 "нужную копию в панели управления. Восстановление занимает несколько минут.\n",
}


def _index(root: Path, pages: dict[str, str]) -> Path:
    write_docs(root / "docs", pages)
    cfg = write_config(root)
    refresh.refresh(Context(load_config(cfg)), "guide")
    return cfg


@pytest.fixture(scope="module")
def russian(tmp_path_factory) -> Path:
    return _index(tmp_path_factory.mktemp("ru"), RU_PAGES)


def test_words_of_any_script():
    """Letters of any alphabet make words (casefolded), whole; scripts written without spaces give
    character bigrams. Before, only ``[a-z0-9_]`` did: a Russian sentence had no words, and
    ``Schlüssel`` was the two words ``schl`` and ``ssel``."""
    from docs_rag_pipeline.answering.extractive import content_terms, unknown_names
    from docs_rag_pipeline.words import words

    assert words("Welcher Schlüssel? dreißig Tage, créer un élément") == [
        "welcher", "schlüssel", "dreissig", "tage", "créer", "un", "élément"]
    assert words("Сколько времени ХРАНЯТСЯ копии?") == ["сколько", "времени", "хранятся", "копии"]
    assert words("Ελληνικά κείμενα · كيف أغير لغة · שלום עולם · नमस्ते") == [
        "ελληνικά", "κείμενα", "كيف", "أغير", "لغة", "שלום", "עולם", "नमस्ते"]
    # a combining accent (NFD, as macOS writes file names) is the same word as the composed one
    assert words("cafe\u0301") == words("café") == ["café"]
    # Han, Kana, Hangul and Thai runs: overlapping bigrams; a run of one character is itself
    assert words("备份保存三十天。Linux和Windows") == ["备份", "份保", "保存", "存三", "三十", "十天", "linux", "和", "windows"]
    assert words("設定ファイル") == ["設定", "定フ", "ファ", "ァイ", "イル"]
    assert words("백업 설정") == ["백업", "설정"]
    # ASCII text is split exactly as before
    assert words("_Black_ reads pyproject.toml, __init__ and C++ (x-line-length); a.b.") == [
        "black", "reads", "pyproject.toml", "__init__", "and", "c", "x-line-length", "a.b"]
    # a CJK bigram is a content term, though it has two characters
    assert content_terms("如何恢复数据？") == ["如何", "何恢", "恢复", "复数", "数据"]
    assert content_terms("Как настроить прокси-сервер?") == ["как", "настроить", "прокси-сервер"]
    # a capitalised German noun is one name, known when the docs use it
    vocab = frozenset(words("Der Schlüssel legt die Größe fest"))
    assert unknown_names("Welcher Schlüssel legt die Größe fest?", vocab) == ()
    assert unknown_names("Welcher Schlüssel legt die Farbe fest?", vocab) == ("farbe",)


def test_a_russian_question_is_answered_from_the_section_that_says_it(russian):
    """Before, no Cyrillic sentence had the two content words an answer sentence needs, so every Russian
    question was answered with the one sentence holding two ASCII words ("Linux и Windows Server",
    the memory requirements), citing its section; and an off-topic question, with no word the refusal
    signals could see, passed every lexical gate and was answered too."""
    a = ask("Сколько времени хранятся резервные копии?", config=russian, remember=False)
    assert not a.refused
    assert a.answer.startswith("Резервная копия создаётся автоматически каждую ночь в три часа. "
                               "Копии хранятся тридцать дней")
    assert a.citations[0].url == BASE + "backup.md#создание-резервной-копии"
    assert "памяти" not in a.answer
    a = ask("Как настроить прокси-сервер?", config=russian, remember=False)
    assert not a.refused and a.answer.startswith("Чтобы настроить прокси-сервер, укажите его адрес")
    assert a.citations[0].url == BASE + "install.md#настройка-прокси-сервера"
    for off_topic in ("Какая погода будет завтра в Москве?", "Сколько стоит билет на поезд в Сочи?"):
        a = ask(off_topic, config=russian, remember=False)
        assert a.refused and not a.citations, off_topic
