r"""Units of measure after a number: a small explicit table, so that ``6 m`` is not ``6 cm``.

:func:`measure` reads the words after a number (``cm``, ``km/h``, ``square meters``,
``m/s^2``) as a :class:`Unit`: a dimension and the factor to that dimension's base unit.
Two numbers with units are equal when their dimensions agree and their values in base units
do (``200 cm`` is ``2 m``, ``90 min`` is ``1.5 hours``); different dimensions never are
(``6 kg`` is not ``6 m``). A number without a unit is taken in the other side's unit
(``6`` matches ``6 cm``, not ``600 cm``), and words that are no unit of the table
(``dollars``, ``apples``) are labels, dropped as before.

The table is length, area and volume (through length; litres, US customary measures, hectares
and acres), mass, time, months/years (a month has no fixed number of days, so they convert only
to each other), force, pressure, power, energy, frequency, money (one dimension per currency)
and temperature (one dimension per scale). Exact factors; a unit is
``name``, ``square``/``sq``/``cubic name``, ``name^2``/``name^3``, or ``A/B`` / ``A per B``
(also ``A an B``: ``60 miles an hour``). sympy's ``physics.units`` would do the same with a
lookup we would still have to whitelist (its ``c`` is the speed of light, ``G`` the
gravitational constant, and it has no ``lb``); this table is the whole of what answers use.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple


class Unit(NamedTuple):
    """A unit: its dimension and the factor from it to the dimension's base unit."""

    dimension: tuple[tuple[str, int], ...]
    """Base quantities with their powers, sorted (``(("length", 1), ("time", -1))``)."""
    factor: Fraction
    """One of this unit in base units (``km`` -> 1000: metres)."""
    letter: str = ""
    """A one-letter unit (``m``, ``s``, ``h``, ``g``) as written: it may be a variable too
    (``\\frac{1}{2} h``), read so when the other side has variables."""
    offset: Fraction = Fraction(0)
    """Added after the factor: a temperature's zero (``0 °C`` is 273.15 K)."""
    money: tuple[tuple[tuple[str, int], ...], Fraction] | None = None
    """Of a rate in money (``$15 per hour``), the money alone: it matches a plain amount."""
    change: bool = False
    """A temperature change (``50 °F change``: "it rose by 50 °F"): converted without offset."""


def _names(dimension: str, factor: Fraction | int | str, *names: str) -> dict:
    return {n: (dimension, Fraction(factor)) for n in names}


