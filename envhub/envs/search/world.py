"""A generated, seeded world of fictional entities: fact documents and multi-hop questions.

The offline default corpus of the ``search`` environment. Six kinds of entities (countries,
cities, universities, people, companies, inventions) are linked by functional relations
(a company has one founder, a person one birthplace, ...). Every entity gets one document made
of fact sentences in fixed forms (:data:`FACTS`), mentions of the entities that point to it,
and filler, shuffled so that some facts sit beyond a search snippet. Names are built from
shared stems, so near-namesakes (``Ostrel Systems`` and ``Ostrel Dynamics``, people sharing a
family name) act as distractors.

Questions follow a chain of two or three relations from an anchor entity ("In which country
was the founder of X born?"), so no single search answers them. The same ``seed`` and sizes
always give the same world, byte for byte.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from envhub.types import Task

FACTS: dict[tuple[str, str], str] = {
    ("country", "region"): "{s} is a country in {o}.",
    ("country", "capital"): "The capital of {s} is {o}.",
    ("country", "language"): "The official language of {s} is {o}.",
    ("country", "currency"): "The currency of {s} is the {o}.",
    ("city", "country"): "{s} is a city in {o}.",
    ("city", "river"): "{s} lies on the {o} River.",
    ("city", "mayor"): "The mayor of {s} is {o}.",
    ("city", "founded"): "{s} was settled in the year {o}.",
    ("university", "city"): "{s} is a university located in {o}.",
    ("university", "founded"): "{s} admitted its first students in {o}.",
    ("person", "occupation"): "{s} is a {o} by profession.",
    ("person", "birth_city"): "{s} was born in {o}.",
    ("person", "birth_year"): "The birth year of {s} is {o}.",
    ("person", "university"): "{s} studied at {o}.",
    ("company", "industry"): "{s} is a company in the {o} industry.",
    ("company", "founder"): "{s} was founded by {o}.",
    ("company", "founded"): "{s} was established in the year {o}.",
    ("company", "hq"): "{s} has its headquarters in {o}.",
    ("invention", "year"): "The {s} was first demonstrated in {o}.",
    ("invention", "inventor"): "The {s} was invented by {o}.",
    ("invention", "manufacturer"): "The {s} is manufactured by {o}.",
}
"""Sentence form of each (kind, relation); the first relation of a kind opens its document."""

MENTIONS: dict[tuple[str, str], str] = {
    ("company", "founder"): "{o} founded {s}.",
    ("invention", "inventor"): "{o} invented the {s}.",
    ("city", "mayor"): "{o} serves as the mayor of {s}.",
    ("company", "hq"): "{o} is home to the headquarters of {s}.",
}
"""Back-references written into the object's document (distractor text for retrieval)."""

FILLER = (
    "{s} is mentioned in several regional archives.",
    "Records about {s} were revised in a later survey.",
    "Historians disagree about some early details concerning {s}.",
    "A short account of {s} appears in an old almanac.",
    "{s} has been the subject of a local exhibition.",
    "Travel guides describe {s} only briefly.",
)


@dataclass(frozen=True)
class Template:
    """A multi-hop question form: an anchor kind and the chain of relations to follow."""

    key: str
    text: str
    """Question with ``{a}`` for the anchor's name."""
    anchor: str
    chain: tuple[tuple[str, str], ...]


TEMPLATES: tuple[Template, ...] = (
    Template(
        "founder_birth_city",
        "In which city was the founder of {a} born?",
        "company",
        (("company", "founder"), ("person", "birth_city")),
    ),
    Template(
        "founder_birth_country",
        "In which country was the founder of {a} born?",
        "company",
        (("company", "founder"), ("person", "birth_city"), ("city", "country")),
    ),
    Template(
        "maker_founded_year",
        "In what year was the company that manufactures the {a} founded?",
        "invention",
        (("invention", "manufacturer"), ("company", "founded")),
    ),
    Template(
        "inventor_university",
        "Which university did the inventor of the {a} attend?",
        "invention",
        (("invention", "inventor"), ("person", "university")),
    ),
    Template(
        "capital_mayor",
        "Who is the mayor of the capital of {a}?",
        "country",
        (("country", "capital"), ("city", "mayor")),
    ),
    Template(
        "birthplace_river",
        "On which river does the birthplace of {a} lie?",
        "person",
        (("person", "birth_city"), ("city", "river")),
    ),
    Template(
        "maker_hq_country",
        "In which country is the company that manufactures the {a} headquartered?",
        "invention",
        (("invention", "manufacturer"), ("company", "hq"), ("city", "country")),
    ),
    Template(
        "hq_language",
        "What is the official language of the country where {a} is headquartered?",
        "company",
        (("company", "hq"), ("city", "country"), ("country", "language")),
    ),
)

