"""Scan what is already stored for secrets and mask them: `manage.py scan_secrets` and the privacy settings' action.

One user at a time, through each app's own masking (memories.masking, knowledge.masking): memories through the
same service as edits (history kept, entities relinked, mirrors rewritten), chunks re-embedded, chat messages,
edit history and the search log changed in place. A user whose privacy settings keep secrets is left as is: the
scan reports what it found there and changes nothing (`skipped`).
"""

from collections import Counter
from dataclasses import dataclass, field

from django.contrib.auth.models import User

from core import privacy
from core.models import PrivacySettings
from core.secret_text import API_KEY, PASSWORD, PRIVATE_KEY
from knowledge import masking as knowledge_masking
from memories import masking as memory_masking

KINDS = (API_KEY, PASSWORD, PRIVATE_KEY)
PLACES = (
    memory_masking.MEMORIES,
    memory_masking.METADATA,
    memory_masking.HISTORY,
    knowledge_masking.TITLES,
    knowledge_masking.DOCUMENTS,
    knowledge_masking.CHUNKS,
    memory_masking.CHAT,
    memory_masking.SEARCH_LOG,
)


@dataclass
class ScanReport:
    dry_run: bool
    counts: Counter = field(default_factory=Counter)  # (place, kind) → secrets
    users: int = 0
    skipped: list[str] = field(default_factory=list)  # users whose settings keep secrets
    not_changed: int = 0  # memories whose masked version could not be stored

    @property
    def total(self) -> int:
        return sum(n for (_, kind), n in self.counts.items() if kind in KINDS)

    def rows(self) -> list[tuple[str, list[int], int]]:
        """(place, secrets per kind in KINDS order, all) for each place with a secret."""
        table = []
        for place in PLACES:
            numbers = [self.counts[(place, kind)] for kind in KINDS]
            if any(numbers):
                table.append((place, numbers, sum(numbers)))
        return table


def scan_secrets(*, users: list[User], dry_run: bool, editor: User | None = None) -> ScanReport:
    """Find the secrets stored for each of `users` and, unless `dry_run`, mask them. `editor` is recorded as
    the memories' editor (the person who ran the scan from the console; none from the command line)."""
    report = ScanReport(dry_run=dry_run)
    for user in users:
        keeps = PrivacySettings.policies_for(user)[privacy.SECRET] == privacy.KEEP
        if keeps:
            report.skipped.append(user.get_username())
        report.counts += scan_user(user=user, dry_run=dry_run or keeps, editor=editor)
        report.users += 1
    report.not_changed = report.counts.pop((memory_masking.MEMORIES, "not changed"), 0)
    return report


def scan_user(*, user: User, dry_run: bool, editor: User | None = None) -> Counter:
    counts = memory_masking.memories_mask_secrets(user=user, editor=editor, dry_run=dry_run)
    counts += knowledge_masking.documents_mask_secrets(user=user, dry_run=dry_run)
    counts += memory_masking.chat_mask_secrets(user=user, dry_run=dry_run)
    counts += memory_masking.search_log_mask_secrets(user=user, dry_run=dry_run)
    return counts
