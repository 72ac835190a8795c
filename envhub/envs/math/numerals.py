r"""Numbers as the world writes them, rewritten into the one form the parser reads.

:func:`normalize` runs inside :func:`envhub.envs.math.latex.clean`, on one answer, before its
thousands separators are read. Each rule changes notation, never a value:

* **Money.** A currency sign or code becomes a unit name after its number: ``$5``, ``\$5``,
  ``€15``, ``15 €``, ``£3.20``, ``¥500``, ``₹1,00,000``, ``Rs. 500``, ``CHF 1'250.50`` read
  ``5 usd``, ``15 eur``, ... (:mod:`envhub.envs.math.units` has one dimension per currency, so
  ``300 cents`` is ``$3`` and ``$5`` is neither ``€5`` nor ``5%``). A bare ``$`` is a currency
  sign only where the ``$`` signs of the answer are unpaired (``$5$`` is math mode).
* **Scale words** multiply: ``1.5 million``, ``2 thousand``, ``12 dozen``, and after a
  currency sign ``$1.5k``, ``$2.5M``, ``$3bn``.
* **Digit groups** of other locales: Indian lakh and crore (``1,23,456``, ``1,50,00,000``),
  Swiss apostrophes (``1'250.50``), and spaced thousands before a decimal comma
  (``12 345,678``: a space groups thousands only where a comma is the decimal mark).
* **Temperature marks**: ``25 °C``, ``25^\circ\text{C}``, ``25℃`` read ``25 degc`` (and ``degf``).
* **Unicode notation**: a fraction over the fraction slash (``⁵⁄₈``), superscript exponents
  (``10⁶``, ``10⁻³``, ``2¹⁰``), cube and fourth roots (``∛8``, ``³√8``), and a root sign before
  a number (``√27`` is ``\sqrt{27}``, never ``\sqrt{2}\cdot 7``). Vulgar fractions (``3½``) are
  read earlier, in :func:`envhub.envs.math.latex.plain_digits`, so the number reader sees them.

:func:`number_words` reads an answer written in English words (``twenty-five``, ``one hundred
and five``, ``three quarters``, ``a dozen``).
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_SIGNS = {
    "\\$": "usd",
    "$": "usd",
    "€": "eur",
    "\\euro": "eur",
    "£": "gbp",
    "\\pounds": "gbp",
    "¥": "yenyuan",
    "\\yen": "jpy",
    "₹": "inr",
    "₺": "try",
    "₽": "rub",
    "₪": "ils",
    "฿": "thb",
    "₦": "ngn",
    "₴": "uah",
    "₸": "kzt",
    "₾": "gel",
    "₭": "lak",
    "៛": "khr",
    "৳": "bdt",
    "₨": "inr",
    "USD": "usd",
    "US$": "usd",
    "EUR": "eur",
    "GBP": "gbp",
    "JPY": "jpy",
    "INR": "inr",
    "Rs.": "inr",
    "Rs": "inr",
    "CHF": "chf",
    "A$": "aud",
    "AU$": "aud",
    "NZ$": "nzd",
    "C$": "cad",
    "CA$": "cad",
    "HK$": "hkd",
    "S$": "sgd",
    "MX$": "peso",
    "Fr.": "chf",
    "kr ": "sek",
    "kr.": "sek",
    "SFr.": "chf",
    "₩": "krw",
    "KRW": "krw",
    "R$": "brl",
    "BRL": "brl",
    "AED": "aed",
    "SAR": "sar",
    "EGP": "egp",
    "CNY": "cny",
    "RMB": "cny",
    "RUB": "rub",
    "TRY": "try",
    "PLN": "pln",
    "Rp.": "idr",
    "Rp": "idr",
    "IDR": "idr",
    "₫": "vnd",
    "VND": "vnd",
    "₱": "php",
    "RM": "myr",
}
_SIGNS |= {k.replace("$", "\\$"): v for k, v in _SIGNS.items() if k[-1] == "$" and k[0].isalpha()}
# (R\$ and US\$ as LaTeX writes them)
"""The signs and codes written before an amount (``$5``, ``EUR 5``, ``Rs. 500``; a sign may
follow it too, ``15 €``: :data:`_AFTER`), each with the name of its currency in
:data:`envhub.envs.math.units._MONEY`, which reads the names and codes written after one."""
_SIGN = "|".join(re.escape(s) for s in sorted(_SIGNS, key=len, reverse=True))
_NUM = r"\d+(?:[,.'’ ]\d+)*"
"""A number with any grouping; the locale rules below read its separators."""
_SCALES = {
    "thousand": 1000,
    "million": 10**6,
    "billion": 10**9,
    "trillion": 10**12,
    "dozen": 12,
    "k": 1000,
    "m": 10**6,
    "mn": 10**6,
    "b": 10**9,
    "bn": 10**9,
    "lakh": 10**5,
    "crore": 10**7,
}
_SHORT_SCALES = frozenset({"k", "m", "mn", "b", "bn"})
"""Scale letters, read as such only right after a currency amount (``$1.5k``; ``5 m`` is metres)."""
_BEFORE = re.compile(
    rf"(?P<sign>{_SIGN})\s*(?P<num>[-+]?{_NUM})"
    rf"(?:\s*(?P<scale>(?:thousand|million|billion|trillion|lakh|crore)s?\b|(?:k|K|M|mn|bn|B)(?![A-Za-z])))?"
)
_AFTER = re.compile(
    r"(?P<num>\d(?:[\d,.'’ ]*\d)?)\s*"
    r"(?P<sign>€|£|¥|₹|₺|₽|₩|₪|฿|₦|₴|₸|₾|₭|៛|৳|₨|¢|\\euro|\\pounds|\$(?![\w$]))"
)
_SCALE_WORD = re.compile(
    r"(?<![\d.,])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*"
    r"(?:(?P<scale>thousand|million|billion|trillion|dozen)s?\b"
    r"|(?P<word>(?:[^\W\d_]|[\u0900-\u0dff\u0e00-\u0eff])+))"  # with Indic and Thai marks
    r"(?P<of>\.?(?:\s+(?:de|di|of)\b|\s+d['’](?=[^\W\d_])))?",
    re.IGNORECASE,
)
"""A number and a scale word, and the "of" that may follow it (``1,5 millones de entradas``,
``2,5 Mio. €``, ``1,2 million d'euros``)."""
_FOREIGN_SCALES = {
    **dict.fromkeys(
        ["tausend", "mille", "mil", "тысяч", "тысячи", "тысяча", "bin", "tysięcy"], 1000
    ),
    **dict.fromkeys(
        ["millionen", "millions", "millones", "milioni", "milhões", "milhão", "miljoen"], 10**6
    ),
    **dict.fromkeys(["миллион", "миллиона", "миллионов", "milion", "miliony", "milionów"], 10**6),
    **dict.fromkeys(["milyon", "lakh", "lakhs", "लाख"], 10**6),
    "elfu": 1000,
    "bilioni": 10**9,
    **dict.fromkeys(["milliarden", "milliards", "miliardi", "миллиарда", "milyar"], 10**9),
    "crore": 10**7,
    "करोड़": 10**7,
}
"""Scale words of other languages (a lakh is 10**5: corrected below)."""
_FOREIGN_SCALES.update({"lakh": 10**5, "lakhs": 10**5, "लाख": 10**5})
_FOREIGN_SCALES.update(dict.fromkeys(["millón", "mio", "mln"], 10**6))
_FOREIGN_SCALES.update(dict.fromkeys(["milliarde", "milliard", "mrd", "miliardo", "mld"], 10**9))
_FOREIGN_SCALES.update(
    dict.fromkeys(["mila", "tys", "tysiące", "tisíc", "ribu", "nghìn", "ngàn"], 1000)
)
_FOREIGN_SCALES.update(dict.fromkeys(["miliona", "milionu", "milionů", "juta", "triệu"], 10**6))
_FOREIGN_SCALES.update(dict.fromkeys(["miliar", "tỷ", "miliardy", "miliardů"], 10**9))
_FOREIGN_SCALES.update(dict.fromkeys(["هزار", "ألف", "آلاف", "हज़ार", "हजार"], 1000))
_FOREIGN_SCALES.update(dict.fromkeys(["میلیون", "مليون", "ملايين"], 10**6))
_FOREIGN_SCALES.update(dict.fromkeys(["লাখ", "لاکھ", "லட்சம்", "లక్ష", "લાખ", "लक्ष"], 10**5))
_FOREIGN_SCALES.update(dict.fromkeys(["करोड", "কোটি", "کروڑ", "கோடி", "కోటి", "કરોડ", "कोटी"], 10**7))
_FOREIGN_SCALES.update(dict.fromkeys(["হাজার", "ہزار", "ஆயிரம்", "వేల", "હજાર"], 1000))
_FOREIGN_SCALES.update(dict.fromkeys(["अरब", "bilhão", "bilhões"], 10**9))
_FOREIGN_SCALES.update(
    dict.fromkeys(["billón", "billones", "biljoen", "bilion", "biliony", "bilionów"], 10**12)
)
_FOREIGN_SCALES["billionen"] = 10**12
_FOREIGN_SCALES.update(dict.fromkeys(["miljard", "miljarden"], 10**9))
_FOREIGN_SCALES.update({"тыс": 1000, "тис": 1000, "млн": 10**6, "млрд": 10**9})
"""The long scale: a Spanish billón, Dutch biljoen, Polish bilion and German Billion are
10**12 (a French or German "billion" is read so by :func:`locales.long_scale`)."""
SCALE_WORD = "|".join(
    sorted(
        [rf"{w}s?" for w in ("thousand", "million", "billion", "trillion")]
        + [re.escape(w) for w in _FOREIGN_SCALES if w not in ("mil", "bin")],
        key=len,
        reverse=True,
    )
)
"""Scale words in English and the languages of :data:`_FOREIGN_SCALES`, as one alternation
(``mil`` and ``bin`` left out: ``5 mil`` is also a length, ``bin`` a word)."""
_INDIAN = re.compile(r"(?<![\d.,])[1-9]\d?(?:,\d\d)+,\d{3}(?:\.\d+)?(?![\d,])")
"""Lakh and crore grouping: ``1,23,456``, ``12,34,567.5``, ``1,50,00,000``."""
_APOSTROPHE = re.compile(r"(?<![\d.,'’])[1-9]\d{0,2}(?:['’]\d{3})+(?:\.\d+)?(?![\d'’])")
"""Swiss grouping: ``1'250.50``, ``12'345``."""
_SPACED_COMMA = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?: \d{3})+,\d+(?![\d,.])")
"""Spaced thousands with a decimal comma: ``12 345,678``, ``1 234,50``."""
_SPACED_WHOLE = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?: \d{3})+(?![\d,.]|\s*[-+*/^\d])")
"""Spaced thousands before a word or the end: ``1 250 euros``."""
_SPACED_POINT = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?: \d{3})+\.\d+(?![\d,.])")
"""Spaced thousands with a decimal point (SI style): ``12 345.6``."""
_DEGREE = r"(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|°|º)"
_TEMPERATURE = re.compile(
    rf"{_DEGREE}\s*(?:\\(?:text|mathrm|rm|mbox)\s*\{{\s*(?P<braced>[CF])\s*\}}"
    r"|(?P<scale>[CF])(?![A-Za-z]))|(?P<sign>℃|℉)"
)
_SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺"
_SUPER_TO_ASCII = str.maketrans(_SUPERSCRIPT, "0123456789-+")
_SUB_TO_ASCII = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_SLASHED = re.compile(r"([⁰¹²³⁴⁵⁶⁷⁸⁹]+)\s*[⁄/]\s*([₀₁₂₃₄₅₆₇₈₉]+)")
_EXPONENT = re.compile(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_ROOT = re.compile(r"(?:(?P<index>[²³⁴])\s*√|(?P<sign>[∛∜√]))\s*(?P<arg>\d+(?:\.\d+)?)?")


_YUAN = re.compile(
    r"(?<![\d.])(\d+)\s*[元块塊](?:\s*(\d)\s*[角毛](?:\s*(\d)\s*分)?|(\d)(?=$|[。．.，,！!？?\s]))"
)
"""Yuan with its tenths and hundredths: ``2元3角5分`` is 2.35 yuan, ``12块8`` (spoken) 12.8."""


def _yuan(m: re.Match) -> str:
    yuan, jiao, fen, spoken = m.groups()
    value = Decimal(yuan) + Decimal(jiao or spoken or 0) / 10 + Decimal(fen or 0) / 100
    return f"{value.normalize():f} cny"


_THOUSANDS_OF = re.compile(r"(?<![\d.,])(\d+(?:\.\d+)?)\s*k([€$])")
_BASIS_POINTS = re.compile(r"(?i)(?<![\d.])(\d+(?:\.\d+)?)\s*(?:basis\s+points?|bps?)\b")
_PER_WORDS = re.compile(r"(?i)(?<=\d)\s*(?:per\s+cent|per\s*mille|permille|promille|por\s+mil)\b")
"""Percent and per mille in words: "15 per cent" is 15%, "3 per mille" 0.3%."""
_HOURS_AND_A_HALF = re.compile(
    r"(?i)(?<![\d.])(\d+)\s*(?:(?:hours?|horas?|heures?|ore|uur|時間|小时|小時|個小時)\s*"
    r"(?:(?:and|y|e|et|und)\s+)?(?:a\s+half|media|meia|demie|mezza|半)(?![^\W\d_])"
    r"|[个個]半(?:小时|小時|钟头|鐘頭))"
)
"""Hours and a half: "3 hours and a half", "3 horas e meia", "3時間半" are 3.5 hours."""
_INDIC_SCALES = {
    **dict.fromkeys(["लाख", "লাখ", "লক্ষ", "لاکھ", "லட்சம்", "లక్షల", "లక్ష", "લાખ", "लक्ष"], "lakh"),
    **dict.fromkeys(["करोड़", "करोड", "কোটি", "کروڑ", "கோடி", "కోట్ల", "కోటి", "કરોડ", "कोटी"], "crore"),
}
_INDIC_SCALE = re.compile("|".join(sorted(_INDIC_SCALES, key=len, reverse=True)))
_THAI_SCALES = {"พัน": 1000, "หมื่น": 10**4, "แสน": 10**5, "ล้าน": 10**6}
_THAI_SCALE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(พัน|หมื่น|แสน|ล้าน)")
_CJK_SPEED = re.compile(
    r"(?P<per>時速|时速|秒速|分速|每小时|每小時|每秒钟?|每秒鐘|每分钟|每分鐘)\s*(?:行|走|跑|行驶|行駛)?"
    r"\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>キロメートル|キロ|千米|公里|km|メートル|米|公尺|m)(?:です|。)?"
)
_CJK_PER = {"時": "h", "时": "h", "小": "h", "秒": "s", "分": "min"}
_PER_TIME = {
    "minute": "毎分|每分钟|每分鐘|每分|分速|분당|분속|dakikada",
    "hour": "毎時|每小时|每小時|時速|时速|시속|시간당|saatte",
    "second": "毎秒|每秒钟|每秒鐘|每秒|秒速|초속|초당|saniyede",
    "day": "毎日|每天|每日|하루에|günde",
}
PER_TIME_LEAD = "|".join(w for words in _PER_TIME.values() for w in words.split("|"))
"""Words before an amount that make it a rate: ``毎分4リットル``, ``시속 60km``, ``saatte 15``."""
_PER_TIME_OF = {w: time for time, words in _PER_TIME.items() for w in words.split("|")}
_RATE_FIRST = re.compile(
    rf"(?P<per>{PER_TIME_LEAD})\s*(?P<amount>\d+(?:\.\d+)?\s*[^\W\d_]+)", re.IGNORECASE
)


def _rate_first(m: re.Match) -> str:
    """``毎分4リットル`` -> ``4リットル per minute`` (its unit read on by the word table)."""
    return f"{m['amount']} per {_PER_TIME_OF[m['per'].lower()]}"


def _cjk_speed(m: re.Match) -> str:
    """``時速60キロ``, ``每小时60千米``, ``每秒20米`` -> ``60 km/h``, ``20 m/s``: a speed."""
    per = _CJK_PER[m.group("per")[1] if m.group("per")[0] == "每" else m.group("per")[0]]
    unit = "km" if m.group("unit") in ("キロメートル", "キロ", "千米", "公里", "km") else "m"
    return f"{m.group('n')} {unit}/{per}"


_WARI = re.compile(r"(?<![\d.])(\d)割(?:(\d)分)?")


def _wari(m: re.Match) -> str:
    """``6割`` -> ``60%``, ``6割5分`` -> ``65%``: tenths (割) and hundredths (分) in Japanese."""
    return f"{int(m[1]) * 10 + int(m[2] or 0)}%"


_DAY_PART_BEFORE = re.compile(
    r"(?P<part>বিকেল|বিকাল|সন্ধ্যা|সকাল|দুপুর|রাত|शाम|सुबह|दोपहर|रात|సాయంత్రం|ఉదయం|మధ్యాహ్నం|రాత్రి)"
    r"\s*(?P<h>\d{1,2}):(?P<m>[0-5]\d)"
)
_MORNING_BEFORE = frozenset({"সকাল", "सुबह", "ఉదయం"})
_NIGHT_BEFORE = frozenset({"রাত", "रात", "రాత్రి"})


def _day_part_before(m: re.Match) -> str:
    """``বিকেল 3:45`` -> ``3:45 PM``: the half of the day before its time (Bengali, Hindi...)."""
    hour = int(m["h"])
    morning = m["part"] in _MORNING_BEFORE or (
        m["part"] in _NIGHT_BEFORE and hour in (12, 1, 2, 3, 4)
    )
    return f"{hour}:{m['m']} {'AM' if morning else 'PM'}"


def _thai_scale(m: re.Match) -> str:
    """``2.5 ล้าน`` -> ``2500000 ``: the number times its Thai scale."""
    value = Decimal(m.group(1)) * _THAI_SCALES[m.group(2)]
    return format(value.normalize(), "f") + " "


def _amount_words(s: str) -> str:
    """Hours and a half, per cent and per mille in words, and the ‰ sign, rewritten."""
    if "half" in s or "media" in s or "meia" in s or "demie" in s:  # 3 horas e meia: 3.5 h
        s = _HOURS_AND_A_HALF.sub(r"\1.5 h", s)
    if "basis" in s or "bp" in s:  # 50 basis points: 0.5%
        s = _BASIS_POINTS.sub(r"(\1/10000)", s)
    if "per " in s.lower() or "mille" in s.lower() or "por mil" in s.lower():  # 15 per cent
        s = _PER_WORDS.sub(lambda m: "percent" if m.group(0)[-1] in "tT" else "‰", s)
    if "‰" in s:
        s = _PER_MILLE.sub(r"(\1/1000)", s)  # 5‰ is 0.005, never 5%
    if "%" in s:
        s = _PERCENT_FIRST.sub(r"\1%", s)  # Turkish %25: 25%
    return s


def _other_scripts(s: str) -> str:
    """The times, money, scales and units written in other scripts, rewritten."""
    s = _HOURS_AND_A_HALF.sub(r"\1.5 h", s)  # 3時間半, 3小时半: three and a half hours
    s = CJK_CLOCK.sub(_cjk_clock, s)  # 下午3点45分, 午後3時, 오후 3시 45분: a time of day
    s = _YUAN.sub(_yuan, s)  # 12块8, 2元3角5分: yuan, jiao and fen
    s = _THAI_SCALE.sub(_thai_scale, s)  # 2.5 ล้านบาท: a Thai scale glued to the unit after it
    s = _WARI.sub(_wari, s)  # 6割, 6割5分: 60%, 65% (Japanese tenths)
    s = _DAY_PART_BEFORE.sub(_day_part_before, s)  # বিকেল ৩:৪৫, शाम 7:30: PM
    s = _CJK_SPEED.sub(_cjk_speed, s)  # 時速60キロ, 每小时60千米, 每秒20米: a speed
    return _UNIT_WORD.sub(lambda m: f"{m.group(1)} {_UNIT_WORDS[m.group(2)]}", s)  # 150米, 15 м


def _times_of_day(s: str) -> str:
    """Times of day in words, with the half of the day, and on the clock, as minutes."""
    if " " in s and _CLOCK_IN_WORDS.search(s):  # quarter to four, halb acht: 3:45, 7:30
        s = _CLOCK_IN_WORDS.sub(_clock_in_words, s)
    if " " in s:  # 7:30 in the evening: 7:30 PM
        s = _DAY_PART_AFTER.sub(_day_part, s)
    if "m" in s.lower():  # 11 a.m.: 11:00 AM
        s = _HOUR_MERIDIEM.sub(r"\1:00 \2", s)
    if ":" in s or "h" in s:
        s = _CLOCK.sub(_clock, s)
    return s


def normalize(s: str) -> str:
    """``s`` with the notations of the module docstring rewritten (a no-op on most answers)."""
    s = s.replace("{,}", ",").replace("{:}", ":")
    if not s.isascii():
        s = _unicode(s)
    if "k€" in s or "k$" in s:  # 2,5 k€: thousands of euros
        s = _THOUSANDS_OF.sub(lambda m: f"{Decimal(m.group(1)) * 1000:f} {m.group(2)}", s)
    if not s.isascii():  # ₹1.2 करोड़: the scales of Indian languages by their English names
        s = _INDIC_SCALE.sub(lambda m: _INDIC_SCALES[m.group(0)], s)
    if _LATIN_SCALE.search(s):  # Rp 2,5 juta: the scale word before the currency's sign
        s = _SCALE_WORD.sub(_scale_word, s)
    if "$" in s or not s.isascii() or re.search(r"[A-Z]{3}|Rs|Rp|RM|Fr\.|kr[ .]", s):
        s = _money(s)
    if (
        re.search(r"(?i)thousand|million|billion|trillion|dozen", s)
        or not s.isascii()
        or _LATIN_SCALE.search(s)
    ):
        s = _SCALE_WORD.sub(_scale_word, s)
    if not s.isascii():
        s = _other_scripts(s)
    if not s.isascii() or "saat" in s or "dakika" in s or "saniye" in s:
        s = _RATE_FIRST.sub(_rate_first, s)  # 毎分4リットル, saatte 15 kilometre: a rate
    if s.endswith("p"):  # 85p: pence
        s = _PENCE.sub(r"\1 pence", s)
    if "'" in s or "′" in s:  # 6'2", 6′ 2″: feet and inches
        s = _FEET_INCHES.sub(lambda m: "{} ft {} in".format(*(g for g in m.groups() if g)), s)
    if _ZERO_WORD.search(s):  # 5 °C below zero, 7 °C bajo cero
        s = _BELOW_ZERO.sub(lambda m: f"-{m['n']}{m['unit'] if m['scale'] else ''}", s)
    s = _amount_words(s)
    if "," in s:
        s = _INDIAN.sub(lambda m: m.group(0).replace(",", ""), s)
    if "'" in s or "’" in s:
        s = _APOSTROPHE.sub(lambda m: m.group(0).replace("'", "").replace("’", ""), s)
    if " " in s and "," in s:
        s = _SPACED_COMMA.sub(lambda m: m.group(0).replace(" ", "").replace(",", "."), s)
    if " " in s and "." in s:
        s = _SPACED_POINT.sub(lambda m: m.group(0).replace(" ", ""), s)
    if " " in s:
        s = _SPACED_WHOLE.sub(lambda m: m.group(0).replace(" ", ""), s)
    if " h " in s:  # 2 h 30: hours and minutes
        s = _HOURS_MINUTES.sub(r"\1 h \2 min", s)
    s = _times_of_day(s)
    if "'" in s or "’" in s:  # 1,2 million d'euros
        s = _ELISION.sub(" ", s)
    if "~" in s:  # 5 \mathrm{~m}: a LaTeX space
        s = s.replace("~", " ")
    if "零下" in s or "영하" in s or "氷点下" in s:  # 零下5℃, 영하 7도: below zero
        s = _BELOW_ZERO_BEFORE.sub("-", s)
    if "\\mu" in s:  # 0.5\ \mu\text{s}: a micro prefix
        s = _MICRO.sub("µ", s)
    if "circ" in s or "degree" in s or not s.isascii():
        s = _TEMPERATURE.sub(_temperature, s)
        s = _LONE_DEGREE.sub(r"^\\circ ", s)  # an angle: \sin 30° is in degrees
    return s


_UNIT_WORDS = {
    # Chinese and Japanese
    "千米": "km", "公里": "km", "厘米": "cm", "毫米": "mm", "米": "m", "メートル": "m",
    "キロメートル": "km", "センチ": "cm", "センチメートル": "cm", "ミリ": "mm",
    "ミリメートル": "mm",
    "千克": "kg", "公斤": "kg", "克": "g", "グラム": "g", "キログラム": "kg", "ミリグラム": "mg",
    "斤": "jin", "吨": "tonnes", "トン": "tonnes", "升": "l", "毫升": "ml", "リットル": "l",
    "平方米": "square m", "平方公里": "square km", "平方厘米": "square cm", "立方米": "cubic m",
    "秒": "s", "秒钟": "s", "分钟": "min", "分": "min", "小时": "h", "時間": "h", "天": "day",
    "日": "day", "周": "week", "星期": "week", "週間": "week", "个月": "month", "ヶ月": "month",
    "か月": "month", "カ月": "month", "年": "year",
    "元": "cny", "块": "cny", "角": "jiao", "毛": "jiao", "円": "jpy", "キロ": "kg",
    "美元": "usd", "米ドル": "usd", "ドル": "usd", "долларов США": "usd", "доллара США": "usd",
    "доллар США": "usd", "欧元": "eur", "ユーロ": "eur", "英镑": "gbp", "日元": "jpy",
    "韩元": "krw",
    # Korean
    "미터": "m", "킬로미터": "km", "센티미터": "cm", "밀리미터": "mm", "킬로그램": "kg",
    "그램": "g", "리터": "l", "시간": "h", "개월": "month", "원": "krw", "달러": "usd",
    "분": "min", "초": "s",
    # Greek
    "χλμ": "km", "χιλιόμετρα": "km", "μέτρα": "m", "εκατοστά": "cm", "κιλά": "kg",
    "γραμμάρια": "g", "λεπτά": "min", "ώρες": "h", "ώρα": "h", "μέρες": "day", "ημέρες": "day",
    "ευρώ": "eur", "λίτρα": "l",
    # Vietnamese
    "giây": "s", "phút": "min", "giờ": "h", "ngày": "day", "tuần": "week", "tháng": "month",
    "năm": "year", "mét": "m", "ki-lô-mét": "km", "xăng-ti-mét": "cm", "ki-lô-gam": "kg",
    "gam": "g", "lít": "l",
    # Russian
    "км": "km", "см": "cm", "мм": "mm", "м": "m", "кг": "kg", "г": "g", "сек": "s", "с": "s",
    "мин": "min", "час": "h", "часа": "h", "часов": "h", "ч": "h", "дней": "day", "дня": "day",
    "секунда": "s", "секунды": "s", "секунд": "s", "секунду": "s", "минута": "min",
    "минуты": "min", "минут": "min", "минуту": "min", "день": "day", "сутки": "day",
    "суток": "day", "неделя": "week", "недели": "week", "недель": "week", "неделю": "week",
    "месяц": "month", "месяца": "month", "месяцев": "month", "год": "year", "года": "year",
    "лет": "year", "метр": "m", "метра": "m", "метров": "m", "километр": "km",
    "километра": "km", "километров": "km", "сантиметр": "cm", "сантиметра": "cm",
    "сантиметров": "cm", "миллиметр": "mm", "миллиметра": "mm", "миллиметров": "mm",
    "килограмм": "kg", "килограмма": "kg", "килограммов": "kg", "грамм": "g", "грамма": "g",
    "граммов": "g", "литр": "l", "литра": "l", "литров": "l", "л": "l", "тонна": "tonnes",
    "тонны": "tonnes", "тонн": "tonnes", "рубль": "rub", "рубля": "rub", "рублей": "rub",
    "руб": "rub", "км/ч": "km/h", "км/год": "km/h", "м/с": "m/s", "копейка": "cents",
    "копейки": "cents", "копеек": "cents", "коп": "cents",
    # Arabic
    "ثانية": "s", "ثوان": "s", "ثواني": "s", "ثوانٍ": "s", "دقيقة": "min", "دقائق": "min",
    "ساعة": "h", "ساعات": "h", "يوم": "day", "أيام": "day", "أسبوع": "week", "أسابيع": "week",
    "شهر": "month", "أشهر": "month", "شهور": "month", "سنة": "year", "سنوات": "year",
    "متر": "m", "أمتار": "m", "مترا": "m", "مترًا": "m", "كيلومتر": "km", "كيلومترات": "km",
    "كم": "km", "سنتيمتر": "cm", "سم": "cm", "مليمتر": "mm", "مم": "mm", "كيلوغرام": "kg",
    "كيلوجرام": "kg", "كغ": "kg", "كجم": "kg", "غرام": "g", "جرام": "g", "غرامات": "g",
    "جرامات": "g", "لتر": "l", "لترات": "l", "درهم": "aed", "دراهم": "aed", "ريال": "sar",
    "ريالات": "sar", "جنيه": "egp", "جنيهات": "egp", "دولار": "usd", "دولارات": "usd",
    "كم/ساعة": "km/h",
    "يورو": "eur",
    "ریال": "irr", "دينار": "dinar", "دنانير": "dinar", "ليرة": "lira", "كلم": "km",
    "دولارًا": "usd", "دولارا": "usd", "درهمًا": "aed", "درهما": "aed", "ريالًا": "sar",
    "ريالا": "sar", "جنيهًا": "egp", "جنيها": "egp", "كيلومترًا": "km", "كيلومترا": "km",
    "م^{2}": "m^2", "م^{3}": "m^3", "سم^{2}": "cm^2", "سم^{3}": "cm^3", "درجة مئوية": "°C",
    "درجات مئوية": "°C", "درجة فهرنهايت": "°F",
    "کیلومتر بر ساعت": "km/h", "کیلومتر در ساعت": "km/h", "डिग्री सेल्सियस": "°C",
    "डिग्री फारेनहाइट": "°F", "องศาเซลเซียส": "°C", "องศาฟาเรนไฮต์": "°F", "กม./ชม.": "km/h",
    "กม./ชม": "km/h", "กม.": "km", "กม": "km", "கி.மீ/மணி": "km/h", "கி.மீ": "km",
    "కి.మీ": "km", "किमी/घंटा": "km/h", "किमी": "km", "ミリリットル": "ml", "га": "ha",
    "λεπτό": "min", "δευτερόλεπτα": "s", "درجات": "°", "درجة": "°",
    "கிராம்": "g", "ग्रॅम": "g", "گرام": "g", "کلوگرام": "kg", "ק״ג": "kg", 'ק"ג': "kg",
    "godz.": "h", "godz": "h",
    "°С": "°C", "cây số": "km", "里": "li", "dặm": "mi", "英里": "mi", "英尺": "ft", "英寸": "in",
    "磅": "lb", "盎司": "oz", "加仑": "gal",
    "海里": "nmi", "公顷": "ha", "マイル": "mi", "フィート": "ft", "インチ": "in", "ポンド": "lb",
    "ريالاً": "sar", "مل": "ml", "米/秒": "m/s", "千米/小时": "km/h", "公里/小时": "km/h",
    "人民币": "cny",
    # Urdu, Marathi, Gujarati, Tamil, Lao, Khmer, Myanmar and Amharic
    "روپے": "inr", "روپیہ": "inr", "روپئے": "inr", "منٹ": "min", "گھنٹے": "h", "گھنٹہ": "h",
    "میٹر": "m", "کلومیٹر": "km", "کلو": "kg",
    "तास": "h", "मिनिटे": "min", "रु": "inr",
    "રૂપિયા": "inr", "મિનિટ": "min", "કલાક": "h", "કિલોમીટર": "km", "મીટર": "m", "કિલો": "kg",
    "ரூபாய்": "inr", "நிமிடங்கள்": "min", "நிமிடம்": "min", "மணி": "h", "கிலோமீட்டர்": "km",
    "மீட்டர்": "m", "கிலோ": "kg",
    "ກີບ": "lak", "ນາທີ": "min", "ຊົ່ວໂມງ": "h", "ກິໂລແມັດ": "km", "ແມັດ": "m",
    "រៀល": "khr", "នាទី": "min", "ម៉ោង": "h", "គីឡូម៉ែត្រ": "km", "ម៉ែត្រ": "m",
    "ကျပ်": "mmk", "မိနစ်": "min", "နာရီ": "h", "ကီလိုမီတာ": "km", "မီတာ": "m",
    "ብር": "etb", "ደቂቃ": "min", "ሰዓት": "h", "ኪሎ": "kg", "ኪሎ ሜትር": "km", "ኪሎሜትር": "km", "ሜትር": "m",
    "שקל": "ils", "ש\"ח": "ils", "דולר": "usd", "евро": "eur", "доллар": "usd",
    "долларов": "usd", "доллара": "usd", "тенге": "kzt",
    "цент": "cents", "цента": "cents", "центов": "cents",
    # Ukrainian, Persian, Thai, Bengali, Hebrew and Telugu
    "секунди": "s", "хвилина": "min", "хвилини": "min", "хвилин": "min", "година": "h",
    "години": "h", "годин": "h", "днів": "day", "дні": "day", "метрів": "m", "метри": "m",
    "кілометр": "km", "кілометри": "km", "кілометрів": "km", "сантиметрів": "cm",
    "кілограм": "kg", "кілограми": "kg", "кілограмів": "kg", "грамів": "g", "гривень": "uah",
    "гривні": "uah", "гривня": "uah", "грн": "uah",
    "ثانیه": "s", "دقیقه": "min", "ساعت": "h", "روز": "day", "هفته": "week", "کیلومتر": "km",
    "سانتیمتر": "cm", "کیلوگرم": "kg", "گرم": "g", "لیتر": "l", "تومان": "irt",
    "วินาที": "s", "นาที": "min", "ชั่วโมง": "h", "วัน": "day", "สัปดาห์": "week", "เมตร": "m",
    "กิโลเมตร": "km", "เซนติเมตร": "cm", "กิโลกรัม": "kg", "กรัม": "g", "ลิตร": "l", "บาท": "thb",
    "ดอลลาร์": "usd", "มิลลิลิตร": "ml", "มิลลิเมตร": "mm", "มล.": "ml",
    "সেকেন্ড": "s", "মিনিট": "min", "ঘণ্টা": "h", "দিন": "day", "মিটার": "m",
    "পয়সা": "cents", "పైసలు": "cents", "పైసా": "cents", "สตางค์": "cents",
    "గంట": "h", "గంటలు": "h", "నిమిషాలు": "min", "నిమిషం": "min",
    "কিলোমিটার": "km", "সেন্টিমিটার": "cm", "কিলোগ্রাম": "kg", "গ্রাম": "g", "লিটার": "l",
    "টাকা": "bdt", "ডলার": "usd", "কেজি": "kg", "কিমি": "km", "সেমি": "cm",
    "שניות": "s", "דקות": "min", "שעות": "h", "ימים": "day", "מטר": "m", "מטרים": "m",
    "גרם": "g", "ליטר": "l", "שקלים": "ils", "קילומטר": "km", "קילוגרם": "kg",
    "సెకన్లు": "s", "రోజులు": "day", "మీటర్లు": "m",
    "కిలోమీటర్లు": "km", "కిలోలు": "kg", "గ్రాములు": "g", "రూపాయలు": "inr",
    # Hindi
    "रुपये": "inr", "रुपए": "inr", "रुपया": "inr", "पैसे": "cents", "मीटर": "m",
    "किलोमीटर": "km", "सेंटीमीटर": "cm", "मिलीमीटर": "mm", "ग्राम": "g", "किलोग्राम": "kg",
    "किलो": "kg", "लीटर": "l", "सेकंड": "s", "मिनट": "min", "घंटे": "h", "घंटा": "h",
    "दिन": "day", "सप्ताह": "week", "हफ्ते": "week", "महीने": "month", "महीना": "month",
    "साल": "year", "वर्ष": "year", "मिलीलीटर": "ml", "मिली": "ml", "सेमी": "cm",
    "घंटों": "h", "मिनटों": "min", "सेकंडों": "s", "मीटरों": "m",
}  # fmt: skip
"""Units written in other scripts, as the unit names of :mod:`.units`."""
UNIT_WORD_AFTER = re.compile(
    r"[ \t]*("
    + "|".join(sorted(map(re.escape, _UNIT_WORDS), key=len, reverse=True))
    + r")(?!의)[\u3040-\u309f\uac00-\ud7af]*(?:(?<=[\u4e00-\u9fff])|(?![^\W\d_]))"
)
"""A unit of another script right after a number (group 1: the word; a Japanese or Korean
particle after it is read with it and dropped; ``5분의 1`` is a fifth, no minutes)."""
_UNIT_WORD = re.compile(r"(\d)" + UNIT_WORD_AFTER.pattern)


def _unicode(s: str) -> str:
    s = _SLASHED.sub(_slashed, s)
    s = _ROOT.sub(_root, s)
    while (m := _ROOT_PAREN.search(s)) is not None:  # √(x + 1): the bracket is the argument
        close = _closing(s, m.end() - 1)
        if close is None:
            break
        s = f"{s[: m.end() - 1]}{{{s[m.end() : close]}}}{s[close + 1 :]}"
    return _EXPONENT.sub(lambda m: "^{" + m.group(0).translate(_SUPER_TO_ASCII) + "}", s)


_ROOT_PAREN = re.compile(r"\\sqrt(?:\[\d\])?\s*\(")


def _closing(s: str, start: int) -> int | None:
    """The index of the ``)`` that closes the ``(`` at ``start``, or None."""
    depth = 0
    for i in range(start, len(s)):
        depth += {"(": 1, ")": -1}.get(s[i], 0)
        if depth == 0:
            return i
    return None


def slashed(text: str) -> str:
    """``text`` with fractions of superscript and subscript digits written out (``⁵⁄₈``)."""
    return _SLASHED.sub(_slashed, text) if "/" in text or "⁄" in text else text


def _slashed(m: re.Match) -> str:
    """``⁵⁄₈`` -> ``(5/8)``."""
    return f"({m.group(1).translate(_SUPER_TO_ASCII)}/{m.group(2).translate(_SUB_TO_ASCII)})"


def _root(m: re.Match) -> str:
    index = {"²": "", "³": "[3]", "⁴": "[4]", "∛": "[3]", "∜": "[4]", "√": ""}[
        m.group("index") or m.group("sign")
    ]
    arg = m.group("arg")
    return f"\\sqrt{index}" + (f"{{{arg}}}" if arg else "")


def _money(s: str) -> str:
    """Currency signs and codes as a unit name after the amount (see the module docstring)."""
    bare_is_sign = len(re.findall(r"(?<!\\)\$", s)) % 2 == 1

    def before(m: re.Match) -> str:
        sign = m.group("sign")
        if sign == "$" and not bare_is_sign:
            return m.group(0)
        num, scale = m.group("num"), m.group("scale")
        if scale:
            num = _scaled(num, scale) or f"{num} {scale}"
        return f"{num} {_SIGNS[sign]}"

    s = _SWISS_ROUND.sub("", s)  # CHF 80.–: a whole amount
    s = _BEFORE.sub(before, s)

    def after(m: re.Match) -> str:
        sign = m.group("sign")
        if sign == "$" and not bare_is_sign:
            return m.group(0)
        return f"{m.group('num')} {_SIGNS.get(sign, 'cents')}"

    return _AFTER.sub(after, s)


_SWISS_ROUND = re.compile(r"(?<=\d)\.(?:–|—|-{1,2})(?![\w.])")
_LATIN_SCALE = re.compile(
    r"(?i)\d\s*(?:tausend|mille|mil|bin|lakhs?|crore|millio|miljoen|milliard|milyar|milyon|milion"
    r"|mio|mrd|tys|tisíc|ribu|juta|miliar|nghìn|ngàn|triệu|tỷ|billón|billones|biljoen|bilion"
    r"|bilh|billionen|elfu|bilioni)"
)


def _scale_word(m: re.Match) -> str:
    """``1.5 million``, ``1,5 Millionen`` (read after the locale), ``1.5万``: the number."""
    of = " " if m.group("of") else ""
    if m.group("scale"):
        return _scaled(m.group("num"), m.group("scale")) + of
    factor = _FOREIGN_SCALES.get(m.group("word").lower())
    if factor is None:
        return m.group(0)
    return format((Decimal(m.group("num").replace(",", "")) * factor).normalize(), "f") + of


def _scaled(num: str, scale: str) -> str:
    """``num`` times the scale word, written out exactly (``1.5``, ``million`` -> ``1500000``)."""
    word = scale.lower().rstrip("s") if scale.lower() not in ("bn", "mn") else scale.lower()
    factor = _SCALES.get(word)
    try:
        value = Decimal(num.replace(",", "")) * factor if factor else None
    except InvalidOperation:  # a locale-grouped amount: leave the words to the parser
        value = None
    if value is None:
        return f"{num} {scale}"
    return format(value.normalize(), "f")


MERIDIEM = r"[AaPp]\.?\s?[Mm]\.?(?![A-Za-z])|Uhr\b|นาฬิกา|น\.?|مساء[ًا]*|صباح[ًا]*"
_MORNING_WORDS = (
    r"in\s+the\s+morning|de\s+la\s+mañana|du\s+matin|morgens|vormittags"
    r"|am\s+(?:morgen|vormittag)|da\s+manhã|di\s+mattina|утра"
)
_LATER_WORDS = (
    r"in\s+the\s+(?:afternoon|evening)|at\s+night|de\s+la\s+(?:tarde|noche)|du\s+soir"
    r"|de\s+l['’]après-midi|(?:am\s+)?abends?|nachmittags|am\s+nachmittag"
    r"|da\s+(?:tarde|noite)|di\s+sera"
    r"|del\s+pomeriggio|della\s+sera|вечера|дня"
)
DAY_PART = rf"(?:{_MORNING_WORDS}|{_LATER_WORDS})(?![^\W\d_])"
"""Words after a time of day that say which half of the day: "7:30 in the evening" is 7:30 PM."""
_DAY_PART_AFTER = re.compile(
    rf"(?i)(?<![\d:.])(?P<h>1[0-2]|0?[1-9])(?P<m>:[0-5]\d)?\s+(?P<part>{DAY_PART})"
)

_NIGHT = re.compile(r"(?i)night|noche|noite")
_HOUR_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()
_HOUR_WORDS_DE = "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf".split()
_CLOCK_IN_WORDS = re.compile(
    r"(?i)(?<![^\W\d_])(?:(?P<min>half|(?:a\s+)?quarter|five|ten|twenty|twenty-five)\s+"
    r"(?P<way>past|after|to)|(?P<de>halb|viertel\s+nach|viertel\s+vor))\s+"
    rf"(?P<hour>1[0-2]|[1-9]|{'|'.join(_HOUR_WORDS + _HOUR_WORDS_DE)})(?![^\W\d_])"
)
_MINUTES_OF = {"half": 30, "quarter": 15, "five": 5, "ten": 10, "twenty": 20, "twenty-five": 25}


def _clock_in_words(m: re.Match) -> str:
    """``quarter to four`` -> ``3:45``, ``half past three`` -> ``3:30``, ``halb acht`` ``7:30``."""
    word = m["hour"].lower()
    hour = (
        int(word)
        if word.isdigit()
        else 1
        + max(
            _HOUR_WORDS.index(word) if word in _HOUR_WORDS else -1,
            _HOUR_WORDS_DE.index(word) if word in _HOUR_WORDS_DE else -1,
        )
    )
    if m["de"]:
        way = m["de"].lower().split()
        minutes, back = (30, True) if way[0] == "halb" else (15, way[-1] == "vor")
    else:
        minutes = _MINUTES_OF[m["min"].lower().split()[-1]]
        back = m["way"].lower() == "to"
    if back:
        hour, minutes = (hour - 2) % 12 + 1, 60 - minutes
    return f"{hour}:{minutes:02d}"


def _day_part(m: re.Match) -> str:
    """``7:30 in the evening`` -> ``7:30 PM`` (read on by :data:`_CLOCK`)."""
    morning = re.match(_MORNING_WORDS, m["part"], re.IGNORECASE) is not None
    small_hours = int(m["h"]) in (12, 1, 2, 3, 4) and _NIGHT.search(m["part"]) is not None
    morning |= small_hours  # 2 at night is 2 AM, 12:15 at night a quarter past midnight
    return f"{m['h']}{m['m'] or ':00'} {'AM' if morning else 'PM'}"


"""What may follow a time of day: AM, p.m., Uhr, Thai น. (o'clock), مساءً (p.m.), صباحًا (a.m.)."""
_CLOCK = re.compile(
    rf"(?<![\d:.])(?P<h>\d{{1,2}})(?P<sep>:|h)(?P<m>[0-5]\d)(?![\d:])(?:\s*(?P<mer>{MERIDIEM}))?"
)
"""A time of day: ``3:45 PM``, ``15:45``, ``07:05``, ``19h30``, ``15:45 Uhr``."""


def _clock(m: re.Match) -> str:
    """A time of day as minutes after midnight (``3:45 PM`` and ``15:45`` are ``945 clock``).

    Only where it cannot be a ratio or a duration: with AM/PM or "Uhr", an hour past 12, an
    hour written with a leading zero, or the ``19h30`` form; ``3:45`` alone is left as written.
    """
    hour, minute, mer = int(m.group("h")), int(m.group("m")), (m.group("mer") or "").lower()
    clock = mer or m.group("sep") == "h" or hour > 12 or m.group("h").startswith("0")
    if not clock or hour > 23 or (mer[:1] in ("a", "p", "م", "ص") and not 1 <= hour <= 12):
        return m.group(0)
    if mer[:1] in ("م", "ص"):  # مساءً, صباحًا
        mer = "pm" if mer.startswith("م") else "am"
    if mer.startswith("a"):
        hour %= 12
    elif mer.startswith("p"):
        hour = hour % 12 + 12
    return f"{hour * 60 + minute} clock"


_MORNING, _AFTERNOON = "上午|早上|早晨|凌晨|午前|오전", "下午|晚上|傍晚|午後|오후"
CJK_CLOCK = re.compile(
    rf"(?:(?P<mer>{_MORNING}|{_AFTERNOON}|中午)\s*)?(?P<h>\d{{1,2}})\s*[点點時时시]"
    r"(?:\s*(?P<m>[0-5]?\d)\s*[分분]|(?P<half>半|반))?(?:钟|鐘)?"
)
"""A time of day in Chinese, Japanese or Korean: ``下午3点45分``, ``午後3時半``, ``오후 3시 45분``
(an hour alone with no half of the day, ``3点``, may be points: left as written)."""


def _cjk_clock(m: re.Match) -> str:
    """``下午3点45分`` -> ``3:45 PM`` (read on by :data:`_CLOCK`), ``15時30分`` -> ``15:30``."""
    mer, minute = m.group("mer"), m.group("m") or ("30" if m.group("half") else None)
    if mer is None and minute is None:
        return m.group(0)
    hour = int(m.group("h"))
    suffix = ""
    if mer is not None and 1 <= hour <= 12:
        suffix = " AM" if re.fullmatch(_MORNING, mer) or (mer == "中午" and hour < 12) else " PM"
    return f"{hour}:{int(minute or 0):02d}{suffix}"


_MICRO = re.compile(r"\\mu\s*(?=\\(?:text|mathrm)\{|[A-Za-z])")
"""LaTeX ``\\mu`` before a unit: the micro prefix (``\\mu\text{s}``, ``\\mu m``)."""
_HOUR_MERIDIEM = re.compile(r"(?<![\d:.])(1[0-2]|0?[1-9])\s?([AaPp]\.?\s?[Mm]\.?)(?![A-Za-z])")
"""An hour with AM or PM and no minutes: ``11 a.m.``, ``7pm``."""
_HOURS_MINUTES = re.compile(r"(?<![\d:.])(\d+) h ([0-5]\d)(?![\w.:]|\s*[^\W\d_])")
"""A duration in the French way, ``2 h 30`` (``19h30``, glued, is a time of day)."""
_ELISION = re.compile(r"(?<=\w) [dD]['’](?=[^\W\d_])")
"""French and Italian elision before a unit: ``1,2 million d'euros``."""
_PENCE = re.compile(r"^(\s*\d+(?:\.\d+)?)p$")
"""An amount in pence, ``85p``: the whole answer (``3p + 1`` is algebra)."""
_FEET_INCHES = re.compile(
    r"(?<![\d.])(\d+)\s*['′]\s*(\d+(?:\.\d+)?)\s*(?:\"|″|''|”)"
    r"|(?<![\d.'’])(\d)['′]\s*(1[01]|[0-9])(?![\d'’.,])"
)
"""Feet and inches with primes: ``6'2"``, ``6′ 2″``, and a height without the inch mark,
``5'11`` (never a Swiss thousands group, whose groups have three digits)."""
_BELOW_ZERO = re.compile(
    r"(?<![-\d.])(?P<n>\d+(?:\.\d+)?)(?P<unit>\s*(?:°|º|\^\s*\\circ|degrees?|درجات|درجة)\s*"
    r"(?P<scale>[CF]|Celsius|Fahrenheit|مئوية)?)\s+(?:below\s+zero|تحت\s+الصفر|bajo\s+cero"
    r"|sous\s+z[ée]ro|unter\s+null|abaixo\s+de\s+zero|sotto\s+(?:lo\s+)?zero|ниже\s+нуля"
    r"|poniżej\s+zera|onder\s+nul)",
    re.IGNORECASE,
)
"""A temperature below zero: ``5 °C below zero``, ``٥ درجات تحت الصفر``, ``7 °C bajo cero`` are
``-5 °C``, ``-7 °C``; without its scale (``5 degrees below zero``) a temperature is ``-5``,
no angle."""
_ZERO_WORD = re.compile(r"(?i)zero|cero|z[ée]ro|null|нуля|zera|\bnul\b|الصفر")
_BELOW_ZERO_BEFORE = re.compile(r"(?:零下|영하|氷点下)\s*(?=\d)")
"""A sign word before the number: ``零下5℃``, ``영하 7도``, ``氷点下3度``."""
_LONE_DEGREE = re.compile(r"[°º]")
_PER_MILLE = re.compile(r"(\d+(?:\.\d+)?)\s*‰")
_PERCENT_FIRST = re.compile(r"(?<![\w%)])%\s?(\d+(?:[.,]\d+)?)(?![\d%])")
"""A per cent sign before its number, as Turkish writes it: ``%25`` is 25%."""


def _temperature(m: re.Match) -> str:
    scale = m.group("braced") or m.group("scale") or ("C" if m.group("sign") == "℃" else "F")
    return f" deg{scale.lower()}"


# ---------------------------------------------------------------- number words

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 10 * i
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)
}
_BIG = {"thousand": 1000, "million": 10**6, "billion": 10**9}
_PARTS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4}
_PARTS.update({"fourth": 4, "fourths": 4, "fifth": 5, "fifths": 5, "eighth": 8, "eighths": 8})