_MONEY = {
    **_names("usd", 1, "usd", "dollar", "dollars", "dólar", "dólares", "dola", "bucks"),
    **_names("usd", 1, "dolar", "dolary", "dolarów", "dollari", "dollaro", "dolarů"),
    **_names("peso", 1, "peso", "pesos", "mxn", "ars", "cop", "clp"),
    **_names("eur", 1, "eur", "euro", "euros"),
    **_names("gbp", 1, "gbp"),
    **_names("gbp", "1/100", "pence", "penny", "pennies"),
    **_names("jpy", 1, "jpy", "yen"),
    **_names("yenyuan", 1, "yenyuan"),  # ¥: Japan's yen and China's yuan both
    **_names("myr", 1, "myr", "ringgit"),
    **_names("inr", 1, "inr", "rupee", "rupees", "rs"),
    **_names("inr", "1/100", "paise", "paisa"),
    **_names("chf", 1, "chf", "fr", "franc", "francs", "franken"),
    **_names("sek", 1, "kr", "sek", "kronor", "krona"),
    **_names("sek", "1/100", "öre"),
    **_names("nok", 1, "nok", "kroner", "krone"),
    **_names("nok", "1/100", "øre"),
    **_names("dkk", 1, "dkk"),
    **_names("aud", 1, "aud"),
    **_names("nzd", 1, "nzd"),
    **_names("cad", 1, "cad"),
    **_names("hkd", 1, "hkd"),
    **_names("sgd", 1, "sgd"),
    **_names("try", 1, "tl", "try", "lira", "liras"),
    **_names("cny", 1, "cny", "rmb", "yuan"),
    **_names("cny", "1/10", "jiao"),
    **_names("krw", 1, "krw", "won"),
    **_names("aed", 1, "aed", "dirham", "dirhams"),
    **_names("sar", 1, "sar", "riyal", "riyals"),
    **_names("egp", 1, "egp"),
    **_names("uah", 1, "uah", "hryvnia"),
    **_names("irt", 1, "irt", "toman", "tomans"),
    **_names("irr", 1, "irr", "rial", "rials"),
    **_names("dinar", 1, "dinar", "dinars", "kwd", "jod", "iqd"),
    **_names("lira", 1, "lbp"),
    **_names("ngn", 1, "ngn", "naira"),
    **_names("kzt", 1, "kzt", "tenge"),
    **_names("gel", 1, "gel", "lari"),
    **_names("lak", 1, "lak", "kip"),
    **_names("khr", 1, "khr", "riel", "riels"),
    **_names("mmk", 1, "mmk", "kyat", "kyats"),
    **_names("etb", 1, "etb", "birr"),
    **_names("kes", 1, "kes", "shilingi", "shilling", "shillings", "ksh"),
    **_names("thb", 1, "thb", "baht"),
    **_names("bdt", 1, "bdt", "taka"),
    **_names("ils", 1, "ils", "shekel", "shekels"),
    **_names("php", 1, "php", "piso"),
    **_names("idr", 1, "idr", "rupiah", "rupiahs"),
    **_names("vnd", 1, "vnd", "đồng", "dong", "đ"),
    **_names("czk", 1, "czk", "kč", "korun", "koruna"),
    **_names("brl", 1, "brl", "reais"),
    **_names("pln", 1, "zł", "zl", "pln", "złoty", "zloty"),
    **_names("rub", 1, "rub", "руб", "рублей", "рубля", "rubles", "roubles"),
}
"""Currencies, one dimension each, by their names and codes after an amount (the signs and
codes written before one, ``$5``, ``EUR 5``, are :data:`envhub.envs.math.numerals._SIGNS`)."""
CURRENCIES = frozenset(dimension for dimension, _ in _MONEY.values())
"""The money dimensions; ``cents`` are a hundredth of whichever the other side has."""
TABLE: dict[str, tuple[str, Fraction]] = {
    **_names("length", "1/1000", "mm", "millimeter", "millimeters", "millimetre", "millimetres"),
    **_names("length", "1/100", "cm", "centimeter", "centimeters", "centimetre", "centimetres"),
    **_names("length", "1/10", "dm", "decimeter", "decimeters", "decimetre", "decimetres"),
    **_names("length", 1, "m", "meter", "meters", "metre", "metres"),
    **_names("length", 1000, "km", "kilometer", "kilometers", "kilometre", "kilometres"),
    **_names("length", "0.0254", "in", "inch", "inches"),
    **_names("length", "0.3048", "ft", "foot", "feet"),
    **_names("length", "0.9144", "yd", "yard", "yards"),
    **_names("length", "1609.344", "mi", "mile", "miles", "mijl", "mijlen", "milla", "millas"),
    **_names("length", "1609.344", "mailia", "maili", "mailin", "meile", "meilen"),
    **_names("length", 500, "li"),
    **_names("length", 1852, "nmi"),
    **_names("length", "1.8288", "fathom", "fathoms"),
    **_names("length", "201.168", "furlong", "furlongs"),
    **_names("length", "4828.032", "league", "leagues"),
    **_names("length", "0.1016", "hand", "hands"),
    **_names("length", "20.1168", "chain", "chains"),
    **_names("length", "1e-10", "angstrom", "angstroms", "å"),
    **_names("mass", "0.2", "carat", "carats"),
    **_names("mass", "6350.29318", "stone", "stones"),
    # measures whose size depends on the country or the trade: their own dimension, never a
    # gallon or a pound (a US oil barrel is 42 gallons, a beer barrel 31)
    **_names("barrel", 1, "barrel", "barrels", "bbl"),
    **_names("bushel", 1, "bushel", "bushels"),
    **_names("hundredweight", 1, "hundredweight", "cwt"),
    **_names("data", 1, "bit", "bits"),
    **_names("data", 8, "byte", "bytes"),
    **_names("mass", "1/1000", "mg", "milligram", "milligrams"),
    **_names("mass", 1, "g", "gram", "grams"),
    **_names("mass", 1000, "kg", "kilogram", "kilograms", "kilo", "kilos"),
    **_names("mass", "28.349523125", "oz", "ounce", "ounces"),
    **_names("mass", "453.59237", "lb", "lbs", "pound", "pounds"),
    **_names("mass", "6350.29318", "stone", "stones", "st"),
    **_names("amount", 1, "mol", "mole", "moles"),
    **_names("data", 8000, "kb", "kilobyte", "kilobytes"),
    **_names("data", 8000000, "mb", "megabyte", "megabytes"),
    **_names("data", 8000000000, "gb", "gigabyte", "gigabytes"),
    **_names("data", 8000000000000, "tb", "terabyte", "terabytes"),
    **_names("energy", 1000000, "mj", "megajoule", "megajoules"),
    **_names("time", 1, "s", "sec", "secs", "second", "seconds"),
    **_names("time", 60, "min", "mins", "minute", "minutes"),
    **_names("time", 3600, "h", "hr", "hrs", "hour", "hours"),
    **_names("time", 86400, "day", "days"),
    **_names("time", 604800, "week", "weeks"),
    **_names("time", 1209600, "fortnight", "fortnights"),
    **_names("time", "1/1000", "ms", "millisecond", "milliseconds"),
    **_names("month", 1, "month", "months"),
    **_names("clock", 1, "clock"),  # a time of day, in minutes after midnight (numerals)
    **_names("month", 12, "year", "years", "yr", "yrs"),
    **_names("month", 120, "decade", "decades"),
    **_names("month", 1200, "century", "centuries"),
    **_names("month", 12000, "millennium", "millennia", "millenniums"),
    **_names("mass", 1000000, "tonne", "tonnes", "t"),
    **_names("power", 1, "w", "watt", "watts"),
    **_names("power", 1000, "kw", "kilowatt", "kilowatts"),
    **_names("power", 1000000, "megawatt", "megawatts"),
    **_names("energy", 1, "j", "joule", "joules"),
    **_names("energy", 1000, "kj", "kilojoule", "kilojoules"),
    **_names("energy", 3600, "wh"),
    **_names("energy", 3600000, "kwh"),
    **_names("energy", "4.184", "cal", "calorie", "calories"),
    **_names("energy", 4184, "kcal", "kilocalorie", "kilocalories"),
    **_names("force", 1, "n", "newton", "newtons"),
    **_names("force", 1000, "kn", "kilonewton", "kilonewtons"),
    **_names("voltage", 1, "v", "volt", "volts"),
    **_names("voltage", 1000, "kv", "kilovolt", "kilovolts"),
    **_names("voltage", "1/1000", "mv", "millivolt", "millivolts"),
    **_names("resistance", 1, "ohm", "ohms", "ω"),
    **_names("resistance", 1000, "kω", "kiloohm", "kiloohms"),
    **_names("current", 1, "ampere", "amperes", "amp", "amps"),
    **_names("current", "1/1000", "milliampere", "milliamperes"),
    **_names("pressure", 1, "pa", "pascal", "pascals"),
    **_names("pressure", 1000, "kpa", "kilopascal", "kilopascals"),
    **_names("pressure", 1000000, "mpa", "megapascal", "megapascals"),
    **_names("pressure", 101325, "atm", "atmosphere", "atmospheres"),
    **_names("pressure", 100000, "bar", "bars"),
    **_names("pressure", "6894.757293168", "psi"),
    **_names("pressure", "133.322387415", "mmhg", "torr"),
    **_names("frequency", 1, "hz", "hertz"),
    **_names("frequency", 1000, "khz", "kilohertz"),
    **_names("frequency", 1000000, "mhz", "megahertz"),
    **_names("frequency", 1000000000, "ghz", "gigahertz"),
    **_MONEY,
    **_names("mass", 500, "jin"),
    **_names("temperature", 1, "degc", "celsius"),
    **_names("temperature", "5/9", "degf", "fahrenheit"),
    **_names("temperature", 1, "kelvin", "kelvins", "k"),
    **_names("time", "1/1000000", "µs", "μs", "microsecond", "microseconds"),
    **_names("time", "1/1000000000", "ns", "nanosecond", "nanoseconds"),
    **_names("length", "1/1000000", "µm", "μm", "micrometer", "micrometers", "micron", "microns"),
    **_names("length", "1/1000000000", "nm", "nanometer", "nanometers", "nanometre"),
    **_names("mass", "1/1000000", "µg", "μg", "mcg", "microgram", "micrograms"),
    **_names("cents", 1, "cent", "cents", "¢", "centavos", "céntimos", "centimes", "centesimi"),
    **_names("cents", 1, "centy", "centów", "centavo", "céntimo"),
    # the same units in German, French, Spanish, Italian, Portuguese and Dutch
    **_names("time", 1, "sekunde", "sekunden", "seconde", "secondes", "secondi", "segundos"),
    **_names("time", 1, "seconden"),
    **_names("time", 3600, "uren"),
    **_names("time", 60, "minuten", "minuto", "minutos", "minuti", "minuut"),
    **_names("time", 3600, "stunde", "stunden", "std", "heure", "heures", "hora", "horas"),
    **_names("time", 3600, "ora", "ore", "uur"),
    **_names("time", 86400, "tag", "tage", "tagen", "jour", "jours", "día", "días", "dia", "dias"),
    **_names("time", 86400, "giorno", "giorni", "dag", "dagen"),
    **_names("time", 604800, "woche", "wochen", "semaine", "semaines", "semana", "semanas"),
    **_names("time", 604800, "settimana", "settimane", "weken"),
    **_names("month", 1, "monat", "monate", "monaten", "mois", "mes", "meses", "mese", "mesi"),
    **_names("month", 1, "mês", "maand", "maanden"),
    **_names("month", 12, "jahr", "jahre", "jahren", "ans", "année", "années", "año", "años"),
    **_names("month", 12, "anno", "anni", "ano", "anos", "jaar", "jaren"),
    **_names("length", 1, "mètre", "mètres", "metro", "metros", "metri"),
    # Polish, Czech, Swedish, Turkish, Indonesian, Tagalog and Swahili
    **_names("time", 1, "sekunda", "sekundy", "sekund", "sekunder", "saniye", "detik", "sekunde"),
    **_names("time", 60, "minuta", "minuty", "minut", "minuter", "dakika", "menit"),
    **_names("time", 3600, "godzina", "godziny", "godzin", "hodina", "hodiny", "hodin", "timme"),
    **_names("time", 3600, "timmar", "saat", "jam", "oras", "saa"),
    **_names("time", 86400, "dzień", "dni", "dny", "dní", "dagar", "gün", "hari", "araw", "siku"),
    **_names("time", 604800, "tydzień", "tygodnie", "tygodni", "týden", "týdny", "vecka", "veckor"),
    **_names("time", 604800, "hafta", "minggu"),
    **_names("length", 1, "metry", "metrów", "metrů", "metre", "mita", "metr"),
    **_names("length", 1000, "kilometry", "kilometrów", "kilometrů", "kilometre", "kilomita"),
    **_names("length", "1/1000", "milimita"),
    **_names("length", "1/1000000", "mililita"),
    **_names("mass", 1000, "kilogramu"),
    **_names("time", 604800, "wiki"),
    **_names("length", "1/100", "centymetr", "centymetry", "centymetrów", "centimetry"),
    **_names("length", "1/100", "centimetrů", "santimetre", "sentimeter", "sentimita"),
    **_names("mass", 1000, "kilogramy", "kilogramów", "kilogramů"),
    **_names("mass", 1, "gramy", "gramów", "gramů", "gramu"),
    **_names("length", 1000, "kilomètre", "kilomètres", "kilómetro", "kilómetros", "chilometri"),
    **_names("length", 1000, "chilometro", "quilômetro", "quilômetros", "quilómetro"),
    **_names("length", "1/100", "zentimeter", "centimètre", "centimètres", "centímetro"),
    **_names("length", "1/100", "centímetros", "centimetro", "centimetri"),
    **_names("mass", 1, "gramm", "gramme", "grammes", "gramo", "gramos", "grammo", "grammi"),
    **_names("mass", 1, "grama", "gramas"),
    **_names("mass", 1000, "kilogramm", "kilogramme", "kilogrammes", "kilogramo", "kilogramos"),
    **_names("mass", 1000, "chilogrammo", "chilogrammi", "quilograma", "quilogramas"),
}
"""Unit names (lower case) -> (base quantity, factor to its base unit).

Money is a unit too, one dimension per currency (``300 cents`` is ``$3``; ``€5`` is not
``$5``, and neither is ``5%``); currency signs become these names in
:func:`envhub.envs.math.latex.clean`. A rate in money (``$15 per hour``) matches a plain amount
(``$15``) but not another rate (``$15 per day``).
Temperatures convert through kelvin with an offset (:data:`_OFFSETS`: ``100 °C`` is ``212 °F``
is ``373.15 K``). A temperature *change* (``rose by 18 °F``, read ``18 °F change``) converts
without them: 18 °F of change is 10 °C of change, and 50 °F of change is not 10 °C.
"""
CHANGE = "change"
"""The word after a temperature that the response calls a change (see :func:`measure`)."""
_OFFSETS = {"degc": Fraction(27315, 100), "celsius": Fraction(27315, 100)}
_OFFSETS.update({"degf": Fraction(45967, 180), "fahrenheit": Fraction(45967, 180)})
"""Temperatures in kelvin: ``K = factor * value + offset``."""
_VOLUME = {
    **_names("length", "1/1000", "l", "liter", "liters", "litre", "litres", "lita", "litr"),
    **_names("length", "1/1000", "litros", "litro", "litri", "liters", "literů", "litrów"),
    **_names("length", "1/100000", "cl", "centiliter", "centiliters", "centilitre", "centilitres"),
    **_names("length", "1/1000000", "ml", "milliliter", "milliliters", "millilitre", "cc"),
    **_names("length", "1/10000", "dl", "deciliter", "deciliters", "decilitre", "decilitres"),
    **_names("length", "1/1000000", "millilitres", "mililiter", "mililitr", "mililitros"),
    **_names("length", "1/1000000", "millilitri", "millilitro", "millilitres"),
    **_names("length", "0.003785411784", "gal", "gallon", "gallons"),
    **_names("length", "0.000946352946", "qt", "quart", "quarts"),
    **_names("length", "0.000473176473", "pt", "pint", "pints"),
    **_names("length", "0.0002365882365", "cup", "cups"),
    **_names("length", "0.0000295735295625", "floz"),
    **_names("length", "0.00001478676478125", "tbsp", "tablespoon", "tablespoons"),
    **_names("length", "0.00000492892159375", "tsp", "teaspoon", "teaspoons"),
}
"""Volumes: cubes of length (a litre is 1/1000 of a cubic metre; US customary measures)."""
_AREAS = {
    **_names("length", 10000, "ha", "hectare", "hectares"),
    **_names("length", "4046.8564224", "acre", "acres"),
    **_names("length", 100, "ares"),
}
"""Areas: squares of length."""
_POWER_WORDS = {"squared": "2", "cubed": "3"}
_SPEEDS = {
    "km/sa": "km/h",  # Turkish saat
    "mph": "mi/h",
    "kph": "km/h",
    "kmh": "km/h",
    "knot": "nmi/h",
    "knots": "nmi/h",
    "mpg": "mi/gal",
    "wpm": "words/min",
}
_PHRASES = {
    "us dollars": "usd",  # (the dots of "U.S." are blanks here)
    "us dollar": "usd",
    "u s dollars": "usd",
    "u s dollar": "usd",
    "dólares americanos": "usd",
    "dólares estadounidenses": "usd",
    "nautical miles": "nmi",
    "nautical mile": "nmi",
    "grad celsius": "degc",
    "stopni celsjusza": "degc",
    "stopnie celsjusza": "degc",
    "stopni fahrenheita": "degf",
    "grad fahrenheit": "degf",
    "degrés celsius": "degc",
    "degrés fahrenheit": "degf",
    "grados celsius": "degc",
    "grados fahrenheit": "degf",
    "gradi celsius": "degc",
    "gradi fahrenheit": "degf",
    "degrees celsius": "degc",
    "degree celsius": "degc",
    "degrees c": "degc",
    "degrees fahrenheit": "degf",
    "degree fahrenheit": "degf",
    "degrees f": "degf",
    "fluid ounces": "floz",
    "fluid ounce": "floz",
    "fl oz": "floz",
    "metric tons": "tonnes",
    "metric ton": "tonne",
    # square and cubic metres in French, Spanish, Italian, Portuguese, German
    "mètres carrés": "square m",
    "mètre carré": "square m",
    "metros cuadrados": "square m",
    "metro cuadrado": "square m",
    "metri quadrati": "square m",
    "metro quadrato": "square m",
    "metros quadrados": "square m",
    "mètres cubes": "cubic m",
    "metros cúbicos": "cubic m",
    "metri cubi": "cubic m",
}
"""Units written in two words, read as one."""
_POWERS = {"square": 2, "sq": 2, "cubic": 3}
_PER = frozenset({"/", "per", "an", "a", "each", "every", "pro", "par", "por", "al", "je"})


