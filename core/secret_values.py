"""The value given to a secret's name, in code, config and prose, in several languages (core.secrets uses it).

- Code and config: a name whose words include a secret's (`db_password`, `PGPASSWORD`, `clientSecret`,
  `SOFTLAYERAPIKEY`, `api_token`), then an assignment, comparison or call (`=`, `:`, `:=`, `=>`, `==`, `,`,
  `(`), then the value: to its closing quote, for a config line (`KEY: value` opening its line) to the line's
  end, else one word. A value in a variable (`${DB_PASS}`, `os.environ["X"]`, `get_secret()`) is a reference,
  not a secret. A name whose secret word is not its last ("token_count", "password_policy") names something
  about a secret, so its value must look like one.
- Prose: a password word ("password", "Passwort", "mot de passe", "contraseña", "密码", "パスワード", …), maybe
  "for/of/für/du/del …" what it opens, a copula ("is", "ist", "est", "es", "是", "为", ":") and the value. After a
  Latin copula the value must look like a password (a letter with a digit or symbol, or four digits or more), so
  "the password is correct" and "the password for the wifi is on the fridge" stay; after a CJK one any Latin
  word is the value ("密码是abc"; "密码是多少" asks).
"""

import re

from core.secret_text import is_cjk, is_random, word_end

