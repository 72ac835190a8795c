"""Number words that num2words does not write: Hindi, Korean native counts, Czech tens.

:func:`~envhub.envs.math.spelled.gold_in_words` looks for the gold's own value spelled in a
response's language. num2words has no Hindi, writes Korean in Sino-Korean only (``이십사``),
while a count before a counter word is native (``스물네 개``, 24), and writes Czech ``čtyřicet
dva`` only (``dvaačtyřicet``, 42, is as common). These spell the same values those ways.
"""

from __future__ import annotations

_HINDI = (
    "शून्य एक दो तीन चार पाँच छह सात आठ नौ दस ग्यारह बारह तेरह चौदह पंद्रह सोलह सत्रह अठारह"
    " उन्नीस बीस इक्कीस बाईस तेईस चौबीस पच्चीस छब्बीस सत्ताईस अट्ठाईस उनतीस तीस इकतीस बत्तीस"
    " तैंतीस चौंतीस पैंतीस छत्तीस सैंतीस अड़तीस उनतालीस चालीस इकतालीस बयालीस तैंतालीस"
    " चौवालीस पैंतालीस छियालीस सैंतालीस अड़तालीस उनचास पचास इक्यावन बावन तिरपन चौवन पचपन"
    " छप्पन सत्तावन अट्ठावन उनसठ साठ इकसठ बासठ तिरसठ चौंसठ पैंसठ छियासठ सड़सठ अड़सठ उनहत्तर"
    " सत्तर इकहत्तर बहत्तर तिहत्तर चौहत्तर पचहत्तर छिहत्तर सतहत्तर अठहत्तर उन्यासी अस्सी"
    " इक्यासी बयासी तिरासी चौरासी पचासी छियासी सत्तासी अट्ठासी नवासी नब्बे इक्यानवे बानवे"
    " तिरानवे चौरानवे पचानवे छियानवे सत्तानवे अट्ठानवे निन्यानवे"
).split()
"""Hindi's words for 0-99: each its own word, no rule makes them."""
_HINDI_VARIANTS = {5: ("पांच",), 6: ("छः", "छे"), 38: ("अड़तिस",), 48: ("अड़तालिस",)}
_HINDI_SCALES = ((10**7, ("करोड़",)), (10**5, ("लाख",)), (1000, ("हज़ार", "हजार")), (100, ("सौ",)))

_KOREAN_UNITS = {
    1: "하나",
    2: "둘",
    3: "셋",
    4: "넷",
    5: "다섯",
    6: "여섯",
    7: "일곱",
    8: "여덟",
    9: "아홉",
}
_KOREAN_COUNTING = {1: "한", 2: "두", 3: "세", 4: "네"}
"""The forms of 1-4 before a counter word (``네 개``, four items)."""
_KOREAN_TENS = {10: "열", 20: "스물", 30: "서른", 40: "마흔", 50: "쉰", 60: "예순", 70: "일흔"}
_KOREAN_TENS |= {80: "여든", 90: "아흔"}

_CZECH_UNITS = ("", "jedna", "dva", "tři", "čtyři", "pět", "šest", "sedm", "osm", "devět")
_CZECH_TENS = ("", "", "dvacet", "třicet", "čtyřicet", "padesát", "šedesát", "sedmdesát")
_CZECH_TENS += ("osmdesát", "devadesát")