def _term(words: list[str]) -> tuple[dict[str, int], Fraction] | None:
    """``[square|cubic] name[^n]`` as base powers and factor; None when it is not one."""
    power = 1
    if len(words) == 2 and words[0] in _POWERS:
        power, words = _POWERS[words[0]], words[1:]
    if len(words) != 1:
        return None
    name, _, exponent = words[0].partition("^")
    if exponent:
        if exponent not in ("2", "3") or power != 1:
            return None
        power = int(exponent)
    for table, dims in ((_VOLUME, 3), (_AREAS, 2)):
        if name in table:
            quantity, factor = table[name]
            return {quantity: dims * power}, factor**power
    if name not in TABLE:
        return None
    quantity, factor = TABLE[name]
    return {quantity: power}, factor**power


def measure(phrase: str, power: str = "") -> Unit | None:
    """The unit that ``phrase`` (the words after a number) names, or None.

    Args:
        phrase: ``cm``, ``km/h``, ``square meters``, ``miles per hour``.
        power: An exponent written after the phrase (``2`` of ``cm^2``); it applies to the
            last unit (``m/s^2``).
    """
    text = " ".join(_SPEEDS.get(w, w) for w in phrase.lower().replace(".", " ").split())
    for words, name in _PHRASES.items():
        if words in text:
            text = re.sub(rf"\b{words}\b", name, text)
    words = text.replace("/", " / ").split()
    change = len(words) == 2 and words[1] == CHANGE and words[0] in _OFFSETS
    if change:
        words.pop()
    if not words:
        return None
    if len(words) > 1 and words[-1] in _POWER_WORDS and not power:  # 5 kilometers squared
        power = _POWER_WORDS[words.pop()]
    if power:
        words[-1] = f"{words[-1]}^{power}"
    cut = next((i for i, w in enumerate(words) if w in _PER and 0 < i < len(words) - 1), None)
    if cut is None and len(words) == 2 and words[0] in ("per", "/"):
        cut = 0  # "15 per day": a rate of a count
    parts = [words] if cut is None else [words[:cut], words[cut + 1 :]]
    terms = [_term(p) if p else ({}, Fraction(1)) for p in parts]
    if len(terms) == 2 and terms[0] is None and terms[1] is not None and len(parts[0]) == 1:
        terms[0] = ({}, Fraction(1))  # 25 pages per hour: a count per a unit (not per day)
    if None in terms:
        return None
    money = None
    if len(terms) == 2 and set(terms[0][0]) <= CURRENCIES | {"cents"}:  # type: ignore[index]
        base, f = terms[0]  # type: ignore[misc]
        money = (tuple(sorted(base.items())), f)  # $15 per hour also matches $15
    elif words in (["pound"], ["pounds"]):
        money = ((("gbp", 1),), Fraction(1))  # a weight, or the money: "spent 25 pounds" is £25
    powers: dict[str, int] = {}
    factor = Fraction(1)
    for sign, (base, f) in zip((1, -1), terms, strict=False):  # type: ignore[misc]
        for quantity, p in base.items():
            powers[quantity] = powers.get(quantity, 0) + sign * p
        factor = factor * f if sign == 1 else factor / f
    letter = phrase.strip() if len(phrase.strip()) == 1 and not power else ""
    offset = _OFFSETS.get(words[0], Fraction(0)) if len(words) == 1 else Fraction(0)
    dimension = tuple(sorted((q, p) for q, p in powers.items() if p))
    return Unit(dimension, factor, letter, offset, money, change)


