"""Typed readers for environment variables.

Every setting Mnemo reads from the environment goes through these helpers, so a wrong value fails at start-up
with a message that names the variable instead of a traceback deep inside a library.
"""

import os

from django.core.exceptions import ImproperlyConfigured


class ConfigError(ImproperlyConfigured):
    """A setting from the environment is missing or malformed; the message names the variable."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = env_str(name)
    if not raw:
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true or false).")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be at least {minimum}.")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name}={value} must be at most {maximum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number.") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be at least {minimum}.")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default).lower()
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...]) -> str:
    """An optional URL whose scheme must be one of `schemes`; empty means "not configured"."""
    value = env_str(name)
    if value and not value.startswith(tuple(f"{scheme}://" for scheme in schemes)):
        raise ConfigError(
            f"{name}={value!r} must start with one of: {', '.join(s + '://' for s in schemes)}."
        )
    return value
