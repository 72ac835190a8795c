"""The seeded generators that fill the built-in databases (their DDL is in data/schemas/).

Every table's rows come from a ``random.Random`` seeded with a constant, drawing only from
fixed word lists (never from sets, whose order varies between runs), so the same code builds
the same rows everywhere. A generator returns ``{table: rows}`` in the column order of the
table's ``CREATE TABLE``; the order of the draws is part of the data, so a change here (even
splitting a function) must keep it, or bump ``builder.BUILD_VERSION``.
"""

from __future__ import annotations

import datetime as dt
import random

Rows = dict[str, list[tuple]]

FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "David",
    "Elena",
    "Farid",
    "Grace",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Arjun",
    "Bea",
    "Carlos",
    "Dana",
]
LAST = [
    "Smith",
    "Garcia",
    "Nguyen",
    "Muller",
    "Rossi",
    "Kowalski",
    "Silva",
    "Tanaka",
    "Okafor",
    "Dubois",
    "Larsen",
    "Novak",
    "Haddad",
    "Ivanova",
    "Kim",
    "Lopez",
    "Brown",
    "Costa",
    "Fischer",
    "Moreau",
]
CITIES = [
    ("Lisbon", "Portugal"),
    ("Porto", "Portugal"),
    ("Madrid", "Spain"),
    ("Barcelona", "Spain"),
    ("Paris", "France"),
    ("Lyon", "France"),
    ("Berlin", "Germany"),
    ("Munich", "Germany"),
    ("Rome", "Italy"),
    ("Milan", "Italy"),
    ("Warsaw", "Poland"),
    ("Oslo", "Norway"),
]


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _day(rng: random.Random, start: dt.date, span_days: int) -> dt.date:
    return start + dt.timedelta(days=rng.randrange(span_days))


# ---------------------------------------------------------------------------- store

CATEGORIES = ["Books", "Electronics", "Garden", "Kitchen", "Sports", "Toys", "Music", "Office"]
ADJ = ["Classic", "Compact", "Deluxe", "Eco", "Smart", "Mini", "Pro", "Ultra", "Vintage", "Basic"]
NOUNS = {
    "Books": ["Novel", "Atlas", "Cookbook", "Guide"],
    "Electronics": ["Headphones", "Charger", "Speaker", "Tablet"],
    "Garden": ["Hose", "Shovel", "Planter", "Rake"],
    "Kitchen": ["Kettle", "Pan", "Blender", "Knife"],
    "Sports": ["Ball", "Racket", "Helmet", "Mat"],
    "Toys": ["Puzzle", "Robot", "Kite", "Blocks"],
    "Music": ["Guitar", "Drum", "Ukulele", "Keyboard"],
    "Office": ["Stapler", "Lamp", "Chair", "Notebook"],
}
STATUSES = ["delivered"] * 6 + ["shipped"] * 2 + ["pending", "cancelled", "returned"]


def store(rng: random.Random) -> Rows:
    """Categories, products, customers, orders with their items, and reviews."""
    categories = [(i + 1, n) for i, n in enumerate(CATEGORIES)]
    products, seen = [], []
    for pid in range(1, 81):
        cid = rng.randrange(len(CATEGORIES)) + 1
        name = f"{rng.choice(ADJ)} {rng.choice(NOUNS[CATEGORIES[cid - 1]])}"
        while name in seen:
            name = f"{rng.choice(ADJ)} {rng.choice(NOUNS[CATEGORIES[cid - 1]])} {pid}"
        seen.append(name)
        price = round(rng.uniform(3, 400), 2)
        products.append((pid, name, cid, price, rng.randrange(0, 250), int(rng.random() < 0.1)))
    customers = []
    for cid in range(1, 301):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        email = None if rng.random() < 0.12 else f"{first}.{last}{cid}@example.com".lower()
        city, country = rng.choice(CITIES)
        signup = _day(rng, dt.date(2021, 1, 1), 3 * 365)
        customers.append((cid, first, last, email, city, country, signup.isoformat()))
    orders, items = [], []
    for oid in range(1, 1501):
        cust = rng.randrange(1, 301)
        signup = dt.date.fromisoformat(customers[cust - 1][6])
        day = signup + dt.timedelta(days=rng.randrange(1, 500))
        fee = rng.choice([0.0, 0.0, 4.99, 9.99])
        orders.append((oid, cust, day.isoformat(), rng.choice(STATUSES), fee))
        for pid in sorted(rng.sample(range(1, 81), rng.randint(1, 4))):
            price = products[pid - 1][3]
            charged = round(price * rng.choice([1.0, 1.0, 1.0, 0.9, 0.8]), 2)
            items.append((oid, pid, rng.randint(1, 5), charged))
    reviews = []
    for rid in range(1, 701):
        reviews.append(
            (
                rid,
                rng.randrange(1, 81),
                rng.randrange(1, 301),
                rng.choice([1, 2, 3, 3, 4, 4, 4, 5, 5, 5]),
                _day(rng, dt.date(2022, 1, 1), 900).isoformat(),
            )
        )
    return {
        "categories": categories,
        "products": products,
        "customers": customers,
        "orders": orders,
        "order_items": items,
        "reviews": reviews,
    }


