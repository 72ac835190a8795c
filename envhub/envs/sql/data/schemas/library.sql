-- The library database: authors, books, branches, copies, members, loans.
-- Rows: envs/sql/generators.py, seeded. Comments inside CREATE TABLE are kept by sqlite and shown
-- to the model with the schema: they say what codes and units mean.
CREATE TABLE authors (
  author_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  birth_year INTEGER,           -- NULL when unknown
  nationality TEXT NOT NULL
);
CREATE TABLE books (
  book_id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  author_id INTEGER NOT NULL REFERENCES authors(author_id),
  genre TEXT NOT NULL,
  published_year INTEGER NOT NULL,
  pages INTEGER NOT NULL
);
CREATE TABLE branches (
  branch_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  city TEXT NOT NULL
);
CREATE TABLE copies (
  copy_id INTEGER PRIMARY KEY,  -- one physical copy of a book
  book_id INTEGER NOT NULL REFERENCES books(book_id),
  branch_id INTEGER NOT NULL REFERENCES branches(branch_id)
);
CREATE TABLE members (
  member_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  city TEXT NOT NULL,
  join_date TEXT NOT NULL,      -- ISO date YYYY-MM-DD
  membership TEXT NOT NULL      -- 'standard', 'premium' or 'student'
);
CREATE TABLE loans (
  loan_id INTEGER PRIMARY KEY,
  copy_id INTEGER NOT NULL REFERENCES copies(copy_id),
  member_id INTEGER NOT NULL REFERENCES members(member_id),
  loan_date TEXT NOT NULL,      -- ISO date YYYY-MM-DD
  due_date TEXT NOT NULL,       -- ISO date YYYY-MM-DD
  return_date TEXT              -- ISO date; NULL while the copy is still out
);