HOPS = (
    min(len(t.chain) for t in TEMPLATES),
    max(len(t.chain) for t in TEMPLATES),
)
"""The fewest and the most relations a question follows (its hops)."""

DEFAULT_SIZES: dict[str, int] = {
    "country": 30,
    "city": 300,
    "university": 60,
    "person": 1200,
    "company": 600,
    "invention": 600,
}

_ONSETS = (
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "z",
    "th",
    "sh",
    "ch",
)
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ia", "ou", "ei")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "k", "x", "nd", "rn", "lt")
_REGIONS = (
    "the Northern Reach",
    "the Amber Coast",
    "the Iron Steppe",
    "the Glass Isles",
    "the Southern Marches",
    "the High Plateau",
    "the Eastern Shelf",
)
_CURRENCY = ("mark", "crown", "florin", "dinar", "tael", "shilling")
_OCCUPATIONS = (
    "chemist",
    "painter",
    "merchant",
    "surveyor",
    "physician",
    "banker",
    "novelist",
    "composer",
    "builder",
    "teacher",
    "sculptor",
    "diplomat",
)
_INDUSTRIES = (
    "shipping",
    "textile",
    "mining",
    "software",
    "brewing",
    "railway",
    "pharmaceutical",
    "insurance",
    "publishing",
    "glassmaking",
)
_CO_SUFFIX = ("Systems", "Dynamics", "Labs", "Industries", "Works", "Group", "Holdings")
_INV_NOUNS = (
    "Loom",
    "Compass",
    "Lantern",
    "Engine",
    "Press",
    "Telescope",
    "Valve",
    "Pump",
    "Clock",
    "Kiln",
    "Sextant",
    "Dynamo",
    "Barometer",
    "Lathe",
    "Gyroscope",
    "Furnace",
    "Capacitor",
    "Turbine",
    "Relay",
    "Prism",
)
_CITY_PREFIX = ("New ", "Port ", "Upper ", "Lower ", "Fort ")


@dataclass
class Entity:
    """One entity of the world and its outgoing relations (values are names or numbers)."""

    kind: str
    name: str
    doc_id: str = ""
    rel: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Doc:
    """One document of a corpus."""

    doc_id: str
    title: str
    text: str


@dataclass
class World:
    """The generated entities, their documents, and lookup by name."""

    seed: int
    entities: list[Entity]
    docs: list[Doc]
    by_name: dict[str, Entity]

    def answer(self, template: Template, anchor: str) -> tuple[str, list[str]]:
        """Follow ``template``'s chain from ``anchor``: the answer and the doc ids on the way."""
        name, path = anchor, []
        for kind, relation in template.chain:
            entity = self.by_name[name]
            if entity.kind != kind:
                raise ValueError(f"{template.key}: {name!r} is a {entity.kind}, not a {kind}")
            path.append(entity.doc_id)
            name = entity.rel[relation]
        return name, path

    def questions(
        self, split: str, size: int | None, seed: int, hops: tuple[int, int] = HOPS
    ) -> list[Task]:
        """Questions of ``split``; train and test use disjoint (template, anchor) pairs.

        Only templates whose chain has ``hops[0]`` to ``hops[1]`` relations are asked.
        """
        rng = random.Random(f"questions:{self.seed}:{seed}:{split}")
        pools = []
        for t in TEMPLATES:
            if not hops[0] <= len(t.chain) <= hops[1]:
                continue
            anchors = [
                e.name
                for e in self.entities
                if e.kind == t.anchor and _split_of(t.key, e.name) == split
            ]
            rng.shuffle(anchors)
            pools.append((t, anchors))
        size = size or 500
        tasks: list[Task] = []
        depth = 0
        while len(tasks) < size and any(depth < len(a) for _, a in pools):
            for t, anchors in pools:
                if depth < len(anchors) and len(tasks) < size:
                    tasks.append(self._task(split, len(tasks), t, anchors[depth]))
            depth += 1
        return tasks

    def _task(self, split: str, index: int, template: Template, anchor: str) -> Task:
        answer, path = self.answer(template, anchor)
        aliases = (
            [f"{answer} River", f"the {answer} River"] if template.key.endswith("river") else []
        )
        return Task(
            task_id=f"{split}-{index:05d}",
            prompt=template.text.format(a=anchor),
            answer=answer,
            metadata={
                "template": template.key,
                "anchor": anchor,
                "hops": len(template.chain),
                "difficulty": len(template.chain),
                "aliases": aliases,
                "path": path,
            },
        )