def number_words(text: str) -> Fraction | None:
    """The value of a number written in English words, or None when ``text`` is not one.

    ``twenty-five``, ``one hundred and five``, ``fifteen hundred``, ``two thousand``, ``a
    dozen``, ``half a dozen``, ``one half``, ``three quarters``, ``a third``, ``one and a
    half``, ``negative five``, ``half a million``, ``a quarter of a million``.
    """
    words = text.lower().replace("-", " ").split()
    if not words or len(words) > 12:
        return None
    if words[0] in ("negative", "minus") and len(words) > 1:
        value = number_words(" ".join(words[1:]))
        return None if value is None else -value
    if words in (["half", "a", "dozen"], ["a", "half", "dozen"]):
        return Fraction(6)
    if words[-1] in _BIG and len(words) > 1:  # half a million, a quarter of a million
        head = words[:-1]
        while head and head[-1] in ("a", "an", "of"):
            head.pop()
        part = number_words(" ".join(head)) if head else None
        if part is not None and part.denominator != 1:
            return part * _BIG[words[-1]]
    if "and" in words[1:-1]:  # one and a half, two and three quarters
        cut = len(words) - 1 - words[::-1].index("and")
        whole, part = _integer_words(words[:cut]), words[cut + 1 :]
        if whole is not None and len(part) == 2 and part[-1] in _PARTS:
            fraction = number_words(" ".join(part))
            if fraction is not None and fraction < 1:
                return whole + fraction
    if words[-1] in _PARTS and len(words) <= 2:
        count = 1 if len(words) == 1 or words[0] in ("a", "an", "one") else _UNITS.get(words[0])
        return None if count is None else Fraction(count, _PARTS[words[-1]])
    if words in (["a", "dozen"], ["one", "dozen"]):
        return Fraction(12)
    return _integer_words(words)