_GREEK_UNITS = (
    ("",),
    ("ένα", "ένας", "μία", "μια"),
    ("δύο", "δυο"),
    ("τρία", "τρεις"),
    ("τέσσερα", "τέσσερις"),
    ("πέντε",),
    ("έξι",),
    ("επτά", "εφτά"),
    ("οκτώ", "οχτώ"),
    ("εννέα", "εννιά"),
)
_GREEK_TEENS = {
    10: ("δέκα",),
    11: ("έντεκα",),
    12: ("δώδεκα",),
    13: ("δεκατρία", "δεκατρείς"),
    14: ("δεκατέσσερα", "δεκατέσσερις"),
    15: ("δεκαπέντε",),
    16: ("δεκαέξι", "δεκάξι"),
    17: ("δεκαεπτά", "δεκαεφτά"),
    18: ("δεκαοκτώ", "δεκαοχτώ"),
    19: ("δεκαεννέα", "δεκαεννιά"),
}
_GREEK_TENS = ("", "", "είκοσι", "τριάντα", "σαράντα", "πενήντα", "εξήντα", "εβδομήντα")
_GREEK_TENS += ("ογδόντα", "ενενήντα")
_GREEK_HUNDREDS = (
    ("",),
    ("εκατόν",),
    ("διακόσια",),
    ("τριακόσια",),
    ("τετρακόσια",),
    ("πεντακόσια",),
    ("εξακόσια",),
    ("επτακόσια", "εφτακόσια"),
    ("οκτακόσια", "οχτακόσια"),
    ("εννιακόσια", "εννεακόσια"),
)
"""Greek, which num2words does not write: units and teens in their neuter and other forms,
tens, hundreds (``εκατόν`` before more, ``εκατό`` alone) and thousands (``χίλια``, ``δύο
χιλιάδες``)."""


def extra_spellings(value: int, lang: str) -> tuple[str, ...]:
    """``value`` in the words of ``lang`` that num2words does not write (none for most)."""
    if lang == "hi":
        return _hindi(value)
    if lang == "el" and 0 <= value < 10**4:
        return _greek(value)
    if lang == "ko" and 0 < value < 100:
        return _korean_native(value)
    if lang == "cs" and 20 < value < 100 and value % 10:
        tens, unit = _CZECH_TENS[value // 10], _CZECH_UNITS[value % 10]
        forms = (f"{unit}a{tens}",)  # dvaačtyřicet, 42
        return (*forms, f"jedena{tens}") if value % 10 == 1 else forms  # jedenadvacet, 21
    return ()


def _hindi(value: int) -> tuple[str, ...]:
    """``value`` in Hindi: ``अड़तालीस`` (48), ``एक सौ बीस`` (120), ``दो हज़ार`` (2000)."""
    if value < 100:
        return (_HINDI[value], *_HINDI_VARIANTS.get(value, ()))
    for scale, names in _HINDI_SCALES:
        if value >= scale:
            count, rest = divmod(value, scale)
            heads = [f"{c} {name}" for c in _hindi(count) for name in names]
            if count == 1 and scale == 100:
                heads += list(names)  # सौ alone is a hundred
            tails = _hindi(rest) if rest else ("",)
            return tuple(f"{head} {tail}".strip() for head in heads for tail in tails)
    return ()


def _korean_native(value: int) -> tuple[str, ...]:
    """``value`` (1-99) in native Korean: ``스물네``, ``스물넷`` (24), ``스무`` (20, counting)."""
    tens, unit = divmod(value, 10)
    head = _KOREAN_TENS.get(tens * 10, "")
    if not unit:
        return (head, "스무") if value == 20 else (head,)
    units = (_KOREAN_UNITS[unit], *([_KOREAN_COUNTING[unit]] if unit in _KOREAN_COUNTING else []))
    return tuple(head + u for u in units)


def _greek(value: int) -> tuple[str, ...]:
    """``value`` (0-9999) in Greek: ``σαράντα δύο`` (42), ``χίλια διακόσια πενήντα`` (1250)."""
    if value == 0:
        return ("μηδέν",)
    thousands, rest = divmod(value, 1000)
    if thousands == 0:
        return _greek_below_thousand(rest)
    heads = ("χίλια",) if thousands == 1 else tuple(f"{u} χιλιάδες" for u in _greek(thousands))
    tails = _greek_below_thousand(rest) if rest else ("",)
    return tuple(f"{h} {t}".strip() for h in heads for t in tails)


def _greek_below_thousand(value: int) -> tuple[str, ...]:
    hundreds, rest = divmod(value, 100)
    if value == 100:
        return ("εκατό",)
    heads = _GREEK_HUNDREDS[hundreds]
    if rest in _GREEK_TEENS:
        tails = _GREEK_TEENS[rest]
    else:
        tens, unit = divmod(rest, 10)
        tails = tuple(f"{_GREEK_TENS[tens]} {u}".strip() for u in _GREEK_UNITS[unit])
    return tuple(f"{h} {t}".strip() for h in heads for t in tails)