# ---------------------------------------------------------------------------- university

DEPTS = [
    ("Computer Science", "CS", "Turing Hall"),
    ("Mathematics", "MA", "Noether Hall"),
    ("Physics", "PH", "Curie Hall"),
    ("Biology", "BI", "Darwin Hall"),
    ("History", "HI", "Herodotus Hall"),
    ("Economics", "EC", "Smith Hall"),
]
COURSE_TOPICS = [
    "Introduction",
    "Methods",
    "Theory",
    "Laboratory",
    "Seminar",
    "Advanced Topics",
    "Foundations",
    "Applications",
]
TERMS = ["2022-fall", "2023-spring", "2023-fall", "2024-spring"]


def university(rng: random.Random) -> Rows:
    """Departments, instructors, courses, students, teaching assignments, enrollments."""
    depts = [
        (i + 1, n, b, float(rng.randrange(200, 2000) * 1000)) for i, (n, _, b) in enumerate(DEPTS)
    ]
    instructors = [
        (
            i,
            _name(rng),
            rng.randint(1, len(DEPTS)),
            float(rng.randrange(40, 130) * 1000 + rng.randrange(0, 1000)),
            rng.randint(1995, 2023),
        )
        for i in range(1, 41)
    ]
    courses = []
    for d, (dname, code, _) in enumerate(DEPTS, 1):
        for k, topic in enumerate(rng.sample(COURSE_TOPICS, 6)):
            courses.append(
                (
                    f"{code}{100 + 10 * k + rng.randint(1, 9)}",
                    f"{dname}: {topic}",
                    d,
                    rng.choice([3, 4, 5, 6]),
                )
            )
    students = []
    for s in range(1, 401):
        dept = rng.randint(1, len(DEPTS))
        own = [i[0] for i in instructors if i[2] == dept]
        adv = None if rng.random() < 0.15 or not own else rng.choice(own)
        students.append((s, _name(rng), dept, rng.randint(2019, 2024), adv))
    teaches = []
    for c in courses:
        own = [i[0] for i in instructors if i[2] == c[2]] or [1]
        for term in TERMS:
            if rng.random() < 0.7:
                teaches.append((rng.choice(own), c[0], term))
    offered = sorted({(t[1], t[2]) for t in teaches})
    enrollments = []
    for s in students:
        for course, term in rng.sample(offered, rng.randint(2, 7)):
            grade = (
                None
                if term == TERMS[-1] and rng.random() < 0.6
                else float(round(min(20.0, max(0.0, rng.gauss(12.5, 3.5))), 1))
            )
            enrollments.append((s[0], course, term, grade))
    enrollments = sorted(set(enrollments), key=lambda e: (e[0], e[1], e[2]))
    return {
        "departments": depts,
        "instructors": instructors,
        "students": students,
        "courses": courses,
        "teaches": sorted(set(teaches)),
        "enrollments": enrollments,
    }


# ---------------------------------------------------------------------------- flights

AIRPORTS = [
    ("LIS", "Humberto Delgado", "Lisbon", "Portugal", 114),
    ("OPO", "Francisco Sa Carneiro", "Porto", "Portugal", 69),
    ("MAD", "Barajas", "Madrid", "Spain", 610),
    ("BCN", "El Prat", "Barcelona", "Spain", 4),
    ("CDG", "Charles de Gaulle", "Paris", "France", 119),
    ("LYS", "Saint-Exupery", "Lyon", "France", 250),
    ("BER", "Brandenburg", "Berlin", "Germany", 48),
    ("MUC", "Franz Josef Strauss", "Munich", "Germany", 448),
    ("FCO", "Fiumicino", "Rome", "Italy", 5),
    ("MXP", "Malpensa", "Milan", "Italy", 234),
    ("WAW", "Chopin", "Warsaw", "Poland", 110),
    ("OSL", "Gardermoen", "Oslo", "Norway", 208),
]
AIRLINES = [
    ("Atlantic Air", "AT", "Portugal"),
    ("Iberia Sky", "IS", "Spain"),
    ("Gallic Wings", "GW", "France"),
    ("Rhein Jet", "RJ", "Germany"),
    ("Aurora Nordic", "AN", "Norway"),
]
AIRCRAFT = [
    ("A320", "Airbus", 180),
    ("A321", "Airbus", 220),
    ("737-800", "Boeing", 189),
    ("E195", "Embraer", 120),
    ("A220", "Airbus", 135),
    ("ATR 72", "ATR", 70),
]
NATIONS = ["Portugal", "Spain", "France", "Germany", "Italy", "Poland", "Norway", "Brazil"]