# Where a name may hold a secret word: a hint, then the whole name around it is judged.
_HINT = re.compile(
    r"(?i)pass|pwd|pw|secret|token|cred|auth|key|pin|otp|contrase|clave|senha|wachtwoord|kennwort|mot de passe"
    r"|\bmdp\b|пароль|has[łl]o|heslo|lösenord|salasana|şifre|パスワード|暗証番号|비밀번호|암호"
    r"|密码|密碼|口令|密钥|秘钥|密匙|令牌|验证码|驗證碼"
)
_CJK_WORDS = re.compile(r"パスワード|暗証番号|비밀번호|암호|密码|密碼|口令|密钥|秘钥|密匙|令牌|验证码|驗證碼")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.$\-\u00C0-\u024F\u0400-\u04FF]")
_SEGMENT_SPLIT = re.compile(r"[_.$\-]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# Secret words inside a name's words, and the endings that keep them so ("passwords", "secretKey").
_LONG_WORDS = tuple(
    "password passwd passphrase passcode secret token credential apikey authorization".split()
)
_SHORT_WORDS = frozenset("pass pwd pw pswd creds cred pin otp auth key".split())
_TRANSLATED = frozenset(
    "passwort kennwort contraseña contrasena senha wachtwoord mdp пароль hasło haslo heslo lösenord salasana şifre "
    "clave".split()
)
_KEEPING_ENDINGS = frozenset({"", "s", "e", "key", "keys", "value", "str", "string"})
# "<qualifier> key" names a key that is a secret; a lone "key" (a dict key, a keyboard key) only when random.
_KEY_QUALIFIERS = frozenset(
    "api access private secret auth client account service db database master encryption signing app storage "
    "session license priv".split()
)
_WEAK_WORDS = frozenset({"auth", "pin", "otp", "key", "cred", "tokens"})
_NOT_SECRET_WORDS = re.compile(
    r"secretar|tokeni[sz]|passport|passeng|passag|passiv|passion|keyboard|keyword|monkey"
)

# code: a name's closing quote or bracket, an index (`secret[] =`), a type (`x: String =`, `var x string =`),
# then the operator. Space then a quote is an operator too (`password "hunter2";`).
_OPERATOR = re.compile(
    r"""["'`\]]{0,2}(?:\[\d*\])?(?:\s*:\s*[A-Za-z_][\w.<>\[\]]*(?=\s+=[^=])|\s+[A-Za-z_]\w*(?=\s*=[^=]))?[ \t]*
    (?P<op>:{1,3}=|\?\?=|[?+.|]=|!==?|===?|=>|->|=|:(?!//)|,|\((?=\s*["'`])|\.assign\((?=\s*["'`])|(?=["'`]))
    [ \t]*(?:@(?=["'])|new\s+String\(\s*)?""",
    re.VERBOSE,
)
_LINE_OPENER = re.compile(
    r"[ \t]*(?:(?:export|set|setx|declare|local|readonly|ENV|ARG)\s+|-{1,2}|[-*]\s+)?[$\"']?"
)
_NEXT_ASSIGNMENT = re.compile(r"\s+[A-Za-z_][\w.\-]*\s*=")
_REVERSED = re.compile(r"""(["'`])(?P<value>[^"'`\n]+)\1\s*(?:===?|!==?)\s*(?P<name>[A-Za-z_$][\w.$]*)""")

_PREPOSITIONS = (
    r"for|of|to|on|at|in|from|with|into|für|von|vom|zum|zur|des|der|de|du|pour|del|para|da|do|das|dos|voor|van"
    r"|di|della|per|för|til|dla|для|от|к"
)
_LATIN_COPULA = re.compile(
    r"(?<![\w-])(?:(?:is|was|are|were)(?:\s+(?:now|still|set\s+to|changed\s+to|reset\s+to))?"
    r"|(?:has\s+been\s+|have\s+been\s+|got\s+)?(?:changed|set|reset|updated)\s+to"
    r"|ist|lautet|war|est|était|es|era|é|è|är|er|on|jest|je|это)(?=\s)|[:=：]|\s[—–-]\s"
    r"|(?P<cjk>是|为|為)"
)
_CJK_COPULA = re.compile(r"\s*(?:是|为|為|係|：|:|=|は|는|은|이|가)?\s*(?:[:：]\s*)?")
_CLAUSE_END = re.compile(r"[\n.!?;,。！？；，]")

_FILLERS = re.compile(
    r"(?i)null|none|nil|true|false|undefined|empty|required|optional|string|str|int|hidden|redacted|secret"
    r"|password|changeit|[*x.•#]+|\*+\w{0,4}"
)
_REFERENCE = re.compile(
    r"[A-Za-z_][\w.]*(?:\(.*\)|\[.*\])|(?:process\.env|os\.environ|ENV|env|settings|config)\b.*|[$%]\w+"
)
_NOT_A_PASSWORD = re.compile(
    r"(?i)\d{1,4}([-/.年])\d{1,2}\1\d{1,4}日?|\d{1,2}:\d{2}(?::\d{2})?(?:[ap]m)?|v?\d+(?:\.\d+)+[a-z]?"
    r"|[$€£¥]\d[\d,.]*|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?%|\d+(?:st|nd|rd|th|am|pm|kg|km|mb|gb|ms|s|h)"
    r"|\S+://\S*|www\.\S+|[^@\s]+@[^@\s]+\.[a-z]{2,}|[~.]?/\S*|\w+\.(?:com|org|net|io|md|txt|pdf|py|js)"
)


def named_values(text: str) -> list[tuple[int, int]]:
    """The span of every value given to a secret's name in `text`."""
    spans: list[tuple[int, int]] = []
    consumed = 0  # a name already read: a second hint inside it ("passwordToken") is the same name
    for hint in _HINT.finditer(text):
        if hint.start() < consumed:
            continue
        if _CJK_WORDS.fullmatch(hint.group()):
            span = _prose_value(text, hint.end(), cjk=True)
            consumed = hint.end()
        else:
            start, end = _name_bounds(text, hint.start(), hint.end())
            consumed = end
            if start > 0 and text[start - 1] in ":@/=":
                continue  # inside a URL or another value ("redis://u:Pass:word@host"), not a name
            span = _code_value(text, start, end) or _prose_value(text, end, cjk=False, name=text[start:end])
        if span:
            spans.append(span)
    for match in _REVERSED.finditer(text):
        if _strength(match.group("name")) and _acceptable(match.group("value"), weak=False):
            spans.append(match.span("value"))
    return spans


def _name_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and _NAME_CHARS.match(text[start - 1]):
        start -= 1
    while end < len(text) and _NAME_CHARS.match(text[end]):
        end += 1
    while end > start and text[end - 1] in ".-$":
        end -= 1  # a sentence's full stop, a dash after the name
    return start, end


def _strength(name: str) -> str:
    """How surely `name` names a secret: "strong" when its last word is a secret's word ("db_password"), "weak"
    when it names something about one ("token_count", a lone "key"), "" when none ("tokenizer", "publicKey")."""
    if _NOT_SECRET_WORDS.search(name.lower()):
        return ""
    segments = [s.lower().rstrip("0123456789") for s in _SEGMENT_SPLIT.split(name)]
    segments = [s for s in segments if s]  # "token2" is a token, "v1" a version
    found = ""
    for index, segment in enumerate(segments):
        word = _secret_word(segment, segments[index - 1] if index else "")
        if not word:
            continue
        last = all(s in _KEEPING_ENDINGS for s in segments[index + 1 :])
        found = "strong" if last and word not in _WEAK_WORDS else found or "weak"
    return found


def _secret_word(segment: str, previous: str) -> str:
    if segment in _TRANSLATED:
        return segment
    if segment in _SHORT_WORDS:
        if segment in ("key", "keys") and previous in _KEY_QUALIFIERS:
            return "apikey"
        return segment
    if segment == "tokens":
        return "tokens"
    for word in _LONG_WORDS:
        position = segment.find(word)
        if position >= 0 and segment[position + len(word) :] in _KEEPING_ENDINGS:
            return word
    for qualifier in _KEY_QUALIFIERS:
        if segment.endswith(qualifier + "key") or segment.endswith(qualifier + "keys"):
            return "apikey"
    return ""


def _code_value(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The value after `name op` (or inside `<name>…</name>`), when the name holds a secret word."""
    strength = _strength(text[start:end])
    if not strength:
        return None
    if start > 0 and text[start - 1] == "<" and text.startswith(">", end):
        close = text.find("<", end)
        value_start = end + 1 + len(text[end + 1 :]) - len(text[end + 1 :].lstrip())
        value_end = close if close > value_start else word_end(text, value_start)
        while value_end > value_start and text[value_end - 1].isspace():
            value_end -= 1
        value = text[value_start:value_end]
        return (value_start, value_end) if _acceptable(value, weak=strength == "weak") else None
    operator = _OPERATOR.match(text, end)
    if operator is None and text[start] == "-" and text.startswith(" ", end):
        operator = re.compile(r" +").match(text, end)  # a command-line flag: --token VALUE
    if operator is None:
        return None
    op = operator.groupdict().get("op", " ")
    line_start = text.rfind("\n", 0, start) + 1
    opens_line = bool(_LINE_OPENER.fullmatch(text, line_start, start))
    plain_word = text[start:end].isalpha() and not text[start:end].isupper()
    span = _value_at(text, operator.end(), config_line=opens_line and op in ("=", ":", ":="))
    if span is None:
        return None
    value, quoted = text[span[0] : span[1]], span[0] > 0 and text[span[0] - 1] in "\"'`"
    if op == "," and not quoted:
        return None  # a comma joins arguments (`setProperty("X_TOKEN", "…")`), not a word and the next
    if "auth" in text[start:end].lower():
        span = _after_scheme(text, span)
        value = text[span[0] : span[1]]
    if plain_word and not quoted and not opens_line:
        return span if looks_like_password(value) else None
    return span if _acceptable(value, weak=strength == "weak", quoted=quoted) else None


_SCHEME = re.compile(r"(?i)(?:Bearer|Basic|Token|Digest|Api-?Token|ApiKey|Key)\s+")


def _after_scheme(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """An Authorization header's credentials: after its scheme ("Bearer …", "Basic …")."""
    scheme = _SCHEME.match(text, span[0])
    if scheme is None or scheme.end() >= len(text):
        return span
    return scheme.end(), word_end(text, scheme.end())


def _value_at(text: str, position: int, config_line: bool) -> tuple[int, int] | None:
    """The value starting at `position`: a quoted string's inside, a config line's rest, or one word."""
    if position >= len(text) or text[position] in "\r\n":
        return None
    line_end = text.find("\n", position)
    line_end = len(text) if line_end < 0 else line_end
    if text[position] in "\"'`":
        close = text.find(text[position], position + 1, line_end)
        if close > position + 1:
            return position + 1, close
        return (position + 1, word_end(text, position + 1)) if close < 0 else None
    if config_line:
        end = line_end
        following = _NEXT_ASSIGNMENT.search(text, position, end)
        if following:
            end = following.start()
        while end > position and (text[end - 1].isspace() or text[end - 1] in ",;\"'`"):
            end -= 1
        return (position, end) if end > position else None
    end = word_end(text, position)
    return (position, end) if end > position else None


def _acceptable(value: str, *, weak: bool, quoted: bool = False) -> bool:
    """A value a secret's name is given, unless it is a reference, a template or a filler ("****", "null")."""
    from detect_secrets.filters.heuristic import is_templated_secret

    if not any(c.isalnum() for c in value) or is_templated_secret(value):
        return False
    if _FILLERS.fullmatch(value) or _REFERENCE.fullmatch(value):
        return False
    if weak:
        password_like = looks_like_password(value) and len(value) >= 8
        return is_random(value, min_length=12) or password_like or (quoted and len(value) >= 12)
    return True


def looks_like_password(value: str) -> bool:
    """A letter with a digit, a symbol or a capital inside ("Tr0ub4dor&3", "Zebra-Horse-42", "latteForAll"), or
    four digits or more ("739204"); not a date, time, version, amount, address or path."""
    if not 4 <= len(value) <= 200 or _NOT_A_PASSWORD.fullmatch(value):
        return False
    if value.isdigit():
        return True
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(not c.isalnum() and c not in "-.'’" for c in value)
    inner_capital = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return letters and (digits or symbols or inner_capital)


def _prose_value(text: str, position: int, *, cjk: bool, name: str = "") -> tuple[int, int] | None:
    """The value after a password word in prose: "… for X is V", "… V" (no copula), "密码是V", "密码 V"."""
    if not cjk and not _is_prose_word(name):
        return None
    if cjk:
        copula = _CJK_COPULA.match(text, position)
        start = copula.end() if copula else position
        span = _quoted_or_word(text, start)
        if span is None or is_cjk(text[span[0]]):
            return None
        value = text[span[0] : span[1]]
        said = copula is not None and copula.group().strip() != ""
        return span if any(c.isalnum() for c in value) and (said or looks_like_password(value)) else None
    window_end = _CLAUSE_END.search(text, position, position + 80)
    limit = window_end.start() if window_end else min(len(text), position + 80)
    for copula in _LATIN_COPULA.finditer(text, position, limit + 2):
        between = text[position : copula.start()]
        if between.strip() and not re.match(rf"\s+(?:{_PREPOSITIONS})\s", between, re.IGNORECASE):
            continue
        start = copula.end() + len(text[copula.end() :]) - len(text[copula.end() :].lstrip(" \t"))
        span = _quoted_or_word(text, start)
        if span is None:
            return None
        value = text[span[0] : span[1]]
        if copula.group("cjk"):  # "wifi password是abc": a Latin word after a CJK copula is the value
            return span if not is_cjk(value[0]) and any(c.isalnum() for c in value) else None
        return span if looks_like_password(value) else None
    if _is_password_word(name) and text[position : position + 1] in (" ", "\t"):
        span = _quoted_or_word(text, position + 1)
        if span:
            value = text[span[0] : span[1]]
            if len(value) >= 6 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                return span
    return None


_PROSE_NAMES = re.compile(
    r"(?i)(?:pass(?:word|phrase|code)s?|pwd|pin|passwort|kennwort|mot de passe|mdp|contraseña|contrasena|clave|senha"
    r"|wachtwoord|has[łl]o|heslo|lösenord|salasana|şifre|пароль|secret|token|credentials?|key)"
)


def _is_prose_word(name: str) -> bool:
    """A word of prose naming a secret: "password", "Passwort", "WLAN-Passwort", "wifi-password", "token"."""
    return bool(name) and bool(_PROSE_NAMES.fullmatch(re.split(r"[-_]", name)[-1]))


def _is_password_word(name: str) -> bool:
    return _is_prose_word(name) and not re.fullmatch(r"(?i).*(?:secret|token|credentials?|key)", name)


def _quoted_or_word(text: str, start: int) -> tuple[int, int] | None:
    if start >= len(text):
        return None
    if text[start] in "\"'`“「『":
        closing = {"“": "”", "「": "」", "『": "』"}.get(text[start], text[start])
        close = text.find(closing, start + 1, start + 200)
        return (start + 1, close) if close > start + 1 else None
    end = word_end(text, start)
    return (start, end) if end > start else None
