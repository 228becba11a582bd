"""Input types of the knowledge API shared with other apps' schemas."""

from typing import Annotated

from ninja import Field

from knowledge.services import NAMESPACE

# The rule knowledge.services.check_namespace applies, as a schema pattern (which also refuses what it strips).
Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE.pattern, description="Letters, digits, '_', '-' and '.', at most 100 characters."
    ),
]
