"""Questions about the ``library`` database (books, copies, members, loans)."""

from __future__ import annotations

from .base import Template as T
from .base import values

LIBRARY = [
    T(
        "library",
        "books_in_genre",
        "How many books of the genre {genre} does the library have?",
        "SELECT COUNT(*) FROM books WHERE genre = {genre}",
        "SELECT DISTINCT genre FROM books ORDER BY genre",
    ),
    T(
        "library",
        "recent_books_by_nationality",
        "List the titles of the books published after {year} by authors whose nationality is "
        "{nationality}.",
        "SELECT b.title FROM books b JOIN authors a ON a.author_id = b.author_id WHERE "
        "a.nationality = {nationality} AND b.published_year > {year}",
        "SELECT nationality, year FROM (SELECT DISTINCT nationality FROM authors) JOIN ("
        + values("year", 1990, 2010)
        + ") ORDER BY nationality, year",
    ),
    T(
        "library",
        "copies_per_branch",
        "How many copies does each branch hold? Give the branch name and the number of copies.",
        "SELECT br.name, COUNT(*) FROM copies c JOIN branches br ON br.branch_id = c.branch_id "
        "GROUP BY br.branch_id",
    ),
    T(
        "library",
        "overdue_open_loans",
        "How many loans were still not returned and already past their due date on {day}?",
        "SELECT COUNT(*) FROM loans WHERE loan_date <= {day} AND due_date < {day} AND "
        "(return_date IS NULL OR return_date > {day})",
        values("day", "2019-06-30", "2020-12-31", "2021-06-30", "2022-12-31", "2023-06-30"),
    ),
    T(
        "library",
        "late_returns",
        "How many loans by {membership} members were returned after their due date?",
        "SELECT COUNT(*) FROM loans l JOIN members m ON m.member_id = l.member_id WHERE "
        "m.membership = {membership} AND l.return_date > l.due_date",
        "SELECT DISTINCT membership FROM members ORDER BY membership",
    ),
    T(
        "library",
        "most_pages",
        "Which {n} members borrowed the most pages (the sum of the page counts of the books of "
        "all their loans)? Give the member's name and the page total, highest first.",
        "SELECT m.name, SUM(b.pages) AS total_pages FROM members m JOIN loans l ON l.member_id "
        "= m.member_id JOIN copies c ON c.copy_id = l.copy_id JOIN books b ON b.book_id = "
        "c.book_id GROUP BY m.member_id ORDER BY total_pages DESC LIMIT {n}",
        values("n", 2, 3, 5, 10),
        sort_key=(1,),
    ),
    T(
        "library",
        "unknown_birth_year",
        "List the names of the authors whose birth year is unknown.",
        "SELECT name FROM authors WHERE birth_year IS NULL",
    ),
    T(
        "library",
        "pages_by_genre",
        "What is the average number of pages of the books of each genre? Give the genre and the "
        "average.",
        "SELECT genre, AVG(pages) FROM books GROUP BY genre",
    ),
    T(
        "library",
        "busy_readers",
        "List the names of the members from {city} who made at least {k} loans in {year}.",
        "SELECT m.name FROM members m JOIN loans l ON l.member_id = m.member_id WHERE m.city = "
        "{city} AND strftime('%Y', l.loan_date) = {year} GROUP BY m.member_id "
        "HAVING COUNT(*) >= {k}",
        "SELECT city, year, k FROM (SELECT DISTINCT city FROM members) JOIN ("
        + values("year", "2020", "2021", "2022")
        + ") JOIN ("
        + values("k", 3, 5)
        + ") ORDER BY city, year, k",
    ),
    T(
        "library",
        "genre_in_city",
        "How many different books of the genre {genre} have at least one copy in a branch in "
        "{city}?",
        "SELECT COUNT(DISTINCT b.book_id) FROM books b JOIN copies c ON c.book_id = b.book_id "
        "JOIN branches br ON br.branch_id = c.branch_id WHERE b.genre = {genre} AND "
        "br.city = {city}",
        "SELECT genre, city FROM (SELECT DISTINCT genre FROM books) JOIN (SELECT DISTINCT city "
        "FROM branches) ORDER BY genre, city",
    ),
    T(
        "library",
        "loans_per_year",
        "How many loans started in each year? Give the year as text 'YYYY' and the number of "
        "loans, in chronological order.",
        "SELECT strftime('%Y', loan_date) AS year, COUNT(*) FROM loans GROUP BY year ORDER BY year",
        sort_key=(0,),
    ),
    T(
        "library",
        "oldest_in_genre",
        "What are the title and publication year of the oldest book of the genre {genre} (all "
        "of them if several tie)?",
        "SELECT title, published_year FROM books WHERE genre = {genre} AND published_year = "
        "(SELECT MIN(published_year) FROM books WHERE genre = {genre})",
        "SELECT DISTINCT genre FROM books ORDER BY genre",
    ),
    T(
        "library",
        "loan_length_by_branch",
        "For each branch, what is the average length in days (return date minus loan date) of "
        "the returned loans of its copies? Give the branch name and the average.",
        "SELECT br.name, AVG(julianday(l.return_date) - julianday(l.loan_date)) FROM loans l "
        "JOIN copies c ON c.copy_id = l.copy_id JOIN branches br ON br.branch_id = c.branch_id "
        "WHERE l.return_date IS NOT NULL GROUP BY br.branch_id",
    ),
    T(
        "library",
        "prolific_authors",
        "List the names of the authors with more than {k} books, with their number of books.",
        "SELECT a.name, COUNT(*) FROM authors a JOIN books b ON b.author_id = a.author_id "
        "GROUP BY a.author_id HAVING COUNT(*) > {k}",
        values("k", 4, 5, 6),
    ),
]
