"""Convert public evaluation data (fetched git snapshots of its repositories) into the benches' formats.

    .venv/bin/python bench/external_sets.py            # every set → ../shared/bench/external/<name>/
    .venv/bin/python bench/external_sets.py --only ner_uner --only ner_btc

Reads each source with `git show <commit>:<path>` from the bare snapshot the `fetch` tool left under
/work/.mirror/<owner>+<name>/repo (MIRRORS overrides the folder). Standard library only: nothing of Mnemo is used,
so no set is shaped by the code it evaluates. Every output folder gets a README.md with the source repository,
commit, licence and the exact conversion. The data is never committed to this repository (licences, size).

Sets written:
- ner_uner: Universal NER v1, English EWT and Simplified Chinese GSD, dev and test (PER / LOC / ORG).
- ner_btc: the Broad Twitter Corpus (English tweets), dev and test (PER / LOC / ORG).
- dedupe_pawsx_zh: PAWS-X Chinese paraphrase pairs (same meaning or not), dev and test.
- dedupe_stsb: STS benchmark, English original and its Chinese translation, scored pairs and translation pairs.
- dedupe_tatoeba: Tatoeba English-Chinese pairs: cross-language restatements, paraphrases through a shared
  translation, and value changes marked as changes (how each is built: its README).
"""

import argparse
import csv
import hashlib
import io
import json
import os
import random
import re
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIRRORS = Path(os.environ.get("MIRRORS", "/work/.mirror"))
SEED = 20261206

SOURCES = {
    "uner_en": ("UniversalNER/UNER_English-EWT", "8ed072de2fd24022cc62458997fe96a8fe191ea4"),
    "uner_zh": ("UniversalNER/UNER_Chinese-GSDSIMP", "1f0307599dece7b83f4cba90ce9b63ef37a7b162"),
    # The train split, for bench/train_english_types.py only: the snapshot holds no file of 4 MiB or more, so the
    # released train file (8ed072d) is absent and this is its first commit, the only version under that size
    # (its label counts are within 0.3% of the release's en_ewt-ud-train.stats: PER 2873/2874, LOC 2698/2712,
    # ORG 1434/1436). Its extra label OTH maps to nothing, as UNER's own conversion drops it.
    "uner_en_train": ("UniversalNER/UNER_English-EWT", "0c7ce0debb13a7d304da656f16309397e8ff36ef"),
    "uner_en_pud": ("UniversalNER/UNER_English-PUD", "07ea0553144e3fcf3d6633efe2a075b725a0d262"),
    "btc": ("GateNLP/broad_twitter_corpus", "0c45ef7b1924a6b8115bceab388781590b1b553a"),
    "pawsx": ("zejunwang1/CSTS", "2e7eeedf505c78bf39d34f836773081cfc98af0c"),
    "paws": ("google-research-datasets/paws", "02b29f3af1143620d1b7f352247e65c0bdd2ec18"),
    "stsb": ("PhilipMay/stsb-multi-mt", "30de0dec4ee199b7f42351d3f1a0b19592955385"),
    "tatoeba": ("13luoyu/Transformer-machine-translation", "aa43963320ccfacebd1d3542deae559bbca58d03"),
}


def shared_bench_dir() -> Path:
    """../shared/bench from the main checkout; from a worktree under /work/wt, the same folder."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "bench").is_dir():
            return base / "shared" / "bench"
    return ROOT.parent / "shared" / "bench"


def external_dir() -> Path:
    return shared_bench_dir() / "external"


def show(source: str, path: str) -> str:
    repo, commit = SOURCES[source]
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, check=True
    )
    return out.stdout.decode("utf-8-sig")


def split_of(key: str) -> str:
    """A stable half-and-half split for sources that have none: by a hash of the item's key."""
    return "dev" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 == 0 else "test"


def write(name: str, files: dict[str, dict], readme: str) -> None:
    folder = external_dir() / name
    folder.mkdir(parents=True, exist_ok=True)
    for filename, payload in files.items():
        (folder / filename).write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    (folder / "README.md").write_text(readme)
    print(f"{folder}: {', '.join(files)}")


