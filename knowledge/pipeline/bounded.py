"""convert_to_markdown in a child process with a time and a memory budget.

A hostile or pathological file (a compression bomb inside a PDF stream, a page tree that never ends) must fail its
own document with a reason and never take the server or the worker down with it. So the conversion runs in a
child that caps its own address space before it opens the file, and the parent kills it when its time is up.

Children are forked from multiprocessing's fork server, which has already imported MarkItDown: a fresh interpreter
would add about a second per document, and forking the threaded web server itself is unsafe. The fork server is
started on the first conversion of each process and reused after that. As always with multiprocessing, a script
that converts must guard its entry point with ``if __name__ == "__main__"`` (manage.py, gunicorn and celery do).
"""

import multiprocessing
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.stored_text import Text, gettext_noop
from knowledge.pipeline import formats
from knowledge.pipeline.convert import (
    ConversionError,
    Converted,
    convert_to_markdown,
    error_reason,
    safe_filename,
    unpacked_sizes,
)

# Imported once in the fork server, so each child starts with the converters loaded.
_PRELOAD = ["knowledge.pipeline.convert", "markitdown.converters", "pdfplumber", "pypdfium2"]
_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Budget:
    seconds: float
    memory_mb: int  # address space a child may add on top of what the preloaded converters already take

    def memory_for(self, path: str | Path) -> int:
        """The memory one file's conversion may take: for an Office file or an EPUB what its unpacked size can
        need (measured: .docx and .xlsx of 2 and 8 MB of XML converted within 64 MB per MB, none with less
        than 128), at most `memory_mb`, which any other file gets. So a small file with a large declared
        budget cannot take 2 GB, and two of them do not take the server's memory."""
        sizes = unpacked_sizes(path)
        if sizes is None:
            return self.memory_mb
        markup, other = sizes
        needed = FILE_FLOOR_MB + (MARKUP_MB_PER_MB * markup + OTHER_MB_PER_MB * other) / 2**20
        return min(self.memory_mb, round(needed))


FILE_FLOOR_MB = 256
MARKUP_MB_PER_MB = 64  # parsed XML trees and the text built from them
OTHER_MB_PER_MB = 16  # pictures become base64 data in the intermediate HTML


@dataclass(frozen=True)
class LLMSettings:
    """What a child needs to build its own OpenAI client: a client object does not cross a process boundary."""

    base_url: str
    api_key: str
    model: str
    timeout: float


def convert_bounded(
    path: str | Path,
    *,
    filename: str,
    budget: Budget,
    llm: LLMSettings | None = None,
    check: Callable[[], None] = lambda: None,
) -> Converted:
    """Convert as convert_to_markdown does, in a child; ``check`` is called while waiting and may raise to stop."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_convert_in_child,
        args=(sender, str(path), filename, llm, budget.memory_for(path), formats.formats()),
        name=f"convert {safe_filename(filename)}",
        daemon=True,
    )
    child.start()
    sender.close()  # the child holds the only write end: its exit makes the pipe readable (EOF)
    deadline = time.monotonic() + budget.seconds
    try:
        while not receiver.poll(_POLL_SECONDS):
            check()
            if time.monotonic() > deadline:
                raise ConversionError(
                    Text(
                        gettext_noop("Converting %(name)s took longer than the %(seconds)s s limit"),
                        name=safe_filename(filename),
                        seconds=f"{budget.seconds:g}",
                    )
                )
        try:
            outcome, value = receiver.recv()
        except EOFError:
            child.join(5)
            raise ConversionError(
                Text(
                    gettext_noop("Converting %(name)s stopped unexpectedly (exit code %(code)s)"),
                    name=safe_filename(filename),
                    code=str(child.exitcode),
                )
            ) from None
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receiver.close()
    if outcome == "error":
        raise ConversionError(value)
    return value


def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _convert_in_child(
    sender,
    path: str,
    filename: str,
    llm: LLMSettings | None,
    memory_mb: int,
    known: tuple[formats.Format, ...],
) -> None:
    limit = _limit_address_space(memory_mb)
    try:
        # The fork server imported the built-in formats only; a format registered since (a plug-in, a test's
        # made-up one) comes with the parent's registry, its functions imported here by name.
        formats.install(known)
        client = None
        if llm is not None:
            from openai import OpenAI

            client = OpenAI(base_url=llm.base_url, api_key=llm.api_key or "none", timeout=llm.timeout)
        converted = convert_to_markdown(
            path, filename=filename, llm_client=client, llm_model=llm.model if llm else None
        )
        sender.send(("ok", converted))
    except MemoryError:
        sender.send(("error", _over_memory(filename, memory_mb)))
    except Exception as exc:
        # At the limit, the converters' C code fails in its own words ("error return without exception set",
        # a "damaged" document): a child that came that close ran out of memory, whatever the error says.
        message: str  # a Text (core.stored_text) but for a ConversionError raised with plain text
        if _reached(limit) or (isinstance(exc, ConversionError) and exc.out_of_memory):
            message = _over_memory(filename, memory_mb)
        elif isinstance(exc, ConversionError):
            message = exc.message
        else:  # a converter's bug: the user gets a reason, never a bare exit code
            message = Text(
                gettext_noop("%(name)s could not be converted: %(reason)s"),
                name=safe_filename(filename),
                reason=error_reason(exc),
            )
        sender.send(("error", message))
    finally:
        sender.close()


def _over_memory(filename: str, memory_mb: int) -> Text:
    return Text(
        gettext_noop("%(name)s needs more than %(limit)s MB of memory to convert"),
        name=safe_filename(filename),
        limit=f"{memory_mb:,}",
    )


def _limit_address_space(memory_mb: int) -> int | None:
    """Cap this process at what it uses now plus ``memory_mb``: an allocation past it raises MemoryError.
    Returns the cap in bytes (None where it cannot be set)."""
    in_use_kb = _status_kb("VmSize")
    if in_use_kb is None:
        return None  # not Linux: the time budget still holds
    limit = in_use_kb * 1024 + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return limit


def _status_kb(field: str) -> int | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith(f"{field}:")), None)


# An allocation that failed left the peak below the cap by at most its own size: a failure this close to the cap
# is taken for want of memory. (Converters allocate far more than this at a time while parsing.)
_NEAR_LIMIT_BYTES = 64 * 1024 * 1024


def _reached(limit: int | None) -> bool:
    peak_kb = _status_kb("VmPeak")
    return limit is not None and peak_kb is not None and peak_kb * 1024 >= limit - _NEAR_LIMIT_BYTES