Scale = tuple[Fraction, Fraction]
"""``(factor, offset)``: a value in base units is ``factor * value + offset``."""
_CENTS = (("cents", 1),)


_YEN_OR_YUAN = (("yenyuan", 1),)
_READ_AS_YEN_OR_YUAN = frozenset({(("jpy", 1),), (("cny", 1),)})


def _either_sign(a: Unit, b: Unit) -> tuple[Unit, Unit]:
    """``¥`` is the yen's sign and the yuan's: beside either, it is that one."""
    if a.dimension == _YEN_OR_YUAN and b.dimension in _READ_AS_YEN_OR_YUAN:
        return a._replace(dimension=b.dimension), b
    if b.dimension == _YEN_OR_YUAN and a.dimension in _READ_AS_YEN_OR_YUAN:
        return a, b._replace(dimension=a.dimension)
    return a, b


def scales(a: Unit | None, b: Unit | None) -> tuple[Scale, Scale] | None:
    """What brings two numbers' units to one base; None when they measure different things.

    A number without a unit is in the other's unit (factor 1, offset 0 on both sides). Cents
    are a hundredth of the other side's currency (``350 cents`` is ``3,50 €`` and ``$3.50``).
    """
    one = (Fraction(1), Fraction(0))
    if a is None or b is None:
        return one, one
    if a.money and a.dimension != b.dimension and not b.money:
        a = Unit(*a.money)  # $15 per hour beside $15: the amounts are compared
    elif b.money and a.dimension != b.dimension and not a.money:
        b = Unit(*b.money)
    if a.dimension == _CENTS and len(b.dimension) == 1 and b.dimension[0][0] in CURRENCIES:
        a = Unit(b.dimension, a.factor / 100)
    elif b.dimension == _CENTS and len(a.dimension) == 1 and a.dimension[0][0] in CURRENCIES:
        b = Unit(a.dimension, b.factor / 100)
    a, b = _either_sign(a, b)
    if a.dimension != b.dimension:
        return None
    if a.change or b.change:  # a change against a reading: the gold names a change too
        return (a.factor, Fraction(0)), (b.factor, Fraction(0))
    return (a.factor, a.offset), (b.factor, b.offset)