def flights(rng: random.Random) -> Rows:
    """Airports, airlines, aircraft, flights, passengers and bookings."""
    airlines = [(i + 1, n, c, k) for i, (n, c, k) in enumerate(AIRLINES)]
    aircraft = [(i + 1, m, f, s) for i, (m, f, s) in enumerate(AIRCRAFT)]
    flights = []
    for fid in range(1, 601):
        a, b = rng.sample(range(len(AIRPORTS)), 2)
        al = rng.randint(1, len(AIRLINES))
        dist = 300 + (abs(a - b) * 173 + a * 37 + b * 11) % 2200
        day = _day(rng, dt.date(2024, 3, 1), 92)
        dep = f"{day.isoformat()} {rng.randrange(5, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}"
        status = rng.choice(["on_time"] * 7 + ["delayed"] * 2 + ["cancelled"])
        delay = rng.randrange(5, 240) if status == "delayed" else None
        flights.append(
            (
                fid,
                f"{AIRLINES[al - 1][1]}{rng.randrange(100, 9999)}",
                al,
                AIRPORTS[a][0],
                AIRPORTS[b][0],
                rng.randint(1, len(AIRCRAFT)),
                dep,
                30 + dist // 12 + rng.randrange(0, 25),
                dist,
                status,
                delay,
            )
        )
    passengers = [
        (p, _name(rng), rng.choice(NATIONS), rng.randint(1940, 2010)) for p in range(1, 501)
    ]
    bookings = []
    for bid in range(1, 2501):
        fl = flights[rng.randrange(len(flights))]
        cls = rng.choice(["economy"] * 8 + ["business"] * 2 + ["first"])
        factor = {"economy": 1.0, "business": 2.6, "first": 4.5}[cls]
        price = round((40 + fl[8] * 0.09) * factor * rng.uniform(0.8, 1.4), 2)
        bookings.append((bid, fl[0], rng.randint(1, 500), cls, price))
    return {
        "airports": list(AIRPORTS),
        "airlines": airlines,
        "aircraft": aircraft,
        "flights": flights,
        "passengers": passengers,
        "bookings": bookings,
    }


# ---------------------------------------------------------------------------- library

GENRES = ["Fantasy", "Mystery", "Science Fiction", "Poetry", "History", "Biography", "Romance"]
TITLE_A = [
    "Silent",
    "Hidden",
    "Last",
    "Golden",
    "Broken",
    "Distant",
    "Red",
    "Winter",
    "Lost",
    "Burning",
    "Quiet",
    "Northern",
]
TITLE_B = [
    "River",
    "Garden",
    "Empire",
    "Letters",
    "Harbor",
    "Voyage",
    "Mirror",
    "Orchard",
    "Tower",
    "Road",
    "Island",
    "Crown",
]
BRANCHES = [
    ("Central Library", "Lisbon"),
    ("Riverside Branch", "Lisbon"),
    ("Old Town Branch", "Porto"),
    ("University Branch", "Coimbra"),
    ("Harbor Branch", "Porto"),
]


def _authors(rng: random.Random) -> list[tuple]:
    return [
        (
            i,
            _name(rng),
            None if rng.random() < 0.15 else rng.randint(1900, 1990),
            rng.choice(NATIONS),
        )
        for i in range(1, 61)
    ]


def _books(rng: random.Random) -> list[tuple]:
    books, titles = [], []
    for b in range(1, 241):
        title = f"The {rng.choice(TITLE_A)} {rng.choice(TITLE_B)}"
        if title in titles:
            title = f"{title} {['II', 'III', 'IV', 'V', 'VI'][titles.count(title) % 5]}"
        titles.append(title)
        books.append(
            (
                b,
                title,
                rng.randint(1, 60),
                rng.choice(GENRES),
                rng.randint(1950, 2023),
                rng.randrange(90, 900),
            )
        )
    return books


def _members(rng: random.Random) -> list[tuple]:
    member_cities = ["Lisbon", "Porto", "Coimbra", "Braga"]
    return [
        (
            m,
            _name(rng),
            rng.choice(member_cities),
            _day(rng, dt.date(2018, 1, 1), 6 * 365).isoformat(),
            rng.choice(["standard"] * 3 + ["premium", "student", "student"]),
        )
        for m in range(1, 251)
    ]


def _loans(rng: random.Random, members: list[tuple], n_copies: int) -> list[tuple]:
    loans = []
    for lid in range(1, 2001):
        member = members[rng.randrange(len(members))]
        start = dt.date.fromisoformat(member[3]) + dt.timedelta(days=rng.randrange(1, 700))
        due = start + dt.timedelta(days=21)
        back = None if rng.random() < 0.08 else start + dt.timedelta(days=rng.randrange(1, 40))
        loans.append(
            (
                lid,
                rng.randint(1, n_copies),
                member[0],
                start.isoformat(),
                due.isoformat(),
                back.isoformat() if back else None,
            )
        )
    return loans


def library(rng: random.Random) -> Rows:
    """Authors, books, branches, copies, members and loans (drawn in that order)."""
    authors = _authors(rng)
    books = _books(rng)
    branches = [(i + 1, n, c) for i, (n, c) in enumerate(BRANCHES)]
    copies = []
    for b in books:
        for _ in range(rng.randint(1, 4)):
            copies.append((len(copies) + 1, b[0], rng.randint(1, len(BRANCHES))))
    members = _members(rng)
    return {
        "authors": authors,
        "books": books,
        "branches": branches,
        "copies": copies,
        "members": members,
        "loans": _loans(rng, members, len(copies)),
    }
