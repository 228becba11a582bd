"""The Django-free core of knowledge ingestion: file -> Markdown -> heading-aware paragraphs -> token chunks."""

from knowledge.pipeline.convert import (
    ConversionError,
    Converted,
    convert_to_markdown,
    detect_kind,
    safe_filename,
)
from knowledge.pipeline.formats import SUPPORTED, Format
from knowledge.pipeline.locations import Part
from knowledge.pipeline.split import ChunkSpec, Paragraph, chunk_paragraphs, split_paragraphs

__all__ = [
    "SUPPORTED",
    "ChunkSpec",
    "ConversionError",
    "Converted",
    "Format",
    "Paragraph",
    "Part",
    "chunk_paragraphs",
    "convert_to_markdown",
    "detect_kind",
    "safe_filename",
    "split_paragraphs",
]