# --- NER: Universal NER ------------------------------------------------------------------------------------

UNER_TYPES = {"PER": "PERSON", "LOC": "PLACE", "ORG": "ORG"}


def uner_sentences(source: str, path: str) -> list[dict]:
    """Sentences with their entities as character spans of the `# text` line (tokens located in order)."""
    sentences = []
    for block in show(source, path).split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        text = next((line[len("# text = ") :] for line in lines if line.startswith("# text = ")), None)
        sent_id = next(
            (line[len("# sent_id = ") :] for line in lines if line.startswith("# sent_id = ")), None
        )
        rows = [line.split("\t") for line in lines if not line.startswith("#")]
        if text is None or not rows:
            continue
        sentences.append(tagged_sentence(sent_id, text, [(row[1], row[2]) for row in rows]))
    return sentences


def tagged_sentence(sent_id: str | None, text: str, tagged: list[tuple[str, str]]) -> dict:
    """A sentence with the entities its (token, IOB2 tag) pairs give, as character spans of `text` (the tokens
    located in it in order)."""
    position, spans, current = 0, [], None
    for token, tag in tagged:
        start = text.find(token, position)
        if start < 0:  # a token the text spells otherwise: keep the order, give up the span
            start = position
        end = start + len(token)
        position = end
        if tag.startswith("B-") or (tag.startswith("I-") and (current is None or current[2] != tag[2:])):
            current = [start, end, tag[2:]]
            spans.append(current)
        elif tag.startswith("I-") and current is not None:
            current[1] = end
        else:
            current = None
    entities = [
        {"name": text[s:e], "type": UNER_TYPES[t], "start": s, "end": e}
        for s, e, t in spans
        if t in UNER_TYPES
    ]
    return {"id": sent_id, "text": text, "entities": entities}


def convert_ner_uner() -> None:
    files = {}
    counts = []
    # (lang, split, source, file): EWT (web text) and GSD with their dev and test splits, and English of another
    # kind, PUD (news and Wikipedia), whose only split is a test set.
    parts = [
        (lang, split, source, f"{stem}-{split}.iob2")
        for lang, source, stem in (("en", "uner_en", "en_ewt-ud"), ("zh", "uner_zh", "zh_gsdsimp-ud"))
        for split in ("dev", "test")
    ]
    parts.insert(2, ("en", "pud", "uner_en_pud", "en_pud-ud-test.iob2"))
    for lang, split, source, path in parts:
        sentences = uner_sentences(source, path)
        files[f"{lang}_{split}.json"] = {
            "name": f"uner_{lang}_{split}",
            "lang": lang,
            "split": split,
            "source": f"{SOURCES[source][0]} @ {SOURCES[source][1]}, {path}",
            "sentences": sentences,
        }
        by_type = defaultdict(int)
        for sentence in sentences:
            for entity in sentence["entities"]:
                by_type[entity["type"]] += 1
        counts.append(
            f"| {lang} | {split} | {len(sentences)} | {by_type['PERSON']} | {by_type['PLACE']} | {by_type['ORG']} |"
        )
    readme = f"""# Universal NER v1: English EWT and Simplified Chinese GSD (named entity spans)

Sources (bare git snapshots, read with `git show`):
- {SOURCES["uner_en"][0]} @ {SOURCES["uner_en"][1]}: `en_ewt-ud-dev.iob2`, `en_ewt-ud-test.iob2`
  (English Web Treebank: reviews, e-mails, answers, blogs, newsgroups).
- {SOURCES["uner_zh"][0]} @ {SOURCES["uner_zh"][1]}: `zh_gsdsimp-ud-dev.iob2`, `zh_gsdsimp-ud-test.iob2`
  (Chinese GSD Simplified: Wikipedia).
- {SOURCES["uner_en_pud"][0]} @ {SOURCES["uner_en_pud"][1]}: `en_pud-ud-test.iob2` (English Parallel UD: 1,000
  sentences of news and Wikipedia; its only split, written `en_pud.json`; licence CC BY-SA 3.0, LICENSE.txt).

Licence: "The labels, like the treebank, are licensed under the Creative Commons License Attribution-ShareAlike
4.0 International" (LICENSE.txt of both repositories). Paper: Mayhew et al., "Universal NER: A Gold-Standard
Multilingual Named Entity Recognition Benchmark", NAACL 2024. Used for evaluation only; not in the project repo.

Conversion (`bench/external_sets.py ner_uner` in the Mnemo repo): each sentence's `# text` line is the text; the
IOB2 tags of its tokens give the entity spans (tokens are located in the text in order, so `start`/`end` are
character offsets into `text`). Labels map one to one: PER → PERSON, LOC → PLACE, ORG → ORG (UNER has no other
label). Nothing is dropped or sampled; the splits are UNER's own.

| lang | split | sentences | PERSON | PLACE | ORG |
|---|---|---|---|---|---|
{chr(10).join(counts)}

Format: `{{"name", "lang", "split", "source", "sentences": [{{"id", "text", "entities": [{{"name", "type",
"start", "end"}}]}}]}}`.
"""
    write("ner_uner", files, readme)


