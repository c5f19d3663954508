"""Damaged benchmark files fail at load time with a DataError naming the file, the line and the fix: bytes that are not
UTF-8 (jsonl, json, tsv, gzip'd jsonl, corpus lines read by offset) and candidate files with no rows."""
import gzip
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.datasets import DataError, bundled_path
from pyterrier_instruct.datasets._files import iter_jsonl, read_json, read_qrels_tsv
from pyterrier_instruct.datasets.docstore import DocStore

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py
LATIN1 = "caf\u00e9".encode("latin-1")  # b"caf\xe9": one byte that is not UTF-8


def _mini(tmp_path) -> Path:
    shutil.copytree(bundled_path(), tmp_path / "ds")
    return tmp_path / "ds"


def _inject(path: Path, line: int, text: bytes = LATIN1) -> int:
    """Puts ``text`` at the start of the JSON string value ending ``line`` (1-based); returns its byte offset."""
    lines = path.read_bytes().split(b"\n")
    cut = lines[line - 1].rindex(b'"', 0, lines[line - 1].rindex(b'"'))
    offset = sum(len(x) + 1 for x in lines[:line - 1]) + cut + 1
    lines[line - 1] = lines[line - 1][:cut + 1] + text + lines[line - 1][cut + 1:]
    path.write_bytes(b"\n".join(lines))
    return offset + text.index(b"\xe9")


def test_a_latin1_byte_in_the_queries_names_file_line_offset_and_the_fix(tmp_path):
    ds = _mini(tmp_path)
    offset = _inject(ds / "queries.jsonl", 3)
    with pytest.raises(DataError) as e:
        pti.load_dataset(str(ds)).get_topics()
    msg = str(e.value)
    assert "queries.jsonl:3: byte 0xe9" in msg and f"byte offset {offset})" in msg
    assert "not valid UTF-8" in msg and "iconv -f latin1 -t utf-8 queries.jsonl" in msg
    assert not isinstance(e.value, UnicodeDecodeError)


def test_json_and_tsv_files_name_the_line_of_the_bad_byte(tmp_path):
    scores = tmp_path / "empty_scores.json"
    scores.write_bytes(b'{\n "q1": {\n  "d1": 0,\n  "' + LATIN1 + b'": 0\n }\n}\n')
    with pytest.raises(DataError,
                       match=r"empty_scores.json:4: byte 0xe9 \(column 7, byte offset 28\) is not valid UTF-8"):
        read_json(scores)
    tsv = tmp_path / "test.tsv"
    tsv.write_bytes(b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\t" + LATIN1 + b"\t1\n")
    with pytest.raises(DataError, match=r"test.tsv:3: byte 0xe9 \(column 7, byte offset 39\)"):
        read_qrels_tsv(tsv)
    gz = tmp_path / "queries.jsonl.gz"
    with gzip.open(gz, "wb") as f:
        f.write(b'{"_id": "a", "text": "ok"}\n{"_id": "b", "text": "' + LATIN1 + b'"}\n')
    with pytest.raises(DataError,
                       match=r"queries.jsonl.gz:2: byte 0xe9 \(column 26, byte offset 52 of the decompressed stream\)"):
        list(iter_jsonl(gz))


def test_a_bad_byte_in_the_corpus_is_named_when_iterated_and_when_looked_up(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b'{"_id": "a", "text": "fine"}\n{"_id": "b", "text": "' + LATIN1 + b'"}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:2: byte 0xe9 \(column 26, byte offset 54\)"):
        list(DocStore(corpus))
    store = DocStore(corpus)
    assert store.get_many(["a"]) == {"a": ("", "fine")}  # the id index reads ids only
    with pytest.raises(DataError,
                       match=r"corpus.jsonl \(the line at byte offset 29\): byte 0xe9 \(column 26, byte offset 54\)"):
        store.get_many(["b"])
    ids = tmp_path / "ids.jsonl"  # a bad byte inside a document id, met while indexing the ids
    ids.write_bytes(b'{"_id": "' + LATIN1 + b'", "text": "x"}\n')
    with pytest.raises(DataError, match=r"ids.jsonl:1: byte 0xe9 \(column 13, byte offset 12\)"):
        DocStore(ids).get_many(["x"])


def test_an_empty_top_ranked_file_fails_at_load_naming_it(tmp_path):
    ds = _mini(tmp_path)
    (ds / "top_ranked.jsonl").write_text("")
    with pytest.raises(DataError, match=r"top_ranked.jsonl is empty: it lists no candidate documents"):
        pti.load_dataset(str(ds)).get_topics()
    info = tmp_path / "audience"
    shutil.copytree(LAYOUTS / "jianqunZ" / "Audience-v1", info)
    (info / "empty_scores.json").write_text("{}")
    with pytest.raises(DataError, match=r"empty_scores.json is empty"):
        pti.load_dataset("infosearch/audience", path=str(info)).get_topics()


def test_candidates_names_the_problem_when_no_query_has_a_list(mini, monkeypatch):
    bench = mini.bench
    monkeypatch.setattr(bench, "candidates",
                        pd.DataFrame({"qid": pd.Series(dtype=object), "docno": pd.Series(dtype=object)}))
    with pytest.raises(KeyError,
                       match=r"have no candidates in instruct-mini \(10 in all\); no query has a candidate list"):
        mini.candidates()(mini.get_topics("og"))