def _split_of(template: str, anchor: str) -> str:
    """Stable train/test assignment of a question: one in five goes to test."""
    digest = hashlib.sha256(f"{template}|{anchor}".encode()).digest()
    return "test" if digest[0] % 5 == 0 else "train"


class _Namer:
    """Unique, pronounceable names drawn from a seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int = 2) -> str:
        r = self.rng
        return "".join(
            r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS) for _ in range(syllables)
        ).capitalize()

    def unique(self, make: Callable[[], str]) -> str:
        for _ in range(10_000):
            name = make()
            if name not in self.used and len(name) > 3:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted; lower the world sizes")

    def stems(self, n: int, syllables: int = 2) -> list[str]:
        return [self.unique(lambda: self.word(syllables)) for _ in range(n)]


def _countries(nm: _Namer, rng: random.Random, n: int) -> list[Entity]:
    countries = [Entity("country", nm.unique(lambda: nm.word(3))) for _ in range(n)]
    languages = nm.stems(len(countries))
    for c, lang in zip(countries, languages, strict=True):
        c.rel.update(
            region=rng.choice(_REGIONS),
            language=lang + "ic",
            currency=f"{nm.word(2)} {rng.choice(_CURRENCY)}",
        )
    return countries


def _cities(nm: _Namer, rng: random.Random, n: int, countries: list[Entity]) -> list[Entity]:
    """``n`` cities; the first city of each country becomes its capital."""
    bases = nm.stems(max(1, n * 2 // 3))
    rivers = nm.stems(max(1, n // 4))
    cities = []
    for i in range(n):
        country = countries[i] if i < len(countries) else rng.choice(countries)
        name = nm.unique(lambda: rng.choice(("",) * 3 + _CITY_PREFIX) + rng.choice(bases))
        river = rng.choice(rivers)  # drawn before the year: the order of draws is the world
        rel = {"country": country.name, "river": river, "founded": str(rng.randint(900, 1850))}
        cities.append(Entity("city", name, rel=rel))
        if "capital" not in country.rel:
            country.rel["capital"] = name
    return cities


def _universities(nm: _Namer, rng: random.Random, n: int, cities: list[Entity]) -> list[Entity]:
    unis = []
    for _ in range(n):
        city = rng.choice(cities)
        name = nm.unique(
            lambda c=city: rng.choice(
                (
                    f"University of {c.name}",
                    f"{nm.word(2)} Institute of Technology",
                    f"{nm.word(2)} College",
                    f"{c.name} Polytechnic",
                )
            )
        )
        rel = {"city": city.name, "founded": str(rng.randint(1500, 1950))}
        unis.append(Entity("university", name, rel=rel))
    return unis


def _people(
    nm: _Namer, rng: random.Random, n: int, cities: list[Entity], unis: list[Entity]
) -> list[Entity]:
    firsts, lasts = nm.stems(150), nm.stems(max(1, n // 3))
    return [
        Entity(
            "person",
            nm.unique(lambda: f"{rng.choice(firsts)} {rng.choice(lasts)}"),
            rel={
                "occupation": rng.choice(_OCCUPATIONS),
                "birth_city": rng.choice(cities).name,
                "birth_year": str(rng.randint(1800, 1990)),
                "university": rng.choice(unis).name,
            },
        )
        for _ in range(n)
    ]


def _companies(
    nm: _Namer, rng: random.Random, n: int, people: list[Entity], cities: list[Entity]
) -> list[Entity]:
    """``n`` companies, each founded 20 to 50 years after its founder's birth."""
    co_stems = nm.stems(max(1, n * 2 // 5))
    companies = []
    for _ in range(n):
        founder = rng.choice(people)
        companies.append(
            Entity(
                "company",
                nm.unique(lambda: f"{rng.choice(co_stems)} {rng.choice(_CO_SUFFIX)}"),
                rel={
                    "industry": rng.choice(_INDUSTRIES),
                    "founder": founder.name,
                    "founded": str(int(founder.rel["birth_year"]) + rng.randint(20, 50)),
                    "hq": rng.choice(cities).name,
                },
            )
        )
    return companies


def _inventions(
    nm: _Namer, rng: random.Random, n: int, people: list[Entity], companies: list[Entity]
) -> list[Entity]:
    adjectives = nm.stems(max(1, n // 4))
    return [
        Entity(
            "invention",
            nm.unique(lambda: f"{rng.choice(adjectives)} {rng.choice(_INV_NOUNS)}"),
            rel={
                "year": str(rng.randint(1700, 2000)),
                "inventor": rng.choice(people).name,
                "manufacturer": rng.choice(companies).name,
            },
        )
        for _ in range(n)
    ]


def _make_entities(rng: random.Random, sizes: dict[str, int]) -> list[Entity]:
    """Entities and their relations, kind by kind (``doc_id`` filled in by :func:`generate`).

    The kinds are drawn from ``rng`` in this order, which is part of the world: reordering
    the calls changes every world.
    """
    nm = _Namer(rng)
    countries = _countries(nm, rng, sizes["country"])
    cities = _cities(nm, rng, sizes["city"], countries)
    unis = _universities(nm, rng, sizes["university"], cities)
    people = _people(nm, rng, sizes["person"], cities, unis)
    companies = _companies(nm, rng, sizes["company"], people, cities)
    inventions = _inventions(nm, rng, sizes["invention"], people, companies)
    mayors = rng.sample(people, k=min(len(people), len(cities)))
    for city, mayor in zip(cities, mayors, strict=True):
        city.rel["mayor"] = mayor.name
    return [*countries, *cities, *unis, *people, *companies, *inventions]


def _document(rng: random.Random, e: Entity, mentions: list[str]) -> Doc:
    """The document of one entity: its opening fact, then shuffled facts, mentions, filler."""
    facts = [
        FACTS[(e.kind, r)].format(s=e.name, o=o)
        for (k, r) in FACTS
        if k == e.kind
        for o in [e.rel.get(r)]
        if o is not None
    ]
    body = facts[1:] + mentions + [f.format(s=e.name) for f in rng.sample(FILLER, 2)]
    rng.shuffle(body)
    return Doc(doc_id=e.doc_id, title=e.name, text=" ".join([facts[0], *body]))


@lru_cache(maxsize=4)
def _generate(seed: int, sizes: tuple[tuple[str, int], ...]) -> World:
    rng = random.Random(f"world:{seed}")
    entities = _make_entities(rng, dict(sizes))
    by_name = {e.name: e for e in entities}
    for i, e in enumerate(entities):
        e.doc_id = f"doc-{i:05d}"
    mentions: dict[str, list[str]] = {e.name: [] for e in entities}
    for e in entities:
        for (kind, rel), form in MENTIONS.items():
            if e.kind == kind and rel in e.rel:
                mentions[e.rel[rel]].append(form.format(s=e.name, o=e.rel[rel]))
    docs = [_document(rng, e, mentions[e.name]) for e in entities]
    return World(seed=seed, entities=entities, docs=docs, by_name=by_name)


def generate(seed: int = 0, sizes: dict[str, int] | None = None) -> World:
    """The world of ``seed`` (cached per process); ``sizes`` overrides entity counts."""
    merged = {**DEFAULT_SIZES, **(sizes or {})}
    unknown = sorted(set(merged) - set(DEFAULT_SIZES))
    if unknown:
        raise ValueError(f"unknown entity kind(s) {unknown}; sizes take {sorted(DEFAULT_SIZES)}")
    if any(v < 1 for v in merged.values()) or merged["person"] < merged["city"]:
        raise ValueError(f"world sizes must be positive with person >= city, got {merged}")
    return _generate(seed, tuple(sorted(merged.items())))