# --- NER: Broad Twitter Corpus -----------------------------------------------------------------------------

# A token written against the one before it: closing punctuation and English clitics ("Iverson 's" is
# "Iverson's"); and the one after a lone "@", which the corpus's CoNLL split from its handle ("@ SportsCenter").
_CLOSES = re.compile(r"^(?:[.,:;!?)\]}%…]+|'(?:s|m|d|ll|re|ve)|n't)$", re.IGNORECASE)
_OPENS = frozenset(("@", "(", "[", "{"))


def tweet_text(tokens: list[str]) -> str:
    """The tweet as it was written, near enough, from its tokens: a space between two, except before closing
    punctuation and clitics and after an opening bracket or "@"."""
    text = ""
    for token in tokens:
        if text and not _CLOSES.match(token) and text.split(" ")[-1] not in _OPENS:
            text += " "
        text += token
    return text


def btc_sentences(source: str, path: str) -> list[dict]:
    """Tweets with their entities as character spans of the text rebuilt from their tokens (tweet_text). The
    lone "@" the CoNLL split from a handle carries the handle's label as an entity of its own ("@" B-PER,
    "NikoWavy" B-PER): a span with no letter or digit is no name and is left out; the handle stays."""
    sentences = []
    for number, block in enumerate(show(source, path).split("\n\n")):
        tagged = [tuple(line.split("\t")) for line in block.splitlines() if line.strip()]
        if not tagged:
            continue
        sentence = tagged_sentence(f"{Path(path).name}-{number}", tweet_text([t for t, _ in tagged]), tagged)
        sentence["entities"] = [e for e in sentence["entities"] if any(c.isalnum() for c in e["name"])]
        sentences.append(sentence)
    return sentences