def _integer_words(words: list[str]) -> Fraction | None:
    total, group, seen = 0, 0, False
    for i, w in enumerate(words):
        if (
            w == "and"
            and 0 < i < len(words) - 1
            and (words[i - 1] == "hundred" or words[i - 1] in _BIG)
        ):
            continue  # one hundred and five; "three and four" is two numbers
        if w in _UNITS:
            group += _UNITS[w]
        elif w in _TENS:
            group += _TENS[w]
        elif w == "hundred" and seen:
            group = (group or 1) * 100
        elif w in _BIG and seen:
            total, group = total + (group or 1) * _BIG[w], 0
        else:
            return None
        seen = True
    return Fraction(total + group) if seen else None


# ---------------------------------------------------------------- Chinese, Japanese, Korean

_HAN_DIGITS = dict(
    zip("〇零一二两兩三四五六七八九", (0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True)
)
_HAN_DIGITS.update(
    zip("壹贰貳叁參肆伍陆陸柒捌玖", (1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9), strict=True)
)
"""Han digits, with the financial forms of receipts and cheques (壹仟贰佰叁拾肆 is 1234)."""
_HAN_PLACES = {**dict.fromkeys("十拾십", 10), **dict.fromkeys("百佰백", 100)}
# 千 of 千米 (km), 千克 (kg), 千瓦 (kW) and 千卡 (kcal) is the unit's prefix: 150千米 is 150 km
_HAN_PLACES.update(dict.fromkeys("千仟천", 1000))
_HAN_BIG = {
    **dict.fromkeys("万萬만", 10**4),
    **dict.fromkeys("亿億억", 10**8),
    **dict.fromkeys("兆조", 10**12),
}
_HAN_UNIT = "".join(_HAN_PLACES) + "".join(_HAN_BIG)
_HAN_PREFIX = "(?![米克瓦卡])"
_HAN_DIGIT = "".join(_HAN_DIGITS)
_HAN_RUN = re.compile(
    rf"(?:\d{{1,3}}(?:,\d{{3}})+(?=[{''.join(_HAN_BIG)}])|\d+(?:\.\d+)?|[{_HAN_DIGIT}]"  # 1,410만
    rf"|[十百千](?=[{_HAN_DIGIT}]))"  # 万一, 千万, 十分: words
    rf"(?:[{_HAN_DIGIT}]|[{_HAN_UNIT}]{_HAN_PREFIX}|\d+(?:\.\d+)?"
    rf"|(?<=[{_HAN_UNIT}]) (?=\d|[{_HAN_DIGIT}])|(?<=\d) (?=[{''.join(_HAN_BIG)}]))*"
)
_HAN_TENS_OF = {"廿": "二十", "卅": "三十", "卌": "四十"}
_HAN_TENS = re.compile("[廿卅卌]")
_KOREAN_FRACTION = re.compile(r"(\d+)\s*분의\s*(\d+)")
_HAN_ANY = re.compile(f"[{_HAN_DIGIT}{_HAN_UNIT}廿卅卌]")
_HAN_NUMBER = rf"(?:\d+(?:\.\d+)?|[{_HAN_DIGIT}{_HAN_UNIT}])+"
_HAN_FRACTION = re.compile(rf"({_HAN_NUMBER})分[之の]({_HAN_NUMBER})")
_HAN_MINUS = re.compile(rf"[负負](?={_HAN_NUMBER})")


def _han_fraction(m: re.Match) -> str:
    """``三分之二``, ``3分の2`` -> ``(2/3)``: the part after 分之 (分の) over the part before."""
    over, part = (_han_value(_HAN_TOKEN.findall(g)) for g in m.groups())
    if over is None or part is None:
        return m.group(0)
    return f"({format(part.normalize(), 'f')}/{format(over.normalize(), 'f')})"


_HAN_TOKEN = re.compile(rf"\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?|[{_HAN_DIGIT}{_HAN_UNIT}]")
_HAN_ALONE_BEFORE = re.compile(r"(?:^|[是为為：:=＝\s-])$")
_HAN_ALONE_AFTER = re.compile(r"[。．.，,！!？?、；;)）\s度]|$")
_HAN_UNIT_AFTER = re.compile(
    "[个個]半|小时|小時|分钟|分鐘|秒钟|秒鐘|个月|個月|公里|千米|厘米|千克|公斤|岁|歲"
)
"""Units that make a lone Han digit before them a count, wherever it stands ("需要两小时")."""


def han_numbers(text: str) -> str:
    """``text`` with numbers written in Han numerals or with a Han scale in digits.

    ``四十二`` is ``42``, ``三百五十`` ``350``, ``一千零五`` ``1005``, ``两千`` ``2000``, ``三千五``
    (spoken short) ``3500``, ``二〇二四`` ``2024``; a scale after digits multiplies them: ``1.5万``
    is ``15000``, ``1億`` ``100000000``, Korean ``1만 2천`` ``12000`` (``150千米``: 150 km). Only
    a run that starts with a digit (or ``十百千`` and a digit: ``十五``, ``千二百``) and
    holds a place (``十百千万``...) is a number, or a lone digit that stands alone
    ("答案是四。"): words that hold a numeral (``一共``, ``一些``, ``万一``, ``十分``, ``千万``,
    ``第一``) are words, and so are runs of bare digits (``七八个`` is "seven or eight", not 78).
    """
    if (
        not _HAN_ANY.search(text)
        and "分之" not in text
        and "分の" not in text
        and "분의" not in text
    ):
        return text
    text = _HAN_TENS.sub(lambda m: _HAN_TENS_OF[m.group(0)], text)  # 廿五 is 二十五, 卅二 三十二
    text = _KOREAN_FRACTION.sub(r"(\2/\1)", text)  # 3분의 2 is 2/3
    text = _HAN_FRACTION.sub(_han_fraction, text)  # 三分之二, 3分の2: 2/3; 百分之五十 50/100
    text = _HAN_MINUS.sub("-", text)  # 负五 is -5
    return _HAN_RUN.sub(_han_run, text)


def _han_run(m: re.Match) -> str:
    run = m.group(0)
    tokens = _HAN_TOKEN.findall(run)
    if not any(t in _HAN_DIGITS or t in _HAN_PLACES or t in _HAN_BIG for t in tokens):
        return run  # plain digits
    if not any(t in _HAN_PLACES or t in _HAN_BIG for t in tokens):
        alone = len(tokens) == 1 and bool(
            _HAN_ALONE_BEFORE.search(m.string[: m.start()])
            and _HAN_ALONE_AFTER.match(m.string, m.end())
            or _HAN_UNIT_AFTER.match(m.string, m.end())
        )
        dated = len(tokens) > 1 and any(t in "〇零" for t in tokens)  # 二〇二四
        if not (alone or dated):
            return run
    value = _han_value(tokens)
    return run if value is None else format(value.normalize(), "f")


def _han_value(tokens: list[str]) -> Decimal | None:
    total, section = Decimal(0), Decimal(0)
    current: Decimal | None = None
    last_place = 0  # the place just read: 三千五 is 3500
    for t in tokens:
        if t in _HAN_DIGITS or t[0].isdigit():
            d = Decimal(_HAN_DIGITS[t]) if t in _HAN_DIGITS else Decimal(t.replace(",", ""))
            if current is not None:  # digit after digit: 二〇二四
                if t not in _HAN_DIGITS:
                    return None
                d = current * 10 + d
            current = d
            if t in "〇零":
                last_place = 0
            continue
        if t in _HAN_PLACES:
            section += (1 if current is None else current) * _HAN_PLACES[t]
            last_place = _HAN_PLACES[t]
        else:
            section += 0 if current is None else current
            total += (section or 1) * _HAN_BIG[t]
            section, last_place = Decimal(0), _HAN_BIG[t]
        current = None
    if current is not None and last_place >= 100 and current < 10:
        current *= last_place // 10  # 三千五, 一万五: the next place down
    return total + section + (current or 0)


_ADDITIVE_PLACES = {"௰": 10, "௱": 100, "௲": 1000, "፻": 100, "፼": 10_000}
_ADDITIVE = re.compile(r"(?<![\d.,])(?:[1-9]?[௰௱௲])+[1-9]?(?![\d.,])|[\u1369-\u137c]+")
"""Numerals that are no place-value digits: Tamil tens, hundreds and thousands (``௰௨``, with
its digits already in ASCII: ``௰2``) and every Ethiopic numeral (``፲፪``, ``፳፻፳፫``)."""


def additive_numerals(text: str) -> str:
    """``text`` with Tamil (``௨௰௩``) and Ethiopic (``፳፻፳፫``) numerals in digits (23, 2023).

    A digit or an Ethiopic ten before a place multiplies it (``௨௰`` is 20, ``፳፻`` 2000); one
    after adds to it (``௰௨`` is 12, ``፻፳፫`` 123); ``፼`` multiplies all before it.
    """
    if not _ADDITIVE.search(text):
        return text

    def value(m: re.Match) -> str:
        total = section = small = 0
        for ch in m.group(0):
            place = _ADDITIVE_PLACES.get(ch)
            if place == 10_000:
                total, section, small = total + ((section + small) or 1) * place, 0, 0
            elif place:
                section, small = section + (small or 1) * place, 0
            else:
                small += int(unicodedata.numeric(ch))
        return str(total + section + small)

    return _ADDITIVE.sub(value, text)


_CIRCLED = re.compile("[\u2460-\u2473\u24ea-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf]")
"""Circled and negative-circled numbers: ``①``, ``⑫``, ``⓿``, ``❸``, ``㉑``, ``㊿``."""


def circled(text: str) -> str:
    """``text`` with circled numbers in digits (``⑫`` is ``12``; ``①②`` is ``1 2``, two)."""
    if not _CIRCLED.search(text):
        return text

    def digits(m: re.Match) -> str:
        i, j, s = m.start(), m.end(), m.string
        before = " " if i and (s[i - 1].isdigit() or _CIRCLED.match(s, i - 1)) else ""
        after = " " if j < len(s) and s[j].isdigit() else ""
        return f"{before}{int(unicodedata.numeric(m.group(0)))}{after}"

    return _CIRCLED.sub(digits, text)