def convert_ner_btc() -> None:
    repository, commit = SOURCES["btc"]
    files, counts = {}, []
    for split in ("dev", "test"):
        path = f"train_dev_test_conll/btc.{split}"
        sentences = btc_sentences("btc", path)
        files[f"en_btc_{split}.json"] = {
            "name": f"btc_en_{split}",
            "lang": "en",
            "split": split,
            "source": f"{repository} @ {commit}, {path}",
            "sentences": sentences,
        }
        by_type = Counter(entity["type"] for sentence in sentences for entity in sentence["entities"])
        counts.append(
            f"| en | {split} | {len(sentences)} | {by_type['PERSON']} | {by_type['PLACE']} | {by_type['ORG']} |"
        )
    readme = f"""# Broad Twitter Corpus: English tweets (named entity spans)

Source (a bare git snapshot, read with `git show`): {repository} @ {commit}: `train_dev_test_conll/btc.dev`,
`train_dev_test_conll/btc.test` (the corpus's recommended splits, its README: test is section F, "Twitterati",
2009-2014; dev the second half of section H, a non-UK general collection of 2014; train, used only by
bench/train_english_types.py, everything else). Tweets of many kinds and places, with @mentions, hashtags and
URLs: English of a third kind, beside UNER's web text (EWT) and news (PUD).

Licence: CC BY 4.0 (the repository's LICENSE; its README: "The BTC is released as CC-BY 4.0"). Paper: Derczynski,
Bontcheva and Roberts, "Broad Twitter Corpus: A Diverse Named Entity Recognition Resource", COLING 2016. Used for
evaluation only; not in the project repo.

Conversion (`bench/external_sets.py ner_btc` in the Mnemo repo, with the parser ner_uner uses): the CoNLL holds
tokens and IOB2 tags only, so each tweet's text is rebuilt from its tokens, left as they are: a space between
two, except before closing punctuation and clitics ("Iverson's", "do n't" → "don't") and after a lone "@",
which the CoNLL split from its handle ("@SportsCenter" as it was written). The tags give the entity spans as
character offsets into that text; labels map one to one: PER → PERSON, LOC → PLACE, ORG → ORG. The lone "@"
carries its handle's label as an entity of its own ("@" B-ORG, "SportsCenter" B-ORG): spans with no letter or
digit are left out, so the handle is the entity. Nothing else is dropped or sampled; ids are
`<file>-<tweet number>`.

| lang | split | tweets | PERSON | PLACE | ORG |
|---|---|---|---|---|---|
{chr(10).join(counts)}

Format: `{{"name", "lang", "split", "source", "sentences": [{{"id", "text", "entities": [{{"name", "type",
"start", "end"}}]}}]}}`, as ner_uner's.
"""
    write("ner_btc", files, readme)


# --- Duplicates and updates ---------------------------------------------------------------------------------


def pair(pid: str, lang: str, existing: str, new: str, label: str, kind: str, **extra) -> dict:
    return {"id": pid, "lang": lang, "existing": existing, "new": new, "label": label, "kind": kind, **extra}


def convert_pawsx() -> None:
    per_label = 150
    files, counts = {}, []
    for split, path in (("dev", "PAWS-X/dev_2k.tsv"), ("test", "PAWS-X/test_2k.tsv")):
        rows = list(csv.reader(io.StringIO(show("pawsx", path)), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        # PAWS-X notes that a few translated pairs hold the placeholder "NS": left out.
        rows = [r for r in rows if len(r) == 4 and "NS" not in (r[1].strip(), r[2].strip()) and r[1] and r[2]]
        rng = random.Random(f"{SEED}-pawsx-{split}")
        chosen = []
        for label in ("1", "0"):
            group = [r for r in rows if r[3] == label]
            chosen += rng.sample(group, per_label)
        rng.shuffle(chosen)
        pairs = [
            pair(
                f"pawsx-{split}-{r[0]}",
                "zh",
                r[1],
                r[2],
                "duplicate" if r[3] == "1" else "distinct",
                "paraphrase" if r[3] == "1" else "word-swap",
            )
            for r in chosen
        ]
        files[f"pairs_{split}.json"] = {"name": f"pawsx_zh_{split}", "split": split, "pairs": pairs}
        counts.append(f"| {split} | {len(rows)} | {len(pairs)} |")
    readme = f"""# PAWS-X, Chinese: paraphrase pairs with high word overlap

Source: PAWS-X (Yang et al., "PAWS-X: A Cross-lingual Adversarial Dataset for Paraphrase Identification",
EMNLP 2019), Chinese human-translated dev and test sets, as redistributed unchanged in
{SOURCES["pawsx"][0]} @ {SOURCES["pawsx"][1]} (`PAWS-X/dev_2k.tsv`, `PAWS-X/test_2k.tsv`; the Google download
is not on GitHub). Original repository {SOURCES["paws"][0]} @ {SOURCES["paws"][1]}. Licence (its LICENSE file):
"The dataset may be freely used for any purpose, although acknowledgement of Google LLC ("Google") as the data
source would be appreciated." Evaluation only; not in the project repo.

Conversion (`bench/external_sets.py dedupe_pawsx_zh`): rows with the "NS" placeholder (PAWS-X's own caveat) are
left out; from each split {per_label} pairs labelled 1 (paraphrase) and {per_label} labelled 0 (not a paraphrase:
the words are swapped so the meaning changes) are drawn with a fixed seed ({SEED}). As Mnemo pairs: `existing` =
sentence1, `new` = sentence2; label 1 → `duplicate`, 0 → `distinct`. No update pairs come from this set.
PAWS-X's dev and test share some sentence1 texts (its README says so) but no pair.

| split | usable rows | pairs drawn |
|---|---|---|
{chr(10).join(counts)}
"""
    write("dedupe_pawsx_zh", files, readme)


STSB_SAME, STSB_DIFFERENT = 4.5, 3.5


def convert_stsb() -> None:
    files, counts = {}, []
    for split in ("dev", "test"):
        english = list(csv.reader(io.StringIO(show("stsb", f"data/stsb-en-{split}.csv"))))
        chinese = list(csv.reader(io.StringIO(show("stsb", f"data/stsb-zh-{split}.csv"))))
        assert len(english) == len(chinese)
        rng = random.Random(f"{SEED}-stsb-{split}")
        pairs = []
        for index, (en, zh) in enumerate(zip(english, chinese, strict=True)):
            score = float(en[2])
            assert abs(score - float(zh[2])) < 1e-6
            label = (
                "duplicate" if score >= STSB_SAME else "partial" if score >= STSB_DIFFERENT else "distinct"
            )
            # One of the three language pairings per row (chosen at random), so each source pair counts once.
            mode = rng.choice(("en", "zh", "cross"))
            if mode == "en":
                pairs.append(
                    pair(f"stsb-{split}-{index}-en", "en", en[0], en[1], label, "scored", score=score)
                )
            elif mode == "zh":
                pairs.append(
                    pair(f"stsb-{split}-{index}-zh", "zh", zh[0], zh[1], label, "scored", score=score)
                )
            else:
                pairs.append(
                    pair(f"stsb-{split}-{index}-x", "mixed", en[0], zh[1], label, "scored", score=score)
                )
        # Translation pairs: a sentence and its Chinese translation state the same thing.
        for index in rng.sample(range(len(english)), 150):
            en, zh = english[index], chinese[index]
            if en[0].strip() == zh[0].strip():
                continue
            if index % 2:
                pairs.append(
                    pair(f"stsb-{split}-{index}-tr", "mixed", en[0], zh[0], "duplicate", "translation")
                )
            else:
                pairs.append(
                    pair(f"stsb-{split}-{index}-tr", "mixed", zh[0], en[0], "duplicate", "translation")
                )
        rng.shuffle(pairs)
        files[f"pairs_{split}.json"] = {"name": f"stsb_{split}", "split": split, "pairs": pairs}
        by = defaultdict(int)
        for p in pairs:
            by[(p["lang"], p["label"])] += 1
        counts.append(
            f"| {split} | "
            + " | ".join(
                str(by[(lang, label)])
                for lang in ("en", "zh", "mixed")
                for label in ("duplicate", "partial", "distinct")
            )
            + " |"
        )
    readme = f"""# STS benchmark, English original and Chinese translation

Source: STSb Multi MT, {SOURCES["stsb"][0]} @ {SOURCES["stsb"][1]}: `data/stsb-en-{{dev,test}}.csv` (the
English STS benchmark of Cer et al. 2017, human similarity scores 0-5) and `data/stsb-zh-{{dev,test}}.csv` (the
same rows machine-translated to Chinese with DeepL, same order and scores). Licence (its LICENSE): the scores
are CC BY-SA 4.0; the texts keep the licences of their sources (news headlines, image captions, forums, and
MSRpar, whose text needs Microsoft Research's terms). Evaluation only; not in the project repo.

Conversion (`bench/external_sets.py dedupe_stsb`), per split (the benchmark's dev and test):
- Every row becomes one pair, in one of three pairings chosen at random with a fixed seed ({SEED}): English
  (sentence1, sentence2), Chinese (both translated) or cross-language (English sentence1, Chinese sentence2).
  Label by the annotators' mean score: ≥ {STSB_SAME} → `duplicate` ("completely equivalent"), < {STSB_DIFFERENT}
  → `distinct`, in between → `partial` ("mostly equivalent, unimportant details differ": neither a repeat nor a
  different fact; a bench reports them apart). `score` keeps the original score.
- 150 translation pairs: an English sentence and its Chinese translation (`duplicate`, kind `translation`), in
  alternating direction. The Chinese side is machine translation: a few translations drop or blur a detail.

Pairs per split and label (English duplicate / partial / distinct, Chinese …, mixed …; mixed includes the
translation pairs):

| split | en dup | en partial | en distinct | zh dup | zh partial | zh distinct | mixed dup | mixed partial | mixed distinct |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(counts)}
"""
    write("dedupe_stsb", files, readme)


_TOKEN = re.compile(r"[\w']+|[^\w\s]")


def _with_now(sentence: str) -> str:
    """ "Tom lives in Chicago." → "Tom lives in Chicago now.": the English change marker before the last mark."""
    match = re.match(r"^(.*?)([.!。]*)$", sentence.strip())
    assert match is not None
    return f"{match.group(1)} now{match.group(2) or '.'}"


def convert_tatoeba() -> None:
    rows = []
    for line in show("tatoeba", "cmn.txt").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip() and parts[1].strip():
            rows.append((parts[0].strip(), parts[1].strip(), parts[2].strip()))
    statements = [r for r in rows if not r[0].endswith("?") and not r[1].endswith(("?", "？"))]
    rng = random.Random(f"{SEED}-tatoeba")
    pairs: dict[str, list[dict]] = {"dev": [], "test": []}

    # 1. Cross-language restatements: a sentence and its translation.
    for index in rng.sample(range(len(statements)), 800):
        en, zh, _ = statements[index]
        split = split_of(en)
        if index % 2:
            pairs[split].append(pair(f"tatoeba-x{index}", "mixed", en, zh, "duplicate", "translation"))
        else:
            pairs[split].append(pair(f"tatoeba-x{index}", "mixed", zh, en, "duplicate", "translation"))

    # 2. Paraphrases through a shared translation: two English sentences translated by the same Chinese one,
    #    and two Chinese translations of the same English sentence.
    by_zh, by_en = defaultdict(list), defaultdict(list)
    for en, zh, _ in statements:
        by_zh[zh].append(en)
        by_en[en].append(zh)
    for lang, groups in (("en", by_zh), ("zh", by_en)):
        found = []
        for pivot, texts in groups.items():
            texts = list(dict.fromkeys(texts))
            if len(texts) >= 2 and texts[0].casefold() != texts[1].casefold():
                found.append((pivot, texts[0], texts[1]))
        for number, (pivot, one, other) in enumerate(rng.sample(found, min(400, len(found)))):
            pairs[split_of(pivot)].append(
                pair(f"tatoeba-{lang}p{number}", lang, one, other, "duplicate", "pivot")
            )

    # 3. Value changes marked as changes. Natural minimal pairs: two English sentences that differ in exactly
    #    one token, a number or a capitalised word not at the start, in both. The later one, with the explicit
    #    change marker ("now"; Chinese "现在" before the sentence), is an update of the first.
    slots = defaultdict(dict)
    for en, zh, _ in statements:
        tokens = _TOKEN.findall(en)
        for i in range(1, len(tokens)):
            value = tokens[i]
            if tokens[i - 1] in (".", "!", "?", '"'):
                continue  # a capital that opens a sentence is no name
            if value.isdigit() or (value[0].isupper() and value not in ("I", "I'm", "I'll", "I've", "I'd")):
                key = tuple(tokens[:i]) + ("\0",) + tuple(tokens[i + 1 :])
                slots[key].setdefault(value, (en, zh))
    number = 0
    for key, values in slots.items():
        items = list(values.items())
        if len(items) < 2:
            continue
        (value1, (en1, zh1)), (value2, (en2, zh2)) = items[0], items[1]
        if value1.casefold().startswith(value2.casefold()) or value2.casefold().startswith(value1.casefold()):
            continue  # "Sunday" / "Sundays": one value
        if zh1 == zh2:
            continue  # the translations do not tell the values apart
        split = split_of(" ".join(t for t in key if t != "\0"))
        number += 1
        pairs[split].append(
            pair(f"tatoeba-u{number}-en", "en", en1, _with_now(en2), "contradiction", "marked-change")
        )
        pairs[split].append(
            pair(f"tatoeba-u{number}-zh", "zh", zh1, "现在" + zh2, "contradiction", "marked-change")
        )
        pairs[split].append(
            pair(f"tatoeba-u{number}-x", "mixed", en1, "现在" + zh2, "contradiction", "marked-change")
        )
    files = {}
    counts = []
    for split in ("dev", "test"):
        rng.shuffle(pairs[split])
        files[f"pairs_{split}.json"] = {"name": f"tatoeba_{split}", "split": split, "pairs": pairs[split]}
        by = defaultdict(int)
        for p in pairs[split]:
            by[(p["kind"], p["lang"])] += 1
        counts.append(
            f"| {split} | {by[('translation', 'mixed')]} | {by[('pivot', 'en')]} | {by[('pivot', 'zh')]} | "
            f"{by[('marked-change', 'en')]} | {by[('marked-change', 'zh')]} | {by[('marked-change', 'mixed')]} |"
        )
    readme = f"""# Tatoeba English-Chinese sentence pairs: restatements and marked value changes

Source: Tatoeba's English-Chinese sentence pairs as packaged by manythings.org (`cmn.txt`: English, Chinese,
attribution per line), in {SOURCES["tatoeba"][0]} @ {SOURCES["tatoeba"][1]}. Licence: CC-BY 2.0 (France),
"Attribution: tatoeba.org #<sentence id> (<author>)" on every line (kept in the source file, not copied here).
Evaluation only; not in the project repo.

Only statements are used (neither side ends with a question mark). The split is by a SHA-256 hash of the English
sentence (translations, pivots) or of the shared words (value changes), so a sentence and its partners stay on
one side. Three kinds of pair are built, all labelled by how they are built (seed {SEED}):
1. `translation` (label `duplicate`, lang `mixed`): 800 random statements, the English sentence and its Chinese
   translation, in alternating order (existing English, new Chinese, then the other way round).
2. `pivot` (label `duplicate`): two English sentences that Tatoeba translates with the same Chinese sentence (en),
   and two Chinese translations of the same English sentence (zh); up to 400 each.
3. `marked-change` (label `contradiction`, i.e. the new memory replaces the old one): natural minimal pairs, two
   English statements in Tatoeba that differ in exactly one token, which is a number or a capitalised word not
   opening a sentence in both ("I study Korean." / "I study English."); pairs whose two values are one word and
   its plural ("Sunday" / "Sundays") or whose Chinese translations are identical are left out. The first is the existing memory; the second,
   with an explicit change marker, is the new one: English "… now." (before the final mark), Chinese "现在" put
   before the translation, and a cross-language pair (English first, marked Chinese second). The marker is what
   makes it an update: without it two such sentences can both hold ("I study Korean" and "English"), which no
   label here claims either way. These pairs are few (Tatoeba's cmn subset has few minimal pairs) and built, not
   found: read their figures as a check, not a measure of recall on real updates.

| split | translation | pivot en | pivot zh | marked-change en | marked-change zh | marked-change mixed |
|---|---|---|---|---|---|---|
{chr(10).join(counts)}
"""
    write("dedupe_tatoeba", files, readme)


CONVERTERS = {
    "ner_uner": convert_ner_uner,
    "ner_btc": convert_ner_btc,
    "dedupe_pawsx_zh": convert_pawsx,
    "dedupe_stsb": convert_stsb,
    "dedupe_tatoeba": convert_tatoeba,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=sorted(CONVERTERS), action="append")
    args = parser.parse_args()
    for name in args.only or CONVERTERS:
        CONVERTERS[name]()


if __name__ == "__main__":
    main()
